"""The query table of a saved index made a chunk of queries at a time (`rtf index build`).

An index built with its query table (`rtf.matching.table_snapshot`) used to
index every query at once in one engine: 3.1 GB at a million queries. Here
each chunk's engine is snapshotted on its own (`restoring.table_sections`)
and its arrays merged into the file's, as Lucene merges segments, so a
build holds one chunk's engine and the merged arrays:

- shapes are numbered in the order they first appear, a chunk's shape
  found again by its structure and full text (a digest of them) -- the
  numbering one engine of all the queries gives;
- slots follow on from the chunks before (a chunk's slots are numbered from
  0, and so one engine's, query after query), and the answers' variables
  are numbered in the order they first appear;
- the pivots are chosen once at the end, for every branch at once, as
  `rtf.matching.pivots.Pivots.repivot` chooses them: each counted branch's
  rarest shape;
- RTFs' word index takes the alternatives of the shapes new in the chunk,
  numbered on, and each key's postings follow on.

A query the arrays do not map in its chunk (version 3), and one counted by its
value tests or answered by a projected star there, whose sections this
merge does not carry, is left unmapped: a load registers it from its model,
as a version-3 query (`IndexBuilder` builds in one engine when the first
chunk has any: the values and star mixes).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from rtf.io import sections
from rtf.io.store import CLASS_NAMES
from rtf.matching import value_snapshot
from rtf.matching import table_snapshot
from rtf.matching.pivots import MAX_WIDTH
from rtf.matching.table_snapshot import PREFIX


def table_sections(index, ids: list[str]) -> dict:
    """The sections of `index`'s query table (`rtf.matching.table_snapshot`) for the queries
    `ids` and, for RTFs, its word index: what a saved index holds besides the queries' own
    (`rtf.matching.restoring.snapshot`), and a chunk's to merge (`TableMerger.chunk`)."""
    saved = getattr(index.index, "saved", None)  # (RTFs: its word index, `RTFsIndex.saved`)
    return {**table_snapshot.snapshot(index.table, ids),
            **{PREFIX + name: array for name, array in (saved() if saved else {}).items()}}


#: The sections of RTFs' word index (`rtf.trieforest.words.snapshot`), without the prefix.
_KEY_TABLES = (("word", "words"), ("prefix", "prefixes"))


