"""SPARQL's LeftJoin over one publication's triples: what OPTIONAL adds to a solution.

The indexes see only a query's required part (`rtf.query.decompose.decompose_group`
leaves OPTIONAL groups out of the branches), so an OPTIONAL costs the index
and the completion count nothing. Once a branch's join has produced its
solutions, each is extended here by every compatible solution of each
OPTIONAL group, evaluated directly over the publication's triples (a
publication is small), or kept as it is when the group has none
(``LeftJoin``). The FILTERs written inside an OPTIONAL group are its
LeftJoin condition; the query's own FILTERs that read a variable of an
OPTIONAL group are applied after all the left joins (`post_filters`), as
SPARQL applies a group's FILTERs to the whole group.

The mapping algebra (`join`, `left_join`, `pattern_mappings`) is also what
the naive engine uses to evaluate UNION and OPTIONAL straight from the
query as written. A solution is a dict; an unbound variable is absent.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtf.query.decompose import split_filters
from rtf.query.expressions import passes
from rtf.query.model import GroupPattern, Query, TriplePattern, operand_variables
from rtf.query.terms import TypePath, Wildcard, is_variable

Triple = tuple[str, str, str]
Mapping = dict[str, str]


@dataclass(frozen=True)
class OptionalPart:
    """A query's OPTIONAL groups and the FILTERs to apply after them.

    `variables` are those the left joins and the post filters read: the
    branch join must keep their columns (`rtf.matching.query_table.needed_outside`).
    """

    groups: tuple[GroupPattern, ...]
    post_filters: tuple
    variables: frozenset[str]


def optional_part(query: Query) -> OptionalPart | None:
    """The query's `OptionalPart`, or None when it has no OPTIONAL."""
    group = query.group
    if group is None or not group.optionals:
        return None
    _, post = split_filters(group)
    names: set[str] = set()
    for g in group.optionals:
        names |= g.variables()
        for f in g.filters:
            names |= operand_variables(f)
    for f in post:
        names |= operand_variables(f)
    return OptionalPart(group.optionals, post, frozenset(names))


class PublicationTriples:
    """A publication's triples for evaluating patterns, grouped by predicate once."""

    __slots__ = ("triples", "virtual", "_by_predicate", "_cache")

    def __init__(self, triples: list[Triple], virtual: list[Triple]):
        self.triples = triples
        self.virtual = virtual
        self._by_predicate: dict[str, list[Triple]] | None = None
        self._cache: dict[int, list[Mapping]] = {}  # by id: the query holds the group

    def candidates(self, pattern: TriplePattern):
        p = pattern.predicate
        if isinstance(p, TypePath):
            return self.virtual
        if is_variable(p) or isinstance(p, Wildcard):
            return self.triples
        if self._by_predicate is None:
            grouped: dict[str, list[Triple]] = {}
            for t in self.triples:
                grouped.setdefault(t[1], []).append(t)
            self._by_predicate = grouped
        try:
            return self._by_predicate.get(p.key, ())
        except Exception:  # a constant without a key matches nothing
            return ()

    def group_mappings(self, group: GroupPattern) -> list[Mapping]:
        """Solutions of an OPTIONAL group without its FILTERs (they are the LeftJoin
        condition), cached for the publication."""
        found = self._cache.get(id(group))
        if found is None:
            inner = GroupPattern(group.patterns, (), group.unions, group.optionals)
            found = self._cache[id(group)] = group_solutions(inner, self, None)[0]
        return found


def pattern_mappings(pattern: TriplePattern, candidates) -> list[Mapping]:
    """The distinct mappings of the candidate triples that match `pattern`."""
    checks, binds = [], []
    for pos, term in enumerate(pattern.terms):
        if isinstance(term, (Wildcard, TypePath)):
            continue  # the candidates were chosen by the predicate already
        if is_variable(term):
            binds.append((pos, term.name))
        elif pos != 1:
            try:
                checks.append((pos, term.key))
            except Exception:
                return []
    out = {}
    for t in candidates:
        if any(t[pos] != key for pos, key in checks):
            continue
        m: Mapping = {}
        for pos, name in binds:
            if m.setdefault(name, t[pos]) != t[pos]:  # a repeated variable, another value
                break
        else:
            out[tuple(sorted(m.items()))] = m
    return list(out.values())


def compatible(a: Mapping, b: Mapping) -> bool:
    """No variable has different values in `a` and `b`."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return all(large.get(k, v) == v for k, v in small.items())


def join(left: list[Mapping], right: list[Mapping], max_rows: int | None) -> tuple[list[Mapping], bool]:
    """SPARQL's Join: every merge of a compatible pair; (rows, cut at `max_rows`)."""
    out = []
    for a in left:
        for b in right:
            if compatible(a, b):
                if max_rows is not None and len(out) >= max_rows:
                    return out, True
                out.append({**a, **b})
    return out, False


def left_join(left: list[Mapping], right: list[Mapping], condition: tuple,
              max_rows: int | None) -> tuple[list[Mapping], bool]:
    """SPARQL's LeftJoin: each left solution extended by every compatible right one whose
    merge passes every `condition`, or kept as it is when none does."""
    out = []
    for a in left:
        extended = False
        for b in right:
            if compatible(a, b):
                merged = {**a, **b}
                if all(passes(f, merged) for f in condition):
                    out.append(merged)
                    extended = True
        if not extended:
            out.append(a)
        if max_rows is not None and len(out) >= max_rows:
            return out, True
    return out, False


def extend(solutions: list[Mapping], part: OptionalPart, pub: PublicationTriples,
           max_rows: int | None) -> tuple[list[Mapping], bool]:
    """Left-join `solutions` with each OPTIONAL group, then apply the post filters."""
    cut = False
    for group in part.groups:
        solutions, c = left_join(solutions, pub.group_mappings(group), group.filters, max_rows)
        cut |= c
    if part.post_filters:
        solutions = [m for m in solutions if all(passes(f, m) for f in part.post_filters)]
    return solutions, cut


def group_solutions(group: GroupPattern, pub: PublicationTriples,
                    max_rows: int | None) -> tuple[list[Mapping], bool]:
    """SPARQL's algebra for a group as written, over one publication.

    The join of the group's patterns and unions (each union the multiset
    union of its sides' solutions), left-joined with each OPTIONAL group in
    order (its FILTERs are the LeftJoin condition), then filtered by the
    group's own FILTERs. A variable a side does not bind is absent from its
    solutions. Returns (solutions, cut) where cut says `max_rows` stopped a
    join.
    """
    rows: list[Mapping] = [{}]
    cut = False
    for pattern in group.patterns:
        rows, c = join(rows, pattern_mappings(pattern, pub.candidates(pattern)), max_rows)
        cut |= c
        if not rows:
            return rows, cut
    for union in group.unions:
        sides: list[Mapping] = []
        for side in union:
            found, c = group_solutions(side, pub, max_rows)
            sides += found
            cut |= c
        rows, c = join(rows, sides, max_rows)
        cut |= c
        if not rows:
            return rows, cut
    for optional in group.optionals:
        inner = GroupPattern(optional.patterns, (), optional.unions, optional.optionals)
        right, c = group_solutions(inner, pub, max_rows)
        rows, c2 = left_join(rows, right, optional.filters, max_rows)
        cut |= c | c2
    if group.filters:
        rows = [m for m in rows if all(passes(f, m) for f in group.filters)]
    return rows, cut
