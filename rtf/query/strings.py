"""Functions on strings (SPARQL 1.1 §17.4.3) and the term constructors STRDT and STRLANG.

Arguments are *string literals* -- simple, xsd:string or language-tagged
(§17.4.3.1.1) -- and anything else is an error. Lengths and positions
count Unicode code points, as XPath does (an astral character is one
character). A function returning a string literal returns one of the
kind of its first argument (§17.4.3.1.3): tagged in, tagged out.

Regular expressions (REGEX, REPLACE) use the XPath dialect of
`rtf.query.regex` on RE2, compiled once per pattern and flags (cached). For
REPLACE, XPath's ``fn:replace`` decides what SPARQL leaves open:

- a pattern that matches the empty string is an error (``FORX0003``):
  ``replace("abc", "b*", "x")`` has no answer;
- in the replacement, ``$N`` is the text of group N (``$0`` the whole
  match; a group that did not take part is empty), ``\\$`` a dollar and
  ``\\\\`` a backslash; any other ``$`` or ``\\`` is an error
  (``FORX0004``). ``$N`` with N above the number of groups takes the
  longest prefix of the digits that names a group, or is empty when even
  one digit is too many and N <= 9 (``$10`` with one group is group 1 then
  ``0``);
- with the ``q`` flag (XPath 3.0) both the pattern and the replacement are
  taken literally.

>>> FUNCTIONS["strbefore"]('"abc"@en', '"bc"')
'"a"@en'
>>> FUNCTIONS["replace"]('"abab"', '"B."', '"Z"', '"i"')
'"aZb"'
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import quote

from rtf.query.literals import (
    EMPTY_KEY,
    RDF_LANGSTRING,
    boolean_key,
    compatible,
    integer_key,
    simple_lexical,
    string_key,
    string_parts,
)
from rtf.query.numerics import numeric
from rtf.query.regex import _xpath_regex
from rtf.query.terms import literal_key
from rtf.query.values import ERROR

__all__ = ["FUNCTIONS", "lang_matches", "xpath_replacement"]


def _string_function(compute):
    """A function of one string literal whose result keeps the argument's kind."""
    def function(key):
        s = string_parts(key)
        if s is None:
            return ERROR
        return string_key(compute(s[0]), s[1])
    return function


def _strlen(key):
    s = string_parts(key)
    return ERROR if s is None else integer_key(len(s[0]))


def _integer_argument(key):
    """The int of an xsd:integer argument (or a type derived from it), else None."""
    n = numeric(key)
    return int(n[1]) if n is not None and n[2] else None


def _substr(source, start, length=None):
    """XPath fn:substring: the characters at positions p with start <= p < start + length (1-based)."""
    s = string_parts(source)
    first = _integer_argument(start)
    if s is None or first is None:
        return ERROR
    text, lang = s
    begin = max(first, 1) - 1
    if length is None:
        return string_key(text[begin:], lang)
    count = _integer_argument(length)
    if count is None:
        return ERROR
    end = max(first + count - 1, 0)
    return string_key(text[begin:end] if end > begin else "", lang)


def _compatible_pair(a, b):
    """The ``(lexical, lang)`` of two argument-compatible string literals (§17.4.3.1.2), else None."""
    sa, sb = string_parts(a), string_parts(b)
    return None if sa is None or sb is None or not compatible(sa, sb) else (sa, sb)


def _pair_test(test):
    """STRSTARTS, STRENDS, CONTAINS: argument-compatible strings in, an xsd:boolean out."""
    def function(a, b):
        pair = _compatible_pair(a, b)
        return ERROR if pair is None else boolean_key(test(pair[0][0], pair[1][0]))
    return function


def _around(after: bool):
    """STRBEFORE / STRAFTER: the text before / after the first occurrence, of the first's kind.

    No occurrence gives the empty simple literal; an empty second argument
    occurs at the start.
    """
    def function(a, b):
        pair = _compatible_pair(a, b)
        if pair is None:
            return ERROR
        (text, lang), (piece, _) = pair
        at = text.find(piece)
        if at < 0:
            return EMPTY_KEY
        return string_key(text[at + len(piece):] if after else text[:at], lang)
    return function


def _encode_for_uri(key):
    """fn:encode-for-uri: every character but A-Z a-z 0-9 - _ . ~ as %XX of its UTF-8 bytes."""
    s = string_parts(key)
    return ERROR if s is None else string_key(quote(s[0], safe=""))


def _concat(*keys):
    """CONCAT: xsd:string when all are, the tag when all share it, else a simple literal."""
    texts, langs = [], set()
    for key in keys:
        s = string_parts(key)
        if s is None:
            return ERROR
        texts.append(s[0])
        langs.add(s[1])
    lang = langs.pop() if len(langs) == 1 else None
    return string_key("".join(texts), lang)


def lang_matches(tag: str, language_range: str) -> bool:
    """RFC 4647 §3.3.1 basic filtering, case-insensitive; ``*`` matches any non-empty tag."""
    if language_range == "*":
        return tag != ""
    tag, language_range = tag.lower(), language_range.lower()
    return tag == language_range or tag.startswith(language_range + "-")


def _langmatches(tag_key, range_key):
    tag, language_range = simple_lexical(tag_key), simple_lexical(range_key)
    if tag is None or language_range is None:
        return ERROR
    return boolean_key(lang_matches(tag, language_range))


