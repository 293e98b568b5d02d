"""Partitioning the queries into K groups, and routing publications to groups.

The Spark job (``rtf spark replay --query-partitions K``, see
docs/spark.md) splits the registered queries into K groups on the driver,
builds one engine per group and ships each engine only to the tasks that
filter against it. This module holds everything about the split that does
not need Spark:

**Routing signatures.** Every conjunctive branch of a query (`Query.branches`)
gets one *anchor*: a key that any publication satisfying the branch must
hold. Of the branch's tuple conjuncts the most selective anchor is taken: a
required whole word of a full-text constraint ``("w", word)`` (a literal
object must contain it), else a constant predicate with a constant IRI object
``("po", p, o)`` (``?s a dbo:City``, also through ``a/rdfs:subClassOf*``,
which the taxonomy's virtual triples answer), else a constant predicate
``("p", p)``. A branch with none of them (variable or wildcard predicates, no
word) anchors to `ALWAYS`. A group's signature is the set of its anchors; a
publication's keys are the same kinds of keys read off its triples and
virtual triples (`publication_keys`). A group none of whose anchors is among
the publication's keys holds no query the publication can match: it is
skipped. Sound by construction -- a matching branch has all its tuples
matched by triples of the publication, so its anchor is among the keys.

**Containment.** Query *q* is contained in query *r* (every publication that
matches *q* matches *r*) when *r* is one branch of one tuple conjunct, with
no residual FILTER and pairwise distinct variables, and every branch of *q*
has a tuple conjunct that *r*'s tuple generalizes: the same constant
predicate (or a variable), each constant of *r* equal to *q*'s term in that
position (a variable in *r* takes anything), and *r*'s full-text constraint
absent, equal to *q*'s, or a conjunction of whole words all required by
*q*'s constraint (`rtf.query.text.required_words`). The triple that matches *q*'s
tuple then matches *r*'s, so *r* matches. (One tuple, no residual: *r* is
answered exactly, no join work bound can cut it.) A contained query is kept
in its container's group, adds no anchor of its own, and is evaluated only
when a container of the group matched (`GroupMatcher`): containment can
save work but never hide a match.

**Strategies.** ``hash``: each query alone, group = CRC-32 of its id mod K.
``containment``: containment trees (a root and the queries it contains)
packed into K groups, biggest first onto the least loaded group.
``merging``: containment trees merged by similarity -- trees with the same
routing anchor go to the same group (clusters packed biggest first onto the
least loaded group; a cluster larger than Q/K is cut into pieces), so each
group's signature is small and its engine shares tuple shapes and words.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter

from rtf.query.model import Query, TupleConjunct
from rtf.query.terms import (
    IRI,
    BlankNode,
    TypePath,
    Variable,
    Wildcard,
    is_literal,
)
from rtf.query.text import (
    is_plain_conjunction,
    literal_text_index,
    required_words,
    word_alternatives,
)

__all__ = ["STRATEGIES", "ALWAYS", "tuple_anchors", "branch_anchors", "query_anchors",
           "publication_keys", "contains", "Group", "partition_queries", "route", "GroupMatcher",
           "build_group_matchers", "parse_records", "Router", "hash_group"]

STRATEGIES = ("hash", "containment", "merging")

#: The anchor of a branch no key can rule out: its group sees every publication.
ALWAYS = ("*",)

# Lower rank = more selective anchor kind.
_RANK = {"w": 0, "po": 1, "p": 2}


# ------------------------------------------------------------------ anchors


def _constant_predicate(t: TupleConjunct) -> str | None:
    return t.predicate.key if isinstance(t.predicate, (IRI, TypePath)) else None


def tuple_anchors(t: TupleConjunct) -> frozenset | None:
    """Keys of which a triple matching `t` puts at least one in `publication_keys`
    (the most selective such set), or None.

    A full-text constraint gives one word per alternative (``"x" ftor "y"``
    needs x or y: either key will do), as long as every alternative needs a
    whole word; otherwise the constant predicate (and IRI object) does.
    """
    if t.fulltext is not None:
        alternatives = word_alternatives(t.fulltext)
        if alternatives and all(ws for ws, _ in alternatives):
            # The longest word of each alternative: a cheap stand-in for the rarest.
            return frozenset(("w", max(sorted(ws), key=len)) for ws, _ in alternatives)
    p = _constant_predicate(t)
    if p is None:
        return None
    if isinstance(t.object, IRI):
        return frozenset([("po", p, t.object.key)])
    return frozenset([("p", p)])


def _anchor_order(anchor: tuple) -> tuple:
    return (_RANK[anchor[0]], -len(anchor[1]) if anchor[0] == "w" else 0, anchor)


def _anchors_order(anchors: frozenset) -> tuple:
    # The weakest key of a set decides its kind; then fewer keys route fewer publications.
    return (max(_RANK[a[0]] for a in anchors), len(anchors), min(map(_anchor_order, anchors)))


def branch_anchors(branch) -> frozenset:
    """Keys of which every publication satisfying `branch` holds one (`{ALWAYS}` if none is known)."""
    candidates = [a for a in map(tuple_anchors, branch.tuples) if a]
    return min(candidates, key=_anchors_order) if candidates else frozenset([ALWAYS])


def query_anchors(query: Query) -> frozenset:
    """The anchors of the query's branches: it can only match a publication holding one."""
    if not query.branches:
        return frozenset([ALWAYS])
    return frozenset().union(*map(branch_anchors, query.branches))


