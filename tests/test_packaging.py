"""How rtf is packaged and what `import rtf` offers (issue 40, item 12): every package is the
folder of its name, so the README's editable install is a plain path that `mypy --strict`
reads (no import hook); every package is installed (found, not listed); every error that
docs/limits.md names is exported from `rtf`; `dir(rtf)` has no duplicates; `python -m rtf`."""

from __future__ import annotations

import builtins
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

import rtf

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_is_the_folder_of_its_name():
    """No package mapped to another folder: what needs an import hook in an editable install."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert setuptools.get("package-dir", {"": "."}) in ({"": "."}, {})
    assert set(setuptools["packages"]) == {"find"}  # found (a hand-kept list had left rtf.algebra out)
    for link, target in (("grammar", "grammar"), ("examples", "examples")):
        path = ROOT / "rtf" / link
        assert path.is_symlink() and path.resolve() == (ROOT / target).resolve()
    assert (ROOT / "rtf" / "grammar" / "ftsparql.lark").is_file()


def test_every_package_folder_is_installed():
    from setuptools import find_namespace_packages, find_packages

    find = PYPROJECT["tool"]["setuptools"]["packages"]["find"]
    finder = find_namespace_packages if find.get("namespaces", True) else find_packages  # (setuptools' default)
    found = set(finder(str(ROOT), include=find["include"]))
    folders = {".".join(Path(folder).relative_to(ROOT).parts) for folder, _, files in os.walk(ROOT / "rtf", followlinks=True)
               if "__pycache__" not in Path(folder).parts and any(f.endswith(".py") for f in files)}
    assert folders <= found and {"rtf.algebra", "rtf.grammar", "rtf.examples"} <= found
    assert "rtf.grammar" in PYPROJECT["tool"]["setuptools"]["package-data"]


def test_this_editable_install_is_a_path_not_an_import_hook():
    site = Path(sysconfig.get_paths()["purelib"])
    editable = list(site.glob("__editable__*rtf*.pth"))
    if not editable:
        pytest.skip("rtf is not installed in editable mode here")
    lines = [line for line in editable[0].read_text().splitlines() if line.strip()]
    assert [Path(line).resolve() for line in lines] == [ROOT.resolve()]


def test_every_error_the_docs_name_is_exported_once():
    named = set(re.findall(r"\b([A-Z][A-Za-z]+Error)\b", (ROOT / "docs" / "limits.md").read_text()))
    ours = {name for name in named if not hasattr(builtins, name)}
    assert ours and ours <= set(rtf.__all__)
    for name in ours:
        assert issubclass(getattr(rtf, name), Exception)
    from rtf import errors
    for name, value in vars(errors).items():
        if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == "rtf.errors":
            assert getattr(rtf, name) is value, name
    listed = dir(rtf)
    assert len(listed) == len(set(listed)) and set(rtf.__all__) <= set(listed)


@pytest.mark.parametrize("module", ["rtf", "rtf.cli"])
def test_python_dash_m_runs_the_command(module):
    done = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0 and done.stdout.startswith("rtf ")


EXAMPLE = """\
from rtf import Engine, Publication, QueryTooLargeError
from rtf.parser.grammar import grammar_text

engine = Engine()
engine.register('ASK { ?a <http://ex/t> ?t FILTER ftcontains(?t, "rio") }', "q1")
pub = Publication.from_rdf("a", '<http://ex/a> <http://ex/t> "Rio" .')
for match in engine.match(pub):
    for explanation in match.explain(pub, engine):
        word: str = explanation["ftcontains"][0]["hits"][0]["query"]
queries: int = engine.stats()["queries"]
text: str = grammar_text()
error: type[Exception] = QueryTooLargeError
"""


@pytest.mark.slow
@pytest.mark.soak  # deselected by default (pyproject.toml): pytest -m soak
def test_mypy_strict_sees_rtf_after_the_readmes_editable_install(tmp_path):
    """A fresh venv, ``pip install -e`` of a copy of the checkout (its dependencies taken from
    this environment, offline), then ``mypy --strict`` with no MYPYPATH: rtf is found and typed."""
    checkout = tmp_path / "rtf-checkout"
    shutil.copytree(ROOT, checkout, symlinks=True,
                    ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", ".mypy_cache",
                                                  ".pytest_cache", ".hypothesis", "build", "out"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    new_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    # this environment's packages (pip, setuptools, Lark, mypy...) without its own rtf
    (new_site / "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                              "--no-index", "-e", str(checkout)], capture_output=True, text=True, timeout=600,
                             env=env, cwd=tmp_path)
    assert install.returncode == 0, install.stderr
    (tmp_path / "example.py").write_text(EXAMPLE)
    found = subprocess.run([str(python), "-c", "import rtf, rtf.grammar; print(rtf.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert found.stdout.strip() == str(checkout / "rtf" / "__init__.py"), found.stderr
    checked = subprocess.run([str(python), "-m", "mypy", "--strict", "--follow-imports=silent",
                              "--cache-dir", str(tmp_path / ".mypy_cache"), "example.py"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert checked.returncode == 0, checked.stdout + checked.stderr
