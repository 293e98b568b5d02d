"""The package's house rules, read from the code: imports flow one way, no circles, no huge files.

The layers (docs/architecture.md, "Layers") from the bottom up; a module
may import its own layer and the layers below, never one above. Imports
under ``if TYPE_CHECKING:`` are for type checkers only and do not count;
an import inside a function does (it still runs).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rtf"

#: Each layer's modules (a package name stands for every module in it), bottom first.
LAYERS: list[tuple[str, ...]] = [
    ("rtf.errors",),
    ("rtf.query",),
    ("rtf.algebra",),
    ("rtf.parser",),
    ("rtf.io",),
    ("rtf.matching",),
    ("rtf.filter",),
    ("rtf.naive", "rtf.trieforest", "rtf.ibroker_baseline"),
    ("rtf.engine",),
    ("rtf.bench",),
    ("rtf.spark", "rtf.server"),
    ("rtf.cli", "rtf.__main__"),  # (``python -m rtf`` is the command line)
]

#: Entries allowed directly in rtf/ (issue 20: at most 14 modules and folders; issue 38 added
#: the algebra's stage, rtf/algebra).
MAX_TOP_LEVEL_ENTRIES = 15
#: Longest source file, in lines (tests excepted).
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int | None:
    """The layer of `module`, by its longest listed prefix; None for the root package."""
    best, found = -1, None
    for n, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), n
    return found


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(module: str) -> set[str]:
    """The rtf modules `module` imports (a ``from pkg import sub`` of a submodule counts as pkg.sub)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "rtf")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "rtf":
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in MODULES else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    return found


GRAPH = {m: imports(m) for m in MODULES}


def test_every_module_has_a_layer():
    assert [m for m in MODULES if m != "rtf" and layer_of(m) is None] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_never_run_up_a_layer(module):
    here = layer_of(module)
    if here is None:  # the root package: its public API, imported lazily by name
        return
    upward = sorted(f"{target} (layer {layer_of(target)}: {LAYERS[layer_of(target)]})"
                    for target in GRAPH[module]
                    if layer_of(target) is not None and layer_of(target) > here)
    assert upward == [], f"{module} (layer {here}: {LAYERS[here]}) imports a later stage"


def test_no_import_circles():
    """Depth-first search for a back edge; the cycle found is shown whole."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(GRAPH.get(m, ())):
            if n not in GRAPH:
                continue
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                cycle = visit(n)
                if cycle:
                    return cycle
        state[m] = 2
        path.pop()
        return None

    for m in sorted(GRAPH):
        if m not in state:
            cycle = visit(m)
            assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_checker_sees_a_circle_and_an_upward_import():
    """The two checks above can fail: a made-up graph with both is caught."""
    fake = {"rtf.query.model": {"rtf.engine"}, "rtf.engine": {"rtf.query.model"}}
    assert layer_of("rtf.engine") > layer_of("rtf.query.model")
    assert "rtf.engine" in fake["rtf.query.model"]  # upward: query -> engine
    saved = dict(GRAPH)
    try:
        GRAPH.clear()
        GRAPH.update(fake)
        with pytest.raises(AssertionError, match="import circle"):
            test_no_import_circles()
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_type_checking_imports_do_not_count():
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rtf.engine import Engine\n"
    tree = ast.parse(source)
    assert _type_checking_only(tree.body[1])


def test_the_package_top_holds_at_most_fifteen_entries():
    # (not counted: the package's own files, and the links that bring the grammar and the
    # examples into it: data, not stages; pyproject.toml says why they are links)
    entries = sorted(p.name for p in PACKAGE.iterdir()
                     if p.name not in ("__init__.py", "__main__.py", "__pycache__", "py.typed")
                     and not p.is_symlink())
    assert len(entries) <= MAX_TOP_LEVEL_ENTRIES, entries


@pytest.mark.parametrize("folder", ["rtf", "spark", "benchmarks"])
def test_no_source_file_is_over_600_lines(folder):
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / folder).rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
