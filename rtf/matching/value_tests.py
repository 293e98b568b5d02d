"""A branch's FILTER comparisons on one variable, counted like its tuples (seed 004).

A branch such as ``?c a dbo:City ; dbo:populationTotal ?pop FILTER(?pop >
1000000)`` used to be joined and filtered for every publication that
satisfied its *structure*: with many queries over the same properties, the
cost of a publication followed the queries whose structure holds, not the
queries that match. Here each residual conjunct that tests one variable
against constants -- ``?v op c``, ``f(?v) op c`` for a function of one
argument (``year``, ``lang``, ``datatype``, ``str``, casts...), ``?v IN
(c1, ...)`` -- becomes a *value test*, indexed by operand in a `ValueIndex`
(`rtf.matching.value_index`: sorted constants per operator and value space).

The tests of one branch on one variable form a *conjunction* (a range
``?v >= a && ?v < b`` is one), held by the (tuple shape, position) where
the variable is bound: a `ValueGroup`. For a publication, each satisfied
shape with value groups gives the distinct terms at that position; each
term's operands are computed once per publication (``year(?d)`` of a date
is shared by every query that asks the year of a date: the seed-002 idea of
evaluating an expensive predicate once for all the subscriptions that
share it), the indexes answer every test the term satisfies by binary
search, and a conjunction holds when *one* term satisfies all its tests.
Each holding conjunction counts one for its branch in the query table, like
a satisfied shape (`QueryTable.complete_slots`): a branch is complete when
all its shapes and all its conjunctions hold, and only then answered.

The join still evaluates every residual filter on each solution, so the
index only decides which branches are worth joining. Where it decides the
answer by itself -- a star branch whose residual is all value tests on
variables bound once, in one tuple, and not projected (`exact_star`) -- the
branch is answered like a star, without a join: on a publication about one
subject its answer is known as soon as it is complete.

Other predicates of one variable (``regex(?label, "^Rio")``, ``contains``,
``NOT IN``, a negation, ``||`` within the variable) are held the same way as
*opaque* tests: each distinct predicate is evaluated once per distinct term
of the publication and shared by every branch that asks it (Hanson et al.'s
shared evaluation of expensive predicates). Conjuncts of two variables, or of
a variable bound only in an OPTIONAL group, are only residual, as before.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import NamedTuple
from sys import intern

import numpy as np

from rtf.matching.shared_predicates import EvaluationMemo, canonical, shared_predicate
from rtf.matching.structures import grown
from rtf.matching.value_index import FLIPPED, ValueIndex, ValueTest
from rtf.query.expressions import compile_operand
from rtf.query.functions import FUNCTIONS, XSD_CASTS
from rtf.query.model import Branch, Call, Compare, In, Lang
from rtf.query.terms import IRI, Literal, Variable
from rtf.query.values import ERROR

#: The variable's name inside an operand as the index compiles it.
_V = Variable("_v")


def _constant_key(term) -> str | None:
    if isinstance(term, (IRI, Literal)):
        try:
            return intern(term.key)  # one copy of each constant across the tests
        except Exception:  # a constant that is not a valid term: left to the residual filter
            return None
    return None


def operand_of(op) -> tuple[tuple, str] | None:
    """(operand key, variable name) of an operand the index can take, else None.

    The key names the operand with its variable left out: ``?v`` is
    ``("?",)``, ``lang(?v)`` ``("lang",)``, ``year(?v)`` ``("call", "year")``,
    ``year(xsd:dateTime(?v))`` ``("call", "year", XSD dateTime)``.
    """
    if isinstance(op, Variable):
        return ("?",), op.name
    if isinstance(op, Lang) and isinstance(op.arg, Variable):
        return ("lang",), op.arg.name
    if (isinstance(op, Call) and len(op.args) == 1 and op.name != "bound"
            and (op.name in FUNCTIONS or op.name in XSD_CASTS)):
        # ``year(?v)``, and chains of such calls: ``xsd:integer(str(?v))`` is
        # ``("call", XSD integer, "str")``, outermost first
        inner = operand_of(op.args[0])
        if inner is not None and inner[0][0] in ("?", "call") and len(inner[0]) <= _MAX_CHAIN:
            return ("call", op.name) + inner[0][1:], inner[1]
    return None


#: The longest chain of calls an operand key holds (a guard on hostile nesting).
_MAX_CHAIN = 3


def value_test_of(expr) -> tuple[tuple, str, ValueTest] | None:
    """(operand key, variable, test) of a residual conjunct the index can take, else None."""
    if isinstance(expr, Compare):
        for operand, constant, op in ((expr.left, expr.right, expr.op),
                                      (expr.right, expr.left, FLIPPED.get(expr.op))):
            found = operand_of(operand)
            key = _constant_key(constant)
            if found is not None and key is not None and op is not None:
                return found[0], found[1], ValueTest(op, (key,))
        return None
    if isinstance(expr, In) and not expr.negated and expr.values:
        found = operand_of(expr.arg)
        keys = tuple(_constant_key(v) for v in expr.values)
        if found is not None and None not in keys:
            return found[0], found[1], ValueTest("in", keys)
    return None


def _compute(operand: tuple):
    """The function term -> operand value (`ERROR` when it has none) of an operand key."""
    if operand == ("?",):
        return None  # the term itself
    if operand == ("lang",):
        model = Lang(_V)
    else:
        model = _V
        for name in reversed(operand[1:]):
            model = Call(name, (model,))
    compiled = compile_operand(model)
    return lambda value: compiled({"_v": value})


@dataclass(eq=False)
class ValueGroup:
    """The conjunctions held at one (shape, position): an index of tests per operand, and the
    other one-variable predicates (regex, contains, ...), each evaluated once per term."""

    shape: object
    position: int
    operands: dict[tuple, tuple[object, ValueIndex]] = field(default_factory=dict)
    #: canonical predicate (its variable renamed ``_0``) -> (its `shared_predicate`, its atoms)
    opaque: dict[object, tuple[object, set]] = field(default_factory=dict)
    #: predicate -> its atoms as an array, made on first use after a change (`atoms_of`)
    arrays: dict[object, np.ndarray] = field(default_factory=dict, repr=False)

    def index_of(self, operand: tuple) -> ValueIndex:
        found = self.operands.get(operand)
        if found is None:
            found = self.operands[operand] = (_compute(operand), ValueIndex())
        return found[1]

    def add(self, atom: int, operand, test) -> None:
        if operand == "opaque":
            found = self.opaque.get(test)
            if found is None:
                found = self.opaque[test] = (shared_predicate(test), set())
            found[1].add(atom)
            self.arrays.pop(test, None)
        else:
            self.index_of(operand).add(atom, test)

    def discard(self, atom: int) -> None:
        for operand, (_, index) in list(self.operands.items()):
            if atom in index:
                index.remove(atom)
                if not len(index):
                    del self.operands[operand]
                return
        for form, (_, atoms) in list(self.opaque.items()):
            if atom in atoms:
                atoms.discard(atom)
                self.arrays.pop(form, None)
                if not atoms:
                    del self.opaque[form]
                return

    def __bool__(self) -> bool:
        return bool(self.operands or self.opaque)

    def atoms_of(self, form, atoms: set) -> np.ndarray:
        """The atoms of opaque predicate `form`, as an array kept until they change."""
        found = self.arrays.get(form)
        if found is None:
            found = self.arrays[form] = np.fromiter(atoms, dtype=np.int64, count=len(atoms))
        return found

    def __getstate__(self) -> dict:
        # The operand functions and compiled predicates are closures (not picklable; Spark
        # ships engines): kept as their keys, made again when unpickled.
        return {"shape": self.shape, "position": self.position,
                "operands": {operand: index for operand, (_, index) in self.operands.items()},
                "opaque": {form: atoms for form, (_, atoms) in self.opaque.items()}}

    def __setstate__(self, state: dict) -> None:
        self.shape, self.position = state["shape"], state["position"]
        self.operands = {operand: (_compute(operand), index) for operand, index in state["operands"].items()}
        self.opaque = {form: (shared_predicate(form), atoms) for form, atoms in state["opaque"].items()}
        self.arrays = {}


@dataclass(frozen=True)
class Plan:
    """A branch's indexable tests: per (shape, position), the conjunction's (operand, test) pairs."""

    conjunctions: tuple[tuple[object, int, tuple[tuple[tuple, ValueTest], ...], str], ...]  # (shape, position, atoms, variable)
    #: The residual conjuncts the index took (the rest stays only residual).
    taken: frozenset
    #: The variables tested.
    variables: frozenset


_EMPTY_PLAN = Plan((), frozenset(), frozenset())


class ValueTests:
    """Every registered branch's value tests, as conjunction marks `QueryTable.complete_slots` counts.

    An *atom* is one test of one conjunction (its id is what a `ValueIndex`
    returns); `atom_conj` maps it to its conjunction, `conj_size` says how
    many atoms the conjunction has, `conj_slot` whose branch it is.

    Most branches test one thing (``FILTER(?v > 3)``: one conjunction of one
    atom): for those `atom_slot` gives the branch itself, so that a term
    satisfying the atom completes the branch's tests without a conjunction
    looked up, counted or made distinct (at 100K value queries those steps
    over a publication's ~26,000 satisfied atoms were a third of its time).
    """

    def __init__(self):
        self.groups: dict[tuple, ValueGroup] = {}       # (shape id, position) -> group
        self.by_shape: dict[object, list[ValueGroup]] = {}
        self.atom_conj = np.full(64, -1, dtype=np.int32)
        self.conj_size = np.zeros(64, dtype=np.int32)
        self.conj_slot = np.full(64, -1, dtype=np.int32)
        #: atom -> its branch's slot when the branch has one conjunction and it is this one
        #: atom (the test decides the branch's value tests alone), else -1
        self.atom_slot = np.full(64, -1, dtype=np.int32)
        #: slot -> ((group, conjunction, atoms, the tested variable), ...): tuples, the
        #: smallest Python containers
        self.branch_conj: dict[int, tuple[tuple[ValueGroup, int, tuple[int, ...], str], ...]] = {}
        self._free_atoms, self._free_conj = array("l"), array("l")
        self._next_atom = self._next_conj = 0
        #: slot -> its conjunction when it has exactly one, else -1 (read by numpy per publication)
        self.slot_conj = np.full(64, -1, dtype=np.int32)
        #: scratch: a position in one publication's marks per conjunction (never cleared:
        #: only the positions written for a publication are read back)
        self._seen = np.zeros(0, dtype=np.int32)
        #: the conjunctions of the branches restored from a saved index, read when first
        #: asked for (`held`; `rtf.matching.value_snapshot`), or None
        self.saved = None

    def held(self, slot: int) -> tuple:
        """The conjunctions of the branch at `slot` as `branch_conj` holds them (a restored
        branch's made now), () for none."""
        found = self.branch_conj.get(slot)
        if found is None:
            saved = getattr(self, "saved", None)  # (a table pickled by an older rtf has none)
            found = saved.take(slot, False) if saved is not None else None
            if found is None:
                return ()
            self.branch_conj[slot] = found
        return found

    def __setstate__(self, state: dict) -> None:
        # `groups` is keyed by the shapes' id()s, which an unpickled copy's shapes do not
        # have: keyed again (else removing a value-tested query after a pickle fails).
        self.__dict__.update(state)
        self.groups = {(id(group.shape), group.position): group for group in state["groups"].values()}
        if "atom_slot" not in state:  # pickled by an rtf without it: made from the branches
            self.atom_slot = np.full(len(self.atom_conj), -1, dtype=np.int32)
            for slot, held in self.branch_conj.items():
                self._decided_alone(slot, held)

    def compact(self) -> None:
        """After many registrations at once: every operand's index and opaque predicate's atoms
        laid out now, so that the first publications do not pay for them (`ValueIndex.build`)."""
        for group in self.groups.values():
            for _, index in group.operands.values():
                index.build()
            for form, (_, atoms) in group.opaque.items():
                group.atoms_of(form, atoms)

    def __len__(self) -> int:
        """The number of registered conjunctions."""
        return int(np.count_nonzero(self.conj_slot[:self._next_conj] >= 0))

    def plan(self, branch: Branch, shapes: list, names: list[tuple[str, ...]]) -> Plan:
        """The indexable value tests of `branch`, by the (shape, position) that binds each variable.

        `shapes` and `names` are the branch's tuple shapes and their variable
        names by position; a test's variable must be bound by one of them
        (the first tuple that binds it holds its conjunction).
        """
        by_place: dict[tuple[int, int, str], list] = {}
        places: dict[tuple[int, int, str], tuple[object, int]] = {}
        taken, variables = [], set()
        binders = None  # variable -> (shape, index in its variables) of the first tuple binding it
        for conjunct in branch.residual:
            found = value_test_of(conjunct)
            if found is None:
                form, variables_read = canonical(conjunct)
                if len(variables_read) != 1:
                    continue  # two variables, or none: only residual
                found = ("opaque", variables_read[0], form)
            operand, var, test = found
            if binders is None:
                binders = {}
                for shape, ns in zip(shapes, names):
                    for k, n in enumerate(ns):
                        binders.setdefault(n, (shape, k))
            where = binders.get(var)
            if where is None:
                continue
            shape, k = where
            # One conjunction per variable: two variables may be bound at the same place
            # (``?s p ?a . ?s p ?b``: one shape), and each has its own value.
            place = (id(shape), shape.row_positions[k], var)
            places[place] = (shape, shape.row_positions[k])
            atoms = by_place.setdefault(place, [])
            if (operand, test) not in atoms:
                atoms.append((operand, test))
            taken.append(conjunct)
            variables.add(var)
        if not by_place:
            return _EMPTY_PLAN
        return Plan(tuple((*places[p], tuple(atoms), p[2]) for p, atoms in by_place.items()),
                    frozenset(taken), frozenset(variables))

    def add(self, slot: int, plan: Plan) -> None:
        """Index the conjunctions of `plan` for the branch at `slot`."""
        held = []
        for shape, position, atoms, var in plan.conjunctions:
            gkey = (id(shape), position)
            group = self.groups.get(gkey)
            if group is None:
                group = self.groups[gkey] = ValueGroup(shape, position)
                self.by_shape.setdefault(shape, []).append(group)
            conj = self._take("conj")
            self.conj_slot[conj] = slot
            self.conj_size[conj] = len(atoms)
            ids = []
            for operand, test in atoms:
                atom = self._take("atom")
                self.atom_conj[atom] = conj
                group.add(atom, operand, test)
                ids.append(atom)
            held.append((group, conj, tuple(ids), var))
        if held:
            self.branch_conj[slot] = tuple(held)
            self._decided_alone(slot, held)
        if slot >= len(self.slot_conj):
            self.slot_conj = grown(self.slot_conj, slot + 1, -1)
        self.slot_conj[slot] = held[0][1] if len(held) == 1 else -1

    def _decided_alone(self, slot: int, held) -> None:
        """Note in `atom_slot` the branch at `slot` if its `held` conjunctions are one of one atom."""
        if len(held) == 1 and len(held[0][2]) == 1:
            self.atom_slot[held[0][2][0]] = slot

    def remove(self, slot: int) -> None:
        """Forget the conjunctions of the branch at `slot`."""
        if slot < len(self.slot_conj):
            self.slot_conj[slot] = -1
        held = self.branch_conj.pop(slot, None)
        saved = getattr(self, "saved", None)
        if saved is not None:  # (a restored branch: forgotten there too)
            restored = saved.take(slot, True)
            held = restored if held is None else held
        for group, conj, ids, _ in held or ():
            for atom in ids:
                group.discard(atom)
                self.atom_conj[atom] = -1
                self.atom_slot[atom] = -1
                self._free_atoms.append(atom)
            self.conj_slot[conj] = -1
            self.conj_size[conj] = 0
            self._free_conj.append(conj)
            if not group:
                del self.groups[(id(group.shape), group.position)]
                groups = self.by_shape[group.shape]
                groups.remove(group)
                if not groups:
                    del self.by_shape[group.shape]

    def _take(self, kind: str) -> int:
        free = self._free_atoms if kind == "atom" else self._free_conj
        if free:
            return free.pop()
        if kind == "atom":
            n, self._next_atom = self._next_atom, self._next_atom + 1
            if n >= len(self.atom_conj):
                self.atom_conj = grown(self.atom_conj, n + 1, -1)
            if n >= len(self.atom_slot):
                self.atom_slot = grown(self.atom_slot, n + 1, -1)
        else:
            n, self._next_conj = self._next_conj, self._next_conj + 1
            if n >= len(self.conj_slot):
                self.conj_slot = grown(self.conj_slot, n + 1, -1)
                self.conj_size = grown(self.conj_size, n + 1, 0)
        return n

    def satisfied_slots(self, hits: dict, memo: EvaluationMemo | None = None) -> tuple[np.ndarray, np.ndarray]:
        """For a publication's `hits` (shape -> triples): the slot of every conjunction that one
        term satisfies whole, each conjunction once (marks to count against the slots' `need`),
        and the slots whose one atom (`atom_slot`) a term satisfies, each once (complete).

        `memo` (the publication's `EvaluationMemo`) is shared by every group, so
        an operand or predicate is computed once per distinct term.
        """
        by_shape = self.by_shape
        if not by_shape:
            return _NO_MARKS, _NO_MARKS
        if memo is None:
            memo = EvaluationMemo()
        answers = memo.answers
        atom_conj, conj_size, atom_slot = self.atom_conj, self.conj_size, self.atom_slot
        if len(self._seen) < len(self.conj_slot):
            self._seen = np.zeros(len(self.conj_slot), dtype=np.int32)
        found: list[np.ndarray] = []  # satisfied conjunctions, maybe repeated
        distinct: list[np.ndarray] = []  # satisfied conjunctions, each once (a group of one term)
        alone: list[np.ndarray] = []  # slots decided by one atom, each once
        for shape, triples in hits.items():
            groups = by_shape.get(shape)
            if groups is None:
                continue
            for group in groups:
                position = group.position
                atoms, owners = [], []  # per term: the atoms it satisfies, and the term's number
                terms = list({t[position] for t in triples})
                several = len(terms) > 1  # (the term of each atom is kept only then)
                for n, term in enumerate(terms):
                    for operand, (compute, index) in group.operands.items():
                        if compute is None:
                            value = term
                        else:
                            mkey = (operand, term)
                            value = answers.get(mkey)
                            if value is None:
                                value = answers[mkey] = compute(term)
                                memo.evaluations += 1
                            else:
                                memo.shared += 1
                        if value is not ERROR:
                            hit = index.satisfied(value)
                            if len(hit):
                                atoms.append(hit)
                                if several:
                                    owners.append(np.full(len(hit), n, dtype=np.int64))
                    for form, (predicate, ids) in group.opaque.items():
                        mkey = (predicate, (term,))  # as `ResidualPlan` keys it: shared with the joins
                        result = answers.get(mkey)
                        # One evaluation answers every test `ids` holds (each a query's
                        # predicate): evaluated per query, it would have been len(ids) times.
                        if result is None:
                            result = answers[mkey] = predicate.compiled({"_0": term})
                            memo.evaluations += 1
                            memo.shared += len(ids) - 1
                        else:
                            memo.shared += len(ids)
                        if result is True:
                            atoms.append(group.atoms_of(form, ids))
                            if several:
                                owners.append(np.full(len(ids), n, dtype=np.int64))
                if not atoms:
                    continue
                atoms_ = np.concatenate(atoms) if len(atoms) > 1 else atoms[0]
                if not several:
                    # One term reports each atom once, and an atom deciding its branch alone
                    # is in this group only: those branches are complete, each once.
                    slots = atom_slot[atoms_]
                    decided = slots >= 0
                    if decided.all():
                        alone.append(slots)
                        continue
                    alone.append(slots[decided])
                    conjs = atom_conj[atoms_[~decided]]
                    sizes = conj_size[conjs]
                    single = sizes == 1
                    # (each conjunction is in one group, and one term satisfies it once)
                    distinct.append(conjs[single])
                    if not single.all():
                        distinct.append(self._whole(conjs[~single], sizes[~single]))
                    continue
                conjs = atom_conj[atoms_]
                single = conj_size[conjs] == 1
                if single.all():
                    found.append(conjs)  # one test each: any term that passes it
                    _keep_pairs(memo, shape, position, terms, conjs, owners)
                    continue
                owner = np.concatenate(owners) if len(owners) > 1 else owners[0]
                # Several tests: one term must pass them all ((conjunction, term) counted once:
                # a ValueIndex reports each test once per value).
                n_terms = len(terms)
                keys, counts = np.unique(conjs[~single].astype(np.int64) * n_terms + owner[~single],
                                         return_counts=True)
                whole = counts == conj_size[keys // n_terms]
                held = np.concatenate([conjs[single], keys[whole] // n_terms])
                by = np.concatenate([owner[single], keys[whole] % n_terms])
                found.append(held)
                _keep_pairs(memo, shape, position, terms, held, [by])
        conjs = _joined(found)
        if len(conjs):
            # Each conjunction once (a conjunction may hold for several terms), in time linear
            # in the marks, not in the conjunctions stored (sorting them was the profile's top,
            # then reading back a mark per stored conjunction): every position writes its
            # number at its conjunction, and the one position whose number stayed there is kept.
            seen = self._seen
            at = np.arange(len(conjs), dtype=np.int32)
            seen[conjs] = at
            distinct.append(conjs[seen[conjs] == at])
        return self.conj_slot[_joined(distinct)], _joined(alone)

    def _whole(self, conjs: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """The conjunctions among `conjs` (one term's, of several atoms each, `sizes` their
        sizes) whose every atom is there, each once. A conjunction of two atoms (a range, the
        common case) is whole when it is there twice: both positions write their number at it
        and the one whose number did not stay marks it (no sort); larger ones are counted."""
        two = sizes == 2
        pairs = conjs[two]
        seen = self._seen
        at = np.arange(len(pairs), dtype=np.int32)
        seen[pairs] = at
        whole = pairs[seen[pairs] != at]
        if two.all():
            return whole
        keys, counts = np.unique(conjs[~two], return_counts=True)
        return np.concatenate((whole, keys[counts == self.conj_size[keys]]))


_NO_MARKS = np.zeros(0, dtype=np.int32)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else _NO_MARKS


#: The most terms of a value group whose masks are kept (a sum of bits in float64 is exact).
MASK_TERMS = 52


class TermMasks(NamedTuple):
    """One value group's terms on a publication, the conjunctions some term satisfies whole
    (ascending), and for each the bit mask of those terms."""

    terms: list
    conjs: np.ndarray
    masks: np.ndarray


def _keep_pairs(memo: EvaluationMemo, shape, position: int, terms: list, conjs: np.ndarray,
                owners: list[np.ndarray]) -> None:
    """Keep a value group's held (conjunction, term number) pairs in `memo` (None past
    `MASK_TERMS` terms): the masks are made only when a branch asks for them (`masks_of`)."""
    memo.term_masks[(id(shape), position)] = (terms, conjs, owners) if len(terms) <= MASK_TERMS else None


def masks_of(memo: EvaluationMemo, where: tuple) -> TermMasks | None:
    """The `TermMasks` of the value group at `where` ((id(shape), position)) on the
    publication of `memo`, made on first use from its pairs (each pair once, so a sum of
    bits is their union); None past `MASK_TERMS` terms or when the group has one term."""
    found = memo.term_masks.get(where)
    if found is None or isinstance(found, TermMasks):
        return found
    terms, conjs, owners = found
    owners = np.concatenate(owners) if len(owners) > 1 else owners[0]
    if not len(conjs):
        made = TermMasks(terms, conjs, np.zeros(0, dtype=np.int64))
    else:
        bits = np.ldexp(1.0, owners.astype(np.int32))
        top = int(conjs.max()) + 1
        if top <= 8 * len(conjs):  # (dense: no sort)
            sums = np.bincount(conjs, weights=bits, minlength=top)
            held = np.flatnonzero(sums)
            made = TermMasks(terms, held, sums[held].astype(np.int64))
        else:
            held, at = np.unique(conjs, return_inverse=True)
            made = TermMasks(terms, held, np.bincount(at, weights=bits).astype(np.int64))
    memo.term_masks[where] = made
    return made


def term_mask(masks: TermMasks, conj: int) -> int:
    """The bit mask of the terms that satisfy conjunction `conj` in a group's `TermMasks`."""
    _, held, values = masks
    at = int(np.searchsorted(held, conj))
    return int(values[at]) if at < len(held) and held[at] == conj else 0


def exact_star(plan: Plan, branch: Branch, projection) -> bool:
    """Whether the index decides the branch's residual exactly: every conjunct is an indexed
    test, on a variable bound once (one position of one tuple) and not projected.

    Then a solution of the join passes the filters iff each tested variable
    has one term that satisfies all its tests, which is what the conjunction
    marks count: the branch may be answered as a star on its other variables.
    """
    if not plan.conjunctions or len(plan.taken) != len(set(branch.residual)):
        return False
    for var in plan.variables:
        bound = sum(1 for t in branch.tuples for term in t.terms
                    if isinstance(term, Variable) and term.name == var)
        if var in projection or bound != 1:
            return False
    return True
