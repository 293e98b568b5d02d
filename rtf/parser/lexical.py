"""The values of string and IRI tokens: escapes decoded, checked where they are written.

SPARQL's escapes are ``\\uXXXX`` and ``\\UXXXXXXXX`` (a code point, in strings
and in IRIs) and ``\\t \\b \\n \\r \\f \\" \\' \\\\`` (strings only). A code
point escape must name a character: not a surrogate (U+D800..U+DFFF, which
UTF-8 and RDF cannot hold) and not beyond U+10FFFF. In an IRI it must not
encode a character that the IRI could not contain as written (``<>"{}|^`\\``,
space and controls). Each violation is a `QuerySyntaxError` at the escape.
"""

from __future__ import annotations

import re

from lark import Token

from rtf.errors import QuerySyntaxError

_STRING_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([tbnrf\"'\\])|(.?))",
                            re.DOTALL)
_IRI_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))")
#: What IRIREF excludes as written; an escape may not bring it in.
_NOT_IN_IRI = frozenset('<>"{}|^`\\' + "".join(map(chr, range(0x21))))


def token_position(tok: Token, offset: int) -> tuple[int, int]:
    """1-based line and column of the character `offset` places into `tok`."""
    newline = tok.rfind("\n", 0, offset)
    if newline < 0:
        return tok.line, tok.column + offset
    return tok.line + tok.count("\n", 0, offset), offset - newline


def _error(message: str, tok: Token, offset: int, written: str) -> QuerySyntaxError:
    line, column = token_position(tok, offset)
    return QuerySyntaxError(message, line, column, written)


def _code_point(m: re.Match, tok: Token, offset: int) -> str:
    written = m.group(0)
    cp = int(m.group(1) or m.group(2), 16)
    if cp > 0x10FFFF:
        raise _error(f"{written} is not a Unicode code point (the largest is \\U0010FFFF)",
                     tok, offset, written)
    if 0xD800 <= cp <= 0xDFFF:
        raise _error(f"{written} is a surrogate code point, not a character", tok, offset, written)
    return chr(cp)


def string_value(tok: Token) -> str:
    """The value of a SPARQL string token (quotes removed, escapes decoded)."""
    quote = 3 if tok[:3] in ('"""', "'''") else 1
    body = tok[quote:-quote]
    if "\\" not in body:
        return body
    for m in _STRING_ESCAPE.finditer(body):
        if m.group(4) is not None:
            raise _error(f"invalid escape {m.group(0)!r} in a string; the escapes are "
                         "\\t \\b \\n \\r \\f \\\" \\' \\\\ \\uXXXX \\UXXXXXXXX",
                         tok, quote + m.start(), m.group(0))
        if m.group(3) is None:
            _code_point(m, tok, quote + m.start())
    return _decode(body)


def iri_text(tok: Token) -> str:
    """The IRI written in an IRIREF token (``<...>`` removed, escapes decoded)."""
    body = tok[1:-1]
    if "\\" not in body:
        return body
    for m in _IRI_ESCAPE.finditer(body):
        c = _code_point(m, tok, 1 + m.start())
        if c in _NOT_IN_IRI:
            raise _error(f"{m.group(0)} encodes {c!r}, which an IRI cannot contain",
                         tok, 1 + m.start(), m.group(0))
    return _decode(body)


def _decode(body: str) -> str:
    """`body` with its escapes (all checked valid) decoded.

    Each SPARQL escape means the same in Python's ``unicode_escape`` codec,
    which reads Latin-1 bytes: other characters go in as ``\\uXXXX`` escapes
    of their own. The codec decodes in C at a small multiple of the text's
    size; `re.sub` with a function built a list of pieces 20 times as large.
    """
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
