"""The value tests of a saved index's mapped queries as arrays (format 4), and back.

A query with value tests (``FILTER(?pop > 1000000)``, `rtf.matching.value_tests`)
used to be registered again at load from its model: decoded, planned, its
tests indexed one by one -- ~90 us a query, 9 s at 100K value queries.
What matching reads of them is a few arrays and one small `ValueGroup` per
(shape, position): `snapshot` writes those arrays and `restore` puts them
back, so that such a query is *mapped* like the others
(`rtf.matching.table_snapshot`), its model decoded only when something
needs it.

Saved (names after the ``v_`` prefix; A atoms, C conjunctions, S slots, G
groups, P parts; docs/index-format.md gives them byte by byte):

- per atom: its conjunction (-1: free), its operator (a number in
  `rtf.matching.value_index.OPERATORS`) and its constants (numbers in a
  table of the distinct constants' keys);
- per conjunction: its slot (-1: free), its number of atoms, its group, its
  tested variable (a number in the head's ``vars``);
- per slot: its conjunctions in the branch's order (``held``), and its
  structure (`rtf.matching.structures`; each structure its sorted shape ids);
- per group: its shape id and position, then its *parts* in order: an
  operand (a number in the head's ``operands``) or an opaque predicate (a
  number in its ``forms``, as the JSON value entries of the body's encoding),
  with the part's atoms in the order its index holds them.

Only the slots of mapped queries are saved; atom and conjunction numbers
are kept as they were (the others free), so that the `ValueIndex` answers
are the same numbers. A restored `ValueIndex` holds its tests as arrays
until something asks for them (`ValueIndex.saved`: a publication, a
registration, a removal), and `ValueTests.held` makes a restored branch's
conjunctions when first asked for. Everything is checked in range before
use (ValueError naming what is wrong).
"""

from __future__ import annotations

import json

import numpy as np

from rtf.errors import IndexFileError
from rtf.io import sections
from rtf.matching.shared_predicates import shared_predicate
from rtf.matching.structures import SlotList, grown, sorted_unique
from rtf.matching.value_index import OPERATORS, ValueIndex, ValueTest, keyed_postings, sorted_postings
from rtf.matching.value_tests import ValueGroup, ValueTests, _compute
from rtf.query.values import BOOLEAN, DATE, DATETIME, DECIMAL, DOUBLE, FLOAT, STRING, typed_value

#: The prefix of the value tests' section names.
PREFIX = "v_"
_OPS = {op: k for k, op in enumerate(OPERATORS)}


