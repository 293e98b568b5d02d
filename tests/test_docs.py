"""The examples in the documentation and docstrings run and say what they show."""

from __future__ import annotations

import doctest
import subprocess
import sys
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = ["rtf.parser", "rtf.engine", "rtf.query.text", "rtf.query.expressions", "rtf.io.publication",
           "rtf.query.terms", "rtf.query.decompose", "rtf.io.taxonomy", "rtf.io.reader", "rtf.query.values",
           "rtf.cli.arguments", "rtf.bench.workload", "rtf.matching.explain", "rtf.matching.results",
           "rtf.io.builder", "rtf.parser.first_chars"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("name", MODULES)
def test_module_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS)
    assert result.failed == 0


@pytest.mark.parametrize("page", ["docs/language.md"])
def test_documentation_examples(page):
    result = doctest.testfile(str(ROOT / page), module_relative=False, optionflags=FLAGS)
    assert result.failed == 0 and result.attempted > 0


# ---------------------------------------------------------------- the README

def _readme_blocks(language: str) -> list[str]:
    """The ```language blocks of the README's "Using it" section, in order."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Using it"):text.index("## Documentation")]
    return [block.split("\n", 1)[1] for block in section.split("```")[1::2]
            if block.startswith(language + "\n")]


@pytest.fixture
def fresh_checkout(tmp_path):
    """A folder laid out as a clone beside ../shared/data: the README's paths resolve."""
    import os

    from rtf.io import datasets
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "rtf").symlink_to(ROOT / "rtf")
    (checkout / "examples").symlink_to(ROOT / "examples")
    if datasets.available():
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(datasets.data_dir())
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("RTF_DATA_DIR", None)
    return checkout, env


def _run_shell(block: str, cwd: Path, env: dict) -> None:
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{block}\n{result.stderr}"


def test_readme_python_and_bundled_commands_run_as_written(fresh_checkout):
    checkout, env = fresh_checkout
    python, bundled = _readme_blocks("python")[0], _readme_blocks("sh")[0]
    result = subprocess.run([sys.executable, "-c", python], cwd=checkout, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "http://example.org/news/a1 rio alice" in result.stdout and "'spans'" in result.stdout
    _run_shell(bundled, checkout, env)


@pytest.mark.slow
def test_readme_dbpedia_commands_run_as_written(fresh_checkout):
    from rtf.io import datasets
    if not datasets.available():
        pytest.skip(datasets.missing_message())
    checkout, env = fresh_checkout
    _run_shell(_readme_blocks("sh")[1], checkout, env)
    assert (checkout / "matches.jsonl").stat().st_size > 0 and (checkout / "q.jsonl").exists()


#: Where users' home folders live on Linux and macOS (and root's): a page naming
#: a path under one of them names somebody's machine.
HOME_ROOTS = ("home", "Users", "root")


def test_docs_name_no_machine_specific_path():
    # This machine's own folders (where the checkout lives, the user's home), found
    # here rather than written down, and every machine's home roots.
    machine = {ROOT.parent, Path.home(), *(Path("/", name) for name in HOME_ROOTS)}
    bad_paths = sorted(f"{p}/" for p in machine if p != Path("/"))
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        for bad in bad_paths:
            assert bad not in text, f"{page.name} names {bad}"
