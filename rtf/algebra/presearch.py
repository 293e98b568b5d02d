"""What a version-3 query requires of a publication: the branches the indexes find it by.

This is the presearcher of Lucene Monitor's design, exact in the one way
that matters: an index may skip a query for a publication only when the
query's result there is certainly empty (spec section 5). So a query is
reduced to *required* triple patterns: a disjunction of branches, each a
conjunction of tuple conjuncts (`rtf.query.model.TupleConjunct`, the shapes
the trie forests and iBroker index), such that any solution of the query
needs, for some branch, a triple matching each of its tuples. The indexes
report a query when one of its branches is complete; its algebra then
decides (`rtf.algebra.results.run`).

What each operator requires (``req``):

======================================  ====================================================
basic graph pattern                     its triple patterns (blank nodes as variables)
path ``s p o``                          ``p``: the triple; ``^p``: reversed; ``p|q``: either;
                                        ``p+``: a first step from s; ``!(...)``: some triple
                                        between s and o; ``p*``, ``p?``: nothing (zero length)
Join(A, B)                              req(A) and req(B) (the branches' products)
LeftJoin(A, B), Minus(A, B)             req(A)
Filter(e, A)                            req(A), and req(P) of each ``EXISTS {P}`` conjunct
                                        of e; each ``ftcontains(?v, FT)`` conjunct of e joins
                                        FT to the tuples whose object is ?v
Union(A, B)                             req(A) or req(B)
Extend, OrderBy, Distinct, Slice, ...   req of their pattern
Group(A) with keys / without            req(A) / nothing (one group even over nothing)
VALUES, the empty group                 nothing
======================================  ====================================================

A variable that a sub-``SELECT`` does not project (or a ``GROUP BY`` does not
keep) is another variable outside it, so its tuples are renamed apart
before a FILTER outside reads them. A query whose requirement is empty
(some branch requires nothing) is evaluated on every publication; `rtf
check` says so. Branches are capped (`MAX_BRANCHES`): past it, the tuples
common to all of a disjunction's branches stand for it (less selective,
still exact), and a branch that holds another's tuples is dropped (the
smaller one finds every publication the larger does).
"""

from __future__ import annotations

from rtf.algebra.model import (
    BGP,
    AlgebraQuery,
    Alternative,
    Distinct,
    Extend,
    Filter,
    Group,
    Inverse,
    Join,
    LeftJoin,
    Link,
    Minus,
    NegatedSet,
    OneOrMore,
    OrderBy,
    PathPattern,
    Project,
    Reduced,
    Sequence,
    Slice,
    Union,
    Values,
    ZeroOrMore,
    ZeroOrOne,
)
from rtf.query.model import And, Branch, Exists, FTAnd, FtContains, Literal, TupleConjunct
from rtf.algebra.scope import in_scope
from rtf.query.terms import IRI, WILDCARD, XSD_STRING, BlankNode, Variable, literal_parts, shared

#: The most branches a query is indexed by (as `rtf.query.decompose`'s cap).
MAX_BRANCHES = 64

Conjunction = tuple[TupleConjunct, ...]


def presearch_branches(query: AlgebraQuery) -> tuple[Branch, ...]:
    """The branches the indexes find `query` by; () when it must be evaluated on
    every publication (some solution may need no triple at all)."""
    branches = _Requirements().of(query.pattern)
    if any(not b for b in branches):
        return ()
    return tuple(shared(Branch(tuple(shared(t) for t in b))) for b in branches)