def snapshot(table, keep: np.ndarray, entries_text) -> dict[str, np.ndarray]:
    """The sections of the value tests and structures of the slots `keep` marks (a bool per
    slot); `entries_text` encodes an opaque predicate (`table_snapshot.entries_text`)."""
    values, structures = table.values, table.structures
    slots_count = len(keep)
    if not values.branch_conj and getattr(values, "saved", None) is None:
        return {}  # (no value tests: no sections, as in a file written before them)
    n_atoms, n_conj = values._next_atom, values._next_conj
    conj_slot = values.conj_slot[:n_conj].astype(np.int64)
    kept_conj = (conj_slot >= 0) & np.concatenate((keep, [False]))[np.where(conj_slot >= 0, conj_slot, -1)]
    atom_conj = values.atom_conj[:n_atoms].astype(np.int64)
    kept_atom = (atom_conj >= 0) & np.concatenate((kept_conj, [False]))[np.where(atom_conj >= 0, atom_conj, -1)]
    operands, forms, variables, constants = {}, {}, {}, {}
    groups, part_offsets, part_kind, part_atoms, part_counts = [], [0], [], [], []
    runs: list[list] = []  # per part: its index's tables (`_runs`)
    group_of = {}
    atom_op = np.zeros(n_atoms, dtype=np.int32)
    atom_consts: list[list[int]] = [[] for _ in range(n_atoms)]
    for group in values.groups.values():
        parts = 0
        for operand, (_, index) in group.operands.items():
            atoms = [a for a in index.tests() if kept_atom[a]]
            if atoms:
                part_kind.append(operands.setdefault(operand, len(operands)))
                tests = index.tests()
                for a in atoms:
                    test = tests[a]
                    atom_op[a] = _OPS[test.op]
                    atom_consts[a] = [constants.setdefault(c, len(constants)) for c in test.constants]
                part_atoms += atoms
                part_counts.append(len(atoms))
                runs.append(_runs(tests, atoms, constants))
                parts += 1
        for form, (_, held) in group.opaque.items():
            atoms = [a for a in held if kept_atom[a]]
            if atoms:
                part_kind.append(-1 - forms.setdefault(form, len(forms)))
                part_atoms += atoms
                part_counts.append(len(atoms))
                runs.append([])
                parts += 1
        if parts:
            group_of[id(group)] = len(groups)
            groups.append((group.shape.id, group.position))
            part_offsets.append(part_offsets[-1] + parts)
    conj_group = np.full(n_conj, -1, dtype=np.int32)
    conj_var = np.full(n_conj, -1, dtype=np.int32)
    held, held_counts = [], np.zeros(slots_count, dtype=np.int64)
    for slot in np.flatnonzero(keep).tolist():
        found = values.held(slot)
        held_counts[slot] = len(found)
        for group, conj, _, var in found:
            held.append(conj)
            conj_group[conj] = group_of[id(group)]
            conj_var[conj] = variables.setdefault(var, len(variables))
    of_slot = np.full(slots_count, -1, dtype=np.int32)
    known = min(slots_count, len(structures.of_slot))
    of_slot[:known] = np.where(keep[:known], structures.of_slot[:known], -1)
    used = set(of_slot[of_slot >= 0].tolist())
    shapes_of = [sorted(s.id for s in structures.shapes[k]) if k in used else []
                 for k in range(len(structures.shapes))]
    head = {"operands": [list(o) for o in operands], "forms": [entries_text(f) for f in forms],
            "vars": list(variables)}
    out = {"head": np.frombuffer(json.dumps(head, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
           "atom_conj": np.where(kept_atom, atom_conj, -1).astype(np.int32),
           "atom_op": atom_op,
           "atom_const_offsets": sections.offsets([len(c) for c in atom_consts]),
           "atom_consts": np.array([c for cs in atom_consts for c in cs], dtype=np.int32),
           "conj_slot": np.where(kept_conj, conj_slot, -1).astype(np.int32),
           "conj_size": np.where(kept_conj, values.conj_size[:n_conj], 0).astype(np.int32),
           "conj_group": conj_group, "conj_var": conj_var,
           "held_offsets": sections.offsets(held_counts), "held": np.array(held, dtype=np.int32),
           "groups": np.array(groups, dtype=np.int32).reshape(len(groups), 2),
           "group_part_offsets": np.array(part_offsets, dtype=np.int64),
           "part_kind": np.array(part_kind, dtype=np.int32),
           "part_atom_offsets": sections.offsets(part_counts),
           "part_atoms": np.array(part_atoms, dtype=np.int32),
           "slot_structure": of_slot,
           "structure_offsets": sections.offsets([len(s) for s in shapes_of]),
           "structure_shapes": np.array([sid for s in shapes_of for sid in s], dtype=np.int32)}
    out["const_offsets"], out["consts"] = sections.strings(list(constants))
    out.update(_runs_sections(runs, list(constants)))
    return {PREFIX + name: array for name, array in out.items()}


def _runs(tests: dict, atoms: list[int], constants: dict) -> list[tuple]:
    """The tables a `ValueIndex` of `tests` builds for `atoms` (`ValueIndex._build`), as runs:
    (operator code, value space or -1 for the constants without a value, the tests' ids
    and their constants' numbers in the tables' order, the NaN constants' ids)."""
    entries: dict[str, dict] = {}
    for a in atoms:
        for op, kind, value, key in keyed_postings(tests[a]):
            entries.setdefault(op, {}).setdefault(kind, []).append((value, a, key))
    runs = []
    for op, by_kind in entries.items():
        for kind, items in by_kind.items():
            ordered, nan = (items, []) if kind is None else sorted_postings(items)
            runs.append((_OPS[op], -1 if kind is None else kind, [a for _, a, _ in ordered],
                         [constants[key] for _, _, key in ordered], [a for _, a, _ in nan]))
    return runs


def _runs_sections(runs: list[list], keys: list[str]) -> dict[str, np.ndarray]:
    """The sections of every part's runs (`_runs`), and each constant's value where it is an
    int64 integer (type 1) or a float (type 2, its bits), to restore them without parsing."""
    flat = [run for part in runs for run in part]
    const_type, const_number = np.zeros(len(keys), dtype=np.uint8), np.zeros(len(keys), dtype=np.int64)
    for c, key in enumerate(keys):
        typed = typed_value(key)
        value = typed[1] if typed is not None else None
        if type(value) is int and -2**63 <= value < 2**63:
            const_type[c], const_number[c] = 1, value
        elif type(value) is float:
            const_type[c], const_number[c] = 2, np.float64(value).view(np.int64)
    return {"part_run_offsets": sections.offsets([len(part) for part in runs]),
            "runs": np.array([run[:2] for run in flat], dtype=np.int32).reshape(len(flat), 2),
            "run_offsets": sections.offsets([len(run[2]) for run in flat]),
            "run_ids": np.array([a for run in flat for a in run[2]], dtype=np.int32),
            "run_consts": np.array([c for run in flat for c in run[3]], dtype=np.int32),
            "run_nan_offsets": sections.offsets([len(run[4]) for run in flat]),
            "run_nan_ids": np.array([a for run in flat for a in run[4]], dtype=np.int32),
            "const_type": const_type, "const_number": const_number}


class SavedTests:
    """The tests of one restored `ValueIndex`, made into `ValueTest` s when first asked for,
    and its tables laid out as saved (`runs`, None for a file without them)."""

    __slots__ = ("atoms", "saved", "part")

    def __init__(self, atoms: np.ndarray, saved: "_Saved", part: int):
        self.atoms, self.saved, self.part = atoms, saved, part

    def repeats(self) -> bool:
        """Whether an IN test has several constants (`ValueIndex._repeats`)."""
        saved, atoms = self.saved, self.atoms
        counts = saved.atom_const_offsets[atoms + 1] - saved.atom_const_offsets[atoms]
        return bool(((saved.atom_op[atoms] == _OPS["in"]) & (counts > 1)).any())

    @property
    def runs(self):
        return None if self.saved.runs is None else self._runs

    def _runs(self) -> list[tuple]:
        """(operator, value space or None, values or keys, ids, NaN ids) per run (`laid_out`)."""
        saved = self.saved
        a, keys = saved.runs, saved.keys()
        first, last = int(a["part_run_offsets"][self.part]), int(a["part_run_offsets"][self.part + 1])
        out = []
        for r in range(first, last):
            op, kind = a["runs"][r].tolist()
            at, end = int(a["run_offsets"][r]), int(a["run_offsets"][r + 1])
            ids, consts = a["run_ids"][at:end].astype(np.int64), a["run_consts"][at:end]
            nan_ids = a["run_nan_ids"][a["run_nan_offsets"][r]:a["run_nan_offsets"][r + 1]].astype(np.int64)
            if kind < 0:
                out.append((OPERATORS[op], None, [keys[c] for c in consts.tolist()], ids, nan_ids))
            else:
                out.append((OPERATORS[op], kind, _values(kind, consts, a, keys), ids, nan_ids))
        return out

    def __call__(self) -> dict[int, ValueTest]:
        saved = self.saved
        ops, offsets, consts, keys = saved.atom_op, saved.atom_const_offsets, saved.atom_consts, saved.keys()
        atoms = self.atoms
        starts, ends = offsets[atoms].tolist(), offsets[atoms + 1].tolist()
        names = [OPERATORS[op] for op in ops[atoms].tolist()]
        flat = consts.tolist()
        return {a: ValueTest(op, tuple([keys[c] for c in flat[s:e]]))
                for a, op, s, e in zip(atoms.tolist(), names, starts, ends)}


#: The value spaces whose values `typed_value` gives as ints, and as floats.
_INT_KINDS, _FLOAT_KINDS = frozenset((DECIMAL, DATE)), frozenset((FLOAT, DOUBLE))


def _values(kind: int, consts: np.ndarray, a: dict, keys: list[str]) -> list:
    """The values of constants `consts` of value space `kind`, in order: the ints and floats
    from their saved numbers, the others parsed from their keys; IndexFileError unless each
    is of `kind` and they ascend (what `bisect` over them needs)."""
    types, numbers = a["const_type"][consts], a["const_number"][consts]
    out = np.empty(len(consts), dtype=object)
    ints, floats = types == 1, types == 2
    out[ints] = numbers[ints].tolist()
    out[floats] = numbers[floats].view(np.float64).tolist()
    rest = ~(ints | floats)
    parsed = [typed_value(keys[c]) for c in consts[rest].tolist()]
    if ((ints.any() and kind not in _INT_KINDS) or (floats.any() and kind not in _FLOAT_KINDS)
            or any(typed is None or typed[0] != kind for typed in parsed)):
        raise IndexFileError(f"the index's value tests hold a constant not of its value space {kind}: "
                             f"was the file edited?")
    values = out.tolist()
    for at, typed in zip(np.flatnonzero(rest).tolist(), parsed):  # (a tuple is no numpy element)
        values[at] = typed[1]
    try:
        ordered = all(x <= y for x, y in zip(values, values[1:]))
    except TypeError:
        ordered = False
    if not ordered:
        raise IndexFileError("the index's value tests are not in order: was the file edited?")
    return values


class _Saved:
    """The restored arrays a `ValueTests` reads its restored branches' conjunctions from."""

    def __init__(self, a: dict, groups: list, variables: list[str], slots_count: int):
        self.atom_op, self.atom_const_offsets, self.atom_consts = a["atom_op"], a["atom_const_offsets"], a["atom_consts"]
        self.const_offsets, self.consts = a["const_offsets"], a["consts"]
        self.held_offsets, self.held = a["held_offsets"], a["held"]
        self.conj_group, self.conj_var = a["conj_group"], a["conj_var"]
        self.groups, self.variables = groups, variables
        self.gone = np.zeros(slots_count, dtype=bool)  # slots whose saved branch was removed
        self._keys: list[str] | None = None
        self._atoms: tuple[np.ndarray, np.ndarray] | None = None  # conj -> its atoms (sorted by conj)
        self.atom_conj = a["atom_conj"]
        #: the sections of the value indexes' tables (`_runs_sections`), or None
        self.runs = {name: a[name] for name in _RUNS} if _RUNS[0] in a else None

    def keys(self) -> list[str]:
        if self._keys is None:
            import sys
            self._keys = [sys.intern(k) for k in sections.read_strings(self.const_offsets, self.consts,
                                                                      "the value tests' constants")]
        return self._keys

    def take(self, slot: int, forget: bool) -> tuple | None:
        """The saved conjunctions of the branch at `slot` as `ValueTests.branch_conj` holds
        them, or None (none saved, or removed); `forget`: removed now."""
        if slot >= len(self.gone) or self.gone[slot]:
            return None
        start, end = int(self.held_offsets[slot]), int(self.held_offsets[slot + 1])
        if start == end:
            return None
        if forget:
            self.gone[slot] = True
        if self._atoms is None:
            order = np.argsort(self.atom_conj, kind="stable")
            self._atoms = (order, np.searchsorted(self.atom_conj[order], np.arange(len(self.conj_group) + 1)))
        order, bounds = self._atoms
        found = []
        for conj in self.held[start:end].tolist():
            atoms = tuple(order[bounds[conj]:bounds[conj + 1]].tolist())
            found.append((self.groups[int(self.conj_group[conj])], conj, atoms,
                          self.variables[int(self.conj_var[conj])]))
        return tuple(found)


def restore(table, arrays: dict[str, np.ndarray], valued: np.ndarray, decode_form, branch_pairs: np.ndarray) -> None:
    """Fill the empty `table.values` and `table.structures` from the saved sections
    (`snapshot`'s, `arrays` by full name) for the slots `valued` marks (restored branches
    counted by their value tests, whose shapes are `branch_pairs`: slot * (shape count + 1)
    + shape id, ascending); `decode_form(text)` decodes an opaque predicate.
    ValueError if a section is missing, of the wrong size, or holds a number out of range."""
    a = {name[len(PREFIX):]: array for name, array in arrays.items() if name.startswith(PREFIX)}
    head = json.loads(a["head"].tobytes())
    operands = [tuple(o) for o in head["operands"]]
    variables, form_texts = head["vars"], head["forms"]
    _expect(all(type(v) is str for v in variables) and all(type(f) is str for f in form_texts)
            and all(all(type(x) is str for x in o) and o for o in operands), "the saved value head")
    shape_at, shape_count = table.shape_at, table._next_shape
    slots_count = len(valued)
    atom_conj, conj_slot, conj_size = a["atom_conj"], a["conj_slot"], a["conj_size"]
    n_atoms, n_conj = len(atom_conj), len(conj_slot)
    held_offsets, held = a["held_offsets"], a["held"]
    groups_, gpo, part_kind = a["groups"], a["group_part_offsets"], a["part_kind"]
    pao, part_atoms = a["part_atom_offsets"], a["part_atoms"]
    n_groups, n_parts = len(groups_), len(part_kind)
    aco, consts = a["atom_const_offsets"], a["atom_consts"]
    keys_count = len(a["const_offsets"]) - 1
    _expect(_utf8_strings(a["const_offsets"], a["consts"]), "the saved constants")
    _expect(len(a["atom_op"]) == n_atoms and len(aco) == n_atoms + 1 and sections.ascending(aco, len(consts))
            and sections.within(consts, keys_count) and sections.within(a["atom_op"], len(OPERATORS))
            and sections.within(atom_conj, n_conj, -1) and len(conj_size) == n_conj
            and len(a["conj_group"]) == n_conj and len(a["conj_var"]) == n_conj
            and sections.within(conj_slot, slots_count, -1)
            and len(held_offsets) == slots_count + 1 and sections.ascending(held_offsets, len(held))
            and sections.within(held, n_conj) and groups_.ndim == 2 and groups_.shape[1] == 2
            and len(gpo) == n_groups + 1 and sections.ascending(gpo, n_parts) and (np.diff(gpo) > 0).all()
            and len(pao) == n_parts + 1 and sections.ascending(pao, len(part_atoms)) and (np.diff(pao) > 0).all()
            and sections.within(part_atoms, n_atoms)
            and sections.within(part_kind, len(operands), -len(form_texts)), "the saved value tests")
    live_conj = conj_slot >= 0
    counts = np.diff(held_offsets)
    # Each live conjunction held once, by its own slot; each valued slot holding some, the others none;
    # each live atom in one part, of its conjunction's group; a conjunction as large as its atoms.
    held_slot = np.repeat(np.arange(slots_count), counts)
    _expect(((counts > 0) == valued).all() and int(live_conj.sum()) == len(held)
            and (conj_slot[held] == held_slot).all()
            and (not len(held) or int(np.bincount(held, minlength=n_conj).max()) == 1)
            and sections.within(a["conj_group"][live_conj], n_groups)
            and sections.within(a["conj_var"][live_conj], len(variables)), "the saved conjunctions")
    live_atom = atom_conj >= 0
    part_group = np.repeat(np.arange(n_groups), np.diff(gpo))
    atom_part_group = np.full(n_atoms, -1, dtype=np.int64)
    atom_part_group[part_atoms] = np.repeat(part_group, np.diff(pao))
    atom_ops = a["atom_op"]
    const_counts = np.diff(aco)
    in_operand = np.zeros(n_atoms, dtype=bool)
    in_operand[part_atoms] = np.repeat(part_kind >= 0, np.diff(pao))
    _expect((np.bincount(part_atoms, minlength=n_atoms) == live_atom).all()
            and (atom_part_group[live_atom] == a["conj_group"][atom_conj[live_atom]]).all()
            and (np.bincount(atom_conj[live_atom], minlength=n_conj) == np.where(live_conj, conj_size, 0)).all()
            and (conj_size[live_conj] > 0).all()
            and ((const_counts[in_operand] == 1) | ((atom_ops[in_operand] == _OPS["in"])
                                                    & (const_counts[in_operand] > 0))).all(),
            "the saved atoms")
    _expect(sections.within(groups_[:, 0], shape_count) and sections.within(groups_[:, 1], 3)
            and all(s is not None for s in shape_at[groups_[:, 0]].tolist())
            and len({(int(s), int(p)) for s, p in groups_.tolist()}) == n_groups, "the saved value groups")
    if _RUNS[0] in a:
        _check_runs(a, part_kind, part_atoms, pao, n_atoms, keys_count)
    values = table.values = ValueTests()
    decoded_forms = [None] * len(form_texts)
    groups = []
    saved = _Saved(a, groups, variables, slots_count)
    for g, (sid, position) in enumerate(groups_.tolist()):
        shape = shape_at[sid]
        group = values.groups[(id(shape), position)] = ValueGroup(shape, position)
        values.by_shape.setdefault(shape, []).append(group)
        groups.append(group)
        for p in range(int(gpo[g]), int(gpo[g + 1])):
            kind, atoms = int(part_kind[p]), part_atoms[pao[p]:pao[p + 1]].astype(np.int64)
            if kind >= 0:
                _expect(operands[kind] not in group.operands, "the saved value groups")
                index = ValueIndex()
                index.saved = SavedTests(atoms, saved, p)
                group.operands[operands[kind]] = (_compute(operands[kind]), index)
            else:
                form = decoded_forms[-1 - kind]
                if form is None:
                    form = decoded_forms[-1 - kind] = decode_form(form_texts[-1 - kind])
                _expect(form not in group.opaque, "the saved value groups")
                group.opaque[form] = (shared_predicate(form), set(atoms.tolist()))
    values.atom_conj = grown(atom_conj.astype(np.int32), max(n_atoms, 64), -1)[:max(n_atoms, 64)]
    values.conj_slot = grown(conj_slot.astype(np.int32), max(n_conj, 64), -1)[:max(n_conj, 64)]
    values.conj_size = grown(conj_size.astype(np.int32), max(n_conj, 64), 0)[:max(n_conj, 64)]
    values._next_atom, values._next_conj = n_atoms, n_conj
    values._free_atoms.frombytes(np.flatnonzero(~live_atom)[::-1].astype(values._free_atoms.typecode).tobytes())
    values._free_conj.frombytes(np.flatnonzero(~live_conj)[::-1].astype(values._free_conj.typecode).tobytes())
    # One conjunction of one atom decides its branch alone (`ValueTests._decided_alone`).
    first = held[held_offsets[:-1][counts == 1]]
    slots = np.flatnonzero(counts == 1)
    alone = conj_size[first] == 1
    atom_of = np.full(n_conj, -1, dtype=np.int64)
    live = np.flatnonzero(live_atom)
    atom_of[atom_conj[live]] = live
    values.atom_slot = np.full(len(values.atom_conj), -1, dtype=np.int32)
    values.atom_slot[atom_of[first[alone]]] = slots[alone]
    values.slot_conj = np.full(max(slots_count, 64), -1, dtype=np.int32)
    values.slot_conj[slots] = first
    values.saved = saved
    table.need[:slots_count][valued] = counts[valued]
    _restore_structures(table, a, valued, shape_count, branch_pairs)


def _restore_structures(table, a: dict, valued: np.ndarray, shape_count: int, branch_pairs: np.ndarray) -> None:
    """The saved structures (`snapshot`'s) into the empty `table.structures`, each branch's
    structure its shapes (`branch_pairs`, see `restore`)."""
    of_slot, offsets, shapes = a["slot_structure"], a["structure_offsets"], a["structure_shapes"]
    n = len(offsets) - 1
    _expect(len(of_slot) == len(valued) and n >= 0 and sections.ascending(offsets, len(shapes))
            and sections.within(of_slot, n, -1) and ((of_slot >= 0) == valued).all()
            and sections.within(shapes, shape_count), "the saved structures")
    slots = np.flatnonzero(of_slot >= 0)
    held = of_slot[slots]
    sizes = np.diff(offsets)[held]
    pairs = (np.repeat(slots, sizes) * (shape_count + 1)
             + shapes[sections.ranges(offsets[:-1][held], sizes)].astype(np.int64))
    _expect(np.array_equal(sorted_unique(pairs), branch_pairs), "the saved structures")
    structures = table.structures
    users = np.bincount(of_slot[of_slot >= 0], minlength=n)
    sizes = np.diff(offsets)
    _expect(((users > 0) <= (sizes > 0)).all(), "the saved structures")
    steps = np.diff(shapes.astype(np.int64))
    inner = np.ones(len(steps), dtype=bool)
    inner[offsets[1:-1][(offsets[1:-1] > 0) & (offsets[1:-1] < len(shapes))] - 1] = False
    _expect((steps[inner] > 0).all(), "the saved structures")  # (each structure's shapes ascending)
    structures.shapes = [None] * n
    structures.need = grown(np.where(users > 0, sizes, -1).astype(np.int64), max(n, 16), -1)
    structures.users = grown(users.astype(np.int64), max(n, 16), 0)
    structures.of_slot = grown(of_slot.astype(np.int32), max(len(of_slot), 64), -1)
    shape_at, bounds = table.shape_at, offsets.tolist()
    for sid in range(n):
        if not users[sid]:
            structures._free.append(sid)
            continue
        key = tuple(shapes[bounds[sid]:bounds[sid + 1]].tolist())
        members = tuple(shape_at[list(key)].tolist())
        _expect(None not in members, "the saved structures")
        structures.ids[key] = sid
        structures.shapes[sid] = members
        for shape in members:
            if shape.structures is None:
                shape.structures = SlotList()
            shape.structures.add(sid)


#: The sections of the value indexes' tables, the first one's presence saying they are there.
_RUNS = ("part_run_offsets", "runs", "run_offsets", "run_ids", "run_consts", "run_nan_offsets", "run_nan_ids",
         "const_type", "const_number")


def _check_runs(a: dict, part_kind: np.ndarray, part_atoms: np.ndarray, pao: np.ndarray, n_atoms: int,
                keys_count: int) -> None:
    """The saved runs (`_runs_sections`) in range: each run's ids atoms of its part, an
    operator a table holds, a value space that is one; each constant's type known."""
    offsets, runs, run_offsets, nan_offsets = a["part_run_offsets"], a["runs"], a["run_offsets"], a["run_nan_offsets"]
    ids, nan_ids = a["run_ids"], a["run_nan_ids"]
    n_runs = len(runs)
    _expect(len(offsets) == len(part_kind) + 1 and sections.ascending(offsets, n_runs)
            and (np.diff(offsets)[part_kind < 0] == 0).all() and runs.ndim == 2 and runs.shape[1] == 2
            and len(run_offsets) == n_runs + 1 and sections.ascending(run_offsets, len(ids))
            and len(nan_offsets) == n_runs + 1 and sections.ascending(nan_offsets, len(nan_ids))
            and len(a["run_consts"]) == len(ids) and sections.within(a["run_consts"], keys_count)
            and len(a["const_type"]) == keys_count and len(a["const_number"]) == keys_count
            and sections.within(a["const_type"], 3) and sections.within(ids, n_atoms)
            and sections.within(nan_ids, n_atoms), "the saved value tables")
    ops, kinds = runs[:, 0], runs[:, 1]
    _expect(sections.within(ops, len(OPERATORS)) and not (ops == _OPS["in"]).any()
            and bool(np.isin(kinds, (-1, *_KINDS)).all())
            and not (np.diff(nan_offsets)[kinds < 0] > 0).any(), "the saved value tables")
    atom_part = np.full(n_atoms, -1, dtype=np.int64)
    atom_part[part_atoms] = np.repeat(np.arange(len(part_kind)), np.diff(pao))
    run_part = np.repeat(np.arange(len(part_kind)), np.diff(offsets))
    _expect((atom_part[ids] == np.repeat(run_part, np.diff(run_offsets))).all()
            and (atom_part[nan_ids] == np.repeat(run_part, np.diff(nan_offsets))).all(), "the saved value tables")


_KINDS = (DECIMAL, FLOAT, DOUBLE, STRING, BOOLEAN, DATETIME, DATE)


def _utf8_strings(offsets: np.ndarray, data: np.ndarray) -> bool:
    """Whether `sections.read_strings` will read these strings (checked now, read later):
    offsets ascending within the bytes, UTF-8 bytes, and no string starting inside a character."""
    if not sections.ascending(offsets, len(data)):
        return False
    try:
        data.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    starts = offsets[:-1][offsets[:-1] < len(data)]
    return not (data[starts] & 0xC0 == 0x80).any()


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"{what} is inconsistent")


# ------------------------------------------------------------ projected stars

#: The prefix of the projected stars' section names.
STARS = "p_"


def stars_snapshot(table, keep: np.ndarray) -> dict[str, np.ndarray]:
    """The projected stars (`rtf.matching.star.ProjectedStars`) of the slots `keep` marks: each
    slot's code and its query's lead slot, the codes numbered anew from 0 in their order."""
    slots_count = len(keep)
    codes = [np.where(keep, grown(array, slots_count, -1)[:slots_count], -1)
             for array in (table.slot_projected, table.slot_projected_part)]
    used = np.unique(np.concatenate(codes)[np.concatenate(codes) >= 0])
    if not len(used):
        return {}  # (no projected star: no sections)
    renumber = np.full(int(used.max()) + 2 if len(used) else 1, -1, dtype=np.int32)
    renumber[used] = np.arange(len(used), dtype=np.int32)
    stars = [table.projected.by_code[code] for code in used.tolist()]
    head = {"stars": [[list(star.names), [None if column is None else [column[0].id, column[1], bool(column[2])]
                                           for column in star.columns]] for star in stars]}
    table._grow_part_leads()
    return {STARS + "head": np.frombuffer(json.dumps(head, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
            STARS + "slot_code": renumber[codes[0]], STARS + "slot_part_code": renumber[codes[1]],
            STARS + "slot_part_lead": np.where(keep, table.slot_part_lead[:slots_count], -1).astype(np.int32)}


def restore_stars(table, arrays: dict[str, np.ndarray], live: np.ndarray, branch_pairs: np.ndarray) -> None:
    """The saved projected stars (`stars_snapshot`'s) into the empty `table.projected`, for the
    restored slots `live` marks, whose shapes are `branch_pairs` (see `restore`); ValueError
    if anything is out of range."""
    from rtf.matching.star import ProjectedStar

    a = {name[len(STARS):]: array for name, array in arrays.items() if name.startswith(STARS)}
    stars = json.loads(a["head"].tobytes())["stars"]
    code, part, lead = a["slot_code"], a["slot_part_code"], a["slot_part_lead"]
    slots_count, shape_at = len(live), table.shape_at
    _expect(type(stars) is list and len(code) == slots_count and len(part) == slots_count
            and len(lead) == slots_count and sections.within(code, len(stars), -1)
            and sections.within(part, len(stars), -1) and sections.within(lead, slots_count, -1)
            and not ((code >= 0) & (part >= 0)).any() and ((code < 0) | live).all() and ((part < 0) | live).all()
            and ((lead < 0) | live).all() and bool(live[lead[lead >= 0]].all()), "the saved projected stars")
    counts = np.bincount(np.concatenate((code[code >= 0], part[part >= 0])), minlength=len(stars))
    _expect(bool((counts > 0).all()), "the saved projected stars")
    projected, needed = table.projected, []
    for k, (saved, count) in enumerate(zip(stars, counts.tolist())):
        _expect(type(saved) is list and len(saved) == 2 and type(saved[0]) is list
                and type(saved[1]) is list and len(saved[0]) == len(saved[1])
                and all(type(n) is str for n in saved[0]), "the saved projected stars")
        columns = []
        for column in saved[1]:
            if column is not None:
                _expect(type(column) is list and len(column) == 3 and type(column[0]) is int
                        and 0 <= column[0] < table._next_shape and shape_at[column[0]] is not None
                        and column[1] in (0, 1, 2) and type(column[2]) is bool, "the saved projected stars")
                column = (shape_at[column[0]], column[1], column[2])
            columns.append(column)
        needed.append([column[0] for column in saved[1] if column is not None])
        star = ProjectedStar(tuple(saved[0]), tuple(columns))
        _expect(projected.code(star) == k, "the saved projected stars")  # (distinct stars, numbered in order)
        projected._count[k] = count
    # Each star's column shapes among the shapes of every branch that has its code.
    coded = np.flatnonzero((code >= 0) | (part >= 0))
    star_of = np.maximum(code, part)[coded]
    offsets = sections.offsets([len(n) for n in needed])
    sizes = np.diff(offsets)[star_of]
    wanted = (np.repeat(coded.astype(np.int64), sizes) * (table._next_shape + 1)
              + np.array([sid for n in needed for sid in n], dtype=np.int64)[sections.ranges(offsets[star_of], sizes)])
    found = np.searchsorted(branch_pairs, wanted)
    _expect(bool((found < len(branch_pairs)).all()) and bool((branch_pairs[np.minimum(found, len(branch_pairs) - 1)]
                                                             == wanted).all()), "the saved projected stars")
    table.slot_projected[:slots_count] = code
    table.slot_projected_part[:slots_count] = part
    table.slot_part_lead = grown(lead.astype(np.int32), max(slots_count, 64), -1)
