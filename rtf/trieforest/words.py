"""The word indexes of RTFs and RTFm: the shapes' word keys as postings, answered by counting.

A shape's full-text constraint is indexed under its *alternatives*
(`rtf.matching.query_table.index_keys`): sets of keys -- whole words,
two-word bigrams, prefixes -- of which a literal must hold every key of
at least one. Each alternative gets a small integer id and its number of
keys (`need`); each key keeps the ids of the alternatives that hold it,
its *postings*, as an int32 `array` (one small object per key, no Python
object per alternative; appended to in place, so registering the n-th
query of a shared word copies none of the n - 1 ids before it).

A literal is answered set-at-a-time, as Lucene Monitor's presearcher
answers a document, but exactly: the keys the text holds are found by one
set intersection in C (its words and bigrams, `TextIndex.keys`; the
prefixes of its words, `TextIndex.prefixes`), their postings are joined
into one array, and an alternative is satisfied when it occurs there
`need` times (its keys are distinct, so each counts once). The cost
follows the postings of the text's keys, not the number of queries, and
there is no Python step per key or per alternative. The occurrences are
counted by sorting them; a long text (a DBpedia abstract joins ~6,500
postings at 100,000 paper-mix queries, a fifth of the alternatives) has
them counted in one array of a count per alternative instead, which no
longer costs more than the sort and its gathers.

It replaces the paper's word tries (one Python node per word of each
path, descended one text word at a time): the answers are the same -- a
shape is found when all the keys of one of its alternatives occur -- with
one dict entry per distinct key instead of a node per path step. RTFs has
one for all shapes, RTFm one at each object node (its words clustered by
structure, as in the paper).
"""

from __future__ import annotations

from array import array

import numpy as np

from rtf.io import sections
from rtf.matching.query_table import TupleShape
from rtf.matching.structures import grown, sorted_unique
from rtf.query.text import TextIndex

_ID = "i"  # the typecode of a postings array: native int32, as numpy reads it
assert array(_ID).itemsize == 4
_NONE = np.zeros(0, dtype=np.int32)
_NO_KEYS: frozenset[str] = frozenset()


