"""A publication: the set of triples the engines filter, with its text cached.

Terms are canonical N-Triples keys (see `rtf.query.terms`). A publication built
from an rdflib graph or from pyoxigraph triples goes through the same
canonicaliser, so its answers do not depend on where it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rtf.query.memo import bounded_by_chars
from rtf.query.terms import (
    display_iri,
    is_literal,
    lexical_form,
    literal_parts,
    oxigraph_key,
    rdflib_key,
)
from rtf.query.text import TextIndex, text_index

Triple = tuple[str, str, str]

# What may follow a literal's closing quote: nothing, a language tag, or a datatype IRI.
_LITERAL_SUFFIX = re.compile(r"(?:@[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*|\^\^<[^<>\s]*>)?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_POSITIONS = ("subject", "predicate", "object")


@bounded_by_chars(4 << 20)
def term_problem(key: str, position: int) -> str | None:
    """Why `key` cannot be the term at `position` (0, 1, 2) of a triple, or None if it can.

    Terms are N-Triples keys (`rtf.query.terms`): the subject an IRI ``<...>`` or
    a blank node ``_:x``, the predicate an IRI, the object any of these or a
    literal ``"..."``, ``"..."@tag``, ``"..."^^<datatype>``; no lone
    surrogates (they are not Unicode characters).
    """
    if _SURROGATE.search(key):
        return "contains a lone surrogate, which is not a Unicode character"
    c = key[:1]
    if c == "<":
        ok = len(key) >= 2 and key[-1] == ">"
        return None if ok else "is not an IRI <...>"
    if position == 1:
        return "is not an IRI <...> (a predicate must be one)"
    if c == "_":
        return None if key.startswith("_:") and len(key) > 2 else "is not a blank node _:x"
    if position == 0:
        return "is not an IRI <...> or a blank node _:x (a subject must be one)"
    if c != '"':
        return "is not an N-Triples term: <iri>, _:blank or \"literal\""
    end = key.rfind('"')
    if end == 0 or not _LITERAL_SUFFIX.fullmatch(key, end + 1):
        return "is not a well-formed literal"
    try:
        lexical = literal_parts(key).lexical
    except (ValueError, KeyError, IndexError, OverflowError):
        return "is a literal with an invalid escape"
    if _SURROGATE.search(lexical):
        return "contains a lone surrogate, which is not a Unicode character"
    return None


def checked_triple(triple, index: int) -> Triple:
    """`triple` as a (subject, predicate, object) tuple of valid terms, else a clear error.

    TypeError for what is not three strings, ValueError for a string that
    is not a term in its position; both name the triple's index.
    """
    if isinstance(triple, (str, bytes)) or not isinstance(triple, (tuple, list)):
        raise TypeError(f"publication triple #{index} must be a (subject, predicate, object) "
                        f"tuple of N-Triples terms, not {type(triple).__name__}")
    if len(triple) != 3:
        raise TypeError(f"publication triple #{index} has {len(triple)} terms, not 3: {triple!r:.200}")
    for position, term in enumerate(triple):
        if not isinstance(term, str):
            raise TypeError(f"publication triple #{index}: the {_POSITIONS[position]} must be a str "
                            f"(an N-Triples term), not {type(term).__name__}")
        problem = term_problem(term, position)
        if problem is not None:
            raise ValueError(f"publication triple #{index}: the {_POSITIONS[position]} "
                             f"{term!r:.200} {problem}")
    return triple if type(triple) is tuple else tuple(triple)


class Publication:
    """An identified set of triples.

    >>> p = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"Rio games"')])
    >>> p.text('"Rio games"').positions
    {'rio': [0], 'games': [1]}
    """

    __slots__ = ("id", "triples")

    def __init__(self, id: str, triples: Iterable[Triple]):
        """Raises TypeError or ValueError (naming the triple) unless every
        triple is three N-Triples terms (see `checked_triple`)."""
        self.id = id
        # A set semantics: a publication holds each triple once.
        self.triples: tuple[Triple, ...] = tuple(dict.fromkeys(
            checked_triple(t, i) for i, t in enumerate(triples)))

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
    """Accept a Publication, an rdflib Graph, or an iterable of key triples or pyoxigraph triples.

    Anything else is a TypeError, and a malformed triple a TypeError or
    ValueError naming it (`checked_triple`).
    """
    if isinstance(value, Publication):
        return value
    try:
        from rdflib import Graph
    except ImportError:  # pragma: no cover - rdflib is a dependency
        Graph = ()
    if Graph and isinstance(value, Graph):
        return Publication.from_rdflib(value)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError("a publication must be a Publication, an rdflib Graph or an iterable "
                        f"of (subject, predicate, object) triples, not {type(value).__name__}")
    triples = list(value)
    if triples and hasattr(triples[0], "subject"):
        return Publication.from_oxigraph(triples)
    pub = Publication("", triples)
    if pub.triples:
        pub.id = display_iri(pub.triples[0][0])
    return pub
