"""A publication as SPARQL's default graph: its triples, looked up by any bound positions.

A publication is small (tens to a few thousand triples), so the graph keeps
plain dicts: triples by subject, by predicate and by object, made once per
publication and shared by every query evaluated on it. The taxonomy's
virtual triples (``?x a/rdfs:subClassOf* C``, `rtf.io.taxonomy`) are a graph
apart, read only by patterns with that path.

The triples are kept in sorted order, so that an evaluation never depends on
the order a file listed them in: every engine, process and run gives the
same solutions in the same order (what ``LIMIT`` without ``ORDER BY`` keeps
must not differ between engines; spec section 5).
"""

from __future__ import annotations

Triple = tuple[str, str, str]
_NONE: list = []


class Graph:
    """Triples, each once, found by their bound positions (`match`)."""

    __slots__ = ("triples", "_by_s", "_by_p", "_by_o", "_by_sp", "_by_po", "_terms")

    def __init__(self, triples) -> None:
        self.triples: list[Triple] = sorted(set(triples))
        self._by_s: dict[str, list[Triple]] | None = None
        self._by_p: dict[str, list[Triple]] | None = None
        self._by_o: dict[str, list[Triple]] | None = None
        self._by_sp: dict[tuple[str, str], list[Triple]] | None = None
        self._by_po: dict[tuple[str, str], list[Triple]] | None = None
        self._terms: list[str] | None = None

    def __len__(self) -> int:
        return len(self.triples)

    def _index(self, position: int) -> dict[str, list[Triple]]:
        index: dict[str, list[Triple]] = {}
        for t in self.triples:
            found = index.get(t[position])
            if found is None:
                index[t[position]] = [t]
            else:
                found.append(t)
        return index

    def by_subject(self) -> dict[str, list[Triple]]:
        if self._by_s is None:
            self._by_s = self._index(0)
        return self._by_s

    def by_predicate(self) -> dict[str, list[Triple]]:
        if self._by_p is None:
            self._by_p = self._index(1)
        return self._by_p

    def by_object(self) -> dict[str, list[Triple]]:
        if self._by_o is None:
            self._by_o = self._index(2)
        return self._by_o

    def match(self, s: str | None, p: str | None, o: str | None) -> list[Triple]:
        """The triples with these terms where they are given (None: any), in order."""
        if p is not None and (s is None) != (o is None):  # the common cases: one lookup
            if s is not None:
                index = self._by_sp
                if index is None:
                    index = self._by_sp = self._pairs(0)
                return index.get((s, p), _NONE)
            index = self._by_po
            if index is None:
                index = self._by_po = self._pairs(2)
            return index.get((p, o), _NONE)
        candidates = None
        if s is not None:
            candidates = self.by_subject().get(s, ())
        if p is not None:
            by_p = self.by_predicate().get(p, ())
            if candidates is None or len(by_p) < len(candidates):
                candidates = by_p
        if o is not None:
            by_o = self.by_object().get(o, ())
            if candidates is None or len(by_o) < len(candidates):
                candidates = by_o
        if candidates is None:
            return self.triples
        return [t for t in candidates
                if (s is None or t[0] == s) and (p is None or t[1] == p) and (o is None or t[2] == o)]

    def _pairs(self, position: int) -> dict[tuple[str, str], list[Triple]]:
        """Triples by (subject, predicate) (`position` 0) or (predicate, object) (2)."""
        index: dict[tuple[str, str], list[Triple]] = {}
        for t in self.triples:
            key = (t[0], t[1]) if position == 0 else (t[1], t[2])
            found = index.get(key)
            if found is None:
                index[key] = [t]
            else:
                found.append(t)
        return index

    def count(self, s: str | None, p: str | None, o: str | None) -> int:
        """An upper bound of ``len(match(s, p, o))``, cheap (for ordering joins)."""
        best = len(self.triples)
        if s is not None:
            best = min(best, len(self.by_subject().get(s, ())))
        if p is not None:
            best = min(best, len(self.by_predicate().get(p, ())))
        if o is not None:
            best = min(best, len(self.by_object().get(o, ())))
        return best

    def nodes(self) -> list[str]:
        """Every subject and object of the graph, each once, in order (the nodes a
        zero-length path may start from when both its ends are variables)."""
        if self._terms is None:
            self._terms = sorted({t[0] for t in self.triples} | {t[2] for t in self.triples})
        return self._terms


class Dataset:
    """What a query is evaluated over: the publication's triples and the taxonomy's
    virtual triples (for ``a/rdfs:subClassOf*``), each a `Graph` made when first read."""

    __slots__ = ("_triples", "_virtual", "_graph", "_types", "now", "memo", "fresh", "canon",
                 "canon_ids", "answers")

    def __init__(self, triples, virtual=(), now: str | None = None) -> None:
        self._triples = triples
        self._virtual = virtual
        self._graph: Graph | None = None
        self._types: Graph | None = None
        #: ``NOW()`` for this publication: one instant (an xsd:dateTime key)
        self.now = now
        #: Solutions of the basic graph patterns that queries share, made once
        #: (`rtf.algebra.evaluate`): (id of the pattern, its needs) -> solutions
        self.memo: dict = {}
        #: the blank node labels the publication holds (`results.FreshBlankNodes`), found when asked
        self.fresh = None
        #: lists of solutions by value, and the answers of query skeletons (`rtf.algebra.sharing`)
        self.canon: dict = {}
        self.canon_ids: dict = {}
        self.answers: dict = {}

    @property
    def graph(self) -> Graph:
        if self._graph is None:
            self._graph = Graph(self._triples)
        return self._graph

    @property
    def types(self) -> Graph:
        if self._types is None:
            self._types = Graph(self._virtual)
        return self._types