class WordIndex:
    """Alternatives by their keys; `matched_ids` gives the shapes a text satisfies.

    `known_words`: the most text words whose prefix keys it remembers (then it
    forgets them all at once).
    """

    _wanted = None  # (for an index pickled before it was kept: see __init__)
    _bigram_keys = None  # (the same: not known, so a text's bigrams are looked up)

    def __init__(self, known_words: int = 1 << 15):
        #: word or bigram -> postings (int32 alternative ids)
        self.words: dict[str, array] = {}
        #: prefix -> postings
        self.prefixes: dict[str, array] = {}
        #: how many prefixes of each length are keys (a text's words are cut at these lengths)
        self._prefix_lengths: dict[int, int] = {}
        self._lengths: tuple[int, ...] = ()
        #: text word -> the prefix keys it starts with (emptied when the prefix keys change):
        #: words repeat across literals, so a literal's prefixes are mostly lookups
        self._word_prefixes: dict[str, frozenset[str]] = {}
        self._known_words = known_words
        #: alternative id -> number of keys (0: a free id)
        self.need = np.zeros(4, dtype=np.int16)
        #: alternative id -> its shape's id (-1: a free id)
        self.shape_id = np.full(4, -1, dtype=np.int64)
        self._free = array("l")
        self._next = 0
        #: the shapes with more than one alternative (a text may satisfy two of them)
        self._several = 0
        #: `need` of the ids in use, a free id's -1 (never a count): made when first wanted
        #: after a change (`_counted`)
        self._wanted: np.ndarray | None = None
        #: how many keys of `words` are bigrams: with none, a text's bigrams are not made
        self._bigram_keys: int | None = 0

    def __len__(self) -> int:
        """The number of distinct keys."""
        return len(self.words) + len(self.prefixes)

    def is_empty(self) -> bool:
        return not self.words and not self.prefixes

    def add(self, shape: TupleShape) -> None:
        """Index each alternative of `shape`."""
        if len(shape.alternatives) > 1:
            self._several += 1
        self._wanted = None
        for ws, ps in shape.alternatives:
            alt = self._take()
            self.need[alt] = len(ws) + len(ps)
            self.shape_id[alt] = shape.id
            words = self.words
            for w in ws:
                postings = words.get(w)
                if postings is None:
                    postings = words[w] = array(_ID)
                    if " " in w and self._bigram_keys is not None:
                        self._bigram_keys += 1
                postings.append(alt)
            prefixes = self.prefixes
            for p in ps:
                postings = prefixes.get(p)
                if postings is None:
                    postings = prefixes[p] = array(_ID)
                    self._count_length(len(p), 1)
                    self._word_prefixes.clear()
                postings.append(alt)

    def remove(self, shape: TupleShape) -> None:
        """Forget every alternative of `shape` (each of its keys' postings loses them)."""
        if len(shape.alternatives) > 1:
            self._several -= 1
        freed: set[int] = set()
        for table, keys in ((self.words, {w for ws, _ in shape.alternatives for w in ws}),
                            (self.prefixes, {p for _, ps in shape.alternatives for p in ps})):
            for key in keys:  # each once: alternatives may share keys
                self._drop(table, key, shape.id, freed)
        if len(freed) != len(shape.alternatives):  # (a saved index whose keys are not its shapes': `restore`)
            for table in (self.words, self.prefixes):
                for key in list(table):
                    self._drop(table, key, shape.id, freed)
            freed.update(np.flatnonzero(self.shape_id[:self._next] == shape.id).tolist())
        for alt in freed:
            self.need[alt] = 0
            self.shape_id[alt] = -1
            self._free.append(alt)
        self._wanted = None

    def _drop(self, table: dict, key: str, shape_id: int, freed: set) -> None:
        """Take the alternatives of shape `shape_id` out of `key`'s postings (into `freed`)."""
        postings = table.get(key)
        if postings is None:
            return
        ids = np.frombuffer(postings, dtype=np.int32)
        mine = self.shape_id[ids] == shape_id
        if not mine.any():
            return
        freed.update(ids[mine].tolist())
        kept = ids[~mine]
        if len(kept):
            table[key] = array(_ID, kept.tobytes())
        else:
            del table[key]
            if table is self.words and " " in key and self._bigram_keys is not None:
                self._bigram_keys -= 1
            if table is self.prefixes:
                self._count_length(len(key), -1)
                self._word_prefixes.clear()

    def _take(self) -> int:
        if self._free:
            return self._free.pop()
        alt = self._next
        self._next += 1
        if alt >= len(self.need):
            self.need = grown(self.need, alt + 1, 0)
            self.shape_id = grown(self.shape_id, alt + 1, -1)
        return alt

    def _count_length(self, length: int, delta: int) -> None:
        left = self._prefix_lengths.get(length, 0) + delta
        if left:
            self._prefix_lengths[length] = left
        else:
            del self._prefix_lengths[length]
        self._lengths = tuple(sorted(self._prefix_lengths))

    def postings(self, text: TextIndex) -> bytes:
        """The joined postings of every key `text` holds."""
        # One lookup per key, in C: a key the index lacks gives None, which `filter` drops.
        # Without bigram keys (as in a workload of plain words), the text's words alone: its bigrams
        # are neither made nor looked up.
        keys = text.word_set if self._bigram_keys == 0 else text.keys
        found = b"".join(filter(None, map(self.words.get, keys)))
        if self.prefixes:
            prefixes = self.prefixes
            found += b"".join(map(prefixes.__getitem__, self._prefixes_in(text.word_set)))
        return found

    def _prefixes_in(self, words) -> set[str]:
        """The prefix keys that some of `words` starts with (each once)."""
        known = self._word_prefixes
        missing = [w for w in words if w not in known]
        if missing:
            if len(known) + len(missing) > self._known_words:
                known.clear()
                missing = list(words)
            keys, lengths = self.prefixes.keys(), self._lengths
            for w in missing:
                # w[:k] longer than w is w itself: a key then only if it is w
                found = keys & {w[:k] for k in lengths}
                known[w] = frozenset(found) if found else _NO_KEYS
        return _NO_KEYS.union(*map(known.__getitem__, words))

    def satisfied(self, found: bytes) -> np.ndarray:
        """The alternatives all of whose keys are in `found` (joined postings), ascending."""
        ids = np.frombuffer(found, dtype=np.int32)
        if 8 * len(ids) >= self._next > 0:  # many: counted in place
            return self._counted(ids)
        return self._sorted(ids)

    def _sorted(self, ids: np.ndarray) -> np.ndarray:
        """`satisfied` for a few `ids`: their occurrences counted by sorting them."""
        ids = np.sort(ids) if len(ids) else _NONE
        # An alternative occurs at most `need` times (once per key), so it holds when
        # the entry `need - 1` places after one of its entries is still itself -- true
        # only at its first entry: each holding alternative comes out once, ascending.
        end = np.arange(len(ids)) + self.need[ids] - 1
        inside = end < len(ids)
        starts = ids[inside]
        return starts[ids[end[inside]] == starts]

    def _counted(self, ids: np.ndarray) -> np.ndarray:
        """`satisfied` for many `ids`: the alternatives that occur `need` times, by one
        count per alternative id in use."""
        wanted = self._wanted
        if wanted is None:
            need = self.need[:self._next]
            wanted = self._wanted = np.where(need > 0, need, -1).astype(np.intp)  # (as counts: no cast)
        return np.flatnonzero(np.bincount(ids, minlength=len(wanted)) == wanted)

    def matched_ids(self, text: TextIndex) -> np.ndarray:
        """The ids of every shape all of whose keys of some alternative occur in `text`,
        each once (a shape whose alternatives hold twice comes out once): no Python
        object per shape."""
        ids = self.shape_id[self.satisfied(self.postings(text))]
        if self._several and len(ids) > 1:  # some shape has several alternatives
            ids = sorted_unique(ids)
        return ids

    def size_bytes(self) -> int:
        """An estimate of the memory it holds (tables, postings, per-alternative arrays)."""
        import sys
        size = (sys.getsizeof(self.words) + sys.getsizeof(self.prefixes) + self.need.nbytes
                + self.shape_id.nbytes)
        for table in (self.words, self.prefixes):
            size += sum(map(sys.getsizeof, table.values()))
        return size


