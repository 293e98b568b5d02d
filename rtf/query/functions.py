"""SPARQL 1.1's functions over term keys (§17.4) and casts (§17.5): the table the evaluator calls.

Each function takes term keys (`rtf.query.terms`) and returns a term key
or `ERROR` (`rtf.query.values`); none raises for a SPARQL error. Boolean
results are xsd:boolean literals, so a function reads the same as a
condition (by its effective boolean value) and as a value. The functions
live beside this module, one idea each:

=====================  ====================================================
`rtf.query.strings`    STRLEN SUBSTR UCASE LCASE STRSTARTS STRENDS CONTAINS
                       STRBEFORE STRAFTER ENCODE_FOR_URI CONCAT LANGMATCHES
                       REGEX REPLACE, and the constructors STRLANG STRDT
`rtf.query.numerics`   ABS ROUND CEIL FLOOR, unary ``-`` ``+``, arithmetic
`rtf.query.datetimes`  YEAR MONTH DAY HOURS MINUTES SECONDS TIMEZONE TZ, NOW
`rtf.query.hashes`     MD5 SHA1 SHA256 SHA384 SHA512
`rtf.query.casts`      ``xsd:string(...)`` and the other XSD casts
this module            STR LANG DATATYPE isIRI isBLANK isLITERAL isNUMERIC
                       sameTerm, and the functions that need context
=====================  ====================================================

`FUNCTIONS` holds the pure functions (the same arguments always give the
same key), by SPARQL's name in lower case; `FUNCTION_ARITIES` their
numbers of arguments as ``(min, max)``, max None for CONCAT's any number.
The evaluator calls the others itself, handing them what they need:
`iri_function` (IRI/URI, with the query's base), `now_key` (NOW, with the
instant of the publication), `uuid_key`, `struuid_key`, `rand_key`. BNODE,
BOUND, IF, COALESCE, EXISTS, IN and the logical operators are special
forms of the evaluator, not functions of values.

>>> FUNCTIONS["concat"]('"foo"@en', '"bar"@en')
'"foobar"@en'
>>> arithmetic("+", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
...            '"2"^^<http://www.w3.org/2001/XMLSchema#integer>')
'"3"^^<http://www.w3.org/2001/XMLSchema#integer>'
"""

from __future__ import annotations

import random
import uuid
from functools import lru_cache

import pyoxigraph as ox

from rtf.query import datetimes, hashes, numerics, strings
from rtf.query.casts import XSD_CASTS
from rtf.query.datetimes import now_key
from rtf.query.literals import FALSE_KEY, TRUE_KEY, boolean_key, simple_lexical, string_key
from rtf.query.numerics import DOUBLE, arithmetic, number_key, numeric
from rtf.query.terms import literal_parts
from rtf.query.values import ERROR

__all__ = ["arithmetic", "boolean_key", "FUNCTIONS", "FUNCTION_ARITY", "FUNCTION_ARITIES",
           "XSD_CASTS", "TRUE_KEY", "FALSE_KEY", "iri_function", "now_key", "uuid_key",
           "struuid_key", "rand_key"]


def _str(key):
    if key[0] == "<":
        return string_key(key[1:-1])
    if key[0] == '"':
        return string_key(literal_parts(key).lexical)
    return ERROR


def _lang(key):
    if key[0] != '"':
        return ERROR
    return '"' + (literal_parts(key).lang or "") + '"'


def _datatype(key):
    if key[0] != '"':
        return ERROR
    return f"<{literal_parts(key).datatype}>"  # rdf:langString when tagged, xsd:string when simple


_TERM_FUNCTIONS = {
    "str": _str, "lang": _lang, "datatype": _datatype,
    "isiri": lambda k: boolean_key(k[0] == "<"),
    "isuri": lambda k: boolean_key(k[0] == "<"),
    "isblank": lambda k: boolean_key(k.startswith("_:")),
    "isliteral": lambda k: boolean_key(k[0] == '"'),
    "isnumeric": lambda k: boolean_key(numeric(k) is not None),
    "sameterm": lambda a, b: boolean_key(a == b),  # keys are canonical: one term, one key
}