class _Requirements:
    def __init__(self) -> None:
        self.renamed = 0  # sub-queries whose hidden variables were renamed apart

    def of(self, pattern) -> list[Conjunction]:
        kind = type(pattern)
        if kind is BGP:
            return [tuple(TupleConjunct(t.subject, t.predicate, t.object) for t in pattern.triples
                          if not isinstance(t.subject, Literal))]
        if kind is PathPattern:
            return self.path(pattern.subject, pattern.path, pattern.object)
        if kind is Join:
            if type(pattern.right) is Values:
                return _specialised(self.of(pattern.left), pattern.right)
            if type(pattern.left) is Values:
                return _specialised(self.of(pattern.right), pattern.left)
            return _product(self.of(pattern.left), self.of(pattern.right))
        if kind in (LeftJoin, Minus):
            return self.of(pattern.left)
        if kind is Filter:
            return self.filtered(pattern.expr, self.of(pattern.pattern), pattern.pattern)
        if kind is Union:
            return _simplified(self.of(pattern.left) + self.of(pattern.right))
        if kind in (Extend, OrderBy, Distinct, Reduced, Slice):
            return self.of(pattern.pattern)
        if kind is Project:
            return self.renamed_apart(self.of(pattern.pattern), set(pattern.vars))
        if kind is Group:
            if not pattern.keys:
                return [()]
            kept = {name for _, name in pattern.keys if name is not None}
            kept |= {expr.name for expr, _ in pattern.keys if isinstance(expr, Variable)}
            return self.renamed_apart(self.of(pattern.pattern), kept)
        if kind is Values:
            return [()]
        raise TypeError(f"not a pattern: {pattern!r}")

    def path(self, s, path, o) -> list[Conjunction]:
        kind = type(path)
        if kind is Link:
            return [(TupleConjunct(s, IRI(path.iri[1:-1]), o),)]
        if kind is Inverse:
            return self.path(o, path.path, s)
        if kind is Alternative:
            out: list[Conjunction] = []
            for part in path.parts:
                out += self.path(s, part, o)
            return _simplified(out)
        if kind is Sequence:
            ends = [s] + [self.fresh() for _ in path.parts[1:]] + [o]
            out = [()]
            for k, part in enumerate(path.parts):
                out = _product(out, self.path(ends[k], part, ends[k + 1]))
            return out
        if kind is OneOrMore:
            return self.path(s, path.path, WILDCARD)  # a first step, to anywhere
        if kind is NegatedSet:
            out = []
            if path.forward or not path.backward:
                out.append((TupleConjunct(s, WILDCARD, o),))
            if path.backward:
                out.append((TupleConjunct(o, WILDCARD, s),))
            return out
        return [()]  # ZeroOrMore, ZeroOrOne: a zero-length path needs no triple

    def filtered(self, expr, branches: list[Conjunction], inner) -> list[Conjunction]:
        conjuncts = list(expr.operands) if isinstance(expr, And) else [expr]
        for c in conjuncts:
            if isinstance(c, Exists) and not c.negated:
                # Its variables that the filtered pattern binds are substituted (the same
                # values); the others are its own: renamed apart.
                outside = set(in_scope(inner))
                branches = _product(branches, self.renamed_apart(self.of(c.pattern), outside))
        for c in conjuncts:
            if isinstance(c, FtContains) and isinstance(c.var, Variable):
                branches = [tuple(_with_text(t, c.var, c.ft) for t in b) for b in branches]
        return branches

    def fresh(self) -> BlankNode:
        self.renamed += 1
        return BlankNode(f"~{self.renamed}")

    def renamed_apart(self, branches: list[Conjunction], kept: set[str]) -> list[Conjunction]:
        """The variables other than `kept`, renamed to names of this sub-query alone."""
        self.renamed += 1
        mark = self.renamed

        def rename(term):
            if isinstance(term, Variable) and term.name not in kept:
                return BlankNode(f"~{mark}~{term.name}")
            return term

        return [tuple(TupleConjunct(rename(t.subject), rename(t.predicate), rename(t.object),
                                    t.fulltext) for t in b) for b in branches]


def _specialised(branches: list[Conjunction], values: Values) -> list[Conjunction]:
    """The branches of ``Join(P, VALUES)``: each branch whose tuples bind a variable of the
    VALUES once per row, with the row's constants in its place (every solution of P binds
    the variable to its tuple's term, and the join keeps only the rows' values). A row's
    UNDEF constrains nothing; past `MAX_BRANCHES`, the branches as they were."""
    out: list[Conjunction] = []
    for b in branches:
        named = {t.name for c in b for t in c.terms if isinstance(t, Variable)} & set(values.vars)
        if not named:
            out.append(b)
            continue
        for row in values.rows:
            constants = {v: _term(key) for v, key in zip(values.vars, row) if v in named and key is not None}
            out.append(tuple(TupleConjunct(*(constants.get(t.name, t) if isinstance(t, Variable) else t
                                              for t in c.terms), c.fulltext) for c in b))
        if len(out) > MAX_BRANCHES:
            return branches
    return _simplified(out) if values.rows else branches


def _term(key: str):
    """The query constant of a term key (an IRI or a literal: what VALUES holds)."""
    if key[0] == "<":
        return IRI(key[1:-1])
    parts = literal_parts(key)
    datatype = None if parts.lang is not None or parts.datatype == XSD_STRING else parts.datatype
    return Literal(parts.lexical, datatype, parts.lang)


def _with_text(t: TupleConjunct, var: Variable, ft) -> TupleConjunct:
    if t.object != var:
        return t
    fulltext = ft if t.fulltext is None else FTAnd((t.fulltext, ft))
    return TupleConjunct(t.subject, t.predicate, t.object, fulltext)


def _product(left: list[Conjunction], right: list[Conjunction]) -> list[Conjunction]:
    if len(left) * len(right) > MAX_BRANCHES:
        left, right = _weakened(left), _weakened(right)
    return _simplified([tuple(dict.fromkeys(a + b)) for a in left for b in right])


def _weakened(branches: list[Conjunction]) -> list[Conjunction]:
    """One branch: the tuples every branch holds (what any of them requires)."""
    if len(branches) <= 1:
        return branches
    common = set(branches[0]).intersection(*branches[1:])
    return [tuple(t for t in branches[0] if t in common)]


def _simplified(branches: list[Conjunction]) -> list[Conjunction]:
    """Without repeats and without a branch that holds another's tuples; at most
    `MAX_BRANCHES` (weakened past it)."""
    out: list[Conjunction] = []
    sets: list[frozenset] = []
    for b in sorted(dict.fromkeys(branches), key=len):
        s = frozenset(b)
        if not any(other <= s for other in sets):
            out.append(b)
            sets.append(s)
    if len(out) > MAX_BRANCHES:
        return _weakened(out)
    return out
