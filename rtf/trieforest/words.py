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
there is no Python step per key or per alternative.

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

from rtf.matching.query_table import TupleShape
from rtf.matching.structures import grown
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

    def __len__(self) -> int:
        """The number of distinct keys."""
        return len(self.words) + len(self.prefixes)

    def is_empty(self) -> bool:
        return not self.words and not self.prefixes

    def add(self, shape: TupleShape) -> None:
        """Index each alternative of `shape`."""
        if len(shape.alternatives) > 1:
            self._several += 1
        for ws, ps in shape.alternatives:
            alt = self._take()
            self.need[alt] = len(ws) + len(ps)
            self.shape_id[alt] = shape.id
            words = self.words
            for w in ws:
                postings = words.get(w)
                if postings is None:
                    postings = words[w] = array(_ID)
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
                ids = np.frombuffer(table[key], dtype=np.int32)
                mine = self.shape_id[ids] == shape.id
                freed.update(ids[mine].tolist())
                kept = ids[~mine]
                if len(kept):
                    table[key] = array(_ID, kept.tobytes())
                else:
                    del table[key]
                    if table is self.prefixes:
                        self._count_length(len(key), -1)
                        self._word_prefixes.clear()
        for alt in freed:
            self.need[alt] = 0
            self.shape_id[alt] = -1
            self._free.append(alt)

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
        found = b"".join(filter(None, map(self.words.get, text.keys)))
        if self.prefixes:
            prefixes = self.prefixes
            found += b"".join(map(prefixes.__getitem__, self._prefixes_in(text.positions)))
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
        ids = np.sort(np.frombuffer(found, dtype=np.int32)) if found else _NONE
        # An alternative occurs at most `need` times (once per key), so it holds when
        # the entry `need - 1` places after one of its entries is still itself -- true
        # only at its first entry: each holding alternative comes out once, ascending.
        end = np.arange(len(ids)) + self.need[ids] - 1
        inside = end < len(ids)
        starts = ids[inside]
        return starts[ids[end[inside]] == starts]

    def matched_ids(self, text: TextIndex) -> np.ndarray:
        """The ids of every shape all of whose keys of some alternative occur in `text`,
        each once (a shape whose alternatives hold twice comes out once): no Python
        object per shape."""
        ids = self.shape_id[self.satisfied(self.postings(text))]
        if self._several and len(ids) > 1:  # some shape has several alternatives
            ids = np.sort(ids)
            ids = ids[np.concatenate(([True], ids[1:] != ids[:-1]))]
        return ids

    def size_bytes(self) -> int:
        """An estimate of the memory it holds (tables, postings, per-alternative arrays)."""
        import sys
        size = (sys.getsizeof(self.words) + sys.getsizeof(self.prefixes) + self.need.nbytes
                + self.shape_id.nbytes)
        for table in (self.words, self.prefixes):
            size += sum(map(sys.getsizeof, table.values()))
        return size
