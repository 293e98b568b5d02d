"""The matches pushed to subscribers, kept on disk for the ones who reconnect.

Each match that a publication gives a query with a subscriber becomes an
event: a number that grows across all subscribers and restarts (the SSE
``id``), the subscriber and the `rtf match` line. A subscriber that comes
back with ``Last-Event-ID: N`` reads its events after N from here.

Retention, per subscriber: the newest `max_events` events, none older than
`max_age` seconds; older ones are deleted as new ones arrive (after every
`PRUNE_EVERY` or `max_events` appended events, whichever is fewer, and at
least every `PRUNE_INTERVAL_S` or `max_age` seconds), and the highest id
deleted is remembered so that a subscriber asking from before it is told
what it missed (a gap).

WAL, ``synchronous=NORMAL``: an appended event survives the process dying;
the last moments may be lost if the machine itself fails.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

from rtf.server.querystore import connect

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    subscriber TEXT NOT NULL,
    created    REAL NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_subscriber ON events (subscriber, id);
CREATE TABLE IF NOT EXISTS pruned (subscriber TEXT PRIMARY KEY, through INTEGER NOT NULL);
"""

#: Default retention: events per subscriber, and seconds.
MAX_EVENTS = 100_000
MAX_AGE_S = 7 * 24 * 3600

#: Appended events between two prunings (at most; fewer when `max_events` is smaller).
PRUNE_EVERY = 10_000
#: Seconds between two prunings (at most; less when `max_age` is shorter), so
#: that a quiet outbox still forgets what is older than `max_age`.
PRUNE_INTERVAL_S = 3600.0


class Outbox:
    """The event table of ``DIR/outbox.sqlite3``; every method is thread-safe."""

    FILE = "outbox.sqlite3"

    def __init__(self, directory: Path, max_events: int = MAX_EVENTS, max_age: float = MAX_AGE_S):
        self.path = Path(directory) / self.FILE
        self.max_events = max_events
        self.max_age = max_age
        self._db = connect(self.path, "NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        self._last_id = row[0] if row else 0
        self._since_prune = 0
        self._pruned_at = time.time()
        self._prune_every = min(PRUNE_EVERY, max_events)
        self._prune_interval = min(PRUNE_INTERVAL_S, max_age)

    @property
    def last_id(self) -> int:
        """The id of the newest event ever appended (0 if none)."""
        return self._last_id

    def append(self, events: Iterable[tuple[str, str]]) -> list[tuple[int, str, str]]:
        """Store ``(subscriber, data)`` events in one transaction; return them
        as ``(id, subscriber, data)`` with their new ids, in order."""
        now = time.time()
        with self._lock:
            first = self._last_id + 1
            numbered = [(i, sub, data) for i, (sub, data) in enumerate(events, first)]
            if not numbered:
                return []
            with self._db:  # BEGIN ... COMMIT (ROLLBACK on error)
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT INTO events (id, subscriber, created, data) VALUES (?, ?, ?, ?)",
                    [(i, sub, now, data) for i, sub, data in numbered])
            self._last_id = numbered[-1][0]
            self._since_prune += len(numbered)
            if (self._since_prune >= self._prune_every
                    or now - self._pruned_at >= self._prune_interval):
                self._prune(now)
        return numbered

    def since(self, subscriber: str, after: int, limit: int = 1000) -> list[tuple[int, str]]:
        """Up to `limit` events of `subscriber` with ids above `after`: ``(id, data)``."""
        with self._lock:
            return self._db.execute(
                "SELECT id, data FROM events WHERE subscriber = ? AND id > ? ORDER BY id LIMIT ?",
                (subscriber, after, limit)).fetchall()

    def pruned_through(self, subscriber: str) -> int:
        """The highest id of `subscriber`'s events deleted by retention (0: none)."""
        with self._lock:
            row = self._db.execute("SELECT through FROM pruned WHERE subscriber = ?",
                                   (subscriber,)).fetchone()
        return row[0] if row else 0

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM events").fetchone()[0]

    def prune(self) -> None:
        """Apply retention now."""
        with self._lock:
            self._prune(time.time())

    def _prune(self, now: float) -> None:
        self._since_prune = 0
        self._pruned_at = now
        db = self._db
        with db:
            db.execute("BEGIN")
            doomed = db.execute(  # per subscriber: the highest id that goes
                """SELECT subscriber, MAX(id) FROM (
                       SELECT subscriber, id, created,
                              ROW_NUMBER() OVER (PARTITION BY subscriber ORDER BY id DESC) AS rank
                       FROM events)
                   WHERE rank > ? OR created < ? GROUP BY subscriber""",
                (self.max_events, now - self.max_age)).fetchall()
            for subscriber, through in doomed:
                db.execute("DELETE FROM events WHERE subscriber = ? AND id <= ?", (subscriber, through))
                db.execute("INSERT INTO pruned (subscriber, through) VALUES (?, ?) "
                           "ON CONFLICT (subscriber) DO UPDATE SET through = MAX(through, excluded.through)",
                           (subscriber, through))

    def close(self) -> None:
        with self._lock:
            self._db.close()
