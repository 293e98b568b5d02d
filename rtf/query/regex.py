"""XPath regular expressions (SPARQL's ``regex``, XPath's ``fn:matches``) on RE2.

Patterns run on RE2 (google-re2), whose matching time is linear in the
text (no backtracking), so no pattern can make a match slow. The
translation here keeps XPath's meaning and refuses what RE2 cannot run or
XPath does not define.

>>> bool(xpath_regex("^rio", "i").search("Rio de Janeiro"))
True
"""

from __future__ import annotations

import re
from functools import lru_cache

import re2

from rtf.errors import QueryError, position
from rtf.query.model import And, Not, Or, Regex
from rtf.query.terms import XSD_STRING, Literal
from rtf.query.values import ERROR

_XPATH_FLAGS = frozenset("smixq")
#: Compiled-program memory per pattern (RE2's default); a pattern over it is refused.
REGEX_MAX_MEMORY = 8 << 20
# XPath's \s is exactly these four characters (RE2's also takes form feed).
_SPACE_CHARS = r" \t\n\r"
_SPACE = f"[{_SPACE_CHARS}]"
_NOT_SPACE = f"[^{_SPACE_CHARS}]"
# Everything but the four spaces, as ranges usable inside a class.
_NOT_SPACE_RANGES = r"\x{0}-\x{8}\x{B}\x{C}\x{E}-\x{1F}\x{21}-\x{10FFFF}"
# XPath's \w: every character except punctuation, separators and "other" (\p{P}\p{Z}\p{C}).
_NOT_WORD_RANGES = r"\p{P}\p{Z}\p{C}"
_WORD = f"[^{_NOT_WORD_RANGES}]"
# Escapes that stand for the character itself (XPath SingleCharEsc, without \n \r \t).
_SELF_ESCAPES = frozenset("\\|.-^?*+{}()[]$")
_CONTROL_ESCAPES = {"n": r"\n", "r": r"\r", "t": r"\t"}
_CATEGORY = re.compile(r"\{([A-Z][a-z]?)\}")


class RegexNotSupported(Exception):
    """An XPath pattern or flags that this engine cannot run; the message says why."""


class InvalidRegexError(QueryError):
    """A constant regex pattern or flags that cannot be run: rejected at registration."""


def check_regexes(expr, text: str = "") -> None:
    """Raise `InvalidRegexError` for a regex in `expr` whose constant pattern cannot run.

    Registration calls it so that a query never sits in an index with a
    filter that is an error on every solution by construction. `text`, the
    query's text, locates the pattern (line and column) when it is found.
    A pattern or flags bound from the data is checked when it arrives
    (an error: false).
    """
    if isinstance(expr, (And, Or)):
        for operand in expr.operands:
            check_regexes(operand, text)
    elif isinstance(expr, Not):
        check_regexes(expr.operand, text)
    elif isinstance(expr, Regex):
        pattern, flags = _constant_string(expr.pattern), _constant_string(expr.flags or Literal(""))
        if pattern is None or flags is None:
            return
        try:
            xpath_regex(pattern, flags)
        except RegexNotSupported as e:
            line, column = _locate(text, pattern)
            raise InvalidRegexError(f"regex pattern {pattern!r}: {e}", line, column,
                                    text=pattern) from None


def _constant_string(op) -> str | None:
    """The lexical form of a constant simple literal, else None."""
    if isinstance(op, Literal) and op.lang is None and op.datatype in (None, XSD_STRING):
        return op.lexical
    return None


def _locate(text: str, needle: str) -> tuple[int | None, int | None]:
    """Line and column (1-based) of `needle` in `text`, else of the first ``regex``."""
    offset = text.find(needle) if needle else -1
    if offset < 0:
        offset = text.lower().find("regex")
    if offset < 0:
        return None, None
    return position(text, offset)


@lru_cache(maxsize=4096)
def _xpath_regex(pattern: str, flags: str):
    """A compiled RE2 pattern for an XPath pattern and flags, or `ERROR`."""
    try:
        return xpath_regex(pattern, flags)
    except RegexNotSupported:
        return ERROR


def xpath_regex(pattern: str, flags: str = ""):
    """Compile an XPath ``fn:matches`` pattern with its flags for RE2.

    Raises `RegexNotSupported` saying why when the pattern or flags are
    invalid XPath (``FORX0001``, ``FORX0002``) or use what RE2 cannot run:

    - back-references ``\\1``..``\\9`` (RE2 guarantees linear time by not
      having them), character class subtraction ``[a-z-[aeiou]]``, the
      block escapes ``\\p{IsBasicLatin}`` and ``\\p{Cn}``, ``\\i``/``\\c``
      (XML name characters), ``\\w`` or ``\\S`` inside a negated class;
    - a repetition count over 1000 or a compiled program over
      `REGEX_MAX_MEMORY` bytes;
    - syntax that is neither XPath nor plain: ``(?=..)``, ``(?i)``, ``\\b``,
      ``\\A``, ``\\z``, ``[[:alpha:]]``... (only ``(?:..)`` is accepted).

    Flags: ``i`` case-insensitive (Unicode simple case folding), ``s``
    ``.`` matches a newline, ``m`` ``^``/``$`` at line starts and ends,
    ``x`` whitespace outside character classes ignored, ``q`` the pattern is
    a plain string (only ``i`` still applies). ``\\d`` is ``\\p{Nd}``,
    ``\\w`` XPath's ``[^\\p{P}\\p{Z}\\p{C}]``, ``\\s`` space, tab, CR, LF;
    ``$`` outside ``m`` mode is the very end of the text.
    """
    unknown = set(flags) - _XPATH_FLAGS
    if unknown:
        raise RegexNotSupported(f"unknown regex flag {sorted(unknown)[0]!r} (XPath has s, m, i, x, q)")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = REGEX_MAX_MEMORY
    options.case_sensitive = "i" not in flags
    if "q" in flags:
        options.literal = True
        body = pattern
    else:
        options.dot_nl = "s" in flags
        body = ("(?m)" if "m" in flags else "") + _translate(pattern, "x" in flags)
    try:
        return re2.compile(body, options)
    except re2.error as e:
        reason = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise RegexNotSupported(f"invalid regular expression: {reason}") from None


