"""The brute-force reference engine: the ground truth of every other engine.

It evaluates every registered query on every publication, straight from
the query as written: each triple pattern is matched against the
publication's triples, the pattern tables are hash-joined, and the filters
are applied with SPARQL's three-valued logic (`rtf.query.expressions`). It does
not use the disjunctive normal form, the tuple conjuncts, the query table
or the shared join of `rtf.filter`, so it checks all of them independently.

What makes it fast enough to be a reference on real publications, without
changing any answer:

- a variable that is *existential* -- in one pattern only, not projected,
  not in any filter -- cannot change which projected solutions exist, so
  it is dropped from its pattern's table before the join (duplicates go);
- the join starts from the smallest table and always takes next the
  smallest table connected to what is bound (a cross product only when the
  query itself has one);
- a filter runs as soon as the variables it reads are bound, and a
  variable no filter, later pattern or projection needs is then dropped.

Work is bounded: a query's join keeps at most `limit * JOIN_ROWS_PER_SOLUTION`
rows, and at most `limit` distinct projected solutions are reported; either
cut flags the query as truncated. A cut never hides a match: when all the
rows a cut join kept fail the filters, it is joined again with 16 times the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import sys

from rtf.matching.confirm import Confirmation
from rtf.query.expressions import passes
from rtf.filter import JOIN_ROWS_PER_SOLUTION, QueryIndex, Solutions, Triple
from rtf.query.model import Query, TriplePattern, operand_variables
from rtf.matching.optional import PublicationTriples, group_solutions
from rtf.query.terms import TypePath, Wildcard, is_variable

Row = tuple[str, ...]


@dataclass(frozen=True)
class PatternPlan:
    """How one triple pattern reads a publication.

    `source` says where its candidates come from: ``"virtual"`` (the
    taxonomy path), ``"all"`` (a variable or wildcard predicate) or
    ``"predicate"`` (the triples of `predicate`). `constants` are (position,
    key) checks; `binds` (position, name) pairs in first-occurrence order;
    `same` (position, earlier position) pairs of a variable repeated in the
    pattern; `keep` the bound names the join needs.
    """

    source: str
    predicate: str | None
    constants: tuple[tuple[int, str | None], ...]
    binds: tuple[tuple[int, str], ...]
    same: tuple[tuple[int, int], ...]
    keep: tuple[str, ...]


@dataclass(frozen=True)
class QueryPlan:
    patterns: tuple[PatternPlan, ...]
    #: (filter, names of the pattern variables it reads), in query order
    filters: tuple[tuple[object, frozenset[str]], ...]
    projection: tuple[str, ...]


def _key(term) -> str | None:
    """A constant's key; None (matches no triple) when it is not a valid term."""
    try:
        return term.key
    except Exception:
        return None


def plan_query(query: Query) -> QueryPlan:
    """The evaluation plan of a query: its patterns as table builders, its filters' variables."""
    pattern_vars = [{t.name for t in p.terms if is_variable(t)} for p in query.patterns]
    all_pattern_vars = set().union(*pattern_vars)
    filters = tuple((f, frozenset(operand_variables(f) & all_pattern_vars)) for f in query.filters)
    in_filters = set().union(*(names for _, names in filters))
    needed = set(query.projection) | in_filters
    counts: dict[str, int] = {}
    for names in pattern_vars:
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    plans = []
    for pattern, names in zip(query.patterns, pattern_vars):
        keep = {n for n in names if counts[n] > 1 or n in needed}
        plans.append(_pattern_plan(pattern, keep))
    return QueryPlan(tuple(plans), filters, query.projection)


def _pattern_plan(pattern: TriplePattern, keep: set[str]) -> PatternPlan:
    constants, binds, same = [], [], []
    first: dict[str, int] = {}
    for pos, term in enumerate(pattern.terms):
        if isinstance(term, (Wildcard, TypePath)):
            continue  # TypePath triples are chosen by their source already
        if is_variable(term):
            if term.name in first:
                same.append((pos, first[term.name]))
            else:
                first[term.name] = pos
                binds.append((pos, term.name))
        elif pos != 1:
            constants.append((pos, _key(term)))
    p = pattern.predicate
    if isinstance(p, TypePath):
        source, predicate = "virtual", None
    elif is_variable(p) or isinstance(p, Wildcard):
        source, predicate = "all", None
    else:
        source, predicate = "predicate", _key(p)
    kept = tuple(name for _, name in binds if name in keep)
    return PatternPlan(source, predicate, tuple(constants), tuple(binds), tuple(same), kept)


