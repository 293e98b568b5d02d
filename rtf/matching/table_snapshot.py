"""The query table as arrays for a saved index (format 4), and back, branches made when needed.

Loading a saved index used to register every query again: decode its model,
decompose its branches, plan and index each one (``QueryTable.add``), which
is Python objects per query and per branch, seconds at 100K queries. What
matching reads of most queries is arrays already -- a slot's query id and
subscriber, its known answer (`QueryTable.slot_answer`), its pivot and
other shapes (`rtf.matching.pivots`) -- so `snapshot` writes those arrays
and `restore` puts them back as they were, with the shapes (made from their
saved structure and word keys, their full text decoded when first read:
`MappedShape`).

Only *mapped* queries are saved so: every query but version 3's (whose
algebra answers it). A branch counted by its value tests rather than its
shapes has them saved too, with its structure, and a projected star its
code (`rtf.matching.value_snapshot`). The others are registered again at
load from their models, as before (their slots are left free for them).

A mapped query's `RegisteredBranch` objects are made from its model only
when something needs them (`MappedQueries.materialise`): a complete branch
answered by a join or a star plan, its removal, a save. Until then its slots
hold `PENDING` (`LazyBranches`) and its entry in `QueryTable.queries` a tuple
of them, one per branch. The query's model comes from the engine
(`models(k)`, k its number in the file), decoded on first use.

Everything read from the arrays is checked to be in range before use
(`restore` raises ValueError naming what is wrong): the arrays are trusted
to be *right* only when the file is signed by this installation
(`rtf.io.sections`), but never trusted not to crash.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Callable

import numpy as np

from rtf.errors import IndexFileError
from rtf.io import sections
from rtf.io.store import CLASS_NAMES, _ValueBuilder, _ValueTable
from rtf.matching.query_table import PENDING, QueryTable, RegisteredBranch, planned_branches
from rtf.matching.loaded_ids import FileIds, LoadedMap
from rtf.matching.star import star_plan
from rtf.matching.structures import grown, sorted_unique
from rtf.matching import value_snapshot
from rtf.matching.optional import optional_part
from rtf.matching.pivot_check import pairs, pivots_hold
from rtf.matching.tuple_shapes import _TYPE_PATH, TupleShape, row_positions
from rtf.query.model import FTExpr

#: The prefix of the table's section names.
PREFIX = "t_"


class LazyBranches(list):
    """`QueryTable.branches` after a load: a slot still `PENDING` gets its branch made when read."""

    __slots__ = ("table",)

    def __getitem__(self, slot):
        found = list.__getitem__(self, slot)
        if found is PENDING:
            table = self.table
            table.mapped.materialise(table, table.mapped.query_of_slot(slot))
            found = list.__getitem__(self, slot)
        return found


class _FullTexts:
    """The shapes' full texts of a loaded file, as value entries (`entries_text`), each read
    from the mapped section by shape id when first needed (UTF-8 and bounds checked at load)."""

    __slots__ = ("offsets", "data", "decoder")

    def __init__(self, offsets: np.ndarray, data: np.ndarray, decoder: _ValueBuilder):
        self.offsets, self.data, self.decoder = offsets, data, decoder

    def entries(self, sid: int) -> str:
        return self.data[int(self.offsets[sid]):int(self.offsets[sid + 1])].tobytes().decode("utf-8")


class MappedShape(TupleShape):
    """A shape restored from a saved index: its full text (and so its `key`) decoded from
    the file's value entries when first read (`checker`, removals, registrations)."""

    __slots__ = ("_texts", "_fulltext")

    @property
    def _entries(self) -> str:
        return self._texts.entries(self.id)

    @property
    def fulltext(self):
        found = self._fulltext
        if found is PENDING:  # (None: no full text)
            found = _decoded(self._texts.decoder, self._entries, f"full text of shape {self.id}")
            if not isinstance(found, FTExpr):
                raise IndexFileError(f"the index's full text of shape {self.id} is malformed: was the "
                                     f"file edited?")
            self._fulltext = found
        return found

    @property
    def key(self):
        return (self.subject, self.predicate, self.object, self.fulltext)

    def __reduce__(self):  # (pickled as the plain shape it stands for)
        # (TupleShape's state, read through the properties: its full text decoded)
        return TupleShape.__new__, (TupleShape,), (None, {name: getattr(self, name)
                                                          for name in TupleShape.__slots__ if name != "check"})


