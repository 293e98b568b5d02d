"""Shared query values (`rtf.query.terms.shared`, `iri`, `variable`): one copy each, bounded."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf.query import terms
from rtf.query.terms import IRI, Variable, iri, shared, variable


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.text(alphabet="abcxyz:/", min_size=1, max_size=4), max_size=40),
       bound=st.integers(1, 12))
def test_terms_are_shared_and_the_tables_stay_bounded(monkeypatch_bound, names, bound):
    monkeypatch_bound(bound)
    for name in names:
        a = iri("http://ex/" + name)
        assert a == IRI("http://ex/" + name) and iri("http://ex/" + name) is a  # one copy while kept
        assert shared(IRI("http://ex/" + name)) is a
        v = variable(name)
        assert v == Variable(name) and variable(name) is v
        # Each text's value is one the shared table took since it last started again.
        assert len(terms._IRIS) + len(terms._VARIABLES) <= len(terms._SHARED) <= bound


@pytest.fixture
def monkeypatch_bound(monkeypatch):
    def bound(n: int) -> None:
        monkeypatch.setattr(terms, "SHARED_MAX", n)
        terms._SHARED.clear()
        terms._IRIS.clear()
        terms._VARIABLES.clear()
    yield bound
    terms._SHARED.clear()
    terms._IRIS.clear()
    terms._VARIABLES.clear()
