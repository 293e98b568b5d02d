"""Which ASCII characters can begin a match of a regular expression.

Lark's root lexer is one alternation of every terminal, tried in Lark's
order at each position; Python's ``re`` tries the alternatives one after
the other, so a space or a ``{`` first fails a dozen long patterns (a
prefixed name's Unicode classes among them). The template cache
(`rtf.parser.templates`) lexes with one alternation per first character
instead, holding only the terminals that can begin with it, in the same
order. That is exact whenever each terminal's set of first characters is
a superset of the truth: a terminal left out cannot match at a position
holding that character, so the first alternative that matches is the same.

`first_chars` reads the expression as ``re`` parses it and errs on the
large side wherever it is unsure (an unknown construct, case folding with
characters beyond ASCII): it answers None, "any character", and the
terminal is tried everywhere. Only ASCII is dispatched; a text's other
characters are lexed with the whole alternation.

>>> sorted(first_chars(r"(?i:ask)"))
['A', 'a']
>>> "".join(sorted(first_chars(r"[+-]?\\d+")))
'+-0123456789'
>>> first_chars(r"x*") is None     # can match the empty string: any character
True
"""

from __future__ import annotations

import re

try:  # re's own parser and opcodes (Python 3.11 and later); without them nothing is dispatched
    from re import _constants as C
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - another Python
    C = sre_parse = None

ASCII = frozenset(chr(i) for i in range(128))

_CATEGORIES = {C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s",
               C.CATEGORY_NOT_SPACE: r"\S", C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W"}
_CASE_FLAGS = re.ASCII | re.IGNORECASE | re.UNICODE


def first_chars(regexp: str, flags: int = 0) -> frozenset[str] | None:
    """The ASCII characters a match of `regexp` (compiled with `flags`) can begin
    with: a superset, or None when any character might (or the match may be empty)."""
    if sre_parse is None:  # pragma: no cover - another Python
        return None
    try:
        parsed = sre_parse.parse(regexp, flags)
        found, nullable = _sequence(list(parsed), parsed.state.flags)
    except Exception:  # a construct this reading does not know (another Python's re): any character
        return None
    return None if found is None or nullable else frozenset(found)


def _sequence(items: list, flags: int) -> tuple[set | None, bool]:
    """(first characters or None for any, whether the sequence can match empty)."""
    out: set[str] = set()
    for op, av in items:
        found, nullable = _item(op, av, flags)
        if found is None:
            return None, True
        out |= found
        if not nullable:
            return out, False
    return out, True


def _item(op, av, flags: int) -> tuple[set | None, bool]:
    if op is C.LITERAL:
        return _variants(chr(av), flags), False
    if op is C.NOT_LITERAL:  # [^c]
        found = _variants(chr(av), flags)
        return (None, True) if found is None else (set(ASCII - found), False)
    if op is C.IN:
        return _char_class(av, flags), False
    if op is C.BRANCH:
        out, nullable = set(), False
        for branch in av[1]:
            found, empty = _sequence(branch, flags)
            if found is None:
                return None, True
            out |= found
            nullable = nullable or empty
        return out, nullable
    if op is C.SUBPATTERN:
        _, add, remove, pattern = av
        return _sequence(pattern, (flags | add) & ~remove)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        low, _, pattern = av
        found, nullable = _sequence(pattern, flags)
        return found, nullable or low == 0
    if op is C.ATOMIC_GROUP:
        return _sequence(av, flags)
    if op in (C.ASSERT, C.ASSERT_NOT, C.AT):
        return set(), True  # zero width: what follows begins the match (an assertion only narrows it)
    return None, True  # anything else (ANY, a back reference...): any character


def _variants(c: str, flags: int) -> set[str] | None:
    """The ASCII characters a literal `c` matches; None when case folding makes it unclear."""
    if flags & re.IGNORECASE:
        if ord(c) >= 128:  # e.g. the Kelvin sign folds to "k"
            return None
        return {c, c.lower(), c.upper()} & ASCII
    return {c} & ASCII


def _char_class(items: list, flags: int) -> set[str] | None:
    """The ASCII characters a ``[...]`` class matches; None when unsure."""
    fold = bool(flags & re.IGNORECASE)
    negate, member = False, set()
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            found = _variants(chr(av), flags)
            if found is None:
                return None
            member |= found
        elif op is C.RANGE:
            low, high = av
            if fold and high >= 128:
                return None
            for x in ASCII:
                if any(low <= ord(y) <= high for y in ((x, x.lower(), x.upper()) if fold else (x,))):
                    member.add(x)
        elif op is C.CATEGORY and av in _CATEGORIES:
            category = re.compile(_CATEGORIES[av], flags & _CASE_FLAGS)
            member |= {x for x in ASCII if category.fullmatch(x)}
        else:
            return None
    return set(ASCII - member) if negate else member
