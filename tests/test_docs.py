"""The examples in the documentation and docstrings run and say what they show."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = ["rtf.parser", "rtf.engine", "rtf.query.text", "rtf.query.expressions", "rtf.io.publication",
           "rtf.query.terms", "rtf.query.decompose", "rtf.io.taxonomy", "rtf.io.reader", "rtf.query.values",
           "rtf.cli.arguments", "rtf.bench.workload", "rtf.matching.explain", "rtf.matching.results",
           "rtf.io.builder", "rtf.parser.first_chars", "rtf.query.analysis", "rtf.query.fields",
           "rtf.io.analysis_file"]
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


@pytest.mark.slow
def test_readme_python_and_bundled_commands_run_as_written(fresh_checkout):
    checkout, env = fresh_checkout
    python, bundled = _readme_blocks("python")[0], _readme_blocks("sh")[0]
    result = subprocess.run([sys.executable, "-c", python], cwd=checkout, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "http://example.org/news/a1 rio alice" in result.stdout and "'spans'" in result.stdout
    _run_shell(bundled, checkout, env)


@pytest.mark.slow
@pytest.mark.soak  # deselected by default (pyproject.toml): pytest -m soak
def test_readme_dbpedia_commands_run_as_written(fresh_checkout):
    from rtf.io import datasets
    if not datasets.available():
        pytest.skip(datasets.missing_message())
    checkout, env = fresh_checkout
    _run_shell(_readme_blocks("sh")[1], checkout, env)
    assert (checkout / "matches.jsonl").stat().st_size > 0 and (checkout / "q.jsonl").exists()


#: Every page a user reads: the README, the changelog, docs/.
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Where users' home folders live on Linux and macOS (and root's): a page naming
#: a path under one of them names somebody's machine.
HOME_ROOTS = ("home", "Users", "root")


def test_docs_name_no_machine_specific_path():
    # This machine's own folders (where the checkout lives, the user's home), found
    # here rather than written down, and every machine's home roots.
    machine = {ROOT.parent, Path.home(), *(Path("/", name) for name in HOME_ROOTS)}
    bad_paths = sorted(f"{p}/" for p in machine if p != Path("/"))
    for page in PAGES:
        text = page.read_text()
        for bad in bad_paths:
            assert bad not in text, f"{page.name} names {bad}"


# ---------------------------------------------------------------- links and the pages' order


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text (a link's text only), lower case,
    without punctuation but for - and _, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _prose(page: Path) -> list[str]:
    """The lines of `page` outside its code blocks."""
    lines, fence = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    for line in _prose(page):
        if m := re.match(r"#{1,6} (.*)", line):
            anchor = github_anchor(m.group(1))
            seen[anchor] = seen.get(anchor, 0) + 1
            if seen[anchor] > 1:
                seen[f"{anchor}-{seen[anchor] - 1}"] = 1
    return set(seen)


def test_every_relative_link_and_anchor_of_the_pages_resolves():
    """History moved to CHANGELOG.md (issue 40, item 13): no link left pointing at a
    section that moved, and the moved text's links rewritten for the top of the repository."""
    assert github_anchor("The paper and us, at DB = 100K, FT_pr = 50 %") == "the-paper-and-us-at-db--100k-ft_pr--50-"
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", "\n".join(_prose(page))):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.name}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.name}: {target}: no such anchor")
    assert broken == []


@pytest.mark.parametrize("page", ["docs/benchmarks.md", "docs/spark.md"])
def test_the_figure_pages_lead_with_the_current_figures(page):
    """Each page's first section is its figures, one table, each row dated and with
    the command (or the section holding it) that reproduces it; the rounds are in
    CHANGELOG.md (Keep a Changelog)."""
    lines = _prose(ROOT / page)
    sections = [line for line in lines if line.startswith("## ")]
    assert sections[0] == "## Current figures"
    start = lines.index("## Current figures")
    table = [line for line in lines[start:lines.index(sections[1])] if line.startswith("|")]
    header, rows = table[0], table[2:]
    assert header == "| what | figure | measured | reproduce |" and len(rows) >= 4
    for row in rows:
        what, figure, measured, reproduce = [cell.strip() for cell in row.strip("|").split("|")][:4]
        assert reproduce, row
        if figure:  # (a row that only sends the reader to another page has none)
            assert re.match(r"\d{4}-\d{2}-\d{2}", measured), row
    assert len((ROOT / page).read_text().splitlines()) < 1200


def test_the_changelog_keeps_the_rounds_newest_first():
    lines = _prose(ROOT / "CHANGELOG.md")
    assert lines[0] == "# Changelog" and "## [Unreleased]" in lines
    dates = [m.group(1) for line in lines if (m := re.match(r"## .* - (\d{4}-\d{2}-\d{2})$", line))]
    assert len(dates) >= 20 and dates == sorted(dates, reverse=True)
    text = (ROOT / "CHANGELOG.md").read_text()
    for issue in ("issue 10", "issue 22", "issue 23", "issue 25", "issue 38"):
        assert issue in text
