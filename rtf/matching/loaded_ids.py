"""A loaded index's queries by id, in file order, each entry made when first read.

An engine keeps one entry per query in two dicts: its records
(`Engine._queries`, id -> `RegisteredQuery`) and its query table's branches
(`QueryTable.queries`, id -> the branches' tuple). Filling them at load was
one Python record and two dict entries per query: a second of a million
queries' load. A `LoadedMap` stands in for such a dict after a load: it holds
the file's ids (`FileIds`) and which of them are registered (a byte each),
and makes an entry (`make(k)`, k the query's number in the file) the first
time it is read -- a match that names the query, `Engine.get`, a save. It is
a mutable mapping with a dict's order: the file's queries in file order,
then those registered after the load in their order; a query the load left
to register from its model (a version-3 one: absent until then) takes its
place in the file's order when set, as the load used to put it; a query
removed and registered again goes last, as a dict would put it.

`FileIds` makes the id -> number dict only when something looks an id up (a
registration, `Engine.get`, a match whose records are read), shared by every
map of one load.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import numpy as np

#: `LoadedMap`'s states of a file's query: not registered (yet), registered, removed.
_ABSENT, _PRESENT, _REMOVED = 0, 1, 2
_NOTHING = object()


class FileIds:
    """A file's query ids, by number, and each id's number (made when first asked for)."""

    __slots__ = ("ids", "_number")

    def __init__(self, ids: list[str]):
        self.ids = ids
        self._number: dict[str, int] | None = None

    def number(self) -> dict[str, int]:
        """id -> its number in the file."""
        found = self._number
        if found is None:
            found = self._number = dict(zip(self.ids, range(len(self.ids))))
        return found


class LoadedMap(MutableMapping):
    """A dict of id -> entry over a loaded file's queries (see the module): `make(k)` makes
    the entry of query k when first read; `present` says which of the file's queries are
    registered now (the others are absent until set)."""

    __slots__ = ("_file", "_make", "_state", "_made", "_tail", "_count", "source")

    def __init__(self, file: FileIds, make: Callable[[int], Any], present: np.ndarray, source: Any = None):
        """`source`: what the entries are made from (kept for `whole`'s callers: the file's
        models, `rtf.matching.restoring.Models`)."""
        self._file, self._make, self.source = file, make, source
        self._state = bytearray(np.asarray(present, dtype=np.uint8).tobytes())  # (`_PRESENT` is 1)
        self._count = int(np.count_nonzero(present))
        self._made: dict[int, Any] = {}  # number -> its entry, once made or set
        self._tail: dict[str, Any] = {}  # the ids registered after the load (not the file's)

    def _present(self, key) -> int | None:
        """The number of the file's query `key` if it is registered (not in the tail)."""
        k = self._file.number().get(key)
        return k if k is not None and self._state[k] == _PRESENT else None

    def __getitem__(self, key):
        tail = self._tail
        if tail and key in tail:
            return tail[key]
        k = self._present(key)
        if k is None:
            raise KeyError(key)
        found = self._made.get(k, _NOTHING)
        if found is _NOTHING:
            found = self._made[k] = self._make(k)
        return found

    def __contains__(self, key) -> bool:
        return key in self._tail or self._present(key) is not None

    def __setitem__(self, key, value) -> None:
        tail = self._tail
        if key not in tail:
            k = self._file.number().get(key)
            if k is not None and self._state[k] != _REMOVED:
                if self._state[k] == _ABSENT:
                    self._state[k] = _PRESENT
                    self._count += 1
                self._made[k] = value
                return
        tail[key] = value

    def __delitem__(self, key) -> None:
        if key in self._tail:
            del self._tail[key]
            return
        k = self._present(key)
        if k is None:
            raise KeyError(key)
        self._state[k] = _REMOVED
        self._made.pop(k, None)
        self._count -= 1

    def whole(self) -> bool:
        """Whether the map holds the file's queries and no other: every one registered, in
        file order, none removed or added since the load."""
        return not self._tail and self._count == len(self._file.ids)

    def __len__(self) -> int:
        return self._count + len(self._tail)

    def _numbers(self) -> list[int]:
        """The numbers of the file's queries registered now, in file order."""
        return np.flatnonzero(np.frombuffer(self._state, dtype=np.uint8) == _PRESENT).tolist()

    def __iter__(self) -> Iterator[str]:
        yield from map(self._file.ids.__getitem__, self._numbers())
        yield from list(self._tail)

    def values(self) -> list:  # type: ignore[override]
        """Every entry, in order (a list: made at once)."""
        made, make = self._made, self._make
        found = []
        for k in self._numbers():
            entry = made.get(k, _NOTHING)
            if entry is _NOTHING:
                entry = made[k] = make(k)
            found.append(entry)
        return found + list(self._tail.values())

    def __reduce__(self):  # (pickled, as Spark ships engines, as the dict it stands for)
        return dict, (list(self.items()),)

    def __repr__(self) -> str:
        return f"LoadedMap({len(self)} entries)"
