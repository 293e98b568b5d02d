"""The brute-force reference engine: the ground truth of every other engine.

It evaluates every registered query on every publication, straight from
the query as written: backtracking over the triple patterns, then the
filters with SPARQL's three-valued logic (`rtf.expressions`). It does not
use the disjunctive normal form, the tuple conjuncts or any query index,
so it checks all of them independently.
"""

from __future__ import annotations

from rtf.expressions import passes
from rtf.filter import QueryIndex, Solutions, Triple
from rtf.join import project
from rtf.model import Query, TriplePattern
from rtf.terms import TypePath, Wildcard, is_variable


def _unify(pattern: TriplePattern, triple: Triple, solution: dict[str, str]) -> dict[str, str] | None:
    new = None
    for term, value in zip(pattern.terms, triple):
        if isinstance(term, (Wildcard, TypePath)):
            continue  # TypePath triples were selected by predicate already
        if is_variable(term):
            bound = (new or solution).get(term.name)
            if bound is None:
                if new is None:
                    new = dict(solution)
                new[term.name] = value
            elif bound != value:
                return None
        elif term.key != value:
            return None
    return new if new is not None else solution


def by_predicate(triples: list[Triple]) -> dict[str, list[Triple]]:
    """The publication's triples grouped by predicate (a publication-side lookup)."""
    out: dict[str, list[Triple]] = {}
    for t in triples:
        out.setdefault(t[1], []).append(t)
    return out


def query_solutions(query: Query, triples: list[Triple], virtual: list[Triple],
                    grouped: dict[str, list[Triple]] | None = None) -> set[tuple]:
    """Distinct projected solutions of `query` over a publication."""
    found: set[tuple] = set()
    patterns = query.patterns
    if grouped is None:
        grouped = by_predicate(triples)

    def extend(i: int, solution: dict[str, str]) -> None:
        if i == len(patterns):
            if all(passes(f, solution) for f in query.filters):
                found.add(project(solution, query.projection))
            return
        p = patterns[i]
        if isinstance(p.predicate, TypePath):
            candidates = virtual
        elif is_variable(p.predicate) or isinstance(p.predicate, Wildcard):
            candidates = triples
        else:
            candidates = grouped.get(p.predicate.key, ())
        for triple in candidates:
            s = _unify(p, triple, solution)
            if s is not None:
                extend(i + 1, s)

    extend(0, {})
    return found


class NaiveQueries(QueryIndex):
    """Every query, evaluated on every publication."""

    name = "naive"

    def __init__(self):
        self.queries: dict[str, Query] = {}

    def add(self, query_id: str, query: Query) -> None:
        self.queries[query_id] = query

    def remove(self, query_id: str) -> None:
        del self.queries[query_id]

    def solutions(self, triples: list[Triple], virtual: list[Triple], limit: int = 10_000):
        out: Solutions = {}
        grouped = by_predicate(triples)
        for qid, q in self.queries.items():
            sols = query_solutions(q, triples, virtual, grouped)
            if sols:
                out[qid] = sols
        return out, set()

    def stats(self) -> dict:
        return {"queries": len(self.queries)}
