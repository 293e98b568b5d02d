"""A publication: the set of triples the engines filter, with its text cached.

Terms are canonical N-Triples keys (see `rtf.terms`). A publication built
from an rdflib graph or from pyoxigraph triples goes through the same
canonicaliser, so its answers do not depend on where it came from.
"""

from __future__ import annotations

from collections.abc import Iterable

from rtf.terms import display_iri, is_literal, lexical_form, oxigraph_key, rdflib_key
from rtf.text import TextIndex, text_index

Triple = tuple[str, str, str]


class Publication:
    """An identified set of triples.

    >>> p = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"Rio games"')])
    >>> p.text('"Rio games"').positions
    {'rio': [0], 'games': [1]}
    """

    __slots__ = ("id", "triples")

    def __init__(self, id: str, triples: Iterable[Triple]):
        self.id = id
        # A set semantics: a publication holds each triple once.
        self.triples: tuple[Triple, ...] = tuple(dict.fromkeys(triples))

    def __repr__(self) -> str:
        return f"Publication({self.id!r}, {len(self.triples)} triples)"

    def __len__(self) -> int:
        return len(self.triples)

    @staticmethod
    def text(key: str) -> TextIndex:
        """Word positions of a literal key (cached across publications)."""
        return text_index(lexical_form(key))

    @property
    def size_bytes(self) -> int:
        """Size as N-Triples text, for throughput in KB/s."""
        return sum(len(s) + len(p) + len(o) + 4 for s, p, o in self.triples)

    def literals(self) -> Iterable[str]:
        return (o for _, _, o in self.triples if is_literal(o))

    @classmethod
    def from_rdflib(cls, graph, id: str | None = None) -> "Publication":
        """A publication from an rdflib Graph (id: its identifier or first subject)."""
        triples = [(rdflib_key(s), rdflib_key(p), rdflib_key(o)) for s, p, o in graph]
        if id is None:
            id = display_iri(triples[0][0]) if triples else str(getattr(graph, "identifier", ""))
        return cls(id, triples)

    @classmethod
    def from_oxigraph(cls, triples, id: str | None = None) -> "Publication":
        """A publication from pyoxigraph Triples or Quads."""
        keys = [(oxigraph_key(t.subject), oxigraph_key(t.predicate), oxigraph_key(t.object))
                for t in triples]
        if id is None:
            id = display_iri(keys[0][0]) if keys else ""
        return cls(id, keys)


def as_publication(value) -> Publication:
    """Accept a Publication, an rdflib Graph, or an iterable of key triples."""
    if isinstance(value, Publication):
        return value
    try:
        from rdflib import Graph
    except ImportError:  # pragma: no cover - rdflib is a dependency
        Graph = ()
    if Graph and isinstance(value, Graph):
        return Publication.from_rdflib(value)
    triples = list(value)
    if triples and not isinstance(triples[0][0], str):
        return Publication.from_oxigraph(triples)
    return Publication(display_iri(triples[0][0]) if triples else "", triples)