def publication_keys(triples: Iterable[tuple[str, str, str]],
                     virtual: Iterable[tuple[str, str, str]] = ()) -> set:
    """The routing keys of a publication: its predicates, (predicate, IRI object)
    pairs and the words of its literals; `virtual`: the taxonomy's
    ``a/rdfs:subClassOf*`` triples (`Taxonomy.expand`)."""
    keys: set = set()
    add = keys.add
    for _, p, o in chain(triples, virtual):
        add(("p", p))
        if is_literal(o):
            for w in literal_text_index(o).positions:
                add(("w", w))
        else:
            add(("po", p, o))
    return keys


# -------------------------------------------------------------- containment


def _binds(term) -> bool:
    return isinstance(term, (Variable, BlankNode))


def can_contain(query: Query) -> bool:
    """Whether `query` has the form of a container: one branch, one tuple, no
    residual filter, no variable twice in the tuple."""
    if len(query.branches) != 1:
        return False
    branch = query.branches[0]
    if len(branch.tuples) != 1 or branch.residual:
        return False
    names = [t for t in branch.tuples[0].terms if _binds(t)]
    return len(names) == len(set(names))


def _generalizes(rt: TupleConjunct, qt: TupleConjunct) -> bool:
    """A triple that satisfies `qt` (under some mapping) satisfies `rt` (r: a container's tuple)."""
    for r_term, q_term in zip(rt.terms, qt.terms):
        if not (_binds(r_term) or isinstance(r_term, Wildcard) or r_term == q_term):
            return False
    rf, qf = rt.fulltext, qt.fulltext
    if rf is None or rf == qf:
        return True
    if qf is None or not is_plain_conjunction(rf):
        return False
    return required_words(rf)[0] <= required_words(qf)[0]


def contains(container: Query, query: Query) -> bool:
    """True when every publication matching `query` matches `container` (a
    sufficient condition, see the module docstring; False means "not known")."""
    if not can_contain(container) or not query.branches:
        return False
    rt = container.branches[0].tuples[0]
    return all(any(_generalizes(rt, qt) for qt in b.tuples) for b in query.branches)


def _container_keys(t: TupleConjunct) -> tuple:
    """Where a container tuple is filed: (predicate or None, a word of its constraint or None)."""
    p = _constant_predicate(t)
    if t.fulltext is None:
        return (p, None)
    ws = required_words(t.fulltext)[0]
    return (p, min(ws) if ws else "")


