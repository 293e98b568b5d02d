"""Literal keys in and out of the SPARQL functions: reading string arguments, making results.

The functions (`rtf.query.functions` and the modules beside it) take term
keys and return term keys. This module holds what they all share: reading
an argument as a *string literal* (SPARQL 1.1 §17.4.3.1.1: a simple literal,
an ``xsd:string`` or a language-tagged literal) or as a *simple literal*,
the argument-compatibility rule of §17.4.3.1.2, and making the keys of
results (booleans, integers, strings of the same kind as an argument).

In RDF 1.1 a simple literal *is* an ``xsd:string`` literal, and the
canonical key of both is ``"s"``: "the same kind as the argument" is then
one of two kinds, plain or tagged.

>>> string_parts('"chat"@fr')
('chat', 'fr')
>>> compatible(('abc', 'en'), ('b', None)), compatible(('abc', None), ('b', 'en'))
(True, False)
"""

from __future__ import annotations

import re

from rtf.query.terms import RDF_LANGSTRING, XSD, XSD_STRING, literal_key, literal_parts

__all__ = [
    "TRUE_KEY", "FALSE_KEY", "EMPTY_KEY", "boolean_key", "integer_key", "typed_key", "string_key",
    "string_parts", "simple_lexical", "compatible", "XSD_INTEGER", "XSD_DECIMAL",
    "XSD_FLOAT", "XSD_DOUBLE", "XSD_BOOLEAN", "XSD_DATETIME", "XSD_DATE", "XSD_STRING",
    "RDF_LANGSTRING",
]

XSD_INTEGER, XSD_DECIMAL = XSD + "integer", XSD + "decimal"
XSD_FLOAT, XSD_DOUBLE = XSD + "float", XSD + "double"
XSD_BOOLEAN, XSD_DATETIME, XSD_DATE = XSD + "boolean", XSD + "dateTime", XSD + "date"

TRUE_KEY = f'"true"^^<{XSD_BOOLEAN}>'
FALSE_KEY = f'"false"^^<{XSD_BOOLEAN}>'
#: The empty simple literal.
EMPTY_KEY = '""'


def boolean_key(value: bool) -> str:
    """The xsd:boolean key of a Python truth value."""
    return TRUE_KEY if value else FALSE_KEY


def integer_key(value: int) -> str:
    """The canonical xsd:integer key of an int (no sign for zero, no leading zeros)."""
    return typed_key(str(value), XSD_INTEGER)


# What the canonical N-Triples writer escapes in a lexical form.
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f\x7f"\\]')


def typed_key(lexical: str, datatype: str) -> str:
    """The key of a typed literal whose lexical form needs no escape (a number, a date...)."""
    return f'"{lexical}"^^<{datatype}>'


def string_key(lexical: str, lang: str | None = None) -> str:
    """A simple literal, or a language-tagged one when `lang` is given."""
    if lang is None and _NEEDS_ESCAPE.search(lexical) is None:
        return f'"{lexical}"'  # nothing to escape: skip the canonicaliser
    return literal_key(lexical, None, lang)


def string_parts(key: str):
    """``(lexical, lang)`` of a string literal (simple, xsd:string or tagged), else None.

    `lang` is None for a simple literal. IRIs, blank nodes and literals of any
    other datatype are not string literals (§17.4.3.1.1).
    """
    if key[0] != '"':
        return None
    if key[-1] == '"':  # the common case: a simple literal
        return literal_parts(key).lexical, None
    parts = literal_parts(key)
    if parts.datatype == RDF_LANGSTRING:
        return parts.lexical, parts.lang
    return None


def simple_lexical(key: str):
    """The lexical form of a simple literal (an xsd:string is the same term), else None."""
    if key[0] != '"' or key[-1] != '"':
        return None
    return literal_parts(key).lexical


def compatible(first, second) -> bool:
    """Argument compatibility of two string arguments (§17.4.3.1.2), as ``(lexical, lang)`` pairs.

    Compatible when the second is untagged, or both carry the same tag.
    """
    return second[1] is None or second[1] == first[1]
