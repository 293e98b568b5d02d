"""Filter evaluation: a FILTER expression against one solution, with SPARQL's three-valued logic.

A *solution* maps variable names (``"x"`` for ``?x``, ``"_:b"`` for a query
blank node) to term keys (`rtf.terms`). Every expression of `rtf.model`
evaluates to True, False or `ERROR` (`rtf.values`):

- ``&&``, ``||`` and ``!`` follow Kleene's logic, as SPARQL 1.1 §17.2
  says: ``true || ERROR`` is true, ``false && ERROR`` is false, any other
  mix with an error is an error, and ``!ERROR`` is ERROR;
- an unbound variable is an error wherever it is used;
- a FILTER keeps a solution only when its expression is True
  (`passes`): an error filters the solution out like false.

Atoms:

=======================  ====================================================
``a op b``               `rtf.values.compare` (SPARQL 1.1 operator mapping)
``lang(x)``              the tag as a simple literal, ``""`` when untagged;
                         an error on IRIs and blank nodes
``ftcontains(x, FT)``    the literal's lexical form against FT (`rtf.text`);
                         false on IRIs and blank nodes (spec section 3)
``regex(x, p[, f])``     XPath ``fn:matches``: x a string literal, p and f
                         simple literals, flags ``i s m x``; the pattern is
                         translated to Python's `re` (see `_xpath_regex`)
``contains(a, b)``       a and b argument-compatible string literals
                         (SPARQL 1.1 §17.4.3.1.1)
``langMatches(t, r)``    RFC 4647 basic filtering, case-insensitive;
                         ``*`` matches any non-empty tag
bare ``?x``, ``true``    effective boolean value (§17.2.2)
=======================  ====================================================

Filters run for every candidate solution, so an expression is compiled
once into nested closures (`compile_filter`, cached): constants are turned
into keys, regular expressions compiled, operators looked up, and parts
without variables folded, before the first solution arrives.

>>> from rtf.model import Compare, Or, Not, Variable, Literal
>>> XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
>>> f = Or((Compare(">", Variable("n"), Literal("3", XSD_INT)),
...         Not(Compare("=", Variable("m"), Literal("a")))))
>>> evaluate(f, {"n": '"5"^^<http://www.w3.org/2001/XMLSchema#integer>'})   # ?m unbound, but 5 > 3
True
>>> evaluate(f, {"n": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'})
ERROR
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache

from rtf.model import (And, Compare, Contains, EffectiveBoolean, FtContains, Lang, LangMatches,
                       Not, Or, Regex, operand_variables)
from rtf.terms import IRI, RDF_LANGSTRING, XSD_STRING, BlankNode, Literal, Variable, literal_parts
from rtf.text import text_index
from rtf.values import ERROR, comparator, effective_boolean

__all__ = ["ERROR", "evaluate", "passes", "compile_filter", "Solution"]

Solution = Mapping[str, str]
#: A compiled expression or operand: solution -> True | False | ERROR (or a key).
Compiled = Callable[[Solution], object]


def evaluate(expr, solution: Solution):
    """Value of a filter expression on one solution: True, False or `ERROR`."""
    return _compiled(expr)(solution)


def passes(expr, solution: Solution) -> bool:
    """True when the filter keeps the solution (an error counts as false)."""
    return _compiled(expr)(solution) is True


# Callers evaluate the same expression objects over and over; looking them up
# by identity saves hashing the whole expression tree on every call. Each
# entry holds its expression, so an id cannot be reused while it is cached.
_BY_ID: dict[int, tuple[object, Compiled]] = {}
_BY_ID_LIMIT = 8192


def _compiled(expr) -> Compiled:
    hit = _BY_ID.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    if len(_BY_ID) >= _BY_ID_LIMIT:
        _BY_ID.clear()
    compiled = compile_filter(expr)
    _BY_ID[id(expr)] = (expr, compiled)
    return compiled


@lru_cache(maxsize=8192)
def compile_filter(expr) -> Compiled:
    """`expr` as a function of a solution; hold on to it to skip the cache lookup.

    Model expressions are immutable and hashable, so the cache is keyed by
    the expression itself.
    """
    try:
        build = _BUILDERS[type(expr)]
    except KeyError:
        raise TypeError(f"not a filter expression: {expr!r}") from None
    compiled = build(expr)
    if not operand_variables(expr):
        # No variables: the value is the same for every solution.
        value = compiled({})
        return lambda solution: value
    return compiled


# ------------------------------------------------------------------ operands


def _operand(op) -> Compiled:
    """An operand as a function of a solution returning a term key or `ERROR`."""
    if isinstance(op, (Variable, BlankNode)):
        name = op.name

        def bound(solution):
            key = solution.get(name)
            return ERROR if key is None else key
        return bound
    if isinstance(op, (IRI, Literal)):
        key = op.key  # computed once: `.key` goes through pyoxigraph
        return lambda solution: key
    if isinstance(op, Lang):
        arg = _operand(op.arg)

        def lang(solution):
            key = arg(solution)
            if key is ERROR or key[0] != '"':
                return ERROR
            # Canonical tags are lower-case letters, digits and '-': nothing to escape.
            return '"' + (literal_parts(key).lang or "") + '"'
        return lang
    raise TypeError(f"not an operand: {op!r}")


def _string_parts(key):
    """Parts of a string literal (simple, xsd:string or language-tagged), else None."""
    if key is ERROR or key[0] != '"':
        return None
    parts = literal_parts(key)
    return parts if parts.datatype == XSD_STRING or parts.datatype == RDF_LANGSTRING else None


def _simple_lexical(key):
    """Lexical form of a simple literal (or xsd:string, the same term), else None."""
    if key is ERROR or key[0] != '"' or key[-1] != '"':
        return None
    return literal_parts(key).lexical


# --------------------------------------------------------------------- atoms


def _compare(expr: Compare) -> Compiled:
    test = comparator(expr.op)
    left, right = _operand(expr.left), _operand(expr.right)

    def compare(solution):
        a = left(solution)
        if a is ERROR:
            return ERROR
        b = right(solution)
        if b is ERROR:
            return ERROR
        return test(a, b)
    return compare


def _ftcontains(expr: FtContains) -> Compiled:
    arg, ft = _operand(expr.var), expr.ft

    def ftcontains(solution):
        key = arg(solution)
        if key is ERROR:
            return ERROR
        if key[0] != '"':
            return False
        return text_index(literal_parts(key).lexical).matches(ft)
    return ftcontains


def _regex(expr: Regex) -> Compiled:
    arg, pattern = _operand(expr.arg), _regex_pattern(expr)

    def regex(solution):
        parts = _string_parts(arg(solution))
        if parts is None:
            return ERROR
        rx = pattern(solution)
        return ERROR if rx is ERROR else rx.search(parts.lexical) is not None
    return regex


def _regex_pattern(expr: Regex) -> Compiled:
    """The compiled Python pattern of a regex call (or `ERROR`) as a function of a solution."""
    pattern = _operand(expr.pattern)
    flags = _operand(expr.flags) if expr.flags is not None else (lambda solution: '""')

    def compiled(solution):
        p = _simple_lexical(pattern(solution))
        f = _simple_lexical(flags(solution))
        return ERROR if p is None or f is None else _xpath_regex(p, f)

    if operand_variables(expr.pattern) or operand_variables(expr.flags):
        return compiled
    # The usual case: a constant pattern, compiled before the first solution.
    constant = compiled({})
    return lambda solution: constant


def _contains(expr: Contains) -> Compiled:
    arg, needle = _operand(expr.arg), _operand(expr.needle)

    def contains(solution):
        a = _string_parts(arg(solution))
        b = _string_parts(needle(solution))
        if a is None or b is None:
            return ERROR
        # Argument-compatible (§17.4.3.1.1): the needle is untagged, or both
        # carry the same tag.
        if b.lang is not None and b.lang != a.lang:
            return ERROR
        return b.lexical in a.lexical
    return contains


def _lang_matches(expr: LangMatches) -> Compiled:
    tag, rng = _operand(expr.tag), _operand(expr.range)

    def lang_matches(solution):
        t = _simple_lexical(tag(solution))
        r = _simple_lexical(rng(solution))
        if t is None or r is None:
            return ERROR
        if r == "*":
            return t != ""
        # RFC 4647 §3.3.1: the range equals the tag or a prefix of it ending before a '-'.
        t, r = t.lower(), r.lower()
        return t == r or t.startswith(r + "-")
    return lang_matches


def _effective_boolean(expr: EffectiveBoolean) -> Compiled:
    arg = _operand(expr.arg)

    def ebv(solution):
        key = arg(solution)
        return ERROR if key is ERROR else effective_boolean(key)
    return ebv


# ---------------------------------------------------------------- connectives


def _and(expr: And) -> Compiled:
    parts = tuple(compile_filter(e) for e in expr.operands)

    def conjunction(solution):
        result = True
        for part in parts:
            r = part(solution)
            if r is False:
                return False  # false && ERROR is false
            if r is ERROR:
                result = ERROR
        return result
    return conjunction


def _or(expr: Or) -> Compiled:
    parts = tuple(compile_filter(e) for e in expr.operands)

    def disjunction(solution):
        result = False
        for part in parts:
            r = part(solution)
            if r is True:
                return True  # true || ERROR is true
            if r is ERROR:
                result = ERROR
        return result
    return disjunction


def _not(expr: Not) -> Compiled:
    part = compile_filter(expr.operand)

    def negation(solution):
        r = part(solution)
        return r if r is ERROR else not r
    return negation


_BUILDERS = {
    Compare: _compare, FtContains: _ftcontains, Regex: _regex, Contains: _contains,
    LangMatches: _lang_matches, EffectiveBoolean: _effective_boolean,
    And: _and, Or: _or, Not: _not,
}

# ------------------------------------------------------- XPath regular expressions

_FLAGS = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE, "x": 0}
# XPath's \s is exactly these four characters; Python's also takes Unicode spaces.
_XPATH_SPACE = " \\t\\n\\r"


class _Unsupported(Exception):
    """An XPath pattern this translation cannot express in Python's `re`."""


