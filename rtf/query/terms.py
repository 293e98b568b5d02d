"""RDF terms as canonical N-Triples strings, and the query-side term values.

Publications, indexes and answers all use one representation of a concrete
RDF term: its canonical N-Triples string (``<http://x>``, ``_:b0``,
``"chat"@fr``, ``"1"^^<http://www.w3.org/2001/XMLSchema#integer>``).
Strings hash and compare fast, which is what the filtering hot path does,
and they are already the output format. pyoxigraph is the one canonicaliser:
query constants and parsed data both go through it, so the same RDF term
always has the same key (``"s"^^xsd:string`` is ``"s"``, language tags are
lower case).

The query model's terms (`IRI`, `Literal`, `Variable`, `BlankNode`,
`Wildcard`) are small immutable values; constants expose ``.key``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import pyoxigraph as ox

from rtf.query.memo import bounded_by_chars

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_SUBCLASSOF = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
XSD_STRING = XSD + "string"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

#: Predicate key of the virtual triples that expand ``a/rdfs:subClassOf*``.
#: It is not valid N-Triples, so it can never collide with a real predicate.
TYPE_PATH_KEY = "a/rdfs:subClassOf*"


def iri_key(value: str) -> str:
    """Key of the IRI `value`: ``iri_key("http://x") == "<http://x>"``."""
    return f"<{value}>"


def literal_key(lexical: str, datatype: str | None = None, lang: str | None = None) -> str:
    """Canonical N-Triples key of a literal.

    >>> literal_key("s", XSD_STRING)
    '"s"'
    >>> literal_key("chat", lang="FR")
    '"chat"@fr'
    """
    if lang:
        return str(ox.Literal(lexical, language=lang))
    if datatype and datatype != XSD_STRING:
        return str(ox.Literal(lexical, datatype=ox.NamedNode(datatype)))
    return str(ox.Literal(lexical))


def oxigraph_key(term) -> str:
    """Key of a pyoxigraph term (NamedNode, BlankNode, Literal)."""
    return str(term)


def rdflib_key(term) -> str:
    """Key of an rdflib term, through the same canonicaliser as everything else."""
    from rdflib import BNode, URIRef
    from rdflib import Literal as RLiteral

    if isinstance(term, URIRef):
        return iri_key(str(term))
    if isinstance(term, BNode):
        return f"_:{term}"
    if isinstance(term, RLiteral):
        return literal_key(str(term), str(term.datatype) if term.datatype else None, term.language)
    raise TypeError(f"not an RDF term: {term!r}")


def is_iri(key: str) -> bool:
    return key[0] == "<"


def is_blank(key: str) -> bool:
    return key[0] == "_"


def is_literal(key: str) -> bool:
    return key[0] == '"'


@dataclass(frozen=True, slots=True)
class LiteralParts:
    """A literal key taken apart: lexical form, datatype IRI, language tag."""

    lexical: str
    datatype: str
    lang: str | None


_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


@bounded_by_chars(8 << 20, weight=3)  # the key and its lexical form
def literal_parts(key: str) -> LiteralParts:
    """Split a canonical literal key; the inverse of `literal_key`."""
    end = key.rindex('"')
    body = key[1:end]
    if "\\" in body:
        body = _unescape(body)
    rest = key[end + 1:]
    if rest.startswith("@"):
        return LiteralParts(body, RDF_LANGSTRING, rest[1:])
    if rest.startswith("^^<"):
        return LiteralParts(body, rest[3:-1], None)
    return LiteralParts(body, XSD_STRING, None)


#: An escape of a literal key's body (`literal_key` writes only these): the escape is
#: replaced by `_unescaped`, the text between escapes copied in C.
_ESCAPE = re.compile(r"""\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([tbnrf"'\\]))""")


def _unescaped(m: re.Match) -> str:
    short, long, char = m.groups()
    if char is not None:
        return _ESCAPES[char]
    return chr(int(short or long, 16))


def _unescape(body: str) -> str:
    return _ESCAPE.sub(_unescaped, body)


def lexical_form(key: str) -> str:
    """Lexical form of a literal key (the text that full-text operators see)."""
    return literal_parts(key).lexical


def display_iri(key: str) -> str:
    """An IRI or blank node key without its angle brackets, for output."""
    return key[1:-1] if key[0] == "<" else key


# ---------------------------------------------------------------- query terms

#: Most values a `shared` table holds before it starts again.
SHARED_MAX = 262144
_SHARED: dict = {}


def shared(value):
    """One copy of an immutable query value (a term, a word) for all queries.

    100K registered queries repeat a small vocabulary of IRIs, variables and
    words; keeping one object of each saves about a third of the index's
    memory. Unpickled queries (Spark, the bench) are shared the same way,
    through ``__reduce__``. The table is a bounded cache: full, it starts
    again, so that it never keeps more than `SHARED_MAX` values alive.
    """
    found = _SHARED.get(value)
    if found is None:
        if len(_SHARED) >= SHARED_MAX:
            _SHARED.clear()
            _IRIS.clear()
            _VARIABLES.clear()
        found = _SHARED[value] = value
    return found


#: The shared IRIs and variables by their text, found without making and hashing a
#: value first (a query's terms are most of what it shares); emptied with `_SHARED`.
_IRIS: dict[str, "IRI"] = {}
_VARIABLES: dict[str, "Variable"] = {}


def iri(value: str) -> "IRI":
    """The shared `IRI` of `value`."""
    found = _IRIS.get(value)
    if found is None:
        found = shared(IRI(sys.intern(value)))
        _IRIS[found.value] = found
    return found


def variable(name: str) -> "Variable":
    """The shared `Variable` named `name`."""
    found = _VARIABLES.get(name)
    if found is None:
        found = shared(Variable(name))
        _VARIABLES[found.name] = found
    return found


@dataclass(frozen=True, slots=True)
class IRI:
    """An IRI constant in a query."""

    value: str

    @property
    def key(self) -> str:
        return iri_key(self.value)

    def __str__(self) -> str:
        return self.key

    def __reduce__(self):
        return (iri, (self.value,))


@dataclass(frozen=True, slots=True)
class Literal:
    """A literal constant in a query; `datatype` is None for a simple literal."""

    lexical: str
    datatype: str | None = None
    lang: str | None = None

    @property
    def key(self) -> str:
        return literal_key(self.lexical, self.datatype, self.lang)

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True, slots=True)
class Variable:
    """A query variable, named without its ``?``/``$``."""

    name: str

    def __str__(self) -> str:
        return "?" + self.name

    def __reduce__(self):
        return (variable, (self.name,))


@dataclass(frozen=True, slots=True)
class BlankNode:
    """A blank node in a query: a variable that is never projected.

    Its binding name ``_:label`` cannot clash with a variable name.
    """

    label: str

    @property
    def name(self) -> str:
        return "_:" + self.label

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Wildcard:
    """``*``: matches any term, binds nothing, joins with nothing."""

    def __str__(self) -> str:
        return "*"


@dataclass(frozen=True, slots=True)
class TypePath:
    """The predicate path ``a/rdfs:subClassOf*`` (class membership through the taxonomy)."""

    @property
    def key(self) -> str:
        return TYPE_PATH_KEY

    def __str__(self) -> str:
        return "a/rdfs:subClassOf*"


WILDCARD = Wildcard()
TYPE_PATH = TypePath()

Constant = IRI | Literal
Term = IRI | Literal | Variable | BlankNode | Wildcard | TypePath


def is_variable(term) -> bool:
    """True for terms that bind: variables and query blank nodes."""
    return isinstance(term, (Variable, BlankNode))
