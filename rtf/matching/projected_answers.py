"""Projected stars answered a star at a time, not a join per query (issue 43).

A branch that is a star about one subject and projects its objects
(`rtf.matching.star.ProjectedStar`) has, on a publication of one subject, the
product of its tuples' values for solutions: made once per distinct *product*
and publication (stars that differ only in which of their columns their FILTERs
test have one: `ProjectedStars.product`) and handed to all its branches at once
(`answers_by_code`, `answer_projected`). A star may take its product's answer
unless one of its tested columns has several values here: its tested columns and
the product's columns of several values are bit masks, compared in numpy, so the
Python steps follow the distinct products of a publication, not its stars, its
branches or its matches (issue 43: at 100K value-star queries, ~1,800 matches a
publication, ~200 stars and ~150 products).

A variable its FILTERs test that has several values on the publication keeps
the values its branch's conjunction holds for, which the value index already
knows: `ValueTests.satisfied_slots` records, per value group of several terms,
each conjunction's bit mask of the terms that satisfy it whole
(`EvaluationMemo.term_masks`, made when asked). A branch of one conjunction is keyed by
(star, mask) with numpy, and the branches of one key share one answer; the
rare others (several conjunctions, a group past 52 terms) are keyed one by one,
and an answer past the solution cap is left to the join. Queries of several
branches (``FILTER(?v < 3 || ?v > 9)`` makes two) are answered a query at a
time (`answer_projected_parts`): the union of their complete branches' answers,
into the same group as the others under the query's first slot
(`QueryTable.part_leads`), or into the per-id answers when one of its branches
is left to its join (whose answer joins the union later).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rtf.matching.star import SUBJECT
from rtf.matching.structures import sorted_unique
from rtf.matching.value_tests import MASK_TERMS, TermMasks, masks_of, term_mask

if TYPE_CHECKING:
    from rtf.matching.hits import Hits
    from rtf.matching.join_groups import JoinGroups
    from rtf.matching.query_table import QueryTable
    from rtf.matching.solutions import PublicationSolver

#: The bits of a mask (`rtf.matching.value_tests.TermMasks`).
_MASK_BITS = MASK_TERMS
#: Branches per distinct join answer past which their shared joins answer them
_SHARED_JOINS = 8


def answered_by_code(slots: np.ndarray, codes: np.ndarray, answer, parts: list) -> np.ndarray:
    """Slots answered once per code (-1: none): `answer(code)` gives (solutions, usable) once
    for each distinct code; the slots of a usable non-empty answer go into `parts` with it,
    those of an unusable one are returned, to be answered one by one (with the slots of no
    code); the others did not match."""
    def each(present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        given = [answer(code) for code in present.tolist()]  # (no numpy item access per code)
        answers = np.empty(len(present), dtype=object)
        answers[:] = [a for a, _ in given]
        return answers, np.fromiter((u for _, u in given), bool, len(given))

    return answered_by_codes(slots, codes, each, parts)


def answered_by_codes(slots: np.ndarray, codes: np.ndarray, answers_of, parts: list) -> np.ndarray:
    """`answered_by_code` with every code's answer at once: `answers_of(present)`, for the
    distinct codes `present` (sorted), gives their solutions and whether each is usable."""
    grouped = codes >= 0
    if not grouped.any():
        return slots
    present = sorted_unique(codes[grouped])
    answers, usable = answers_of(present)
    found = usable & np.fromiter(map(bool, answers), bool, len(answers))
    where = np.searchsorted(present, codes[grouped])
    take = found[where]
    if take.any():
        parts.append((slots[grouped][take], answers[where[take]]))
    left = ~grouped
    left[np.flatnonzero(grouped)[~usable[where]]] = True
    return slots[left]


def answers_by_code(table: QueryTable, solver: PublicationSolver, present: np.ndarray,
                    limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The answers of the stars of codes `present` (sorted), and whether each is usable:
    each distinct product (`ProjectedStars.products`) read once, its value sets, size and
    columns of several values, and made once if a star of it may use it; a star uses it
    unless one of its tested columns has several values (its branches keep their own) or it
    is past `limit`. Python steps once per product, never per star or branch."""
    stars = table.projected
    products = stars.product[present]
    distinct, which = np.unique(products, return_inverse=True)
    which = which.reshape(-1)
    made = [solver.product_columns(stars.products[p][1]) for p in distinct.tolist()]
    several = np.fromiter((m[2] for m in made), np.int64, len(made))
    small = np.fromiter((m[1] <= limit for m in made), bool, len(made))
    usable = small[which] & ((stars.tested[present] & several[which]) == 0)
    answers = np.empty(len(made), dtype=object)
    needed = np.zeros(len(made), dtype=bool)
    needed[which[usable]] = True
    for i in np.flatnonzero(needed).tolist():
        answers[i] = solver.product(stars.products[int(distinct[i])][0], made[i][0])
    return answers[which], usable