def _strlang(lexical_key, tag_key):
    """STRLANG: a simple literal and a well-formed language tag make a tagged literal."""
    lexical, tag = simple_lexical(lexical_key), simple_lexical(tag_key)
    if lexical is None or not tag:
        return ERROR
    try:
        return literal_key(lexical, None, tag)
    except ValueError:  # not a BCP 47 tag
        return ERROR


def _strdt(lexical_key, datatype_key):
    """STRDT: a simple literal and a datatype IRI make a typed literal, as written.

    rdf:langString is refused: a literal of that type needs a language tag.
    """
    lexical = simple_lexical(lexical_key)
    if lexical is None or datatype_key[0] != "<":
        return ERROR
    datatype = datatype_key[1:-1]
    if datatype == RDF_LANGSTRING:
        return ERROR
    return literal_key(lexical, datatype)


# --------------------------------------------------------- regular expressions


def _program(pattern_key, flags: str):
    """The compiled RE2 program of a pattern (a simple literal) and flags, or `ERROR`."""
    pattern = simple_lexical(pattern_key)
    return ERROR if pattern is None else _xpath_regex(pattern, flags)


def _regex(text_key, pattern_key, flags_key=None):
    """REGEX: XPath fn:matches of a string literal against a pattern."""
    s = string_parts(text_key)
    flags = "" if flags_key is None else simple_lexical(flags_key)
    if s is None or flags is None:
        return ERROR
    program = _program(pattern_key, flags)
    if program is ERROR:
        return ERROR
    return boolean_key(program.search(s[0].encode("utf-8")) is not None)


_REPLACEMENT_PART = re.compile(r"\$([0-9]+)|\\([\\$])|([$\\])")


def _group_reference(digits: str, groups: int) -> list:
    """The parts ``$digits`` stands for: a group number and literal digits after it.

    XPath: N, all the digits, names group N when N <= groups; it is empty
    when groups < N <= 9; otherwise its last digit is literal text and the
    rule applies again to the digits before it.
    """
    tail = ""
    while True:
        number = int(digits)
        if number <= groups:
            return [number, tail]
        if number <= 9:
            return [tail]
        digits, tail = digits[:-1], digits[-1] + tail


@lru_cache(maxsize=4096)
def xpath_replacement(replacement: str, groups: int):
    """A replacement string as a tuple of parts -- str (literal text) or int (a group) -- or `ERROR`.

    `groups` is the number of capturing groups of the pattern. See the
    module's docstring for XPath's rules.

    >>> xpath_replacement("[1=$1][2=$2]", 2)
    ('[1=', 1, '][2=', 2, ']')
    >>> xpath_replacement("$10", 1), xpath_replacement("a$", 0)
    ((1, '0'), ERROR)
    """
    parts: list = []
    at = 0
    for m in _REPLACEMENT_PART.finditer(replacement):
        digits, escaped, lone = m.groups()
        if lone is not None:
            return ERROR  # FORX0004: a $ without digits, a \ without \ or $ after it
        parts.append(replacement[at:m.start()])
        parts.extend(_group_reference(digits, groups) if digits is not None else [escaped])
        at = m.end()
    parts.append(replacement[at:])
    return tuple(p for p in parts if p != "")


@lru_cache(maxsize=4096)
def _replacer(pattern_key: str, flags: str, replacement: str):
    """The compiled pattern and the parsed replacement of a REPLACE call, or `ERROR`."""
    program = _program(pattern_key, flags)
    if program is ERROR or program.search(b"") is not None:
        return ERROR  # FORX0003: a pattern that matches the empty string
    parts = (replacement,) if "q" in flags else xpath_replacement(replacement, program.groups)
    if parts is ERROR:
        return ERROR
    # RE2 matches UTF-8: working on bytes saves translating every offset back to str
    return program, tuple(p.encode("utf-8") if p.__class__ is str else p for p in parts)


def _replace(text_key, pattern_key, replacement_key, flags_key=None):
    """REPLACE: XPath fn:replace of every non-overlapping match; the result keeps the text's kind."""
    s = string_parts(text_key)
    replacement = simple_lexical(replacement_key)
    flags = "" if flags_key is None else simple_lexical(flags_key)
    if s is None or replacement is None or flags is None:
        return ERROR
    prepared = _replacer(pattern_key, flags, replacement)
    if prepared is ERROR:
        return ERROR
    program, parts = prepared
    text = s[0].encode("utf-8")
    out: list[bytes] = []
    at = 0
    for m in program.finditer(text):
        out.append(text[at:m.start()])
        for part in parts:
            out.append(part if part.__class__ is bytes else (m.group(part) or b""))
        at = m.end()
    if not out:
        return text_key  # no match: the text as it was
    out.append(text[at:])
    return string_key(b"".join(out).decode("utf-8"), s[1])


FUNCTIONS = {
    "strlen": _strlen, "substr": _substr,
    "ucase": _string_function(str.upper), "lcase": _string_function(str.lower),
    "strstarts": _pair_test(str.startswith), "strends": _pair_test(str.endswith),
    "contains": _pair_test(lambda a, b: b in a),
    "strbefore": _around(after=False), "strafter": _around(after=True),
    "encode_for_uri": _encode_for_uri, "concat": _concat,
    "langmatches": _langmatches, "strlang": _strlang, "strdt": _strdt,
    "regex": _regex, "replace": _replace,
}
