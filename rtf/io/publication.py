"""A publication: the set of triples the engines filter, with its text cached.

Terms are canonical N-Triples keys (see `rtf.query.terms`), whatever their
source: pyoxigraph is the one canonicaliser. A publication read from a file,
built from an rdflib graph or pyoxigraph triples, parsed from a string of
RDF, or given as string triples (``'"chat"@FR'``, ``'"s"^^<...#string>'``,
``\\u`` escapes) has the same keys, so its answers do not depend on where it
came from. Terms that pyoxigraph made are already canonical and are taken as
they are (`Publication.trusted`); string triples from a caller are checked
and canonicalised once per distinct term (`canonical_term`, cached).
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeAlias

import pyoxigraph as ox

from rtf.errors import PublicationError
from rtf.io.sources import STDIN, detect_format
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

if TYPE_CHECKING:
    import rdflib

Triple = tuple[str, str, str]

#: What `Engine.match` takes as a publication (see `as_publication`).
PublicationLike: TypeAlias = ("Publication | rdflib.Graph | Iterable[tuple[str, str, str]] | Iterable[Sequence[str]]"
                   " | Iterable[ox.Triple] | Iterable[ox.Quad]")

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


# A triple around the term to canonicalise, by its position: pyoxigraph parses terms in triples.
_PROBES = ("{} <urn:rtf:p> <urn:rtf:o> .", "<urn:rtf:s> {} <urn:rtf:o> .", "<urn:rtf:s> <urn:rtf:p> {} .")


@bounded_by_chars(4 << 20)
def canonical_term(key: str, position: int) -> str:
    """The canonical N-Triples key of the term `key` at `position` (0, 1, 2) of a triple.

    What a file's parser would have made of it: language tags in lower case,
    ``"s"^^xsd:string`` as ``"s"``, ``\\u`` escapes decoded, string escapes
    as N-Triples writes them. ValueError (the reason) for what is not a term
    of that position, or not one that pyoxigraph accepts (a relative or
    malformed IRI, a bad language tag). Cached (bounded by the characters it
    keeps, `rtf.query.memo`): a term seen again costs a lookup.
    """
    problem = term_problem(key, position)
    if problem is not None:
        raise ValueError(problem)
    try:
        quads = list(ox.parse(_PROBES[position].format(key), ox.RdfFormat.N_TRIPLES))
    except SyntaxError as e:
        raise ValueError(f"is not a valid N-Triples term ({e.msg.split(': ', 1)[-1]})") from None
    if len(quads) != 1:  # the text held more than one term: `"a" . <x:s> <x:p> "b"`
        raise ValueError("is not one N-Triples term")
    quad = quads[0]
    return str((quad.subject, quad.predicate, quad.object)[position])


def checked_triple(triple, index: int) -> Triple:
    """`triple` as a (subject, predicate, object) tuple of canonical terms, else a clear error.

    TypeError for what is not three strings, ValueError for a string that
    is not a term in its position; both name the triple's index. Each term
    is canonicalised (`canonical_term`).
    """
    if isinstance(triple, (str, bytes)) or not isinstance(triple, (tuple, list)):
        raise TypeError(f"publication triple #{index} must be a (subject, predicate, object) "
                        f"tuple of N-Triples terms, not {type(triple).__name__}")
    if len(triple) != 3:
        raise TypeError(f"publication triple #{index} has {len(triple)} terms, not 3: {triple!r:.200}")
    keys = []
    for position, term in enumerate(triple):
        if not isinstance(term, str):
            raise TypeError(f"publication triple #{index}: the {_POSITIONS[position]} must be a str "
                            f"(an N-Triples term), not {type(term).__name__}")
        try:
            keys.append(canonical_term(term, position))
        except ValueError as e:
            raise ValueError(f"publication triple #{index}: the {_POSITIONS[position]} "
                             f"{term!r:.200} {e}") from None
    return keys[0], keys[1], keys[2]


class Publication:
    """An identified set of triples.

    >>> p = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"Rio games"@EN')])
    >>> p.triples[0][2]   # canonical, as if read from a file
    '"Rio games"@en'
    >>> p.text('"Rio games"@en').positions
    {'rio': [0], 'games': [1]}

    Every constructor takes the id first: ``Publication(id, triples)``,
    `from_rdf` ``(id, text)``, `from_oxigraph` ``(id, triples)``,
    `from_rdflib` ``(id, graph)``; an id of None names the publication after
    its first subject.
    """

    __slots__ = ("id", "triples", "received")

    def __init__(self, id: str, triples: Iterable[Triple]):
        """Raises TypeError or ValueError (naming the triple) unless every
        triple is three N-Triples terms (see `checked_triple`); each term is
        canonicalised (`canonical_term`)."""
        if not isinstance(id, str):
            raise TypeError(f"a publication id is a str, not {type(id).__name__}")
        self.id = id
        # A set semantics: a publication holds each triple once.
        self.triples: tuple[Triple, ...] = tuple(dict.fromkeys(
            checked_triple(t, i) for i, t in enumerate(triples)))
        #: When it was made (ns since the epoch): what ``NOW()`` reads, one instant for every
        #: query and engine that matches it (spec section 5).
        self.received = time.time_ns()

    @classmethod
    def from_canonical(cls, id: str, triples: Iterable[Triple]) -> Publication:
        """A publication of key triples that pyoxigraph made (a reader's): taken as they
        are, neither checked nor canonicalised again. Anything else goes through
        ``Publication(id, triples)``."""
        pub = cls.__new__(cls)
        pub.id = id
        pub.triples = tuple(dict.fromkeys(triples))
        pub.received = time.time_ns()
        return pub

    def now_key(self) -> str:
        """``NOW()`` on this publication: its `received` instant as an xsd:dateTime key (UTC)."""
        received = getattr(self, "received", None)
        if received is None:  # made without its constructor (an old pickle)
            received = self.received = time.time_ns()
        seconds, nanos = divmod(received, 1_000_000_000)
        stamp = datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        fraction = f"{nanos:09d}".rstrip("0")
        lexical = f"{stamp}.{fraction}Z" if fraction else f"{stamp}Z"
        return f'"{lexical}"^^<http://www.w3.org/2001/XMLSchema#dateTime>'

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
    def from_rdf(cls, id: str | None, data: str | bytes, format: str = "nt") -> Publication:
        """A publication of every triple of `data`, a string (or UTF-8 bytes) of RDF.

        `format` is ``"nt"`` (N-Triples, the default), ``"ttl"``, ``"nq"``,
        ``"trig"`` or ``"owl"`` (RDF/XML); quads lose their graph. `id` None
        names it after its first subject. A syntax error is a
        `PublicationError` with its line; relative IRIs need an ``@base``.

        >>> Publication.from_rdf(None, '<http://ex/a> <http://ex/p> "Rio"@PT .').triples
        (('<http://ex/a>', '<http://ex/p>', '"Rio"@pt'),)
        """
        if not isinstance(data, (str, bytes)):
            raise TypeError(f"data is a str or bytes of RDF, not {type(data).__name__}")
        fmt, compression = detect_format(STDIN, format)
        if compression:
            raise ValueError(f"format {format!r}: from_rdf reads uncompressed RDF; "
                             "decompress it first, or use read_publications")
        try:
            quads = list(ox.parse(data, fmt))
        except SyntaxError as e:
            raise PublicationError(e.msg.split(": ", 1)[-1], "<string>", e.lineno) from None
        return cls.from_oxigraph(id, quads)

    @classmethod
    def from_oxigraph(cls, id: Any, triples: Iterable[ox.Triple | ox.Quad] | None = None) -> Publication:
        """A publication from pyoxigraph Triples or Quads (id None: its first subject).

        The old order ``from_oxigraph(triples, id)`` still works, with a DeprecationWarning.
        """
        if not (id is None or isinstance(id, str)) or triples is None:
            id, triples = _old_order("from_oxigraph", "triples", id, triples)
        keys = [(oxigraph_key(t.subject), oxigraph_key(t.predicate), oxigraph_key(t.object))
                for t in triples]
        if id is None:
            id = display_iri(keys[0][0]) if keys else ""
        return cls.from_canonical(id, keys)

    @classmethod
    def from_rdflib(cls, id: Any, graph: rdflib.Graph | None = None) -> Publication:
        """A publication from an rdflib Graph (id None: its first subject, else the graph's
        identifier). rdflib's terms are canonicalised as string triples are.

        The old order ``from_rdflib(graph, id)`` still works, with a DeprecationWarning.
        """
        if not (id is None or isinstance(id, str)) or graph is None:
            id, graph = _old_order("from_rdflib", "graph", id, graph)
        triples = [(rdflib_key(s), rdflib_key(p), rdflib_key(o)) for s, p, o in graph]
        if id is None:
            id = display_iri(triples[0][0]) if triples else str(getattr(graph, "identifier", ""))
        return cls(id, triples)


def _old_order(method: str, what: str, first: Any, second: Any) -> tuple[Any, Any]:
    """(id, source) of a call in the old order ``method(source[, id])``, with a warning;
    TypeError for an id that is not a str."""
    if not (second is None or isinstance(second, str)):
        raise TypeError(f"Publication.{method}(id, {what}): the id is a str or None, "
                        f"not {type(second).__name__}")
    warnings.warn(f"Publication.{method}({what}, id) is deprecated: write "
                  f"Publication.{method}(id, {what}), the order of Publication(id, triples) "
                  "(id None: named after the first subject)", DeprecationWarning, stacklevel=3)
    return second, first


def as_publication(value: PublicationLike) -> Publication:
    """Accept a Publication, an rdflib Graph, or an iterable of key triples or pyoxigraph triples.

    Anything else is a TypeError, and a malformed triple a TypeError or
    ValueError naming it (`checked_triple`).
    """
    if isinstance(value, Publication):
        return value
    from rdflib import Graph  # a dependency, imported when first needed

    if isinstance(value, Graph):
        return Publication.from_rdflib(None, value)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError("a publication must be a Publication, an rdflib Graph or an iterable "
                        f"of (subject, predicate, object) triples, not {type(value).__name__}")
    triples: list[Any] = list(value)
    if triples and hasattr(triples[0], "subject"):
        return Publication.from_oxigraph(None, triples)
    pub = Publication("", triples)
    if pub.triples:
        pub.id = display_iri(pub.triples[0][0])
    return pub