def answer_projected(table: QueryTable, slots: np.ndarray, solver: PublicationSolver, hits: Hits,
                     limit: int, parts: list, join_groups: JoinGroups) -> np.ndarray:
    """The branches of projected stars answered a star at a time, into `parts`; the slots
    left to answer by their joins are returned (those of a tested variable of several values
    too, when their joins are shared enough: `join_groups` answers a join once for all the
    branches of one (join, FILTERs, projection), and for queries that differ only in their
    projection (``?t != dbo:Agent`` on ``?x a ?t``, say) that is cheaper than the masks)."""
    codes = table.slot_projected[slots]
    if not (codes >= 0).any():
        return slots
    hits.settle()  # (the stars read their shapes' triples)
    slots = answered_by_codes(slots, codes, lambda present: answers_by_code(table, solver, present, limit), parts)
    codes = table.slot_projected[slots]
    several = codes >= 0
    if not several.any() or not solver.memo.term_masks:
        return slots
    tested = slots[several]
    if len(tested) >= _SHARED_JOINS * len(sorted_unique(join_groups.codes(tested, table))):
        return slots
    left = _by_masks(table, tested, codes[several], solver, limit, parts)
    return np.concatenate([slots[~several], left])


def _by_masks(table: QueryTable, slots, codes, solver: PublicationSolver, limit: int, parts: list) -> np.ndarray:
    """Branches of one conjunction keyed by (star, the mask of the values it keeps) in numpy,
    each key answered once; the others one by one (`_one_by_one`)."""
    memo = solver.memo
    conj = table.values.slot_conj[slots]
    keys = np.full(len(slots), -1, dtype=np.int64)
    masks = {w: masks_of(memo, w) for w in memo.term_masks}
    wheres = [w for w, of in masks.items() if of is not None and len(of[1])]
    one = np.flatnonzero(conj >= 0)
    if wheres and len(one):
        held = np.concatenate([masks[w][1] for w in wheres])
        values = np.concatenate([masks[w][2] for w in wheres])
        group = np.repeat(np.arange(len(wheres), dtype=np.int64), [len(masks[w][1]) for w in wheres])
        order = np.argsort(held, kind="stable")  # (a conjunction is in one group only)
        held, values, group = held[order], values[order], group[order]
        at = np.minimum(np.searchsorted(held, conj[one]), len(held) - 1)
        ok = held[at] == conj[one]
        one, at = one[ok], at[ok]
        # (group, mask) in one int64, then ranked: a key is star code * ranks + rank
        pairs, rank = np.unique((group[at] << _MASK_BITS) | values[at], return_inverse=True)
        keys[one] = codes[one].astype(np.int64) * len(pairs) + rank.reshape(-1)
        stars, answers, n = table.projected.by_code, solver.star_answers, len(pairs)
        top = (1 << _MASK_BITS) - 1

        def answer(key: int):
            code, pair = divmod(key, n)
            pair = int(pairs[pair])
            where, mask = wheres[pair >> _MASK_BITS], pair & top
            star = stars[code]
            names = [name for name, c in zip(star.names, star.columns)
                     if c is not SUBJECT and c[2] and (id(c[0]), c[1]) == where]
            name = names[0] if len(names) == 1 else None
            cache = (code, (name, where, mask))
            found = answers.get(cache, answers)
            if found is answers:
                kept = {name: _kept(masks[where], mask)} if name is not None else None
                found = answers[cache] = solver.projected_solutions(star, limit, kept)
            return found, found is not None

        slots_left = answered_by_code(slots, keys, answer, parts)
    else:
        slots_left = slots
    if not len(slots_left):
        return slots_left
    codes_left = table.slot_projected[slots_left]
    taken, found, left = [], [], []
    for slot, answer in _one_by_one(table, slots_left, codes_left, solver, limit):
        if answer is None:
            left.append(slot)
        elif answer:
            taken.append(slot)
            found.append(answer)
    if taken:
        parts.append(_part(taken, found, slots.dtype))
    return np.array(left, dtype=slots.dtype)


def _part(slots: list[int], found: list, dtype=np.intp) -> tuple[np.ndarray, np.ndarray]:
    """One of `parts`: the slots, and their answers as an object column beside them."""
    column = np.empty(len(found), dtype=object)
    column[:] = found
    return np.array(slots, dtype=dtype), column


def _kept(masks: TermMasks, mask: int) -> frozenset:
    """The terms of a group's `TermMasks` whose bits are set in `mask`."""
    terms = masks[0]
    return frozenset([terms[i] for i in range(mask.bit_length()) if mask >> i & 1])