def containment_forest(queries: Sequence[tuple[str, Query]]) -> dict[str, str]:
    """Contained query id -> the id of a root query that contains it.

    Queries are visited most general first (fewest required words, then
    fewest constants); a query
    contained in a root found so far joins it, else it becomes a root
    (containers are filed by predicate and one word, so each lookup sees few
    candidates). Containment is transitive, so every contained query's root
    contains it directly.
    """
    def generality(item):
        i, (_, q) = item
        words = sum(len(required_words(t.fulltext)[0]) for b in q.branches for t in b.tuples
                    if t.fulltext is not None)
        constants = sum(not (_binds(term) or isinstance(term, Wildcard))
                        for b in q.branches for t in b.tuples for term in t.terms)
        return (not can_contain(q), words, constants, i)

    roots: dict[tuple, list[tuple[str, Query]]] = {}
    parent: dict[str, str] = {}
    for _, (qid, q) in sorted(enumerate(queries), key=generality):
        found = None
        for b in q.branches[:1]:  # a container must cover the first branch
            for qt in b.tuples:
                preds = {_constant_predicate(qt), None}
                words = required_words(qt.fulltext)[0] if qt.fulltext is not None else ()
                for p in preds:
                    for w in chain((None, ""), words):
                        for rid, r in roots.get((p, w), ()):
                            if contains(r, q):
                                found = rid
                                break
                        if found:
                            break
                    if found:
                        break
                if found:
                    break
        if found is not None:
            parent[qid] = found
        elif can_contain(q):
            roots.setdefault(_container_keys(q.branches[0].tuples[0]), []).append((qid, q))
    return parent


# ----------------------------------------------------------------- groups


@dataclass
class Group:
    """One group of queries: its ids in registration order, which of them are
    contained (id -> root id), and its routing signature."""

    index: int
    query_ids: list[str] = field(default_factory=list)
    contained: dict[str, str] = field(default_factory=dict)
    anchors: frozenset = frozenset()

    @property
    def always(self) -> bool:
        return ALWAYS in self.anchors

    def routes(self, keys: set) -> bool:
        """Whether a publication with routing `keys` may match a query of the group."""
        return bool(self.query_ids) and (ALWAYS in self.anchors or not self.anchors.isdisjoint(keys))


def hash_group(qid: str, k: int) -> int:
    """The group of query `qid` by the ``hash`` strategy: CRC-32 of its id (UTF-8) mod `k`."""
    return zlib.crc32(qid.encode("utf-8")) % k


