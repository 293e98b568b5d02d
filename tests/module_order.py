"""The order in which a parallel run hands out the test modules: the longest first.

Under pytest-xdist's ``--dist loadscope`` a module's tests run on one worker, one module
after another, in the order of the collection. A run ends when its last worker is done,
so a long module handed out late runs on alone while the other workers idle: ordering
the modules by the number of tests marked slow left the hypothesis-heavy modules, which
are not marked slow, for the end (test_shared_joins, test_value_predicates and
test_word_index ran alone in the last minutes of a run).

`tests/module_costs.json` holds each module's seconds in a parallel run (the sum of its
tests' setup, call and teardown durations, as pytest reports them), recorded by a run
with ``RTF_TEST_RECORD_COSTS=1`` (`CostRecorder`); the modules are handed out from the
costliest. A module the file does not know yet (a new one) is counted
`SECONDS_PER_SLOW_TEST` per test marked slow, so that it is not left for last either.
The file only orders the run: a stale one makes a run longer, never wrong.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

#: The recorded costs, per module (node id of the file): seconds.
COSTS_FILE = Path(__file__).with_name("module_costs.json")

#: What a module missing from `COSTS_FILE` is counted per test marked slow.
SECONDS_PER_SLOW_TEST = 5.0


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def load_costs(path: Path = COSTS_FILE) -> dict[str, float]:
    """The recorded costs; none if the file is missing or unreadable (the order then falls
    back on the slow marks)."""
    try:
        costs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in costs.items()} if isinstance(costs, dict) else {}


def order_by_cost(items: list, costs: dict[str, float], *, held_back=None, ahead: int = 0) -> None:
    """Sort pytest's `items` in place: the modules from the costliest, each module's tests in
    their order (a stable sort on the module's cost). The modules `held_back(module)` says
    are put after the `ahead` costliest others (the Spark modules of a run that is still
    making the JVMs' class archive: tests/spark_jvm.py)."""
    slow = collections.Counter(module_of(item.nodeid) for item in items if item.get_closest_marker("slow"))

    def cost(module: str) -> float:
        return costs[module] if module in costs else SECONDS_PER_SLOW_TEST * slow[module]

    modules = sorted(dict.fromkeys(module_of(item.nodeid) for item in items), key=lambda m: -cost(m))
    if held_back is not None and ahead > 0:
        back = [m for m in modules if held_back(m)]
        others = [m for m in modules if not held_back(m)]
        modules = others[:ahead] + back + others[ahead:]
    rank = {module: place for place, module in enumerate(modules)}
    items.sort(key=lambda item: rank[module_of(item.nodeid)])


class CostRecorder:
    """A plugin for the controller of a run (``RTF_TEST_RECORD_COSTS=1``): sums each module's
    reported durations and writes them to `COSTS_FILE` at the end, modules of the run only
    replacing theirs (a run of some files keeps the others' costs)."""

    def __init__(self, path: Path = COSTS_FILE):
        self.path = path
        self.seconds: collections.Counter[str] = collections.Counter()

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session) -> None:
        if not self.seconds:
            return
        costs = {**load_costs(self.path), **{m: round(s, 1) for m, s in self.seconds.items()}}
        ordered = dict(sorted(costs.items(), key=lambda kv: -kv[1]))
        self.path.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")