def _translate(pattern: str, extended: bool) -> str:
    """XPath pattern syntax rewritten as RE2 syntax (see `xpath_regex`).

    Kept by hand (reviewed for issue 26): elementpath's `translate_pattern`, the
    well-kept XPath translator, targets Python's `re`, not RE2, and its output
    does not keep our semantics there: ``$`` becomes a look-ahead that RE2
    refuses, ``\\w`` and ``\\d`` are passed through with Python's meaning
    (``\\w`` matching ``_``, which XPath's excludes), and ``\\p{Lu}`` expands
    into kilobytes of ranges where RE2 has the category. Running Python's
    backtracking `re` instead would give up the linear-time guarantee.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            text, i = _escape(pattern, i, in_class=False)
            out.append(text)
            continue
        if c == "[":
            text, i = _char_class(pattern, i)
            out.append(text)
            continue
        if c == "(" and pattern.startswith("?", i + 1) and not pattern.startswith("?:", i + 1):
            raise RegexNotSupported("only (?:...) groups are XPath; no look-around or inline flags")
        if extended and c in " \t\n\r":
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The RE2 text of the escape at ``pattern[i]`` (a backslash), and the next index."""
    if i + 1 >= len(pattern):
        raise RegexNotSupported("a pattern cannot end with a lone backslash")
    e = pattern[i + 1]
    if e in _SELF_ESCAPES:
        return "\\" + e, i + 2
    if e in _CONTROL_ESCAPES:
        return _CONTROL_ESCAPES[e], i + 2
    if e == "s":
        return (_SPACE_CHARS if in_class else _SPACE), i + 2
    if e == "S":
        return (_NOT_SPACE_RANGES if in_class else _NOT_SPACE), i + 2
    if e == "d":
        return r"\p{Nd}", i + 2
    if e == "D":
        return r"\P{Nd}", i + 2
    if e == "w":
        return _WORD, i + 2  # inside a class: `_char_class` takes it apart
    if e == "W":
        return (_NOT_WORD_RANGES if in_class else f"[{_NOT_WORD_RANGES}]"), i + 2
    if e in "pP":
        m = _CATEGORY.match(pattern, i + 2)
        if m is None:
            raise RegexNotSupported(r"only general categories such as \p{Lu} are supported, "
                                    r"not Unicode blocks (\p{IsBasicLatin})")
        return f"\\{e}{{{m.group(1)}}}", m.end()
    if e.isdigit():
        raise RegexNotSupported(f"back-references (\\{e}) are not supported")
    if e in "iIcC":
        raise RegexNotSupported(f"\\{e} (XML name characters) is not supported")
    raise RegexNotSupported(f"\\{e} is not an XPath escape")


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """The RE2 text of the character class starting at ``pattern[i]`` ('['), and the next index.

    XPath's ``\\w`` and in-class ``\\S`` are complements that RE2 cannot put
    in a class next to other items, so a class holding ``\\w`` becomes an
    alternation: ``[a\\w]`` is ``(?:[a]|[^\\p{P}\\p{Z}\\p{C}])``.
    """
    j = i + 1
    negated = pattern.startswith("^", j)
    if negated:
        j += 1
    if pattern.startswith("]", j):
        raise RegexNotSupported("XPath has no empty character class ([] or [^])")
    items: list[str] = []
    words = False
    n = len(pattern)
    while j < n and pattern[j] != "]":
        c = pattern[j]
        if c == "[":
            raise RegexNotSupported("character class subtraction ([a-z-[aeiou]]) is not supported")
        if c == "\\":
            if pattern.startswith("w", j + 1):
                words = True
                j += 2
                continue
            if negated and pattern.startswith("S", j + 1):
                raise RegexNotSupported(r"\S inside a negated class is not supported")
            text, j = _escape(pattern, j, in_class=True)
            items.append(text)
            continue
        items.append(c)
        j += 1
    if j >= n:
        raise RegexNotSupported("unterminated character class")
    body = "".join(items)
    if not words:
        return "[" + ("^" if negated else "") + body + "]", j + 1
    if negated:
        raise RegexNotSupported(r"\w inside a negated class is not supported")
    return ("(?:[" + body + "]|" + _WORD + ")" if body else _WORD), j + 1
