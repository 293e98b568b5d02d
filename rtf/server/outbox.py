"""The matches pushed to subscribers, kept on disk for the ones who reconnect.

Each match that a publication gives a query with a subscriber becomes an
event: a number that grows across all subscribers and restarts (the SSE
``id``), the subscriber and the `rtf match` line. A subscriber that comes
back with ``Last-Event-ID: N`` reads its events after N from here.

Retention, per subscriber: the newest `max_events` events, none older than
`max_age` seconds. The count is kept exactly: each append deletes, in the
same transaction, the oldest events of every subscriber it took over the
limit (found from the oldest end of the subscriber's index, so the work
follows what is deleted, never the outbox's size). The age limit is applied
at most every `EXPIRE_CHECK_S` seconds, when events are appended or read,
through an index on the creation time. The highest id deleted per
subscriber is remembered, so that a subscriber asking from before it is
told what it missed (a gap).

WAL, ``synchronous=NORMAL``: an appended event survives the process dying;
the last moments may be lost if the machine itself fails.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from rtf.server.querystore import StorageError, connect, storage_error

log = logging.getLogger("rtf.server")

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    subscriber TEXT NOT NULL,
    created    REAL NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_subscriber ON events (subscriber, id);
CREATE INDEX IF NOT EXISTS events_by_created ON events (created);
CREATE TABLE IF NOT EXISTS pruned (subscriber TEXT PRIMARY KEY, through INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

#: Default retention: events per subscriber, and seconds.
MAX_EVENTS = 100_000
MAX_AGE_S = 7 * 24 * 3600

#: Seconds between two applications of the age limit (at most).
EXPIRE_CHECK_S = 1.0


class Outbox:
    """The event table of ``DIR/outbox.sqlite3``; every method is thread-safe."""

    FILE = "outbox.sqlite3"

    def __init__(self, directory: Path, max_events: int = MAX_EVENTS, max_age: float = MAX_AGE_S,
                 table: str | None = None):
        """`table`: the identity of the query table this outbox serves
        (`QueryStore.table_id`); an outbox made for another one is refused
        (`StorageError`), one made before outboxes recorded it adopts it."""
        self.path = Path(directory) / self.FILE
        self.max_events = max_events
        self.max_age = max_age
        self._db = connect(self.path, "NORMAL", SCHEMA)
        self._lock = threading.Lock()
        try:
            self._check_table(table)
            row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
            self._last_id = row[0] if row else 0
            #: Events held per subscriber (read once; kept up to date by every change).
            self._counts: dict[str, int] = dict(self._db.execute(
                "SELECT subscriber, COUNT(*) FROM events GROUP BY subscriber").fetchall())
            self._expired_at = 0.0
        except sqlite3.Error as e:
            self._db.close()
            raise storage_error(self.path, e) from None
        except StorageError:
            self._db.close()
            raise

        try:  # housekeeping: a full disk must not keep the server from starting
            with self._lock:
                self._apply_retention(list(self._counts), time.time())
        except sqlite3.Error as e:
            log.warning("could not apply retention to %s at start (retried later): %s", self.path, e)

    def _check_table(self, table: str | None) -> None:
        if table is None:
            return
        row = self._db.execute("SELECT value FROM settings WHERE key = 'table'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO settings (key, value) VALUES ('table', ?)", (table,))
        elif row[0] != table:
            raise StorageError(
                f"{self.path} holds the matches of another data folder's queries (table "
                f"{row[0]}, not {table}): put back the queries.sqlite3 it belongs with, or move "
                "it away to start with an empty outbox")

    @property
    def last_id(self) -> int:
        """The id of the newest event ever appended (0 if none)."""
        return self._last_id

    def append(self, events: Iterable[tuple[str, str]]) -> list[tuple[int, str, str]]:
        """Store ``(subscriber, data)`` events in one transaction (retention
        applied in it); return them as ``(id, subscriber, data)`` with their new
        ids, in order."""
        now = time.time()
        with self._lock:
            first = self._last_id + 1
            numbered = [(i, sub, data) for i, (sub, data) in enumerate(events, first)]
            if not numbered:
                return []
            touched: dict[str, int] = {}
            for _, sub, _ in numbered:
                touched[sub] = touched.get(sub, 0) + 1
            counts = dict(self._counts)
            for sub, n in touched.items():
                counts[sub] = counts.get(sub, 0) + n
            with self._db:  # BEGIN ... COMMIT (ROLLBACK on error: nothing changes)
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT INTO events (id, subscriber, created, data) VALUES (?, ?, ?, ?)",
                    [(i, sub, now, data) for i, sub, data in numbered])
                self._trim(counts, touched)
            self._counts = counts
            self._last_id = numbered[-1][0]
            if now - self._expired_at >= EXPIRE_CHECK_S:
                self._expire_or_log(now)  # the events are stored: housekeeping may fail
        return numbered

    def since(self, subscriber: str, after: int, limit: int = 1000) -> list[tuple[int, str]]:
        """Up to `limit` events of `subscriber` with ids above `after`: ``(id, data)``."""
        with self._lock:
            now = time.time()
            if now - self._expired_at >= EXPIRE_CHECK_S:
                self._expire_or_log(now)
            return self._db.execute(
                "SELECT id, data FROM events WHERE subscriber = ? AND id > ? ORDER BY id LIMIT ?",
                (subscriber, after, limit)).fetchall()

    def pruned_through(self, subscriber: str) -> int:
        """The highest id of `subscriber`'s events deleted by retention (0: none)."""
        with self._lock:
            row = self._db.execute("SELECT through FROM pruned WHERE subscriber = ?",
                                   (subscriber,)).fetchone()
        return row[0] if row else 0

    def count(self, subscriber: str | None = None) -> int:
        """Events held (for one subscriber, or in all)."""
        with self._lock:
            return self._counts.get(subscriber, 0) if subscriber is not None else sum(self._counts.values())

    def prune(self) -> None:
        """Apply retention now (both limits, every subscriber)."""
        with self._lock:
            self._apply_retention(list(self._counts), time.time())

    def _apply_retention(self, subscribers: list[str], now: float) -> None:
        counts = dict(self._counts)
        with self._db:
            self._db.execute("BEGIN")
            self._trim(counts, subscribers)
        self._counts = counts
        self._expire(now)

    def _trim(self, counts: dict[str, int], subscribers) -> None:
        """Delete the oldest events of each of `subscribers` over `max_events`
        (inside the caller's transaction; `counts` updated)."""
        db = self._db
        for sub in subscribers:
            excess = counts.get(sub, 0) - self.max_events
            if excess <= 0:
                continue
            row = db.execute(
                "SELECT id FROM events WHERE subscriber = ? ORDER BY id LIMIT 1 OFFSET ?",
                (sub, excess - 1)).fetchone()
            if row is None:  # cannot happen while the counts are right; never crash on it
                continue
            (through,) = row
            db.execute("DELETE FROM events WHERE subscriber = ? AND id <= ?", (sub, through))
            self._note_pruned(sub, through)
            counts[sub] -= excess

    def _expire_or_log(self, now: float) -> None:
        """`_expire`, whose failure (a full disk: deleting needs room in the journal)
        only delays it: the events it would delete stay a little longer."""
        try:
            self._expire(now)
        except sqlite3.Error as e:
            log.warning("could not delete expired events from %s (retried later): %s", self.path, e)

    def _expire(self, now: float) -> None:
        """Delete the events older than `max_age`."""
        self._expired_at = now
        db = self._db
        cutoff = now - self.max_age
        (oldest,) = db.execute("SELECT MIN(created) FROM events").fetchone()  # the index's first entry
        if oldest is None or oldest >= cutoff:
            return
        # INDEXED BY: left alone, SQLite groups by walking the subscriber index,
        # that is the whole outbox (measured: 43 % of a loaded server's time).
        doomed = db.execute("SELECT subscriber, COUNT(*), MAX(id) FROM events "
                            "INDEXED BY events_by_created WHERE created < ? GROUP BY subscriber",
                            (cutoff,)).fetchall()
        counts = dict(self._counts)
        with db:
            db.execute("BEGIN")
            db.execute("DELETE FROM events WHERE created < ?", (cutoff,))
            for sub, n, through in doomed:
                self._note_pruned(sub, through)
                counts[sub] -= n
        self._counts = {sub: n for sub, n in counts.items() if n > 0}

    def _note_pruned(self, subscriber: str, through: int) -> None:
        self._db.execute("INSERT INTO pruned (subscriber, through) VALUES (?, ?) "
                         "ON CONFLICT (subscriber) DO UPDATE SET through = MAX(through, excluded.through)",
                         (subscriber, through))

    def close(self) -> None:
        with self._lock:
            self._db.close()
