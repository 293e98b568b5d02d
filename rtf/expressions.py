"""Filter evaluation: a FILTER expression against one solution, with SPARQL's three-valued logic.

A *solution* maps variable names (``"x"`` for ``?x``, ``"_:b"`` for a query
blank node) to term keys (`rtf.terms`). Every expression of `rtf.model`
evaluates to True, False or `ERROR` (`rtf.values`):

- ``&&``, ``||`` and ``!`` follow Kleene's logic, as SPARQL 1.1 §17.2
  says: ``true || ERROR`` is true, ``false && ERROR`` is false, any other
  mix with an error is an error, and ``!ERROR`` is ERROR;
- an unbound variable is an error wherever it is used;
- a FILTER keeps a solution only when its expression is True
  (`passes`): an error filters the solution out like false;
- evaluation is total: any exception while evaluating an atom (a constant
  that is not a valid term, a number too large, a stack too deep) is
  `ERROR` for that atom, never an exception to the caller.

Atoms:

=======================  ====================================================
``a op b``               `rtf.values.compare` (SPARQL 1.1 operator mapping)
``lang(x)``              the tag as a simple literal, ``""`` when untagged;
                         an error on IRIs and blank nodes
``ftcontains(x, FT)``    the literal's lexical form against FT (`rtf.text`);
                         false on IRIs and blank nodes (spec section 3)
``regex(x, p[, f])``     XPath ``fn:matches``: x a string literal, p and f
                         simple literals, flags ``s m i x q``; run on RE2 in
                         time linear in the text (dialect: `xpath_regex`)
``contains(a, b)``       a and b argument-compatible string literals
                         (SPARQL 1.1 §17.4.3.1.1)
``langMatches(t, r)``    RFC 4647 basic filtering, case-insensitive;
                         ``*`` matches any non-empty tag
bare ``?x``, ``true``    effective boolean value (§17.2.2)
=======================  ====================================================

Filters run for every candidate solution, so an expression is compiled
once into nested closures (`compile_filter`, cached): constants are turned
into keys, regular expressions compiled, operators looked up, and parts
without variables folded, before the first solution arrives. A constant
regex that cannot run is refused when the query is registered
(`check_regexes`, `InvalidRegexError`).

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

import re2

from rtf.errors import QueryError
from rtf.model import (And, Arithmetic, Call, Compare, Contains, EffectiveBoolean, FtContains, In,
                       Lang, LangMatches, Not, Or, Regex, operand_variables)
from rtf.parser.diagnose import position
from rtf.terms import IRI, RDF_LANGSTRING, XSD_STRING, BlankNode, Literal, Variable, literal_parts
from rtf.text import text_index
from rtf.values import (ERROR, FUNCTIONS, XSD_CASTS, arithmetic, boolean_key, comparator,
                        effective_boolean)

__all__ = ["ERROR", "evaluate", "passes", "compile_filter", "check_regexes", "xpath_regex",
           "InvalidRegexError", "RegexNotSupported", "Solution"]

Solution = Mapping[str, str]
#: A compiled expression or operand: solution -> True | False | ERROR (or a key).
Compiled = Callable[[Solution], object]


def evaluate(expr, solution: Solution):
    """Value of a filter expression on one solution: True, False or `ERROR`.

    Total: whatever goes wrong while evaluating (a term that cannot be
    read, a number too large, an expression nested too deeply for the
    stack) is SPARQL's error value, never an exception.
    """
    try:
        return _compiled(expr)(solution)
    except Exception:
        return ERROR


def passes(expr, solution: Solution) -> bool:
    """True when the filter keeps the solution (an error counts as false)."""
    try:
        return _compiled(expr)(solution) is True
    except Exception:
        return False


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
    """`expr` as a total function of a solution; hold on to it to skip the cache lookup.

    Model expressions are immutable and hashable, so the cache is keyed by
    the expression itself. The function never raises: an exception while
    evaluating an atom is `ERROR` for that atom (`&&`, `||` and `!` then
    combine it by three-valued logic), and an expression that cannot even
    be built (a constant that is not a valid RDF term) is always `ERROR`.
    """
    compiled = _build(expr)
    if isinstance(expr, (And, Or, Not)):
        return compiled  # connectives catch their operands' exceptions themselves
    return _total(compiled)


def _total(compiled: Compiled) -> Compiled:
    def total(solution):
        try:
            return compiled(solution)
        except Exception:
            return ERROR
    return total


class _NotAnExpression(TypeError):
    """A model object where an expression or operand belongs (a bug in the caller)."""


def _always_error(solution):
    return ERROR


def _build(expr) -> Compiled:
    """`expr` as a function of a solution that may raise (callers catch)."""
    build = _BUILDERS.get(type(expr))
    if build is None:
        raise _NotAnExpression(f"not a filter expression: {expr!r}")
    try:
        compiled = build(expr)
        if operand_variables(expr):
            return compiled
        # No variables: the value is the same for every solution.
        value = compiled({})
    except _NotAnExpression:
        raise  # a malformed model is a bug, not a SPARQL error
    except Exception:
        return _always_error
    return lambda solution: value


def _part(compiled: Compiled, solution):
    """An operand of a connective: its value, `ERROR` if it raised."""
    try:
        return compiled(solution)
    except Exception:
        return ERROR


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
    if isinstance(op, Call):
        return _call(op)
    if isinstance(op, Arithmetic):
        return _arithmetic(op)
    if type(op) in _BUILDERS:  # a condition used as a value: true/false as xsd:boolean
        condition = _build(op)

        def as_value(solution):
            r = _part(condition, solution)
            return r if r is ERROR else boolean_key(r)
        return as_value
    raise _NotAnExpression(f"not an operand: {op!r}")


def _call(op: Call) -> Compiled:
    """A built-in function or cast: its arguments' keys in, a key (or `ERROR`) out."""
    if op.name == "bound":
        name = op.args[0].name
        return lambda solution: boolean_key(name in solution)
    function = FUNCTIONS.get(op.name) or XSD_CASTS.get(op.name)
    if function is None:
        raise _NotAnExpression(f"unknown function: {op.name!r}")
    args = tuple(_operand(a) for a in op.args)
    if len(args) == 1:
        (arg,) = args

        def call1(solution):
            key = arg(solution)
            return ERROR if key is ERROR else function(key)
        return call1

    def call(solution):
        keys = [a(solution) for a in args]
        return ERROR if ERROR in keys else function(*keys)
    return call