def _one_by_one(table: QueryTable, slots, codes, solver: PublicationSolver, limit: int):
    """(slot, its solutions or None) for branches of projected stars, keyed by their
    conjunctions' masks one slot at a time (branches of several conjunctions); None: answer
    it by its join (a value group past `MASK_TERMS` values, an answer past `limit`)."""
    stars, memo = table.projected.by_code, solver.memo
    held_by = table.values.held
    answers = solver.star_answers  # (shared with the other paths, by key)
    for slot, code in zip(slots.tolist(), codes.tolist()):
        key = [code]
        for group, conj, _, var in held_by(slot):
            where = (id(group.shape), group.position)
            if where in memo.term_masks:  # (a group of several terms: its masks, made once)
                of = masks_of(memo, where)
                if of is None:
                    key = None
                    break
                key.append((var, where, term_mask(of, conj)))
        if key is None:
            yield slot, None
            continue
        key = tuple(key)
        answer = answers.get(key, answers)
        if answer is answers:
            kept = {var: _kept(masks_of(memo, where), mask) for var, where, mask in key[1:]}
            answer = answers[key] = solver.projected_solutions(stars[code], limit, kept)
        yield slot, answer


def answer_projected_parts(table: QueryTable, slots, solver: PublicationSolver, hits: Hits, limit: int,
                           out: dict, truncated: set[str], parts: list) -> np.ndarray:
    """The branches of projected stars whose queries have several branches, answered a
    query at a time; the slots left (to their joins) are returned.

    A query's answer is the union of its complete branches'. When every one of them is
    answered by its star's code alone (no tested variable of several values), its distinct
    answers are read off in numpy (`_by_query`); the others' branches are answered one by
    one (`_one_by_one`, the values each keeps). Either way a query goes into `parts` under
    its first slot (`QueryTable.part_leads`), unless one of its branches is left to its
    join: then into `out`, which that join's answer joins later."""
    codes = table.slot_projected_part[slots]
    mine = codes >= 0
    if not mine.any():
        return slots
    hits.settle()
    leads = table.part_leads(slots)
    at = np.flatnonzero(mine)
    present, where = np.unique(codes[at], return_inverse=True)
    where = where.reshape(-1)
    given, usable = answers_by_code(table, solver, present, limit)
    given = given.tolist()
    whole = usable[where]
    joined = leads[~mine & (leads >= 0)]  # (queries with a branch answered by its join)
    mixed = np.concatenate([joined, leads[at[~whole]]])
    if len(mixed):
        whole &= ~np.isin(leads[at], mixed)
    if whole.any():
        _by_query(leads[at[whole]], where[whole], given, table, limit, parts, out, truncated)
    rest = at[~whole]
    if not len(rest):
        return slots[~mine]
    left, unions = [], {}
    rest_leads = leads[rest].tolist()
    for (slot, found), lead in zip(_one_by_one(table, slots[rest], codes[rest], solver, limit), rest_leads):
        if found is None:
            left.append(slot)
        elif found:
            before = unions.get(lead)
            unions[lead] = found if before is None else before | found
    to_join = set(joined.tolist())
    if left:
        to_join.update(leads[np.isin(slots, left)].tolist())
    _into(unions, to_join, table, limit, parts, out, truncated)
    return np.concatenate([slots[~mine], np.array(left, dtype=slots.dtype)])


def _by_query(leads: np.ndarray, which: np.ndarray, given: list, table: QueryTable, limit: int,
              parts: list, out: dict, truncated: set[str]) -> None:
    """Queries (by their first slot, `leads`) answered by the answers `given[which]` of their
    branches: one distinct answer is the query's (into `parts`, all at once); several, their
    union (`_into`)."""
    seen: dict[int, int] = {}  # (answers shared between codes count once: id -> rank)
    rank = np.fromiter((seen.setdefault(id(g), len(seen)) for g in given), np.int64, len(given))
    distinct = [None] * len(seen)
    for g, r in zip(given, rank.tolist()):
        distinct[r] = g
    n = len(distinct)
    pairs = sorted_unique(leads.astype(np.int64) * n + rank[which])
    query, answer = pairs // n, pairs % n
    first = np.ones(len(pairs), dtype=bool)
    first[1:] = query[1:] != query[:-1]
    last = np.ones(len(pairs), dtype=bool)
    last[:-1] = first[1:]
    alone = first & last
    column = np.empty(n, dtype=object)
    column[:] = distinct
    nonempty = np.fromiter(map(bool, distinct), bool, n)
    take = alone & nonempty[answer]
    if take.any():
        parts.append((query[take].astype(np.intp), column[answer[take]]))
    if alone.all():
        return
    unions: dict[int, frozenset] = {}
    for q, a in zip(query[~alone].tolist(), answer[~alone].tolist()):
        before = unions.get(q)
        unions[q] = distinct[a] if before is None else before | distinct[a]
    _into(unions, (), table, limit, parts, out, truncated)


def _into(unions: dict, to_join, table: QueryTable, limit: int, parts: list, out: dict,
          truncated: set[str]) -> None:
    """Queries' answers (first slot -> the union of their branches') into `parts`, or into
    `out` for those of `to_join` (a branch left to its join adds to it later) and those past
    `limit` (truncated)."""
    slots, found = [], []
    for q, union in unions.items():
        if q in to_join or len(union) > limit:
            qid = table.branches[q].query_id
            out[qid] = union
            if len(union) > limit:
                truncated.add(qid)
        elif union:
            slots.append(q)
            found.append(union)
    if slots:
        parts.append(_part(slots, found))