# ------------------------------------------------------------------ saved (rtf.matching.table_snapshot)

#: The arrays of a saved word index (`snapshot`, `restore`), named without their section prefix.
SAVED = ("word_offsets", "words", "word_post_offsets", "word_postings", "prefix_offsets", "prefixes",
         "prefix_post_offsets", "prefix_postings", "alt_need", "alt_shape")


def snapshot(index: WordIndex) -> dict[str, np.ndarray]:
    """The arrays of `index`: its keys (strings with offsets, as `rtf.io.sections.strings`),
    their postings one after the other with offsets, and each alternative's need and shape."""
    out = {}
    for name, keys, table in (("word", "words", index.words), ("prefix", "prefixes", index.prefixes)):
        out[name + "_offsets"], out[keys] = sections.strings(list(table))
        out[name + "_post_offsets"] = sections.offsets([len(p) for p in table.values()])
        out[name + "_postings"] = np.frombuffer(b"".join(table.values()), dtype=np.int32)
    out["alt_need"] = index.need[:index._next].astype(np.int32)
    out["alt_shape"] = index.shape_id[:index._next].astype(np.int32)
    return out


def restore(arrays: dict[str, np.ndarray], alternatives: np.ndarray) -> WordIndex:
    """The word index `snapshot` saved, every id in it checked first: postings within the
    alternatives, and each shape with as many live alternatives as `alternatives` (per
    shape id, its keys' ``ftor`` alternatives: 0 for a shape without words) says;
    ValueError naming what is wrong."""
    need, shape = arrays["alt_need"], arrays["alt_shape"]
    alts, shape_count = len(need), len(alternatives)
    live = need > 0
    if (len(shape) != alts or not sections.within(need, 1 << 15) or not sections.within(shape, shape_count, -1)
            or not (shape[live] >= 0).all() or (shape[~live] != -1).any()
            or not (np.bincount(shape[live], minlength=shape_count) == alternatives).all()):
        raise ValueError("the saved word index's alternatives are inconsistent")
    index = WordIndex()
    for name, saved, table in (("word", "words", index.words), ("prefix", "prefixes", index.prefixes)):
        keys = sections.read_strings(arrays[name + "_offsets"], arrays[saved], f"the saved {name} keys")
        offsets, postings = arrays[name + "_post_offsets"], arrays[name + "_postings"]
        if (len(offsets) != len(keys) + 1 or not sections.ascending(offsets, len(postings))
                or not (np.diff(offsets) > 0).all() or not sections.within(postings, alts)
                or not live[postings].all()):
            raise ValueError(f"the saved {name} postings are inconsistent")
        raw, bounds = postings.astype(np.int32, copy=False).tobytes(), (4 * offsets).tolist()  # (native order)
        table.update(zip(keys, [array(_ID, raw[a:b]) for a, b in zip(bounds, bounds[1:])]))
        if len(table) != len(keys):
            raise ValueError(f"the saved {name} keys are not distinct")
    index._bigram_keys = sum(1 for w in index.words if " " in w)
    for p in index.prefixes:
        index._prefix_lengths[len(p)] = index._prefix_lengths.get(len(p), 0) + 1
    index._lengths = tuple(sorted(index._prefix_lengths))
    index.need = grown(need.astype(np.int16), max(alts, 4), 0)
    index.shape_id = grown(shape.astype(np.int64), max(alts, 4), -1)
    index._free = array("l", np.flatnonzero(~live)[::-1].tolist())
    index._next = alts
    index._wanted = None
    index._several = int(np.count_nonzero(alternatives > 1))
    return index
