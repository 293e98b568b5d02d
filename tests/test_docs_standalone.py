"""The documentation stands on its own (issue 26 item 6): the language reference links
nothing outside the repository, and every relative link of the README and docs/ resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_language_reference_names_nothing_outside_the_repository():
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    assert "../shared" not in text and "spec/" not in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve_inside_the_repository(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(ROOT) and resolved.exists(), f"{page.name}: {target}"


def test_the_readme_says_where_the_sample_comes_from():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## The DBpedia sample"):]
    for needle in ("DBpedia 2015-10", "10,410", "CC BY-SA", "nordlys", "RTF_DATA_DIR", "held-out"):
        assert needle in section, needle
