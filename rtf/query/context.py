"""What an expression of version 3 reads beyond its solution (spec section 5).

``EXISTS`` needs the graph, ``NOW()`` the publication's instant, ``BNODE()``
the blank nodes made so far in one solution: the algebra's evaluator
(`rtf.algebra.results`) sets an `EvaluationContext` for the duration of one
query's evaluation, and the compiled expressions (`rtf.query.expressions`)
read it. Outside one (a FILTER of version 2), those three are errors.
"""

from __future__ import annotations

from contextvars import ContextVar


class EvaluationContext:
    """What an expression of version 3 reads beyond its solution, set by the algebra's
    evaluator (`rtf.algebra.evaluate`) for the duration of one query's evaluation:
    `exists` (``EXISTS``: does a pattern have a solution under these bindings), the
    instant of ``NOW()`` and the blank nodes of ``BNODE()``."""

    __slots__ = ("exists", "now", "fresh", "bnodes", "rows")

    def __init__(self, exists, now: str | None, fresh):
        self.exists = exists
        self.now = now
        self.fresh = fresh  # () -> a blank node the publication does not hold
        self.bnodes: dict = {}
        self.rows: dict = {}  # id(solution) -> (solution, the solution it extends)

    def extended(self, new, old) -> None:
        """`new` is `old` extended by BIND or a projection's expression: the same row for
        ``BNODE`` (``(BNODE(?a) AS ?x) (BNODE(?a) AS ?y)`` is one node)."""
        self.rows[id(new)] = (new, self.row(old))

    def row(self, solution):
        found = self.rows.get(id(solution))
        return found[1] if found is not None and found[0] is solution else solution

    def bnode(self, solution, label) -> str:
        """A fresh blank node; ``BNODE(label)`` is the same one for the same label
        within one solution, another in another solution (SPARQL 1.1, 17.4.2.9)."""
        if label is not None:
            row = self.row(solution)
            key = (id(row), label)
            found = self.bnodes.get(key)
            if found is not None and found[0] is row:
                return found[1]
        node = self.fresh()
        if label is not None:
            self.bnodes[key] = (row, node)
        return node


#: The evaluation context of the query being evaluated (None outside one: then
#: ``EXISTS``, ``NOW()`` and ``BNODE()`` are errors).
CONTEXT: ContextVar[EvaluationContext | None] = ContextVar("rtf_evaluation", default=None)
