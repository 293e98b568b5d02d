"""Filter evaluation: a FILTER expression against one solution, with SPARQL's three-valued logic.

A *solution* maps variable names (``"x"`` for ``?x``, ``"_:b"`` for a query
blank node) to term keys (`rtf.query.terms`). Every expression of `rtf.query.model`
evaluates to True, False or `ERROR` (`rtf.query.values`):

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
``a op b``               `rtf.query.values.compare` (SPARQL 1.1 operator mapping)
``lang(x)``              the tag as a simple literal, ``""`` when untagged;
                         an error on IRIs and blank nodes
``ftcontains(x, FT)``    the literal's lexical form against FT (`rtf.query.text`);
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

An expression is compiled once into nested closures (`compile_filter`, cached): constants
made keys, regexes compiled, parts without variables folded; version 3's ``IF``, ``COALESCE``,
``IRI()``, ``EXISTS``, ``NOW()``, ``BNODE()`` too (`rtf.query.context`).

>>> from rtf.query.model import Compare, Or, Not, Variable, Literal
>>> XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
>>> f = Or((Compare(">", Variable("n"), Literal("3", XSD_INT)),
...         Not(Compare("=", Variable("m"), Literal("a")))))
>>> evaluate(f, {"n": '"5"^^<http://www.w3.org/2001/XMLSchema#integer>'})   # ?m unbound, but 5 > 3
True
>>> evaluate(f, {"n": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'})
ERROR
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

from rtf.query.context import CONTEXT, EvaluationContext  # noqa: F401 (re-exported)
from rtf.query.functions import FUNCTIONS, XSD_CASTS, arithmetic, boolean_key
from rtf.query.model import (
    And,
    Arithmetic,
    Call,
    Coalesce,
    Compare,
    Contains,
    EffectiveBoolean,
    Exists,
    FtContains,
    If,
    In,
    IriCall,
    Lang,
    LangMatches,
    Not,
    Or,
    Regex,
    operand_variables,
)
from rtf.query.regex import _xpath_regex
from rtf.query.terms import (
    IRI,
    RDF_LANGSTRING,
    XSD_STRING,
    BlankNode,
    Literal,
    Variable,
    literal_parts,
)
from rtf.query.text import literal_text_index
from rtf.query.values import ERROR, comparator, effective_boolean

__all__ = ["ERROR", "evaluate", "passes", "compile_filter", "compile_operand", "compiled_operand",
           "compiled_filter", "Solution"]

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


def _by_identity(table: dict, limit: int, expr, make) -> Compiled:
    hit = table.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    if len(table) >= limit:
        table.clear()
    compiled = make(expr)
    table[id(expr)] = (expr, compiled)
    return compiled


def _compiled(expr) -> Compiled:
    return _by_identity(_BY_ID, _BY_ID_LIMIT, expr, compile_filter)


# The algebra's evaluator asks for every candidate's expressions on every publication: tables of its own, larger.
_FILTERS: dict[int, tuple[object, Compiled]] = {}
_OPERANDS: dict[int, tuple[object, Compiled]] = {}
_ALGEBRA_LIMIT = 1 << 16


def compiled_filter(expr) -> Compiled:
    """`compile_filter`, remembered by identity (no hashing of the expression's tree)."""
    return _by_identity(_FILTERS, _ALGEBRA_LIMIT, expr, compile_filter)


def compiled_operand(op) -> Compiled:
    """`compile_operand`, remembered by identity."""
    return _by_identity(_OPERANDS, _ALGEBRA_LIMIT, op, compile_operand)


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
        if operand_variables(expr) or _volatile(expr):
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


def compile_operand(op) -> Compiled:
    """An operand (a variable, ``lang(?v)``, a function call...) as a total function
    of a solution: its term key, or `ERROR` (never an exception)."""
    try:
        return _total(_operand(op))
    except _NotAnExpression:
        raise
    except Exception:
        return _always_error


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
    value_builder = _VALUE_BUILDERS.get(type(op))
    if value_builder is not None:
        return value_builder(op)
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
    if op.name in _CONTEXT_FUNCTIONS:
        return _context_call(op)
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
        return literal_text_index(key).matches(ft)
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


# ------------------------------------------------------- version 3: values


_CONTEXT_FUNCTIONS = frozenset({"now", "rand", "uuid", "struuid", "bnode"})


def _volatile(expr) -> bool:
    """An expression whose value is not fixed by its variables (it must not be folded)."""
    if isinstance(expr, Exists):
        return True
    if isinstance(expr, Call):
        return expr.name in _CONTEXT_FUNCTIONS or any(_volatile(a) for a in expr.args)
    for name in getattr(expr, "__slots__", ()):
        value = getattr(expr, name, None)
        if isinstance(value, tuple):
            if any(_volatile(v) for v in value if not isinstance(v, (str, int))):
                return True
        elif value is not None and not isinstance(value, (str, int, bool)) and _volatile(value):
            return True
    return False


def _context_call(op: Call) -> Compiled:
    from rtf.query.functions import rand_key, struuid_key, uuid_key
    name = op.name
    if name == "now":
        def now(solution):
            context = CONTEXT.get()
            return ERROR if context is None or context.now is None else context.now
        return now
    if name == "rand":
        return lambda solution: rand_key()
    if name == "uuid":
        return lambda solution: uuid_key()
    if name == "struuid":
        return lambda solution: struuid_key()
    arg = _operand(op.args[0]) if op.args else None  # bnode

    def bnode(solution):
        context = CONTEXT.get()
        if context is None:
            return ERROR
        if arg is None:
            return context.bnode(solution, None)
        key = arg(solution)
        if key is ERROR or key[0] != '"' or (key[-1] != '"' and literal_parts(key).datatype != XSD_STRING):
            return ERROR  # a simple literal or an xsd:string
        return context.bnode(solution, key)
    return bnode


def _if(op: If) -> Compiled:
    condition, then, otherwise = _operand(op.condition), _operand(op.then), _operand(op.otherwise)

    def choose(solution):
        key = condition(solution)
        if key is ERROR:
            return ERROR
        chosen = effective_boolean(key)
        if chosen is ERROR:
            return ERROR
        return then(solution) if chosen else otherwise(solution)
    return choose


def _coalesce(op: Coalesce) -> Compiled:
    args = tuple(_total(_operand(a)) for a in op.args)

    def first(solution):
        for arg in args:
            key = arg(solution)
            if key is not ERROR:
                return key
        return ERROR
    return first


def _iri_call(op: IriCall) -> Compiled:
    from rtf.query.functions import iri_function
    arg, base = _operand(op.arg), op.base

    def make(solution):
        key = arg(solution)
        return ERROR if key is ERROR else iri_function(key, base)
    return make


def _exists(expr: Exists) -> Compiled:
    pattern, negated = expr.pattern, expr.negated

    def exists(solution):
        context = CONTEXT.get()
        if context is None:
            return ERROR
        found = context.exists(pattern, solution)
        return not found if negated else found
    return exists


_VALUE_BUILDERS = {If: _if, Coalesce: _coalesce, IriCall: _iri_call}
_BUILDERS[Exists] = _exists