def by_predicate(triples: list[Triple]) -> dict[str, list[Triple]]:
    """The publication's triples grouped by predicate (a publication-side lookup)."""
    out: dict[str, list[Triple]] = {}
    for t in triples:
        out.setdefault(t[1], []).append(t)
    return out


def pattern_table(plan: PatternPlan, triples: list[Triple], virtual: list[Triple],
                  grouped: dict[str, list[Triple]]) -> set[Row]:
    """Distinct rows (values of `plan.keep`, in order) of the triples matching a pattern."""
    if plan.source == "virtual":
        candidates = virtual
    elif plan.source == "all":
        candidates = triples
    else:
        candidates = grouped.get(plan.predicate, ())
    where = {name: pos for pos, name in plan.binds}
    keep = [where[name] for name in plan.keep]
    rows = set()
    for t in candidates:
        if all(t[pos] == key for pos, key in plan.constants) and \
                all(t[a] == t[b] for a, b in plan.same):
            rows.add(tuple(t[i] for i in keep))
    return rows


def query_solutions(query: Query, triples: list[Triple], virtual: list[Triple],
                    grouped: dict[str, list[Triple]] | None = None, limit: int | None = None,
                    plan: QueryPlan | None = None) -> tuple[set[tuple], bool]:
    """Distinct projected solutions of `query` over a publication, and whether they were cut.

    With a `limit`, at most `limit` solutions are returned, and the join
    holds at most ``limit * JOIN_ROWS_PER_SOLUTION`` rows; the flag is True
    when either bound cut the answer.
    """
    if plan is None:
        plan = plan_query(query)
    if grouped is None:
        grouped = by_predicate(triples)
    max_rows = None if limit is None else limit * JOIN_ROWS_PER_SOLUTION
    while True:
        found, truncated = _bounded_solutions(plan, triples, virtual, grouped, limit, max_rows)
        if found or not truncated:
            return found, truncated
        max_rows *= 16  # a cut join whose rows all failed: it may match past the cut


def _bounded_solutions(plan: QueryPlan, triples, virtual, grouped, limit, max_rows) -> tuple[set[tuple], bool]:
    """`query_solutions` with its join cut at `max_rows` rows a step (None: no cut)."""
    # Filters on no pattern variable read only constants and unbound variables.
    pending = list(plan.filters)
    if any(not names and not passes(f, {}) for f, names in pending):
        return set(), False
    pending = [(f, names) for f, names in pending if names]
    tables = []
    for p in plan.patterns:
        rows = pattern_table(p, triples, virtual, grouped)
        if not rows:
            return set(), False
        tables.append((p.keep, rows))

    tables.sort(key=lambda t: len(t[1]))
    cols, rows = tables.pop(0)
    cols, rows, truncated = list(cols), list(rows), False
    while True:
        rows, pending = _apply_ready_filters(cols, rows, pending)
        cols, rows = _drop_unneeded(cols, rows, plan.projection, pending, tables)
        if not rows or not tables:
            break
        bound = set(cols)
        connected = [i for i, (names, _) in enumerate(tables) if bound.intersection(names)]
        names, table = tables.pop(min(connected or range(len(tables)), key=lambda i: len(tables[i][1])))
        cols, rows, cut = _hash_join(cols, rows, names, table, max_rows)
        truncated |= cut
    return _project(cols, rows, plan.projection, limit, truncated)


def _apply_ready_filters(cols, rows, pending):
    """Keep the rows that pass every pending filter whose variables are all bound."""
    bound = set(cols)
    ready = [f for f, names in pending if names <= bound]
    if not ready:
        return rows, pending
    kept = []
    for row in rows:
        solution = dict(zip(cols, row))
        if all(passes(f, solution) for f in ready):
            kept.append(row)
    return kept, [(f, names) for f, names in pending if not names <= bound]


def _drop_unneeded(cols, rows, projection, pending, tables):
    """Drop the columns nothing reads any more, and the duplicate rows that leaves."""
    needed = set(projection)
    for _, names in pending:
        needed |= names
    for names, _ in tables:
        needed.update(names)
    keep = [i for i, c in enumerate(cols) if c in needed]
    if len(keep) == len(cols):
        return cols, rows
    return [cols[i] for i in keep], list({tuple(r[i] for i in keep) for r in rows})


