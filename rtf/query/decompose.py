"""Decomposition of a query into conjunctive branches of tuple conjuncts.

The filters of a query become a disjunctive normal form: ``!`` is pushed
down to the atoms (De Morgan), ``||`` is multiplied out. ``ftcontains`` is
one atom whatever its ``ftor`` s: a full-text expression stays whole on its
tuple conjunct, so 1,000 alternatives are one constraint, not 1,000 branches. Every
rewriting used is an identity of Kleene's three-valued logic, which is
SPARQL's logic of ``&&``, ``||`` and ``!`` with *error* as the third value,
so a branch is true exactly when the original filter is true:

* ``!(A && B) == !A || !B`` and ``!(A || B) == !A && !B``, ``!!A == A``.

An atom under ``!`` stays an atom (``!(?x < 3)`` is not rewritten to
``?x >= 3``, which differs on incomparable values).

Each positive ``ftcontains(?v, FT)`` whose variable is the object of a
triple pattern is attached to the first such pattern as its full-text
constraint (the F of the RTF paper's Definition 1); several on one
variable are joined by ``ftand``. Everything else stays a residual literal
of the branch, checked after the join.

The number of branches (structural disjunction only: ``||``, UNION and
alternative predicates) is capped at `MAX_BRANCHES`; a query whose normal
form is larger is rejected at registration, never truncated.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from itertools import product

from rtf.errors import QueryTooComplexError
from rtf.query.model import (
    And,
    Branch,
    Compare,
    Contains,
    EffectiveBoolean,
    Expr,
    FTAnd,
    FtContains,
    FTExpr,
    GroupPattern,
    In,
    LangMatches,
    Not,
    Or,
    Regex,
    TriplePattern,
    TupleConjunct,
    operand_variables,
)
from rtf.query.terms import is_variable, shared
from rtf.query.terms import variable as shared_variable

#: Largest number of conjunctive branches one query may decompose into.
MAX_BRANCHES = 64

_ATOMS = (Compare, FtContains, Regex, Contains, LangMatches, EffectiveBoolean, In)
_ATOM_TYPES = frozenset(_ATOMS)


def _too_many(n: int) -> QueryTooComplexError:
    return QueryTooComplexError(
        f"the structural disjunctions (UNION, alternative predicates (p|q), || between "
        f"filters) expand to {n} conjunctive branches, more than the cap of {MAX_BRANCHES} "
        f"(ftor inside ftcontains does not count); split the query into several queries")


def _ft_and(operands) -> FTExpr:
    """The conjunction of `operands`, flattened one level, duplicates dropped in order."""
    flat = tuple(_unique(o for op in operands
                         for o in (op.operands if isinstance(op, FTAnd) else (op,))))
    return flat[0] if len(flat) == 1 else FTAnd(flat)


def _unique(items) -> list:
    """`items` without repeats, first occurrences in order, in linear time (the
    values are hashable; a list scan per item made 8,000 ``ftand`` operands
    take ten seconds)."""
    return list(dict.fromkeys(items))


def _check_product(parts) -> None:
    n = 1
    for p in parts:
        n *= len(p)
        if n > MAX_BRANCHES:
            raise _too_many(n)


def dnf(expr: Expr, negated: bool = False) -> list[tuple[Expr, ...]]:
    """Disjunctive normal form: a list of conjunctions of (possibly negated) atoms."""
    if isinstance(expr, Not):
        return dnf(expr.operand, not negated)
    if isinstance(expr, (And, Or)):
        conjunctive = isinstance(expr, And) != negated
        parts = [dnf(op, negated) for op in expr.operands]
        if conjunctive:
            _check_product(parts)
            out = [tuple(lit for conj in combo for lit in conj) for combo in product(*parts)]
        else:
            out = [conj for p in parts for conj in p]
    elif isinstance(expr, _ATOMS):
        # ``ftcontains`` is one atom whatever its ``ftor`` s: the whole
        # full-text expression stays on one tuple conjunct (an index keys it
        # under every alternative), so alternatives never multiply branches.
        out = [(Not(expr) if negated else expr,)]
    else:
        raise TypeError(f"not a filter expression: {expr!r}")
    if len(out) > MAX_BRANCHES:
        raise _too_many(len(out))
    return out


def decompose(patterns: tuple[TriplePattern, ...], filters: tuple[Expr, ...]) -> tuple[Branch, ...]:
    """Branches of tuple conjuncts and residual literals for a query's group."""
    if all(type(f) in _ATOM_TYPES for f in filters):  # a conjunction of atoms: its own DNF
        return (_branch(patterns, _unique(filters) if len(filters) > 1 else filters),)
    conjunctions = dnf(And(tuple(filters)))
    return tuple(_unique(_branch(patterns, _unique(literals)) for literals in conjunctions))


