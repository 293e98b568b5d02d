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

import numpy as np

_NO_IDS = np.zeros(0, dtype=np.int64)


class Hits(dict):
    """Shape -> its satisfying triples, plus `chunks` of (shape ids, triple) not yet in the dict.

    `shape_at` maps a shape id to its shape (the query table's `shape_at`, read
    when the chunks are settled). A shape is in at most one of the two parts;
    it may be in several chunks (several triples satisfy it).
    """

    __slots__ = ("chunks", "table")

    def __init__(self, table=None):
        super().__init__()
        #: (int64 array of distinct shape ids, the triple that satisfies each of them)
        self.chunks: list[tuple[np.ndarray, tuple]] = []
        #: what resolves ids to shapes: anything with a `shape_at` array (the query table)
        self.table = table

    def __bool__(self) -> bool:
        return dict.__len__(self) > 0 or any(len(ids) for ids, _ in self.chunks)

    def add_chunk(self, ids: np.ndarray, triple: tuple) -> None:
        """Shapes `ids` (distinct, none of them a dict key) are each satisfied by `triple`."""
        if len(ids):
            self.chunks.append((ids, triple))

    def shape_ids(self, id_of) -> np.ndarray:
        """The ids of every shape in either part, each once (`id_of` reads a shape's id)."""
        keyed = np.fromiter(map(id_of, self), np.int64, dict.__len__(self)) if dict.__len__(self) else _NO_IDS
        chunks = self.chunks
        if not chunks:
            return keyed
        parts = [ids for ids, _ in chunks]
        if len(keyed):
            parts.append(keyed)
        ids = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return np.unique(ids) if len(parts) > 1 else ids

    def settle(self) -> "Hits":
        """Move every chunk into the dict (shape -> triples); return self."""
        chunks = self.chunks
        if chunks:
            shape_at = self.table.shape_at
            for ids, triple in chunks:
                for shape in shape_at[ids].tolist():
                    found = self.get(shape)
                    if found is None:
                        self[shape] = [triple]
                    else:
                        found.append(triple)
            self.chunks = []
        return self
