"""A publication's matching queries in query-id order, without comparing ids per publication.

`Engine.match` lists matches by query id. Sorting a publication's
thousands of records by their id strings was a quarter of its time at
100,000 queries (string comparisons over records scattered in memory).
Here each slot gets the *rank* of its query's id among all registered ids,
and a group of slots is ordered by one numpy argsort of their ranks. When
only the slots are wanted in order (no answers beside them), their ranks
are sorted themselves and read back as slots (`slot_of_rank`): sorting
plain integers costs about half an argsort and its gather at 20,000
matches a publication; and when the slots are a good part of all the
ranked ones, the ranks are marked in one flag per rank and read back in
order, a pass over the flags instead of a sort.

Ranks are made lazily: a registration invalidates them (removals do not:
the remaining ranks keep their order), and until they are made again the
records are sorted by id as before. They are made again once the sorting
done since the change has cost about what ranking costs (sorting as many
ids as are registered): a bulk registration followed by a stream of
publications pays the ranking once; a registration before every
publication is never worse than twice the plain sorting (ski rental).
A saved index is ranked as it is loaded (`rank`): what follows a load is a
stream of publications, whose first few would otherwise each sort the ids
of their thousands of matches before the ranks pay for themselves.
"""

from __future__ import annotations

import numpy as np


class IdOrder:
    """Query-id ranks of the query table's slots (see the module)."""

    __slots__ = ("ranks", "slot_of_rank", "debt")

    def __init__(self):
        self.ranks: np.ndarray | None = None
        #: rank -> the slot that had it when the ranks were made (`ranks` inverted)
        self.slot_of_rank: np.ndarray | None = None
        self.debt = 0  # records sorted by id since the ranks were dropped

    def __setstate__(self, state) -> None:
        """Unpickle; one pickled by an older rtf has no `slot_of_rank`: ranked again."""
        slots = state[1] if isinstance(state, tuple) else state
        for name, value in slots.items():
            setattr(self, name, value)
        if "slot_of_rank" not in slots:
            self.changed()

    def changed(self) -> None:
        """A query was registered: its id has no rank."""
        self.ranks = self.slot_of_rank = None
        self.debt = 0

    def rank(self, slot_id: np.ndarray) -> None:
        """Make the ranks of every slot now (a loaded table: a stream follows)."""
        self.ranks, self.slot_of_rank = _ranks(slot_id)
        self.debt = 0

    def ranked(self, slot_of_rank: np.ndarray, size: int) -> None:
        """Take the ranks as known (a loaded table whose queries' id order its load found):
        `slot_of_rank`, every live slot once, by rank (as `rank` would make them), of `size` slots."""
        ranks = np.full(size, -1, dtype=np.int32 if size < 2**31 else np.int64)
        ranks[slot_of_rank] = np.arange(len(slot_of_rank))
        self.ranks, self.slot_of_rank = ranks, slot_of_rank
        self.debt = 0

    def ordered(self, slot_id: np.ndarray, slots: np.ndarray, registered: int) -> np.ndarray:
        """`slots` (one slot per query; `slot_id` gives their ids) in query-id order;
        `registered` is the number of queries in the table."""
        ranks = self.ranks
        if ranks is None or not len(slots):
            return slots[self.order(slot_id, slots, registered)]
        # A slot's rank was given while its query was registered, and a slot freed by a
        # removal is given again only by a registration, which drops the ranks: every
        # rank of `slots` maps back to its own slot.
        at = ranks[slots]
        inverse = self.slot_of_rank
        if 3 * len(at) >= len(inverse):  # many of the ranked slots: one flag per rank
            flags = np.zeros(len(inverse), dtype=bool)
            flags[at] = True
            return inverse[np.flatnonzero(flags)]
        at.sort()
        return inverse[at]

    def order(self, slot_id: np.ndarray, slots: np.ndarray, registered: int) -> np.ndarray:
        """The permutation that puts `slots` in query-id order (see `ordered`)."""
        ranks = self.ranks
        if ranks is not None:
            return np.argsort(ranks[slots])  # distinct ranks: no need for a stable sort
        ids = slot_id[slots].tolist()
        order = sorted(range(len(ids)), key=ids.__getitem__)
        self.debt += len(ids)
        if self.debt >= registered:
            self.rank(slot_id)
        return np.array(order, dtype=np.intp)


def _ranks(slot_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slot -> the rank of its query's id among every slot's (-1 for a free slot), and
    rank -> its slot."""
    live = np.flatnonzero(slot_id != None)  # element-wise: free slots hold None
    ids = slot_id[live].tolist()
    order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.intp)
    ranks = np.full(len(slot_id), -1, dtype=np.int32 if len(slot_id) < 2**31 else np.int64)
    ranks[live[order]] = np.arange(len(order))
    return ranks, live[order]
