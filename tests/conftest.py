"""Shared fixtures: the DBpedia sample (skipped cleanly when absent)."""

from __future__ import annotations

import itertools

import pytest

from rtf.io import datasets


def _need_data():
    if not datasets.available():
        pytest.skip(datasets.missing_message())


@pytest.fixture(scope="session")
def dbpedia_taxonomy():
    _need_data()
    from rtf.io.taxonomy import Taxonomy
    return Taxonomy.from_file(datasets.dbpedia_ontology())


def _file(name: str):
    matches = [f for f in datasets.dbpedia_files() if f.name.startswith(name)]
    return matches[0]


@pytest.fixture(scope="session")
def dbpedia_slice():
    """A mixed slice: the verbatim-format files, typed db8k resources, real abstracts."""
    _need_data()
    from rtf.io.reader import read_publications
    pubs = list(read_publications([_file("nordlys"), _file("esbm")]))
    pubs += list(itertools.islice(read_publications([_file("db8k28")]), 700))
    for name in ("renlg", "knowledgenet", "ml1m"):
        pubs += list(itertools.islice(read_publications([_file(name)]), 120))
    return pubs


@pytest.fixture(scope="session")
def dbpedia_all():
    _need_data()
    from rtf.io.reader import read_publications
    return list(read_publications(datasets.dbpedia_files()))