#: The pure built-in functions: name -> function of term keys (``bound`` is the caller's).
FUNCTIONS = {**_TERM_FUNCTIONS, **strings.FUNCTIONS, **numerics.FUNCTIONS,
             **datetimes.FUNCTIONS, **hashes.FUNCTIONS}

_TWO = {"sameterm", "strstarts", "strends", "contains", "strbefore", "strafter",
        "langmatches", "strlang", "strdt"}
_RANGES = {"substr": (2, 3), "regex": (2, 3), "replace": (3, 4), "concat": (0, None)}

#: Numbers of arguments of every function SPARQL writes by name, as ``(min, max)`` (max
#: None: any number): those of `FUNCTIONS`, the context functions, and the special forms
#: written like functions (BOUND, BNODE, IF, COALESCE).
FUNCTION_ARITIES: dict[str, tuple[int, int | None]] = {
    **{name: _RANGES.get(name, (2, 2) if name in _TWO else (1, 1))
       for name in FUNCTIONS if name not in ("+", "-")},
    "iri": (1, 1), "uri": (1, 1), "now": (0, 0), "uuid": (0, 0), "struuid": (0, 0), "rand": (0, 0),
    "bound": (1, 1), "bnode": (0, 1), "if": (3, 3), "coalesce": (0, None),
}

#: Language version 2's functions and their one number of arguments (kept as it was: the
#: version 2 parser reads it, and it names exactly version 2's functions).
FUNCTION_ARITY = {name: FUNCTION_ARITIES[name][0] for name in (
    "str", "lang", "datatype", "isiri", "isliteral", "isblank", "isnumeric", "sameterm",
    "lcase", "ucase", "strlen", "strstarts", "strends", "contains", "year", "month", "day",
    "abs", "bound", "isuri")}


# ------------------------------------------------------- functions with context

# Characters that cannot stand in an IRI reference (nor end the one-token
# Turtle document `_resolve` parses): refused before parsing.
_NOT_IN_IRI = frozenset('<>"{}|^`\\') | frozenset(chr(c) for c in range(0x21))


@lru_cache(maxsize=4096)
def _resolve(reference: str, base: str | None):
    """`reference` resolved against `base` (RFC 3987) as an IRI key, or `ERROR`.

    The resolution and the IRI checks are Oxigraph's (the canonicaliser of
    every key): the reference is parsed as the subject of a one-triple
    Turtle document with `base` as its base IRI.
    """
    if _NOT_IN_IRI.intersection(reference):
        return ERROR
    try:
        if base is None:
            return str(ox.NamedNode(reference))  # must be absolute already
        (triple,) = ox.parse(f"<{reference}> <p:> <p:> .", format=ox.RdfFormat.TURTLE,
                             base_iri=base)
        return str(triple.subject)
    except (ValueError, SyntaxError):
        return ERROR


def iri_function(key: str, base: str | None):
    """IRI(key) / URI(key): an IRI as it is; a simple literal (xsd:string) resolved against `base`.

    The result must be an absolute IRI: a relative reference without a base,
    or a string that is no IRI reference (``"a b"``), is an error; so is any
    other term.

    >>> iri_function('"c"', "http://example/a/b")
    '<http://example/a/c>'
    """
    if key[0] == "<":
        return key
    text = simple_lexical(key)
    return ERROR if text is None else _resolve(text, base)


def uuid_key() -> str:
    """UUID(): a fresh IRI of the urn:uuid scheme (a random, version 4 UUID)."""
    return f"<urn:uuid:{uuid.uuid4()}>"


def struuid_key() -> str:
    """STRUUID(): a fresh UUID's string (version 4) as a simple literal."""
    return f'"{uuid.uuid4()}"'


def rand_key() -> str:
    """RAND(): an xsd:double drawn uniformly from [0, 1)."""
    return number_key(DOUBLE, random.random(), False)