def _hash_join(cols, rows, names, table, max_rows):
    """Rows of `cols` joined with `table` on shared names; (cols, rows, cut at max_rows)."""
    shared = [n for n in names if n in cols]
    new = [i for i, n in enumerate(names) if n not in cols]
    left = [cols.index(n) for n in shared]
    right = [names.index(n) for n in shared]
    buckets: dict[Row, list[Row]] = {}
    for r in table:
        buckets.setdefault(tuple(r[i] for i in right), []).append(tuple(r[i] for i in new))
    joined = []
    for row in rows:
        for extra in buckets.get(tuple(row[i] for i in left), ()):
            if max_rows is not None and len(joined) >= max_rows:
                return cols + [names[i] for i in new], joined, True
            joined.append(row + extra)
    return cols + [names[i] for i in new], joined, False


def _project(cols, rows, projection, limit, truncated):
    """Distinct projected solutions, at most `limit` of them."""
    where = [(v, cols.index(v)) for v in projection if v in cols]
    found: set[tuple] = set()
    for row in rows:
        found.add(tuple((v, row[i]) for v, i in where))
        if limit is not None and len(found) > limit:
            found.pop()
            return found, True
    return found, truncated


# ------------------------------------------------ groups with UNION and OPTIONAL

def group_query_solutions(query: Query, triples, virtual, grouped=None,
                          limit: int | None = None) -> tuple[set[tuple], bool]:
    """Distinct projected solutions of a query whose WHERE has UNION or OPTIONAL: SPARQL's
    algebra straight from the query as written (`rtf.matching.optional.group_solutions`)."""
    max_rows = None if limit is None else limit * JOIN_ROWS_PER_SOLUTION
    while True:
        rows, cut = group_solutions(query.where, PublicationTriples(triples, virtual), max_rows)
        found: set[tuple] = set()
        for m in rows:
            found.add(tuple((v, m[v]) for v in query.projection if v in m))
            if limit is not None and len(found) > limit:
                found.pop()
                return found, True
        if found or not cut:
            return found, cut
        max_rows *= 16  # (as `query_solutions`)


class NaiveQueries(QueryIndex):
    """Every query, evaluated on every publication."""

    name = "naive"

    def __init__(self):
        self.queries: dict[str, Query] = {}
        self.plans: dict[str, QueryPlan | None] = {}
        self.evaluation_errors = 0

    def add(self, query_id: str, query: Query, record=None) -> None:
        if query.algebra is not None:  # version 3: its algebra, on every publication
            self.queries[query_id] = query
            self.plans[query_id] = None
            return
        # A WHERE with UNION or OPTIONAL is evaluated by the algebra (no plan).
        plan = plan_query(query) if query.group is None else None
        self.queries[query_id] = query
        self.plans[query_id] = plan

    def remove(self, query_id: str) -> None:
        del self.queries[query_id]
        del self.plans[query_id]

    def solutions(self, triples: list[Triple], virtual: list[Triple],
                  limit: int | None = None, now: str | None = None) -> tuple[Solutions, set[str]]:
        out: Solutions = {}
        truncated: set[str] = set()
        grouped = by_predicate(triples)
        confirmation = Confirmation(triples, virtual, now)
        version3 = [(qid, q.algebra) for qid, q in self.queries.items() if q.algebra is not None]
        confirmation.answers(version3, sys.maxsize if limit is None else limit, out, truncated)
        self.evaluation_errors += confirmation.errors
        for qid, q in self.queries.items():
            if q.algebra is not None:
                continue
            try:
                plan = self.plans[qid]
                if plan is None:
                    sols, cut = group_query_solutions(q, triples, virtual, grouped, limit)
                else:
                    sols, cut = query_solutions(q, triples, virtual, grouped, limit, plan)
            except Exception:
                # One query failing on one publication is that query's error:
                # it does not match, and the others go on.
                self.evaluation_errors += 1
                continue
            if sols:
                out[qid] = frozenset(sols)
                if cut:
                    truncated.add(qid)
        return out, truncated

    def stats(self) -> dict:
        return {"queries": len(self.queries), "evaluation_errors": self.evaluation_errors}
