"""A cache of parsed queries bounded by the bytes of query text it keeps.

Registering the same text twice parses it once. An `lru_cache` bounded by
entries alone would keep 4,096 queries of any size after they are
unregistered; this one also bounds their total size and never keeps a
text larger than `max_entry_bytes`.
"""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict
from threading import Lock
from typing import Any

#: Objects whose `_lock` a forked child gets anew (`fork_safe`).
_LOCKED: weakref.WeakSet = weakref.WeakSet()


def fork_safe(obj) -> None:
    """Give `obj` a fresh ``_lock`` in every process forked from now on: another thread
    may hold the parent's when it forks (workers parsing ahead, `rtf.io.parse_ahead`),
    and in the child no thread would ever release it."""
    _LOCKED.add(obj)


def _fresh_locks() -> None:
    for obj in list(_LOCKED):
        obj._lock = Lock()


os.register_at_fork(after_in_child=_fresh_locks)


class ParseCache:
    """Least-recently-used map from query text to parsed query.

    Bounds: at most `max_entries` texts, at most `max_bytes` of text in total
    (UTF-8), and no text over `max_entry_bytes` at all.
    """

    def __init__(self, max_bytes: int, max_entries: int, max_entry_bytes: int):
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.max_entry_bytes = max_entry_bytes
        self.total_bytes = 0
        self._entries: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._lock = Lock()  # get() reorders: two threads must not interleave
        fork_safe(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, text: str) -> Any | None:
        """The value cached for `text` (now the most recently used), or None."""
        with self._lock:
            entry = self._entries.get(text)
            if entry is None:
                return None
            self._entries.move_to_end(text)
            return entry[0]

    def put(self, text: str, value: Any, size: int | None = None) -> None:
        """Cache `value` for `text` (`size`: its UTF-8 length, when already known)."""
        if size is None:
            size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_entry_bytes or size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(text, None)
            if old is not None:
                self.total_bytes -= old[1]
            self._entries[text] = (value, size)
            self.total_bytes += size
            while self.total_bytes > self.max_bytes or len(self._entries) > self.max_entries:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.total_bytes -= dropped

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self.total_bytes = 0