def _arithmetic(op: Arithmetic) -> Compiled:
    left, right, symbol = _operand(op.left), _operand(op.right), op.op

    def compute(solution):
        a = left(solution)
        if a is ERROR:
            return ERROR
        b = right(solution)
        return ERROR if b is ERROR else arithmetic(symbol, a, b)
    return compute


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
        # RE2 matches UTF-8 bytes; searching bytes skips the wrapper's
        # translation of match offsets back to str positions.
        return ERROR if rx is ERROR else rx.search(parts.lexical.encode("utf-8")) is not None
    return regex


def _regex_pattern(expr: Regex) -> Compiled:
    """The compiled RE2 pattern of a regex call (or `ERROR`) as a function of a solution."""
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


def _in(expr: In) -> Compiled:
    """``a IN (e1, ...)`` is ``a = e1 || ...``; ``NOT IN`` is ``a != e1 && ...`` (§17.4.1.9)."""
    arg = _operand(expr.arg)
    values = tuple(_operand(v) for v in expr.values)
    equal, negated = comparator("="), expr.negated

    def member(solution):
        a = arg(solution)
        if a is ERROR:
            return ERROR
        result = False
        for value in values:
            b = value(solution)
            r = ERROR if b is ERROR else equal(a, b)
            if r is True:
                return not negated
            if r is ERROR:
                result = ERROR
        return result if result is ERROR else negated
    return member


def _effective_boolean(expr: EffectiveBoolean) -> Compiled:
    arg = _operand(expr.arg)

    def ebv(solution):
        key = arg(solution)
        return ERROR if key is ERROR else effective_boolean(key)
    return ebv


# ---------------------------------------------------------------- connectives


def _and(expr: And) -> Compiled:
    parts = tuple(_build(e) for e in expr.operands)

    def conjunction(solution):
        result = True
        for part in parts:
            try:
                r = part(solution)
            except Exception:
                r = ERROR
            if r is False:
                return False  # false && ERROR is false
            if r is ERROR:
                result = ERROR
        return result
    return conjunction


def _or(expr: Or) -> Compiled:
    parts = tuple(_build(e) for e in expr.operands)

    def disjunction(solution):
        result = False
        for part in parts:
            try:
                r = part(solution)
            except Exception:
                r = ERROR
            if r is True:
                return True  # true || ERROR is true
            if r is ERROR:
                result = ERROR
        return result
    return disjunction


def _not(expr: Not) -> Compiled:
    part = _build(expr.operand)

    def negation(solution):
        r = _part(part, solution)
        return r if r is ERROR else not r
    return negation


_BUILDERS = {
    Compare: _compare, FtContains: _ftcontains, Regex: _regex, Contains: _contains,
    LangMatches: _lang_matches, EffectiveBoolean: _effective_boolean, In: _in,
    And: _and, Or: _or, Not: _not,
}

# ------------------------------------------------------- XPath regular expressions
#
# SPARQL's regex is XPath's fn:matches. Patterns run on RE2 (google-re2),
# whose matching time is linear in the text (no backtracking), so no
# pattern can make a match slow. The translation below keeps XPath's
# meaning and refuses what RE2 cannot run or XPath does not define.

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
    """XPath pattern syntax rewritten as RE2 syntax (see `xpath_regex`)."""
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