@lru_cache(maxsize=4096)
def _xpath_regex(pattern: str, flags: str):
    """A compiled Python pattern for an XPath pattern and flags, or `ERROR`.

    An unknown flag or an invalid pattern is an error (``FORX0001``,
    ``FORX0002``), as are XPath features Python's `re` lacks: character
    class subtraction ``[a-z-[aeiou]]``, ``\\p{..}``, ``\\i``, ``\\c``.
    Known gaps: ``\\w`` keeps Python's meaning (letters, digits and ``_``;
    XPath's also takes symbols such as ``$``), as does ``\\S`` inside a
    character class; Python-only syntax such as ``(?=...)`` is accepted.
    """
    bits = 0
    for flag in flags:
        if flag not in _FLAGS:
            return ERROR
        bits |= _FLAGS[flag]
    try:
        return re.compile(_translate(pattern, "m" in flags, "x" in flags), bits)
    except (re.error, _Unsupported):
        return ERROR


def _translate(pattern: str, multiline: bool, extended: bool) -> str:
    """Rewrite the places where XPath and Python regular expressions differ.

    - ``$`` outside multi-line mode ends the whole string (Python's ``$``
      also matches before a final newline): ``\\Z``.
    - ``\\s``/``\\S`` are four characters in XPath.
    - With ``x``, whitespace outside character classes is removed (Python's
      VERBOSE would also read ``#`` as a comment).
    """
    out = []
    in_class = False
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            escape = pattern[i:i + 2]  # a trailing lone '\' stays invalid for re
            if escape == "\\s":
                escape = _XPATH_SPACE if in_class else f"[{_XPATH_SPACE}]"
            elif escape == "\\S" and not in_class:
                escape = f"[^{_XPATH_SPACE}]"
            out.append(escape)
            i += 2
            continue
        if in_class:
            if c == "[":  # unescaped '[' in a class: subtraction, or invalid XPath
                raise _Unsupported(pattern)
            in_class = c != "]"
        elif c == "[":
            in_class = True
            # XPath has no empty class, but Python would read "[]" or "[^]" as
            # the start of a class containing ']' and the two would disagree.
            if pattern.startswith("]", i + 1) or pattern.startswith("^]", i + 1):
                raise _Unsupported(pattern)
        elif extended and c in " \t\n\r":
            i += 1
            continue
        elif c == "$" and not multiline:
            c = "\\Z"
        out.append(c)
        i += 1
    return "".join(out)