def partition_queries(queries: Sequence[tuple[str, Query]], k: int, strategy: str = "hash") -> list[Group]:
    """Split `queries` ((id, parsed query), in registration order) into `k` groups.

    Every query lands in exactly one group; groups may be empty (k larger than
    the number of queries). See the module docstring for the strategies.
    """
    if k < 1:
        raise ValueError("the number of query partitions must be at least 1")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown partitioning {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    groups = [Group(i) for i in range(k)]
    order = {qid: i for i, (qid, _) in enumerate(queries)}
    parsed = dict(queries)
    if strategy == "hash":
        where = {qid: hash_group(qid, k) for qid, _ in queries}
        parent: dict[str, str] = {}
    else:
        parent = containment_forest(queries)
        trees: dict[str, list[str]] = {}
        for qid, _ in queries:
            trees.setdefault(parent.get(qid, qid), []).append(qid)
        where = _pack(trees, parsed, k, by_anchor=strategy == "merging")
    anchors: list[set] = [set() for _ in range(k)]
    for qid, _ in queries:
        g = where[qid]
        groups[g].query_ids.append(qid)
        if qid in parent:
            groups[g].contained[qid] = parent[qid]
        else:
            anchors[g] |= query_anchors(parsed[qid])
    for g, a in zip(groups, anchors):
        g.anchors = frozenset(a)
        g.query_ids.sort(key=order.__getitem__)
    return groups


def _pack(trees: dict[str, list[str]], parsed: dict[str, Query], k: int, by_anchor: bool) -> dict[str, int]:
    """Group of each query: units (trees, or clusters of trees with the same
    anchors) biggest first onto the least loaded group."""
    if by_anchor:
        clusters: dict[frozenset, list[str]] = {}
        for root, members in trees.items():
            clusters.setdefault(query_anchors(parsed[root]), []).append(root)
        total = sum(map(len, trees.values()))
        cap = max(1, -(-total // k))
        units: list[list[str]] = []
        for roots in clusters.values():
            unit: list[str] = []
            size = 0
            for root in roots:  # cut a cluster bigger than a group's share, between trees
                if unit and size + len(trees[root]) > cap:
                    units.append(unit)
                    unit, size = [], 0
                unit.append(root)
                size += len(trees[root])
            units.append(unit)
    else:
        units = [[root] for root in trees]
    sized = sorted(((sum(len(trees[r]) for r in u), u) for u in units), key=lambda x: -x[0])
    load = [0] * k
    where: dict[str, int] = {}
    for size, unit in sized:
        g = min(range(k), key=load.__getitem__)
        load[g] += size
        for root in unit:
            for qid in trees[root]:
                where[qid] = g
    return where


def route(groups: Sequence[Group], keys: set) -> list[int]:
    """Indexes of the groups a publication with routing `keys` must be filtered against."""
    return [g.index for g in groups if g.routes(keys)]


# ----------------------------------------------------------------- matching


class GroupMatcher:
    """A group's engines: `roots` holds the queries contained in no other of
    the group, `contained` the others (or None); `contained` runs only when a
    root that contains something (`gates`) matched. Matches come in query id
    order, as `Engine.match` gives them."""

    def __init__(self, roots, contained=None, gates: Iterable[str] = ()):
        self.roots = roots
        self.contained = contained if contained is not None and len(contained) else None
        self.gates = frozenset(gates)
        self.contained_runs = 0

    def match(self, publication) -> list:
        found = self.roots.match(publication)
        if self.contained is not None and found:
            gates = self.gates
            if any(m.query_id in gates for m in found):
                self.contained_runs += 1
                more = self.contained.match(publication)
                if more:
                    found = sorted(found + more, key=attrgetter("query_id"))
        return found

    def __len__(self) -> int:
        return len(self.roots) + (len(self.contained) if self.contained is not None else 0)

    def stats(self) -> dict:
        s = self.roots.stats()
        s["queries"] = len(self)
        s["contained_queries"] = len(self.contained) if self.contained is not None else 0
        return s


def build_group_matchers(groups: Sequence[Group], records: Sequence[dict], make_engine,
                         register_all, source: str) -> list[GroupMatcher | None]:
    """One `GroupMatcher` per group (None for an empty group).

    `records`: query records with ids assigned and ``query`` parsed;
    `make_engine()`: a fresh empty Engine; `register_all(engine, records,
    source)`: registers with file:line errors (`rtf.io.queries.register_all`).
    """
    by_id = {r["id"]: r for r in records}
    out: list[GroupMatcher | None] = []
    for g in groups:
        if not g.query_ids:
            out.append(None)
            continue
        roots, contained = make_engine(), make_engine()
        register_all(roots, [by_id[q] for q in g.query_ids if q not in g.contained], source)
        register_all(contained, [by_id[q] for q in g.query_ids if q in g.contained], source)
        out.append(GroupMatcher(roots, contained, set(g.contained.values())))
    return out


def parse_records(records: Sequence[dict], source: str) -> list[dict]:
    """`records` (`rtf.io.queries.load_queries`) with ids assigned as `Engine.register`
    assigns them (the first free ``q<n>``) and ``query`` parsed; a query that
    does not parse or an id taken twice is a `QueryFileError` naming the line."""
    from rtf.errors import QueryError
    from rtf.io.queries import QueryFileError
    from rtf.parser import parse_query

    taken: set[str] = set()
    n = 1
    out = []
    for rec in records:
        qid = rec["id"]
        if qid is None:
            while f"q{n}" in taken:
                n += 1
            qid = f"q{n}"
        elif qid in taken:
            raise QueryFileError(f"{source}:{rec['line']}: a query with id {qid!r} is already registered")
        taken.add(qid)
        try:
            parsed = parse_query(rec["query"])
        except QueryError as e:
            raise QueryFileError(f"{source}:{rec['line']}: query {qid!r}: {e}") from None
        out.append(dict(rec, id=qid, query=parsed))
    return out


class Router:
    """What a task needs to route publications: the groups' signatures and the
    taxonomy (for the virtual ``a/rdfs:subClassOf*`` triples)."""

    def __init__(self, groups: Sequence[Group], taxonomy):
        # Only non-empty groups, by index; the query ids stay on the driver.
        self.signatures = [(g.index, ALWAYS in g.anchors, g.anchors) for g in groups if g.query_ids]
        self.taxonomy = taxonomy

    def groups_for(self, triples: list[tuple[str, str, str]]) -> list[int]:
        """Indexes of the groups the publication of `triples` may match."""
        keys = publication_keys(triples, self.taxonomy.expand(triples))
        return [i for i, always, anchors in self.signatures
                if always or not anchors.isdisjoint(keys)]