def _decoded(decoder: _ValueBuilder, entries: str, what: str):
    """The model value `entries_text` made `entries` (IndexFileError naming `what` if it
    does not decode; `decoder`: one for all of a file's, its values started again)."""
    decoder.values = []
    try:
        decoder.add(json.loads(entries))
        if decoder.values:
            return decoder.values[-1]
    except (ValueError, RecursionError):
        pass
    finally:
        decoder.values = []
    raise IndexFileError(f"the index's {what} is malformed: was the file edited?")


def _mapped(table: QueryTable, branches) -> bool:
    """Whether a query's branches can be saved as arrays (see the module)."""
    return bool(branches) and table.share_shapes and all(rb.algebra is None for rb in branches)


def snapshot(table: QueryTable, ids: list[str]) -> dict[str, np.ndarray]:
    """The table's arrays for `ids`, every registered query in registration order."""
    slots_count, shape_count = len(table.branches), table._next_shape
    mapped = np.zeros(len(ids), dtype=bool)
    # Every query's rows gathered at once from a source: the loaded arrays (the rows of the
    # queries restored and not made since, as they were saved), then the rows made here.
    loaded = table.mapped
    old_slots, old_offsets, old_shapes = (
        (loaded.query_slots, loaded.branch_shape_offsets, loaded.branch_shapes) if loaded is not None
        else (np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32)))
    starts, counts, pending = np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=np.int64), []
    new_slots, new_shapes, new_counts = [], [], []
    for k, qid in enumerate(ids):
        branches = table.queries[qid]
        if branches and branches[0] is PENDING:
            pending.append((k, loaded.number_of(qid)))
        elif _mapped(table, branches):
            mapped[k] = True
            starts[k], counts[k] = len(old_slots) + len(new_slots), len(branches)
            new_slots += [rb.slot for rb in branches]
            for rb in branches:
                new_shapes += [shape.id for shape in rb.shapes]
                new_counts.append(len(rb.shapes))
    if pending:
        at, numbers = np.array(pending, dtype=np.int64).T
        mapped[at] = True
        starts[at] = loaded.query_slot_offsets[numbers]
        counts[at] = loaded.query_slot_offsets[numbers + 1] - starts[at]
    rows = sections.ranges(starts, counts)
    query_slots = np.concatenate((old_slots, np.array(new_slots, dtype=np.int32)))[rows]
    branch_starts = np.concatenate((old_offsets[:-1], len(old_shapes) + sections.offsets(new_counts)[:-1]))[rows]
    branch_counts = np.concatenate((np.diff(old_offsets), np.array(new_counts, dtype=np.int64)))[rows]
    branch_shapes = np.concatenate((old_shapes, np.array(new_shapes, dtype=np.int32)))[
        sections.ranges(branch_starts, branch_counts)]
    query_counts = counts
    used = np.array(query_slots, dtype=np.int64)
    keep = np.zeros(slots_count, dtype=bool)
    keep[used] = True
    pivots = table.pivots
    pivot = np.where(keep, grown(pivots.pivot, slots_count, -1)[:slots_count], -1).astype(np.int32)
    others = np.zeros((slots_count, pivots.others.shape[1]), dtype=np.int32)
    held = min(slots_count, len(pivots.others))
    others[:held] = np.where(keep[:held, None], pivots.others[:held], 0)
    extra_slots = sorted(s for s in pivots.extra if keep[s])
    extras = [pivots.extra[s] for s in extra_slots]
    counted = np.concatenate([pivot[pivot >= 0], others[others > 0] - 1, *[e - 1 for e in extras]]).astype(np.int64)
    if table.mapped is not None:
        table.mapped.make_all(table)
    shapes = table.shape_at[:shape_count].tolist()
    full_texts = ["" if shape is None else shape._entries if type(shape) is MappedShape  # (as loaded)
                  else entries_text(shape.fulltext) for shape in shapes]
    head = {"answer_vars": table.answer_vars, "classes": CLASS_NAMES,
            "shapes": [None if s is None else [s.subject, s.predicate, s.object, s._keys] for s in shapes]}
    out = {"head": np.frombuffer(json.dumps(head, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
           "query_mapped": mapped.astype(np.uint8),
           "query_slot_offsets": sections.offsets(query_counts), "query_slots": np.array(query_slots, dtype=np.int32),
           "branch_shape_offsets": sections.offsets(branch_counts),
           "branch_shapes": np.array(branch_shapes, dtype=np.int32),
           "slot_answer": np.where(keep, table.slot_answer[:slots_count], -1).astype(np.int32),
           "pivot": pivot, "others": others,
           "extra_slots": np.array(extra_slots, dtype=np.int32),
           "extra_offsets": sections.offsets([len(e) for e in extras]),
           "extra_shapes": np.concatenate([np.zeros(0, dtype=np.int32), *extras]).astype(np.int32),
           "uses": np.bincount(counted, minlength=shape_count).astype(np.int32),
           "shape_check": table.shape_check[:shape_count].astype(bool)}
    out["fulltext_offsets"], out["fulltexts"] = sections.strings(full_texts)
    return {**{PREFIX + name: array for name, array in out.items()},
            **value_snapshot.snapshot(table, keep, entries_text), **value_snapshot.stars_snapshot(table, keep)}


def entries_text(fulltext) -> str:
    """A full-text constraint as the JSON of its value entries (children first, the body's
    encoding, `rtf.io.store`), "" for none: the same text for equal constraints."""
    if fulltext is None:
        return ""
    table = _ValueTable()
    table.ref(fulltext)
    return json.dumps(table.take(), ensure_ascii=False, separators=(",", ":"))


def _text_key(shape) -> tuple:
    """A shape's structure and full text as saved (`MappedQueries.by_text`)."""
    text = shape._entries if type(shape) is MappedShape else entries_text(shape.fulltext)
    return (shape.subject, shape.predicate, shape.object, text)


class MappedQueries:
    """What makes a restored query's branches when first needed (see the module)."""

    def __init__(self, file_ids: FileIds, models: Callable[[int], object], slot_query: np.ndarray,
                 query_slot_offsets: np.ndarray, query_slots: np.ndarray,
                 branch_shape_offsets: np.ndarray, branch_shapes: np.ndarray):
        self.file_ids, self.ids, self.models = file_ids, file_ids.ids, models
        self.slot_query = slot_query  # slot -> the number of its query (-1: none restored)
        self.query_slot_offsets, self.query_slots = query_slot_offsets, query_slots
        self.branch_shape_offsets, self.branch_shapes = branch_shape_offsets, branch_shapes
        #: the restored shapes by structure and full text as saved (`shape_of_key`)
        self.by_text: dict[tuple, MappedShape] | None = None
        #: the restored shapes not made yet (None once all are)
        self.unmade: UnmadeShapes | None = None

    def made(self, table: QueryTable, ids, found: list) -> list:
        """`QueryTable.shapes_of`: the shapes at `ids` (`found`, read) with those to make made."""
        return found if self.unmade is None else self.unmade.made(table, ids, found)

    def make_all(self, table: QueryTable) -> None:
        """Make every restored shape not made yet (a registration, a save, a pickle needs them)."""
        unmade = self.unmade
        if unmade is not None:
            for sid in [sid for sid, keys in enumerate(unmade.keys) if keys is not None]:
                unmade.make(table, sid)
            self.unmade = None

    def __getstate__(self) -> dict:  # (pickled with every shape made: `QueryTable.__getstate__`)
        return {**self.__dict__, "unmade": None}

    def shape_of_key(self, table: QueryTable, key: tuple) -> MappedShape | None:
        """The restored shape of table key `key` (structure, full text), if any: found by its
        saved text, so that registering after a load decodes no shape's full text."""
        if self.by_text is None:
            self.make_all(table)
            self.by_text = {_text_key(s): s for s in table.shape_at.tolist() if s is not None}
        found = self.by_text.get((key[0], key[1], key[2], entries_text(key[3])))
        if found is not None:
            table.shapes[key] = found
        return found

    def forget(self, shape) -> None:
        """`shape` is removed from the table."""
        if self.by_text is not None:  # (a pickled copy's shapes are plain ones: `MappedShape.__reduce__`)
            self.by_text.pop(_text_key(shape), None)

    def query_of_slot(self, slot: int) -> str:
        return self.ids[int(self.slot_query[slot])]

    def number_of(self, query_id: str) -> int:
        """The restored query's number in the file."""
        return self.file_ids.number()[query_id]

    def slots_of(self, query_id: str) -> tuple[int, int]:
        """(first, end) of the restored query's entries in `query_slots`."""
        k = self.number_of(query_id)
        return int(self.query_slot_offsets[k]), int(self.query_slot_offsets[k + 1])

    def slots_in_order(self, order: np.ndarray) -> np.ndarray | None:
        """The restored slots of the queries numbered `order`, in that order, each query's
        slots ascending (the id ranks of a table of these queries alone: `IdOrder.ranked`);
        None if some query's slots are not ascending in `query_slots` (then ranked by id)."""
        offsets, slots = self.query_slot_offsets, self.query_slots
        first = np.zeros(len(slots) + 1, dtype=bool)  # (where a query's slots begin)
        first[offsets] = True
        if not ((np.diff(slots) > 0) | first[1:-1]).all():
            return None
        counts = np.diff(offsets)
        return np.asarray(slots[sections.ranges(offsets[:-1][order], counts[order])], dtype=np.intp)

    def shells(self, table: QueryTable, query_id: str) -> tuple[RegisteredBranch, ...]:
        """The restored query's branches as far as the arrays know them -- slots and shapes,
        no model decoded -- for its removal (they are not kept)."""
        start, end = self.slots_of(query_id)
        offsets = self.branch_shape_offsets
        return tuple(RegisteredBranch(query_id, None, int(self.query_slots[at]),  # type: ignore[arg-type]
                                      shapes=tuple(table.shapes_of(self.branch_shapes[offsets[at]:offsets[at + 1]])))
                     for at in range(start, end))

    def materialise(self, table: QueryTable, query_id: str) -> tuple[RegisteredBranch, ...]:
        """Make the branches of the restored query `query_id` from its model, in their slots."""
        start, end = self.slots_of(query_id)
        query = self.models(self.number_of(query_id))
        planned = planned_branches(query)
        optional = optional_part(query)
        if len(planned) != end - start:
            raise IndexFileError(f"the index's table gives query {query_id!r} {end - start} branches, "
                                 f"its model {len(planned)}: was the file edited?")
        made = []
        for at, (b, keys, keep, keep_names, _) in zip(range(start, end), planned):
            first, last = int(self.branch_shape_offsets[at]), int(self.branch_shape_offsets[at + 1])
            shapes = tuple(table.shapes_of(self.branch_shapes[first:last]))
            if [s.structure for s in shapes] != [key[:3] for key in keys]:
                raise IndexFileError(f"the index's table gives query {query_id!r} shapes that are not "
                                     f"those of its model: was the file edited?")
            rb = RegisteredBranch(query_id, b, int(self.query_slots[at]), shapes=shapes, keep=keep,
                                  keep_names=keep_names, projection=query.projection, optional=optional)
            rb.star = star_plan(rb) if optional is None else None  # (as `QueryTable.add` plans it)
            list.__setitem__(table.branches, rb.slot, rb)
            made.append(rb)
        table.queries[query_id] = found = tuple(made)
        return found


def restore(table: QueryTable, arrays: dict[str, np.ndarray], file_ids: FileIds, subscribers: np.ndarray,
            subscribed: np.ndarray, asks: np.ndarray, models: Callable[[int], object]
            ) -> tuple[UnmadeShapes, np.ndarray]:
    """Fill the empty `table` with the saved arrays (`snapshot`'s, names without `PREFIX`)
    of the queries `file_ids` (with their `subscribers`, objects, whether `subscribed`, and
    ASK flags, in file order); return
    the shapes, checked and left to make (`UnmadeShapes`: to index), and which queries
    were restored (the others are to register).
    ValueError if an array is missing, of the wrong size, or holds an id out of range."""
    a = {name[len(PREFIX):]: array for name, array in arrays.items() if name.startswith(PREFIX)}
    ids = file_ids.ids
    head = json.loads(a["head"].tobytes())
    raw_shapes, decoder = head["shapes"], _ValueBuilder(head["classes"])
    queries, shape_count = len(ids), len(raw_shapes)
    mapped = a["query_mapped"].astype(bool)
    slot_answer = a["slot_answer"]
    slots_count = len(slot_answer)
    qoff, qslots = a["query_slot_offsets"], a["query_slots"]
    boff, bshapes = a["branch_shape_offsets"], a["branch_shapes"]
    pivot, others = a["pivot"], a["others"]
    _expect(len(mapped) == queries and len(qoff) == queries + 1 and sections.ascending(qoff, len(qslots))
            and sections.ascending(boff, len(bshapes)) and len(boff) == len(qslots) + 1
            and sections.within(qslots, slots_count)
            and sections.within(bshapes, shape_count) and pivot.shape == (slots_count,) and others.ndim == 2
            and others.shape[0] == slots_count and len(a["shape_check"]) == shape_count
            and len(a["uses"]) == shape_count and sections.within(pivot, shape_count, -1)
            and sections.within(others, shape_count + 1) and (np.diff(qoff)[~mapped] == 0).all()
            and sections.within(slot_answer, len(head["answer_vars"]), -1), "the saved query table")
    counts = np.diff(qoff)
    slot_query = np.full(slots_count, -1, dtype=np.int64)
    slot_query[qslots] = np.repeat(np.arange(queries), counts)
    _expect((not len(qslots) or int(np.bincount(qslots).max()) == 1)  # (each slot of one query)
            and ((pivot < 0) | (slot_query >= 0)).all() and ((slot_answer < 0) | (slot_query >= 0)).all(),
            "the saved slots")
    texts = _full_texts(a["fulltext_offsets"], a["fulltexts"], decoder)
    _expect(len(texts.offsets) == shape_count + 1, "the saved shapes")
    unmade = UnmadeShapes(raw_shapes, texts, a["shape_check"])  # (every shape checked, none made)
    shape_at = np.full(max(shape_count, 64), None, dtype=object)
    free_shapes = array("i", np.flatnonzero(unmade.structure_of < 0).tolist())
    if free_shapes:  # (no branch of a free shape id)
        _expect(not np.isin(bshapes, np.frombuffer(free_shapes, dtype=np.int32)).any(), "the saved shapes")
    table.mapped = MappedQueries(file_ids, models, slot_query, qoff, qslots, boff, bshapes)
    table.mapped.unmade = unmade
    live = slot_query >= 0
    size = max(slots_count, 64)
    pending = np.full(slots_count, None, dtype=object)
    pending[live] = PENDING
    branches = LazyBranches(pending.tolist())
    branches.table = table
    table.branches = branches
    table._free = array("i", np.flatnonzero(~live)[::-1].tolist())
    for name, empty in (("need", -1), ("slot_id", None), ("slot_subscriber", None), ("slot_answer", -1),
                        ("slot_confirm", False), ("slot_projected", -1), ("slot_projected_part", -1),
                        ("slot_ask", False)):
        setattr(table, name, grown(getattr(table, name)[:0], size, empty))
    held = slot_query[live]
    if len(held) == queries and (slot_query[:queries] == np.arange(queries)).all():  # (slot k: query k)
        table.slot_id[:queries], table.slot_subscriber[:queries] = ids, subscribers
    else:
        table.slot_id[:slots_count][live] = np.array(ids, dtype=object)[held]
        table.slot_subscriber[:slots_count][live] = np.asarray(subscribers, dtype=object)[held]
    table.subscribed = int(np.count_nonzero(subscribed[held]))
    table.slot_answer[:slots_count] = slot_answer
    table.slot_ask[:slots_count][live] = asks[held]
    table.answer_vars = list(head["answer_vars"])
    table.tuple_count = len(bshapes)
    table.shape_at, table._next_shape, table._free_shapes = shape_at, shape_count, free_shapes
    table.shape_check = grown(a["shape_check"].astype(bool), len(shape_at), False)
    counted = pivot >= 0  # (the other live slots are counted by their value tests)
    _restore_pivots(table.pivots, a, counted, shape_count)
    valued = live & ~counted
    tested = valued.any() or any(name.startswith(value_snapshot.PREFIX) for name in arrays)
    if tested or value_snapshot.STARS + "head" in arrays:  # (each restored slot's shapes)
        # (slot-major pairs, a few ascending runs: sorted stably, by timsort)
        branch_pairs = sorted_unique(pairs(np.repeat(qslots, np.diff(boff)), bshapes, shape_count), "stable")
    if tested:
        table.mapped.make_all(table)  # (the value groups hold their shapes)
        value_snapshot.restore(table, arrays, valued, lambda text: _decoded(decoder, text, "opaque value test"),
                               branch_pairs[valued[branch_pairs // (shape_count + 1)]])
    if value_snapshot.STARS + "head" in arrays:
        table.mapped.make_all(table)
        value_snapshot.restore_stars(table, arrays, live, branch_pairs)
    runs = [(PENDING,) * n for n in range(int(counts.max()) + 1 if len(counts) else 0)]  # (one tuple a length)
    table.queries = LoadedMap(file_ids, lambda k: runs[counts[k]], mapped)  # (each entry made when read)
    table.id_order.changed()
    table.id_column.changed()
    return unmade, mapped


def _restore_pivots(pivots, a: dict, live: np.ndarray, shape_count: int) -> None:
    """The saved pivots (`snapshot`'s sections), checked in range and against the branches'
    shapes (`rtf.matching.pivot_check`), into the empty `pivots`."""
    extra_slots, eoff, eshapes = a["extra_slots"], a["extra_offsets"], a["extra_shapes"]
    _expect(sections.within(extra_slots, len(live)) and len(eoff) == len(extra_slots) + 1
            and sections.ascending(eoff, len(eshapes)) and sections.within(eshapes, shape_count + 1, 1)
            and bool(live[extra_slots].all()) and (a["uses"] >= 0).all(), "the saved pivots")
    # A counted branch's pivot, others and extra shapes are its shapes, and each shape's uses
    # the branches counting it: else a removal would free a shape another branch still has.
    _expect(pivots_hold(a["pivot"], a["others"], extra_slots, eoff, eshapes, a["uses"], a["query_slots"],
                        a["branch_shape_offsets"], a["branch_shapes"], shape_count), "the saved pivots")
    pivot, others = a["pivot"], a["others"]
    extra = {slot: np.array(eshapes[eoff[k]:eoff[k + 1]], dtype=np.int32)
             for k, slot in enumerate(extra_slots.tolist())}
    pivots.restore(pivot, others, extra, a["uses"], live, shape_count)


def _full_texts(offsets: np.ndarray, data: np.ndarray, decoder: _ValueBuilder) -> _FullTexts:
    """The shapes' full texts section, checked whole as `sections.read_strings` checks it
    (ascending offsets, UTF-8, each text whole characters) but made into no string."""
    if not sections.ascending(offsets, len(data)):
        raise ValueError("the offsets of the shapes' full texts are not ascending within its bytes")
    if data.dtype != np.uint8:
        raise ValueError("the shapes' full texts are not bytes")
    try:
        data.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the shapes' full texts are not UTF-8") from None
    starts = offsets[:-1][offsets[:-1] < len(data)]
    if ((data[starts] & 0xC0) == 0x80).any():  # (a text beginning inside a character)
        raise ValueError("the shapes' full texts are not UTF-8")
    return _FullTexts(offsets, data, decoder)


class UnmadeShapes:
    """A loaded file's shapes, each made (a `MappedShape`) when first read: every saved shape
    is checked at load and numbered by structure (`structure_of`, -1 for a free id, in the
    order the structures first appear; `layouts`: each structure's fields, made once) with
    its number of ``ftor`` alternatives (`alternatives`, 0 without words); `make` makes one.
    The trie forest keeps the shapes with words by id (`rtf.trieforest.rtfs`), so a load
    makes only those without (a paper workload: 1,207 of 341,331 shapes); a match makes
    those it finds (`QueryTable.shapes_of`), a registration, a save or a pickle all of them.
    Until then a shape's keys are kept as one string (`keys`, joined by `_SEPARATOR`), not
    the JSON's lists: 680K lists the cyclic collector would walk again and again at 1M."""

    def __init__(self, raw_shapes: list, texts: _FullTexts, checks: np.ndarray):
        count = len(raw_shapes)
        self.texts = texts
        #: shape id -> its keys to make it with (None: free, or made)
        self.keys: list = [None] * count
        self.empty = (np.diff(texts.offsets) == 0).tolist()
        self.checks = checks.astype(bool).tolist()
        if len(self.checks) != count:
            raise ValueError("the saved shapes are inconsistent")
        structures: dict = {}
        self.layouts: list[tuple] = []
        numbers, alternatives = [-1] * count, [0] * count
        empty, check, join, packed = self.empty, self.checks, _SEPARATOR.join, self.keys
        for sid, raw in enumerate(raw_shapes):
            if raw is None:
                continue
            if type(raw) is not list or len(raw) != 4:
                raise ValueError(f"the saved shape {sid} is malformed")
            subject, predicate, obj, keys = raw
            n = structures.get((subject, predicate, obj))
            if n is None:
                n = structures[(subject, predicate, obj)] = self._layout(sid, subject, predicate, obj)
            numbers[sid] = n
            if type(keys) is not list or (check[sid] and empty[sid]):
                raise ValueError(f"the saved shape {sid} is malformed")
            packed[sid] = ""
            if keys:
                try:
                    if type(keys[0]) is str:
                        joined = join(keys)  # (TypeError unless every key is a string)
                        # (as a list if a key is empty or holds the separator: split, it would differ)
                        packed[sid] = joined if joined.count(_SEPARATOR) == len(keys) - 1 and "" not in keys else keys
                        alternatives[sid] = 1
                    else:
                        for alternative in keys:
                            words, prefixes = alternative
                            if type(alternative) is not list or type(words) is not list or type(prefixes) is not list:
                                raise TypeError
                            join(words), join(prefixes)
                        packed[sid] = keys
                        alternatives[sid] = len(keys)
                except (TypeError, ValueError):
                    raise ValueError(f"the saved shape {sid} has a key that is not a string") from None
        self.structure_of = np.array(numbers, dtype=np.int64)
        self.alternatives = np.array(alternatives, dtype=np.int64)

    def _layout(self, sid: int, subject, predicate, obj) -> int:
        """The number of a new structure, its fields made once for all its shapes."""
        if (type(subject) is not str or type(predicate) is not str or type(obj) is not str
                or not (subject and predicate and obj)):
            raise ValueError(f"the saved shape {sid} is malformed")
        self.layouts.append((sys.intern(subject), sys.intern(predicate), sys.intern(obj),
                             predicate == _TYPE_PATH, row_positions((subject, predicate, obj))))
        return len(self.layouts) - 1

    @property
    def count(self) -> int:
        """The shapes still to make."""
        return len(self.keys) - self.keys.count(None)

    def structures(self) -> list[tuple[str, str, str]]:
        """Each structure number's (subject, predicate, object)."""
        return [layout[:3] for layout in self.layouts]

    def make(self, table: QueryTable, sid: int) -> MappedShape:
        """Make shape `sid` (still to make), into `table.shape_at`."""
        keys = self.keys[sid]
        if type(keys) is str:
            keys = keys.split(_SEPARATOR) if keys else ()
        shape = _new(MappedShape)
        shape.subject, shape.predicate, shape.object, shape.is_type_path, shape.row_positions = \
            self.layouts[self.structure_of[sid]]
        shape.id, shape._texts, shape._fulltext = sid, self.texts, None if self.empty[sid] else PENDING
        # (each word one object for all shapes, as registration shares them: 100K shapes held
        # ~190K copies of a few thousand words, a tenth of a loaded full-text index)
        if not keys or type(keys[0]) is str:
            shape._keys = tuple(map(_intern, keys))
        else:
            shape._keys = tuple((tuple(map(_intern, words)), tuple(map(_intern, prefixes))) for words, prefixes in keys)
        shape.needs_check, shape.check, shape.structures = self.checks[sid], None, None
        table.shape_at[sid] = shape
        self.keys[sid] = None
        return shape

    def made(self, table: QueryTable, ids, found: list) -> list:
        """`found` (the shapes at `ids`, None where not made or free) with those to make made."""
        keys = self.keys
        for n, (shape, sid) in enumerate(zip(found, np.asarray(ids).tolist())):
            if shape is None and keys[sid] is not None:
                found[n] = self.make(table, sid)
        return found


_new = object.__new__
#: What joins a shape's keys while it waits to be made (`UnmadeShapes.keys`).
_SEPARATOR = "\x00"
_intern = sys.intern


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"{what} is inconsistent")