class TableMerger:
    """The merged query table of the chunks `add`ed in order; `sections()` gives its arrays."""

    def __init__(self):
        self.shape_of: dict[bytes, int] = {}  # digest of structure and full text -> shape id
        self.shapes = 0
        self.shape_json: list[str] = []  # per chunk, its new shapes' JSON, joined
        self.checks: list[np.ndarray] = []
        self.fulltexts: list[bytes] = []
        self.fulltext_lengths: list[np.ndarray] = []
        self.answer_vars: list = []
        self._answer_of: dict = {}
        self.slots = 0
        self.parts: dict[str, list[np.ndarray]] = {name: [] for name in (
            "mapped", "query_counts", "query_slots", "branch_counts", "branch_shapes", "slot_answer", "counted")}
        self.words: bool | None = None  # whether the chunks have a word index (rtfs)
        self.keys: dict[str, dict[str, bytearray]] = {name: {} for name, _ in _KEY_TABLES}
        self.alts = 0
        self.alt_need: list[np.ndarray] = []
        self.alt_shape: list[np.ndarray] = []

    @staticmethod
    def loses(arrays: dict[str, np.ndarray]) -> bool:
        """Whether a chunk's sections hold what the merge does not carry (value tests,
        projected stars): `IndexBuilder` then builds in one engine, keeping them mapped."""
        return any(name.startswith((value_snapshot.PREFIX, value_snapshot.STARS)) for name in arrays)

    def chunk(self, index, ids: list[str]) -> dict[str, np.ndarray]:
        """The sections of a chunk's `index` (an engine's, of the queries `ids` alone), to `add`."""
        return table_sections(index, ids)

    def add(self, arrays: dict[str, np.ndarray]) -> None:
        """Merge a chunk's sections (`chunk`)."""
        a = {name[len(PREFIX):]: array for name, array in arrays.items() if name.startswith(PREFIX)}
        head = json.loads(a["head"].tobytes())
        local, new = self._shapes(head["shapes"], a)
        answers = np.array([self._answer(v) for v in head["answer_vars"]] + [-1], dtype=np.int32)
        qoff, qslots, boff, bshapes = (a[name] for name in ("query_slot_offsets", "query_slots",
                                                            "branch_shape_offsets", "branch_shapes"))
        pivot, slot_answer = a["pivot"], a["slot_answer"]
        slot_count, queries = len(slot_answer), len(qoff) - 1
        counts = np.diff(qoff)
        slot_query = np.full(slot_count, -1, dtype=np.int64)
        slot_query[qslots] = np.repeat(np.arange(queries), counts)
        mapped = a["query_mapped"].astype(bool)
        left = (slot_query >= 0) & (pivot < 0)  # (counted by its value tests)
        for name in ("p_slot_code", "p_slot_part_code", "p_slot_part_lead"):
            if name in arrays:
                left |= arrays[name] >= 0
        if "v_conj_slot" in arrays:
            conj_slots = arrays["v_conj_slot"]
            left[conj_slots[conj_slots >= 0]] = True
        mapped[slot_query[left & (slot_query >= 0)]] = False
        counts = np.where(mapped, counts, 0)
        entries = sections.ranges(qoff[:-1], counts)  # (the mapped queries' entries of query_slots)
        kept_slots = qslots[entries]
        keep = np.zeros(slot_count, dtype=bool)
        keep[kept_slots] = True
        branch_counts = np.diff(boff)[entries]
        p = self.parts
        p["mapped"].append(mapped)
        p["query_counts"].append(counts)
        p["query_slots"].append((kept_slots + self.slots).astype(np.int64))
        p["branch_counts"].append(branch_counts)
        p["branch_shapes"].append(local[bshapes[sections.ranges(boff[:-1][entries], branch_counts)]])
        p["slot_answer"].append(np.where(keep, answers[slot_answer], -1).astype(np.int32))
        p["counted"].append(keep)
        self.slots += slot_count
        self._words(a, local, new)

    def _shapes(self, raw_shapes: list, a: dict) -> tuple[np.ndarray, np.ndarray]:
        """The chunk's shape ids -> the merged ones (-1: a free id), and which are new."""
        texts = sections.read_strings(a["fulltext_offsets"], a["fulltexts"], "a chunk's full texts")
        local = np.full(len(raw_shapes) + 1, -1, dtype=np.int32)  # ([-1]: none)
        new = np.zeros(len(raw_shapes), dtype=bool)
        shape_of, made = self.shape_of, []
        for sid, raw in enumerate(raw_shapes):
            if raw is None:
                continue
            digest = hashlib.blake2b("\0".join((*raw[:3], texts[sid])).encode("utf-8"), digest_size=16).digest()
            found = shape_of.get(digest)
            if found is None:
                found = shape_of[digest] = self.shapes
                self.shapes += 1
                new[sid] = True
                made.append(json.dumps(raw, ensure_ascii=False))
            local[sid] = found
        if made:
            self.shape_json.append(", ".join(made))
        self.checks.append(a["shape_check"].astype(bool)[new])
        lengths = np.diff(a["fulltext_offsets"])[new]
        self.fulltext_lengths.append(lengths)
        self.fulltexts.append("".join(t for t, n in zip(texts, new.tolist()) if n).encode("utf-8"))
        return local, new

    def _answer(self, name) -> int:
        found = self._answer_of.get(name)
        if found is None:
            found = self._answer_of[name] = len(self.answer_vars)
            self.answer_vars.append(name)
        return found

    def _words(self, a: dict, local: np.ndarray, new: np.ndarray) -> None:
        """The chunk's word index: the alternatives of its new shapes, numbered on."""
        has = "alt_need" in a
        if self.words is None:
            self.words = has
        if has != self.words:
            raise ValueError("the chunks of one index differ in having a word index")
        if not has:
            return
        need, shape = a["alt_need"], a["alt_shape"]
        kept = (need > 0) & (shape >= 0)
        kept[kept] = new[shape[kept]]
        numbers = np.full(len(need), -1, dtype=np.int64)
        numbers[kept] = self.alts + np.arange(int(kept.sum()))
        self.alts += int(kept.sum())
        self.alt_need.append(need[kept].astype(np.int32))
        self.alt_shape.append(local[shape[kept]].astype(np.int32))
        for name, strings in _KEY_TABLES:
            keys = sections.read_strings(a[name + "_offsets"], a[strings], "a chunk's keys")
            offsets, postings = a[name + "_post_offsets"], numbers[a[name + "_postings"]]
            held = postings >= 0
            per_key = np.add.reduceat(held.astype(np.int64), offsets[:-1]) if len(postings) else np.zeros(0, dtype=np.int64)
            raw = postings[held].astype(np.int32).tobytes()
            bounds = (4 * sections.offsets(per_key)).tolist()
            table = self.keys[name]
            for k in np.flatnonzero(per_key).tolist():
                found = table.get(keys[k])
                if found is None:
                    table[keys[k]] = bytearray(raw[bounds[k]:bounds[k + 1]])
                else:
                    found += raw[bounds[k]:bounds[k + 1]]

    def sections(self) -> dict[str, np.ndarray]:
        """The merged table's sections, as `table_snapshot.snapshot` and the word index name them."""
        p = {name: np.concatenate(parts) if parts else np.zeros(0) for name, parts in self.parts.items()}
        shape_count, slot_count = self.shapes, self.slots
        branch_shapes = p["branch_shapes"].astype(np.int32)
        query_slots = p["query_slots"]
        pivot, others, extra_slots, extra_offsets, extra_shapes, uses = _pivots(
            query_slots, p["branch_counts"].astype(np.int64), branch_shapes, slot_count, shape_count)
        head = ('{"answer_vars": ' + json.dumps(self.answer_vars, ensure_ascii=False)
                + ', "classes": ' + json.dumps(CLASS_NAMES) + ', "shapes": [' + ", ".join(self.shape_json) + "]}")
        out = {"head": np.frombuffer(head.encode("utf-8"), dtype=np.uint8),
               "query_mapped": p["mapped"].astype(np.uint8),
               "query_slot_offsets": sections.offsets(p["query_counts"].astype(np.int64)),
               "query_slots": query_slots.astype(np.int32),
               "branch_shape_offsets": sections.offsets(p["branch_counts"].astype(np.int64)),
               "branch_shapes": branch_shapes,
               "slot_answer": p["slot_answer"].astype(np.int32),
               "pivot": pivot, "others": others, "extra_slots": extra_slots, "extra_offsets": extra_offsets,
               "extra_shapes": extra_shapes, "uses": uses,
               "shape_check": np.concatenate([np.zeros(0, dtype=bool), *self.checks]),
               "fulltext_offsets": sections.offsets(np.concatenate([np.zeros(0, dtype=np.int64),
                                                                   *self.fulltext_lengths])),
               "fulltexts": np.frombuffer(b"".join(self.fulltexts), dtype=np.uint8)}
        if self.words:
            for name, strings in _KEY_TABLES:
                table = self.keys[name]
                out[name + "_offsets"], out[strings] = sections.strings(list(table))
                out[name + "_post_offsets"] = sections.offsets([len(v) // 4 for v in table.values()])
                out[name + "_postings"] = np.frombuffer(b"".join(table.values()), dtype=np.int32)
            out["alt_need"] = np.concatenate([np.zeros(0, dtype=np.int32), *self.alt_need])
            out["alt_shape"] = np.concatenate([np.zeros(0, dtype=np.int32), *self.alt_shape])
        return {PREFIX + name: array for name, array in out.items()}


def _pivots(query_slots: np.ndarray, branch_counts: np.ndarray, branch_shapes: np.ndarray, slot_count: int,
            shape_count: int) -> tuple:
    """Every counted branch's pivot (its shape the fewest branches use, the lowest id of
    them), its other shapes (ascending use) in a row of at most `MAX_WIDTH` and the rest
    apart, and each shape's uses: the sections `table_snapshot.snapshot` writes."""
    slot_of = np.repeat(query_slots.astype(np.int64), branch_counts)
    pairs = np.unique(slot_of * (shape_count + 1) + branch_shapes)  # (each branch's distinct shapes)
    slots, shapes = pairs // (shape_count + 1), pairs % (shape_count + 1)
    uses = np.bincount(shapes, minlength=shape_count).astype(np.int32)
    order = np.lexsort((shapes, uses[shapes], slots))
    slots, shapes = slots[order], shapes[order]
    starts = np.flatnonzero(np.r_[True, slots[1:] != slots[:-1]]) if len(slots) else np.zeros(0, dtype=np.int64)
    sizes = np.diff(np.r_[starts, len(slots)])
    rank = np.arange(len(slots)) - np.repeat(starts, sizes)
    pivot = np.full(slot_count, -1, dtype=np.int32)
    pivot[slots[starts]] = shapes[starts]
    width = min(int(sizes.max()) - 1 if len(sizes) else 0, MAX_WIDTH)
    others = np.zeros((slot_count, width), dtype=np.int32)
    row = (rank >= 1) & (rank <= width)
    others[slots[row], rank[row] - 1] = shapes[row] + 1
    beyond = rank > width
    extra_slots, extra_counts = np.unique(slots[beyond], return_counts=True)
    return (pivot, others, extra_slots.astype(np.int32), sections.offsets(extra_counts),
            (shapes[beyond] + 1).astype(np.int32), uses)
