"""The W3C SPARQL evaluation tests, per engine and suite folder: passed / failed / refused (issue 38).

Every rtf engine runs every test of the shared suite (``../shared/w3c-sparql-tests``,
``RTF_W3C_TESTS`` overrides it) as `rtf.bench.w3c_run` says, and so do pyoxigraph
and rdflib, the anchors (a harness that fails pyoxigraph is the first suspect)::

    python benchmarks/w3c_report.py                        # the table (about ten seconds)
    python benchmarks/w3c_report.py --runners naive rtfs   # some runners only
    python benchmarks/w3c_report.py --failures pyoxigraph  # and what a runner does not pass, and why
    python benchmarks/w3c_report.py --write-expected       # regenerate tests/w3c_expected.txt

A cell is passed/failed/refused (+ errors, if any). The tests outside the
contract whose query uses FROM, GRAPH, SERVICE or DESCRIBE are held to a
refusal naming it (rtf engines only); the others (named graphs given as
data only, entailment regimes) are not run.

pyoxigraph's store keeps a literal's value, not its lexical form ("01"^^xsd:integer
comes back as "1"), where rtf and the W3C results keep what the data says; its
failures that vanish once both answers' literals are put in that form are marked
"lexical forms only".
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections import Counter
from pathlib import Path

import pyoxigraph as ox

from rtf.bench import w3c
from rtf.bench.w3c_run import ANCHORS, ENGINES, PASSED, STATUSES, Outcome, answer, check, expectations_text, run

EXPECTED_FILE = Path(__file__).resolve().parents[1] / "tests" / "w3c_expected.txt"

HEADER = """\
# The W3C SPARQL evaluation tests an rtf engine does not pass yet (issue 38).
# tests/test_w3c.py marks each xfail(strict=True): a test that starts to pass must leave this
# list, and a test not listed must pass. Regenerate it from a run of every engine:
#     python benchmarks/w3c_report.py --write-expected
# A line: <test id> [engines]  # <outcome>: <reason>   (no engines: every engine)"""


def outcomes(tests: list[w3c.W3CTest], runners: list[str]) -> dict[tuple[str, str], Outcome]:
    """(runner, test id) -> Outcome: rtf engines held to `W3CTest.check`, the anchors to the answers."""
    found = {}
    for runner in runners:
        for t in tests:
            if runner in ANCHORS and t.check == "answer":
                found[runner, t.id] = run(t, runner)
            elif runner in ENGINES and t.check is not None:
                found[runner, t.id] = check(t, runner)
    return found


def cell(results: list[Outcome]) -> str:
    if not results:
        return "-"
    counts = Counter(o.status for o in results)
    text = "/".join(str(counts[s]) for s in STATUSES[:3])
    return text + (f" +{counts['error']}e" if counts["error"] else "")


def table(tests: list[w3c.W3CTest], runners: list[str], found: dict[tuple[str, str], Outcome]) -> str:
    groups: dict[str, list[w3c.W3CTest]] = {}
    for t in tests:
        if t.check == "answer":
            groups.setdefault(t.folder, []).append(t)
    answered = [t for t in tests if t.check == "answer"]
    select_ask = [t for t in answered if t.form != "CONSTRUCT"]
    groups["SELECT/ASK (in contract and mf:requires)"] = select_ask
    groups["  of which mf:requires"] = [t for t in select_ask if t.requires]
    groups["CONSTRUCT"] = [t for t in answered if t.form == "CONSTRUCT"]
    groups["all answered"] = answered
    groups["refusal naming FROM/GRAPH/SERVICE/DESCRIBE"] = [t for t in tests if t.check == "refusal"]
    width = max(map(len, groups)) + 2
    lines = [f"{'passed/failed/refused':<{width}}{'tests':>6}" + "".join(f"{r:>14}" for r in runners)]
    for name, members in groups.items():
        if name == "SELECT/ASK (in contract and mf:requires)":
            lines.append("")
        cells = [cell([found[r, t.id] for t in members if (r, t.id) in found]) for r in runners]
        lines.append(f"{name:<{width}}{len(members):>6}" + "".join(f"{c:>14}" for c in cells))
    not_run = Counter(t.out_of_contract for t in tests if t.check is None)
    lines.append(f"not run (outside the contract, nothing to refuse): "
                 + ", ".join(f"{reason} {n}" for reason, n in sorted(not_run.items())))
    return "\n".join(lines)


def by_value(result: w3c.Answer) -> w3c.Answer:
    """`result` with every literal as pyoxigraph's store keeps it (its value's canonical form)."""
    if isinstance(result, bool):
        return result
    triples = isinstance(result, frozenset)
    literals = sorted({t for item in result for t in (item if triples else (v for _, v in item))
                       if t.startswith('"')})
    store = ox.Store()
    store.extend(ox.parse("\n".join(f"<urn:t:{i}> <urn:v> {t} ." for i, t in enumerate(literals)),
                          format=ox.RdfFormat.N_TRIPLES))
    kept = {literals[int(q.subject.value[6:])]: str(q.object) for q in store}
    if triples:
        return frozenset(tuple(kept.get(t, t) for t in triple) for triple in result)
    return [w3c.as_row((v, kept.get(t, t)) for v, t in row) for row in result]


def lexical_forms_only(test: w3c.W3CTest, runner: str) -> bool:
    try:
        actual = answer(test, runner)
    except Exception:  # noqa: BLE001 - refused or broken: not a matter of lexical forms
        return False
    return w3c.compare(by_value(w3c.expected_answer(test)), by_value(actual), test.shape.ordered) is None


def failures(tests: list[w3c.W3CTest], runner: str, found: dict[tuple[str, str], Outcome]) -> str:
    lines = []
    for t in tests:
        outcome = found.get((runner, t.id))
        if outcome is None or outcome.status == PASSED:
            continue
        tag = " [lexical forms only]" if outcome.status == "failed" and lexical_forms_only(t, runner) else ""
        lines.append(f"  {t.id}{tag}: {str(outcome)[:300]}")
    return f"{runner}: {len(lines)} not passed\n" + "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runners", nargs="+", choices=ENGINES + ANCHORS, default=list(ENGINES + ANCHORS))
    parser.add_argument("--failures", nargs="+", choices=ENGINES + ANCHORS, default=[],
                        help="list what these runners do not pass")
    parser.add_argument("--write-expected", action="store_true",
                        help=f"run every rtf engine and write {EXPECTED_FILE.name}")
    args = parser.parse_args()
    if not w3c.available():
        print(w3c.missing_message(), file=sys.stderr)
        return 2
    logging.getLogger("rdflib").setLevel(logging.CRITICAL)  # its warnings on ill-typed literals
    warnings.filterwarnings("ignore", module="rdflib")
    tests = list(w3c.load_tests())
    wanted = set(args.runners + args.failures + (list(ENGINES) if args.write_expected else []))
    runners = [r for r in ENGINES + ANCHORS if r in wanted]
    found = outcomes(tests, runners)
    print(table(tests, runners, found))
    for runner in args.failures:
        print()
        print(failures(tests, runner, found))
    if args.write_expected:
        EXPECTED_FILE.write_text(expectations_text(
            {key: o for key, o in found.items() if key[0] in ENGINES}, HEADER), encoding="utf-8")
        print(f"\nwrote {EXPECTED_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
