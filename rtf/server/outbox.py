"""The matches pushed to subscribers, kept on disk for the ones who reconnect.

Each match that a publication gives a query with a subscriber becomes an
event: a number that grows across all subscribers and restarts (the SSE
``id``), the subscriber and the `rtf match` line. A subscriber that comes
back with ``Last-Event-ID: N`` reads its events after N from here.

Events are stored as *batches*: one row per subscriber per append, holding
that subscriber's events of the append (numbered with consecutive ids, so
that a row is ``first_id..last_id`` and its lines). A publication making
thousands of events for a few subscribers writes a few rows, not thousands.
A row holds grouped lines (`rtf.server.events.row_data`: the matches of a
publication that share one answer in a line, the query ids in a list, and
how many each holds), a few bytes a match; a row of an older rtf holds one
`rtf match` line a match, and is read as it is. Either is read back as a
`Chunk`, cut at any id.

Retention, per subscriber: the newest `max_events` events, none older than
`max_age` seconds. The count is kept exactly: each append moves, in the
same transaction, every subscriber it took over the limit past its oldest
events: the subscriber's *floor* (table ``pruned``: the highest id dropped)
rises to the last event over the limit, rows wholly at or below it are
deleted from the oldest end of the subscriber's index (the work follows
what is dropped, never the outbox's size), and a row the floor cuts keeps
its text but is read from above the floor (a row is never rewritten). The
age limit is applied at most every `EXPIRE_CHECK_S` seconds, when events
are appended or read, through an index on the creation time. A subscriber
asking from below its floor is told what it missed (a gap).

WAL, ``synchronous=NORMAL``: an appended event survives the process dying;
the last moments may be lost if the machine itself fails. The WAL is copied
back into the database (a checkpoint, which syncs the disk) by a thread of
its own every `CHECKPOINT_S` seconds, never by an append: publishing does
not wait for the disk. An outbox written
by an older rtf (one row per event, table ``events``) is converted when it
is opened.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from rtf.server.config import MAX_AGE_S, MAX_EVENTS
from rtf.server.events import Chunk, row_chunk, row_data
from rtf.server.sqlite_files import StorageError, connect, storage_error

log = logging.getLogger("rtf.server")

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    last_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    first_id   INTEGER NOT NULL,
    subscriber TEXT NOT NULL,
    created    REAL NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batches_by_subscriber ON batches (subscriber, last_id);
CREATE INDEX IF NOT EXISTS batches_by_created ON batches (created);
CREATE TABLE IF NOT EXISTS pruned (subscriber TEXT PRIMARY KEY, through INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


#: The events of a row ``b`` above its subscriber's floor ``p.through`` (SQL), and the
#: join that brings the floor.
_ABOVE_FLOOR = "b.last_id - MAX(b.first_id, COALESCE(p.through, 0) + 1) + 1"
_FLOOR_JOIN = "LEFT JOIN pruned p ON p.subscriber = b.subscriber"

#: Seconds between two checkpoints of the WAL (in the background), and the WAL size,
#: in bytes, past which a checkpoint also starts the WAL over (waiting for the writer).
CHECKPOINT_S = 1.0
RESTART_BYTES = 64 << 20
#: The page size of a new outbox: its rows are large (a request's grouped lines for a
#: subscriber, ~140 KB on the paper mix), and a commit writes each page to the WAL as
#: a frame of its own: 64 KiB pages commit them in a third less time than SQLite's
#: 4 KiB (an outbox made with other pages keeps them).
PAGE_SIZE = 65536
#: Seconds a restart of the WAL waits for another process's readers (then it is
#: retried at the next checkpoint).
RESTART_WAIT_S = 0.1

#: Seconds between two applications of the age limit (at most).
EXPIRE_CHECK_S = 1.0


#: What to do when the outbox is damaged (docs/server.md, "Recovering a data folder").
RECOVERY = ("restore it from a backup, or move it away to start with an empty outbox (the "
            "matches it held for subscribers that had not read them are lost; docs/server.md, "
            '"Recovering a data folder")')


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
        self._db = connect(self.path, "NORMAL", SCHEMA, RECOVERY, page_size=PAGE_SIZE)
        self._lock = threading.Lock()
        try:
            self._check_table(table)
            self._convert_old_events()
            row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'batches'").fetchone()
            self._last_id = row[0] if row else 0
            #: Each subscriber's floor: the highest id retention dropped (kept up to date).
            self._floors: dict[str, int] = dict(self._db.execute(
                "SELECT subscriber, through FROM pruned").fetchall())
            #: Events held per subscriber, above its floor (kept up to date by every change).
            self._counts: dict[str, int] = dict(self._db.execute(
                f"SELECT b.subscriber, SUM({_ABOVE_FLOOR}) FROM batches b {_FLOOR_JOIN} "
                "WHERE b.last_id > COALESCE(p.through, 0) GROUP BY b.subscriber").fetchall())
            self._expired_at = 0.0
        except sqlite3.Error as e:
            self._db.close()
            raise storage_error(self.path, e, RECOVERY) from None
        except StorageError:
            self._db.close()
            raise

        try:  # housekeeping: a full disk must not keep the server from starting
            with self._lock:
                self._apply_retention(list(self._counts), time.time())
        except sqlite3.Error as e:
            log.warning("could not apply retention to %s at start (retried later): %s", self.path, e)
        self._db.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's job
        self._closing = threading.Event()
        self._checkpointer = threading.Thread(target=self._checkpoints, daemon=True,
                                              name="rtf-outbox-checkpoint")
        self._checkpointer.start()

    def _checkpoints(self) -> None:
        """Copy the WAL back into the database every CHECKPOINT_S seconds, on a
        connection of its own (a passive checkpoint never blocks an append)."""
        failing = None
        try:
            # A short busy timeout: a restart (under the outbox's lock) waits only for
            # readers of other processes, and appends wait for it.
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                 timeout=RESTART_WAIT_S)
        except sqlite3.Error as e:
            log.warning("cannot checkpoint %s: %s", self.path, e)
            return
        try:
            (page_size,) = db.execute("PRAGMA page_size").fetchone()
            while not self._closing.wait(CHECKPOINT_S):
                try:
                    _, pages, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if pages * page_size > RESTART_BYTES:  # appends never let it empty: start it over,
                        # under the outbox's lock: no append or read runs, so the restart
                        # waits for nobody, and an append waits on the lock for the copy
                        # of the last frames, not in SQLite's busy handler (whose sleeps
                        # of 1, 2, 5, ... 50 ms made tails of 100 ms and more)
                        with self._lock:
                            db.execute("PRAGMA wal_checkpoint(RESTART)")
                    failing = None
                except sqlite3.Error as e:  # a full disk: retried; the WAL holds everything
                    if str(e) != failing:
                        log.warning("could not checkpoint %s (retried): %s", self.path, e)
                    failing = str(e)
        finally:
            db.close()

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

    def _convert_old_events(self) -> None:
        """An outbox of an older rtf (table ``events``, one row per event): its events
        become batches of one, its id sequence carries on; in one transaction."""
        db = self._db
        if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'"
                          ).fetchone():
            return
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO batches (last_id, first_id, subscriber, created, data) "
                       "SELECT id, id, subscriber, created, data FROM events ORDER BY id")
            row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
            if row is not None:  # ids given before are never given again, even pruned ones
                db.execute("DELETE FROM sqlite_sequence WHERE name = 'batches'")
                db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('batches', ?)", row)
            db.execute("DROP TABLE events")
        log.info("converted %s to batches", self.path)

    @property
    def last_id(self) -> int:
        """The id of the newest event ever appended (0 if none)."""
        return self._last_id

    def append(self, groups: Iterable[tuple[str, list | tuple]]) -> list[tuple[str, int, list | tuple]]:
        """Store each subscriber's events in one transaction (retention applied in it):
        ``(subscriber, lines)``, match lines (UTF-8 or text), or ``(subscriber, (counts,
        lines))``, grouped lines and the matches each holds (`rtf.server.events`). Each
        group gets the next ids, in order, one per match. Returns ``(subscriber,
        first_id, lines or (counts, lines))`` for the non-empty groups."""
        now = time.time()
        with self._lock:
            numbered = []
            sizes = []
            next_id = self._last_id + 1
            for sub, lines in groups:
                n = sum(lines[0]) if isinstance(lines, tuple) else len(lines)
                if n:
                    numbered.append((sub, next_id, lines))
                    sizes.append(n)
                    next_id += n
            if not numbered:
                return []
            counts = dict(self._counts)
            for (sub, _, _), n in zip(numbered, sizes):
                counts[sub] = counts.get(sub, 0) + n
            floors = dict(self._floors)
            with self._db:  # BEGIN ... COMMIT (ROLLBACK on error: nothing changes)
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT INTO batches (last_id, first_id, subscriber, created, data) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(first + n - 1, first, sub, now, _joined(lines))
                     for (sub, first, lines), n in zip(numbered, sizes)])
                self._trim(counts, floors, {sub for sub, _, _ in numbered})
            self._counts, self._floors = counts, floors
            self._last_id = next_id - 1
            if now - self._expired_at >= EXPIRE_CHECK_S:
                self._expire_or_log(now)  # the events are stored: housekeeping may fail
        return numbered

    def since(self, subscriber: str, after: int, limit: int = 1000) -> list[tuple[int, str]]:
        """The first `limit` events of `subscriber` with ids above `after`, ``(id, line)``."""
        return [(first + k, line.decode())
                for first, lines in self.batches_since(subscriber, after, limit)
                for k, line in enumerate(lines)][:limit]

    def batches_since(self, subscriber: str, after: int, limit: int = 1000
                      ) -> list[tuple[int, list[bytes]]]:
        """The events of `subscriber` above `after` as ``(first_id, lines)`` runs of
        consecutive ids (UTF-8 match lines), oldest first, about `limit` events (whole rows)."""
        return [(c.first_id, c.match_lines()) for c in self.chunks_since(subscriber, after, limit)]

    def chunks_since(self, subscriber: str, after: int, limit: int = 1000) -> list[Chunk]:
        """The events of `subscriber` above `after` as `Chunk`s (a row each), oldest
        first, about `limit` events (whole rows)."""
        with self._lock:
            now = time.time()
            if now - self._expired_at >= EXPIRE_CHECK_S:
                self._expire_or_log(now)
            after = max(after, self._floors.get(subscriber, 0))
            cursor = self._db.execute(
                "SELECT first_id, last_id, data FROM batches WHERE subscriber = ? AND last_id > ? "
                "ORDER BY last_id", (subscriber, after))
            rows = []
            taken = 0
            for first, last, data in cursor:
                rows.append((first, data))
                taken += last - max(first, after + 1) + 1
                if taken >= limit:
                    break
            cursor.close()
        # (decoded out of the lock: a row of grouped lines is split at its ids here)
        return [row_chunk(first, data).after(after) for first, data in rows]

    def pruned_through(self, subscriber: str) -> int:
        """The highest id of `subscriber`'s events deleted by retention (0: none)."""
        with self._lock:
            return self._floors.get(subscriber, 0)

    def count(self, subscriber: str | None = None) -> int:
        """Events held (for one subscriber, or in all)."""
        with self._lock:
            return self._counts.get(subscriber, 0) if subscriber is not None else sum(self._counts.values())

    def prune(self) -> None:
        """Apply retention now (both limits, every subscriber)."""
        with self._lock:
            self._apply_retention(list(self._counts), time.time())

    def _apply_retention(self, subscribers: list[str], now: float) -> None:
        counts, floors = dict(self._counts), dict(self._floors)
        with self._db:
            self._db.execute("BEGIN")
            self._trim(counts, floors, subscribers)
        self._counts, self._floors = counts, floors
        self._expire(now)

    def _trim(self, counts: dict[str, int], floors: dict[str, int], subscribers) -> None:
        """Raise the floor of each of `subscribers` over `max_events` past its oldest
        events and delete the rows wholly below it (inside the caller's transaction;
        `counts` and `floors` updated)."""
        db = self._db
        for sub in subscribers:
            excess = counts.get(sub, 0) - self.max_events
            if excess <= 0:
                continue
            floor = floors.get(sub, 0)
            left, new_floor = excess, None
            cursor = db.execute("SELECT last_id, first_id FROM batches WHERE subscriber = ? "
                                "AND last_id > ? ORDER BY last_id", (sub, floor))
            for last, first in cursor:
                start = max(first, floor + 1)
                if last - start + 1 <= left:
                    new_floor, left = last, left - (last - start + 1)
                    if not left:
                        break
                else:
                    new_floor, left = start + left - 1, 0
                    break
            cursor.close()
            if new_floor is None:  # cannot happen while the counts are right; never crash on it
                continue
            db.execute("DELETE FROM batches WHERE subscriber = ? AND last_id <= ?", (sub, new_floor))
            self._note_pruned(sub, new_floor)
            floors[sub] = new_floor
            counts[sub] -= excess - left

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
        (oldest,) = db.execute("SELECT MIN(created) FROM batches").fetchone()  # the index's first entry
        if oldest is None or oldest >= cutoff:
            return
        # INDEXED BY: left alone, SQLite groups by walking the subscriber index,
        # that is the whole outbox (measured: 43 % of a loaded server's time).
        doomed = db.execute(f"SELECT b.subscriber, SUM(MAX(0, {_ABOVE_FLOOR})), MAX(b.last_id) "
                            f"FROM batches b INDEXED BY batches_by_created {_FLOOR_JOIN} "
                            "WHERE b.created < ? GROUP BY b.subscriber", (cutoff,)).fetchall()
        counts, floors = dict(self._counts), dict(self._floors)
        with db:
            db.execute("BEGIN")
            db.execute("DELETE FROM batches WHERE created < ?", (cutoff,))
            for sub, n, through in doomed:
                self._note_pruned(sub, through)
                floors[sub] = max(floors.get(sub, 0), through)
                counts[sub] = counts.get(sub, 0) - n
        self._counts = {sub: n for sub, n in counts.items() if n > 0}
        self._floors = floors

    def _note_pruned(self, subscriber: str, through: int) -> None:
        self._db.execute("INSERT INTO pruned (subscriber, through) VALUES (?, ?) "
                         "ON CONFLICT (subscriber) DO UPDATE SET through = MAX(through, excluded.through)",
                         (subscriber, through))

    def close(self) -> None:
        self._closing.set()
        self._checkpointer.join()
        with self._lock:
            self._db.close()  # the last connection: SQLite checkpoints the WAL


def _joined(lines: list | tuple) -> bytes | str:
    """A row's `data`: its grouped lines (`rtf.server.events.row_data`), or its match
    lines, one per line (UTF-8 lines are stored as a BLOB, as they are: no conversion)."""
    if isinstance(lines, tuple):
        return row_data(*lines)
    return (b"\n" if isinstance(lines[0], bytes) else "\n").join(lines)
