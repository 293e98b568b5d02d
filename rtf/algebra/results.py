"""A version-3 query over one publication: what its match reports (spec section 5).

`run(query, dataset)` evaluates the query's algebra and gives the match's
payload, or None when the publication does not match:

- ``SELECT``: its distinct rows, each a tuple of (variable, term key) pairs
  in projection order with the unbound variables left out; a `frozenset`,
  or an `OrderedRows` tuple (each row where it first occurs) when the query
  ends in ``ORDER BY``; None when the result has no solution;
- ``ASK``: the unit row set when true, None when false;
- ``CONSTRUCT``: the constructed triples (`Triples`), None when there are
  none. A template triple with an unbound variable, a literal subject or a
  predicate that is not an IRI is left out; a template's blank nodes are
  fresh for each solution.

``NOW()`` is the dataset's instant, one per publication; ``BNODE()`` and the
template's blank nodes are named so as not to clash with the publication's.
"""

from __future__ import annotations

from rtf.algebra.evaluate import evaluate
from rtf.algebra.graph import Dataset
from rtf.algebra.model import AlgebraQuery
from rtf.algebra.needs import needs_of
from rtf.algebra.sharing import canonical, skeleton
from rtf.query.expressions import CONTEXT, EvaluationContext
from rtf.query.terms import BlankNode, Variable

_NOTHING: dict = {}
_MISSING = object()
#: The one solution of an ASK query, as the indexes answer it.
UNIT_ROWS = frozenset({()})


class OrderedRows(tuple):
    """The distinct rows of an ``ORDER BY`` query, in order (a tuple: compared in order)."""

    __slots__ = ()


class Triples(frozenset):
    """The triples a ``CONSTRUCT`` match carries: (subject, predicate, object) keys."""

    __slots__ = ()


def run(query: AlgebraQuery, dataset: Dataset):
    """The match payload of `query` on `dataset` (see the module), or None."""
    analysis = query.analysis
    if analysis is None:  # made once, kept with the query (no cache to outgrow)
        analysis = (needs_of(query), _reads_context(query), skeleton(query))
        object.__setattr__(query, "analysis", analysis)
    needs, reads_context, shape = analysis
    # The query's own fresh blank nodes (BNODE() and its template's): numbered from _:g1
    # for each query, so that a match does not depend on the queries stored beside it.
    fresh = FreshBlankNodes(dataset)
    if not reads_context:
        return _answer(query, dataset, needs, shape, fresh)
    # EXISTS, NOW(), BNODE(): an evaluation context of its own, for the leaves too.
    context = EvaluationContext(lambda pattern, bound: bool(evaluate(pattern, dataset, bound, needs)),
                                dataset.now, fresh)
    token = CONTEXT.set(context)
    try:
        return _answer(query, dataset, needs, shape, fresh)
    finally:
        CONTEXT.reset(token)


def _answer(query: AlgebraQuery, dataset: Dataset, needs, shape, fresh):
    """The match payload, shared by the queries of one skeleton whose leaves found the same
    solutions on this publication (`rtf.algebra.sharing`), else evaluated."""
    if shape is None:
        return _evaluated(query, dataset, needs, fresh)
    key = (id(shape[0]), *[canonical(evaluate(leaf, dataset, _NOTHING, needs), dataset)
                           for leaf in shape[1]])
    answers = dataset.answers
    found = answers.get(key, _MISSING)
    if found is _MISSING:
        found = answers[key] = _evaluated(query, dataset, needs, fresh)
    return found


def _evaluated(query: AlgebraQuery, dataset: Dataset, needs, fresh):
    solutions = evaluate(query.pattern, dataset, _NOTHING, needs)
    if query.form == "ASK":
        return UNIT_ROWS if solutions else None
    if query.form == "CONSTRUCT":
        triples = construct(query.template, solutions, fresh)
        return Triples(triples) if triples else None
    if not solutions:
        return None
    # A SELECT's algebra ends in its projection (then DISTINCT, OFFSET/LIMIT): each
    # solution holds the projected variables alone, in order, so its items are its row.
    rows = dict.fromkeys(tuple(s.items()) for s in solutions)
    return OrderedRows(rows) if query.ordered else frozenset(rows)


def construct(template, solutions: list[dict], fresh) -> list[tuple[str, str, str]]:
    """The template instantiated by each solution, each triple once, in order."""
    out: dict[tuple[str, str, str], None] = {}
    for solution in solutions:
        blanks: dict[str, str] = {}
        for pattern in template:
            triple = []
            for position, term in enumerate(pattern.terms):
                if isinstance(term, Variable):
                    key = solution.get(term.name)
                elif isinstance(term, BlankNode):
                    key = blanks.get(term.label)
                    if key is None:
                        key = blanks[term.label] = fresh()
                else:
                    try:
                        key = term.key
                    except (ValueError, AttributeError):
                        key = None
                if key is None or (position == 0 and key[0] == '"') or (position == 1 and key[0] != "<"):
                    break
                triple.append(key)
            else:
                out[(triple[0], triple[1], triple[2])] = None
    return list(out)


def _reads_context(query: AlgebraQuery) -> bool:
    """Whether the query calls EXISTS, NOW() or BNODE()."""
    text = str(query.pattern).lower()
    return "exists" in text or "now(" in text or "bnode(" in text


class FreshBlankNodes:
    """One query's fresh blank nodes on a publication: ``_:g1``, ``_:g2``..., skipping any
    label the publication uses."""

    __slots__ = ("dataset", "count", "used")

    def __init__(self, dataset: Dataset):
        self.dataset = dataset
        self.count = 0
        self.used: set[str] | None = None

    def __call__(self) -> str:
        if self.used is None:
            used = self.dataset.fresh  # (the publication's blank nodes, found once for all queries)
            if used is None:
                used = self.dataset.fresh = {t for triple in self.dataset.graph.triples
                                             for t in triple if t[0] == "_"}
            self.used = used
        while True:
            self.count += 1
            node = f"_:g{self.count}"
            if node not in self.used:
                return node
