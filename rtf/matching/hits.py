"""A publication's hits: each satisfied tuple shape and the triples that satisfy it.

An index fills a `Hits` (`rtf.filter.ShapeIndex.collect`). Shapes found one
at a time go in as dict entries, shape -> triples. Shapes that a word index
finds set-at-a-time -- the hundreds of full-text shapes one abstract
satisfies -- go in as *chunks*: an array of shape ids and the one triple
that satisfies them all. Counting the complete branches needs only the ids
(`shape_ids`), and the branches answered without looking at their triples
(stars about the publication's one subject) need nothing more, so a
full-text publication makes no Python object and no dict entry per shape
it satisfies. A consumer that needs the shapes themselves (a join, value
tests) calls `settle`, which moves the chunks into the dict.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from rtf.matching.structures import sorted_unique

_NO_IDS = np.zeros(0, dtype=np.int64)
_ID = attrgetter("id")
#: Chunks of at most this many shapes go into the dict when added.
_SMALL_CHUNK = 8


class Hits(dict):
    """Shape -> its satisfying triples, plus `chunks` of (shape ids, triple) not yet in the dict.

    `table` resolves ids to shapes (its `shapes_of`, read when chunks are settled: a shape
    a load left to make is made then).
    A shape may be in the dict and in chunks, and in several chunks (several
    triples satisfy it): `settle` appends each chunk's triple to its shapes.
    """

    __slots__ = ("chunks", "table")

    def __init__(self, table):
        super().__init__()
        #: (int64 array of distinct shape ids, the triple that satisfies each of them)
        self.chunks: list[tuple[np.ndarray, tuple]] = []
        #: what resolves ids to shapes: anything with a `shape_at` array (the query table)
        self.table = table

    def __bool__(self) -> bool:
        return dict.__len__(self) > 0 or any(len(ids) for ids, _ in self.chunks)

    def add(self, shapes, triple: tuple) -> None:
        """Each of `shapes` is satisfied by `triple` (a dict entry each)."""
        for shape in shapes:
            found = self.get(shape)
            if found is None:
                self[shape] = [triple]
            else:
                found.append(triple)

    def add_chunk(self, ids: np.ndarray, triple: tuple) -> None:
        """Shapes `ids` (distinct) are each satisfied by `triple`. A few go into the dict at
        once: numpy's fixed cost per call would outweigh what a chunk saves (a selective
        publication's literals match a handful)."""
        if len(ids) > _SMALL_CHUNK:
            self.chunks.append((ids, triple))
        elif len(ids):
            self.add(self.table.shapes_of(ids), triple)

    def shape_ids(self) -> np.ndarray:
        """The ids of every shape in either part, each once."""
        parts = [ids for ids, _ in self.chunks]
        n = dict.__len__(self)
        if n:
            parts.append(np.fromiter(map(_ID, self), np.int64, n))
        if len(parts) < 2:
            return parts[0] if parts else _NO_IDS
        return sorted_unique(np.concatenate(parts))

    def settle(self) -> "Hits":
        """Move every chunk into the dict (shape -> triples); return self."""
        for ids, triple in self.chunks:
            self.add(self.table.shapes_of(ids), triple)
        self.chunks = []
        return self