def decompose_group(group: GroupPattern) -> tuple[Branch, ...]:
    """Branches of a group graph pattern with UNIONs and OPTIONALs.

    The OPTIONAL groups add no branch and no tuple: the branches are those
    of the required part, with the FILTERs that do not read an optional
    variable (`split_filters`); `rtf.matching.optional` extends their solutions.

    Each union side is decomposed on its own; a union contributes the
    branches of all its sides, and the group's patterns and unions are
    multiplied out (the structural DNF). A FILTER keeps its SPARQL scope:
    it is conjoined to the branches of the group it is written in, and a
    variable it reads that the side's patterns do not bind is renamed to
    one no pattern binds, so that it stays unbound (`unbound_name`).
    """
    required, _ = split_filters(group)
    combos = _structural(GroupPattern(group.patterns, required, group.unions), top=True)
    branches = []
    for patterns, filters in combos:
        branches += decompose(patterns, filters)
        if len(branches) > MAX_BRANCHES:
            raise _too_many(len(branches))
    return tuple(_unique(branches))


def _structural(group: GroupPattern, top: bool = False) -> list[tuple[tuple, tuple]]:
    """(patterns, filters) of each structural alternative of `group`."""
    combos: list[tuple[tuple, tuple]] = [((), ())]
    for union in group.unions:
        sides = [combo for side in union for combo in _structural(side)]
        if len(combos) * len(sides) > MAX_BRANCHES:
            raise _too_many(len(combos) * len(sides))
        combos = [(p1 + p2, f1 + f2) for p1, f1 in combos for p2, f2 in sides]
    out = []
    for patterns, filters in combos:
        patterns = group.patterns + patterns
        own = group.filters
        if not top:  # outside a side, a variable it does not bind is unbound in its FILTERs
            bound = {t.name for p in patterns for t in p.terms if is_variable(t)}
            own = tuple(_rename_unbound(f, bound) for f in own)
        out.append((patterns, own + filters))
    return out


def split_filters(group: GroupPattern) -> tuple[tuple, tuple]:
    """(filters of the required part, filters to apply after the OPTIONAL groups).

    A FILTER that reads a variable some OPTIONAL group binds may change
    when that group extends a solution, so it waits for the left joins;
    the others hold or fail on the required part alone.
    """
    if not group.optionals:
        return group.filters, ()
    optional_vars = set().union(*(g.variables() for g in group.optionals))
    post = tuple(f for f in group.filters if operand_variables(f) & optional_vars)
    return tuple(f for f in group.filters if f not in post), post


def unbound_name(name: str) -> str:
    """The name a FILTER's variable gets where its group does not bind it: no
    pattern can bind it (``(`` cannot occur in a SPARQL variable name)."""
    return f"{name}(unbound)"


def _rename_unbound(expr, bound: set[str]):
    """`expr` with every variable not in `bound` renamed by `unbound_name`."""
    if is_variable(expr):
        return expr if expr.name in bound else shared_variable(unbound_name(expr.name))
    if isinstance(expr, tuple):
        return tuple(_rename_unbound(e, bound) for e in expr)
    if is_dataclass(expr) and type(expr).__module__ == "rtf.query.model":
        values = {f.name: getattr(expr, f.name) for f in fields(expr)}
        renamed = {k: _rename_unbound(v, bound) for k, v in values.items()}
        if all(renamed[k] is values[k] for k in values):
            return expr
        return type(expr)(**renamed)
    return expr


def _branch(patterns, literals) -> Branch:
    object_vars = {}
    for i, p in enumerate(patterns):
        if is_variable(p.object):
            object_vars.setdefault(p.object.name, i)
    fulltext: dict[int, list[FTExpr]] = {}
    residual = []
    for lit in literals:
        if isinstance(lit, FtContains) and is_variable(lit.var) and lit.var.name in object_vars:
            fulltext.setdefault(object_vars[lit.var.name], []).append(lit.ft)
        else:
            residual.append(lit)
    tuples = []
    for i, p in enumerate(patterns):
        if i in fulltext:  # (its own query's, as a rule: not kept in the shared table)
            tuples.append(TupleConjunct(p.subject, p.predicate, p.object, _ft_and(fulltext[i])))
        else:  # shared: thousands of queries ask for the same ``?s a dbo:Person``
            tuples.append(shared(TupleConjunct(p.subject, p.predicate, p.object, None)))
    branch = Branch(tuple(tuples), tuple(residual))
    if residual or fulltext:
        # Its own query's: a branch with words or filters is rarely another
        # query's, and hashing it all again cost a third of decomposing.
        return branch
    return shared(branch)
