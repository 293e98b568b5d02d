"""The documentation's Python examples type-check with `mypy --strict`, and run as written
(issue 26, items 1 and 6): `from rtf import Engine` is typed, `Engine`'s locked
methods keep their signatures, and a wrong call is reported."""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Pages whose Python examples are type-checked here, not run: docs/server.md's needs a
#: running `rtf serve`; docs/language.md's doctests run in tests/test_docs.py; docs/spark.md's
#: need a Spark session and the files its quick start makes (tests/test_spark_stream.py runs it).
NOT_RUN_HERE = {"server.md", "language.md", "spark.md"}

#: Third-party modules without type information that examples import (a user's mypy needs
#: the same setting; it is not about rtf's own types).
UNTYPED_MODULES = ("pyarrow", "pyarrow.*")


def python_examples() -> list[tuple[str, str]]:
    """(name, source) of every ```python block of the README and docs/, doctests as their code."""
    examples = []
    for page in PAGES:
        blocks = re.findall(r"^ *```python\n(.*?)^ *```", page.read_text(encoding="utf-8"), re.M | re.S)
        for n, block in enumerate(blocks, 1):
            if ">>> " in block:
                parsed = doctest.DocTestParser().get_examples(block)
                source = "".join(example.source for example in parsed)
            else:
                source = block
            examples.append((f"{page.stem.replace('-', '_')}_{n}", source))
    return examples


EXAMPLES = python_examples()


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory) -> Path:
    """One mypy cache for the module's runs: the first analyses rtf and its dependencies
    (numpy's stubs, ...), a later one only the files it is given, as a user's mypy does run
    after run (the cache is checked against every file's source; results are a full run's).
    The wrong calls' run: 4.7 s of CPU on its own, 0.4 s after the examples' run."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(folder: Path, files: dict[str, str], cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    for name, source in files.items():
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
    # MYPYPATH: the checkout's rtf, whatever this environment installed (tests/test_packaging.py checks
    # that the README's editable install alone is enough); its own errors are not reported.
    env = dict(os.environ, MYPYPATH=str(ROOT))
    config = folder / "mypy.ini"
    config.write_text("[mypy]\n" + "".join(f"[mypy-{module}]\nignore_missing_imports = True\n"
                                            for module in UNTYPED_MODULES))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
         "--config-file", str(config), "--cache-dir", str(cache or folder / ".mypy_cache"), *(f"{name}.py" for name in files)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def test_there_are_examples_on_every_page_that_has_them():
    names = {name.rsplit("_", 1)[0] for name, _ in EXAMPLES}
    assert {"README", "language", "index_format", "server"} <= names


@pytest.mark.slow
def test_the_documentation_examples_pass_mypy_strict(tmp_path, mypy_cache):
    result = mypy(tmp_path, dict(EXAMPLES), mypy_cache)
    assert result.returncode == 0, result.stdout + result.stderr


WRONG_CALLS = {  # a call mypy must refuse, and what it says
    "Engine().register(5)": r'Argument 1 to "register" of "Engine" has incompatible type "int"',
    "Engine().match(3)": r'Argument 1 to "match" of "Engine" has incompatible type "int"',
    "Engine().unregister(query_id=1)": r'Argument "query_id" to "unregister" of "Engine"',
    'Engine().register("ASK { ?s ?p ?o }", subscriber=2)': r'Argument "subscriber" to "register"',
    'x: int = Engine().register("ASK { ?s ?p ?o }")': r"Incompatible types in assignment",
    "Engine().save()": r'Missing positional argument "path" in call to "save" of "Engine"',
    "Publication.from_rdf(None, 5)": r'Argument 2 to "from_rdf" of "Publication"',
    "list(read_publications(3.5))": r'Argument 1 to "read_publications"',
}


@pytest.mark.slow
def test_wrong_calls_are_reported(tmp_path, mypy_cache):
    files = {f"wrong_{n}": f"from rtf import Engine, Publication, read_publications\n{call}\n"
             for n, call in enumerate(WRONG_CALLS)}
    result = mypy(tmp_path, files, mypy_cache)
    assert result.returncode == 1
    for n, (call, expected) in enumerate(WRONG_CALLS.items()):
        reported = [line for line in result.stdout.splitlines() if line.startswith(f"wrong_{n}.py:")]
        assert any(re.search(expected, line) for line in reported), (call, reported)


@pytest.mark.parametrize("name, source", [(n, s) for n, s in EXAMPLES
                                          if n.rsplit("_", 1)[0] + ".md" not in NOT_RUN_HERE])
def test_the_other_python_examples_run_as_written(tmp_path, name, source):
    """From a checkout (paths relative to it, as the docs say)."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = dict(os.environ)
    result = subprocess.run([sys.executable, "-c", source], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{name}:\n{source}\n{result.stderr}"
