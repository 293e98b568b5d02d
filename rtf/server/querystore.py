"""The registered queries on disk: a SQLite table, the broker's source of truth.

One row per registered query: its id, text, subscriber, metadata (JSON) and
`seq`, a number that grows with every registration (a replaced query gets a
new one). The index snapshot remembers the `seq` of every query it holds, so
that at start the broker can tell which rows came after it (`Registry`).

WAL journal, ``synchronous=FULL``: when `put` returns, the row is on disk
and survives the process being killed or the machine losing power.

The table has an identity (`table_id`, a random id made with the table and
kept in its settings): the snapshot and the outbox record the table they
belong to, so that a file copied from another data folder is never taken
for this one's.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from rtf.errors import RtfError

SCHEMA = """
CREATE TABLE IF NOT EXISTS queries (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    query      TEXT NOT NULL,
    subscriber TEXT,
    metadata   TEXT
);
CREATE INDEX IF NOT EXISTS queries_by_subscriber ON queries (subscriber, seq);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class StoredQuery(NamedTuple):
    """A row of the query table."""

    seq: int
    id: str
    query: str
    subscriber: str | None
    metadata: dict | None

    def as_json(self) -> dict:
        """What the HTTP API shows of it."""
        return {"id": self.id, "subscriber": self.subscriber, "query": self.query,
                "metadata": self.metadata or {}}


class StorageError(RtfError):
    """A SQLite file of the data folder that cannot be opened or used (corrupt, not
    SQLite, unreadable, on a full disk, or belonging to another data folder)."""


def connect(path: Path, synchronous: str, schema: str) -> sqlite3.Connection:
    """A connection to the SQLite file `path` in WAL mode with `schema` applied, usable
    from any thread (callers serialise their use of it). `StorageError` if the file
    cannot be used."""
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.executescript(schema)
        return db
    except sqlite3.Error as e:
        raise storage_error(path, e) from None


def storage_error(path: Path, error: sqlite3.Error) -> StorageError:
    """`error`, met opening or reading `path`, as one sentence that says what to do."""
    text = str(error)
    if "not a database" in text or "malformed" in text:
        advice = "restore it from a backup, or move it away to start without it"
    elif "full" in text:
        advice = "free some space"
    else:
        advice = "check that the folder is readable and writable"
    return StorageError(f"cannot use {path}: {text}: {advice}")


def _row(row) -> StoredQuery:
    seq, qid, text, subscriber, metadata = row
    return StoredQuery(seq, qid, text, subscriber, json.loads(metadata) if metadata else None)


class QueryStore:
    """The query table of ``DIR/queries.sqlite3``; every method is thread-safe."""

    FILE = "queries.sqlite3"

    def __init__(self, directory: Path):
        self.path = Path(directory) / self.FILE
        self._db = connect(self.path, "FULL", SCHEMA)
        self._lock = threading.Lock()
        try:  # the table's identity, made with it
            self._db.execute("INSERT OR IGNORE INTO settings (key, value) VALUES ('table', ?)",
                             (uuid.uuid4().hex,))
            #: The table's identity (see the module's docstring).
            self.table_id: str = self.setting("table")
        except sqlite3.Error as e:
            self._db.close()
            raise storage_error(self.path, e) from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------- writing

    def begin(self) -> "PendingWrite":
        """Take the table's lock and begin a transaction (`PendingWrite`): the caller
        writes rows, then commits or rolls back."""
        self._lock.acquire()
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise
        return PendingWrite(self)

    def begin_put(self, query_id: str, query: str, subscriber: str | None,
                  metadata: Mapping | None) -> "PendingWrite":
        """Start writing a registration (replacing any row of that id); the caller
        commits it once the engine took the query, or rolls it back."""
        pending = self.begin()
        try:
            pending.put(query_id, query, subscriber, metadata)
        except BaseException:
            pending.rollback()
            raise
        return pending

    def begin_delete(self, query_id: str) -> "PendingWrite":
        """Start removing the row of `query_id` (as `begin_put`)."""
        pending = self.begin()
        try:
            pending.put(query_id, None, None, None, delete=True)
        except BaseException:
            pending.rollback()
            raise
        return pending

    def _abort(self) -> None:
        try:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
        finally:
            self._lock.release()

    # ------------------------------------------------------------- reading

    def get(self, query_id: str) -> StoredQuery | None:
        with self._lock:
            row = self._db.execute("SELECT seq, id, query, subscriber, metadata FROM queries "
                                   "WHERE id = ?", (query_id,)).fetchone()
        return _row(row) if row else None

    def page(self, subscriber: str | None = None, after: int = 0, limit: int = 1000
             ) -> list[StoredQuery]:
        """Up to `limit` rows with ``seq > after`` in registration order (of one subscriber)."""
        sql = "SELECT seq, id, query, subscriber, metadata FROM queries WHERE seq > ?"
        args: list = [after]
        if subscriber is not None:
            sql += " AND subscriber = ?"
            args.append(subscriber)
        sql += " ORDER BY seq LIMIT ?"
        args.append(limit)
        with self._lock:
            return [_row(r) for r in self._db.execute(sql, args).fetchall()]

    def all(self) -> Iterator[StoredQuery]:
        """Every row, in registration order (read page by page)."""
        after = 0
        while rows := self.page(after=after, limit=10_000):
            yield from rows
            after = rows[-1].seq

    def versions(self) -> dict[str, int]:
        """id -> seq of every row."""
        with self._lock:
            return dict(self._db.execute("SELECT id, seq FROM queries").fetchall())

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM queries").fetchone()[0]

    def setting(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
                             (key, value))


class PendingWrite:
    """A transaction begun on the query table and not yet committed (it holds the
    table's lock). After `put`, `seq` is the new row's seq (None for a removal)
    and `replaced`/`old_subscriber` say whether a row of that id existed, and whose."""

    def __init__(self, store: QueryStore):
        self._store = store
        self.seq: int | None = None
        self.replaced = False
        self.old_subscriber: str | None = None
        self._open = True

    def put(self, query_id: str, query: str | None, subscriber: str | None,
            metadata: Mapping | None, delete: bool = False) -> int | None:
        """Remove the row of `query_id` and, unless `delete`, insert the new one: its seq."""
        db = self._store._db
        old = db.execute("SELECT subscriber FROM queries WHERE id = ?", (query_id,)).fetchone()
        self.replaced = old is not None
        self.old_subscriber = old[0] if old else None
        if old is not None:
            db.execute("DELETE FROM queries WHERE id = ?", (query_id,))
        self.seq = None
        if not delete:
            self.seq = db.execute(
                "INSERT INTO queries (id, query, subscriber, metadata) VALUES (?, ?, ?, ?)",
                (query_id, query, subscriber, _metadata_json(metadata))).lastrowid
        return self.seq

    def insert_all(self, rows) -> None:
        """Insert ``(id, query, subscriber, metadata)`` rows into a table that holds none
        of their ids (an import), in order."""
        self._store._db.executemany(
            "INSERT INTO queries (id, query, subscriber, metadata) VALUES (?, ?, ?, ?)",
            ((qid, text, sub, _metadata_json(meta)) for qid, text, sub, meta in rows))

    def max_seq(self) -> int:
        """The newest row's seq (0: no row)."""
        return self._store._db.execute("SELECT MAX(seq) FROM queries").fetchone()[0] or 0

    @contextmanager
    def savepoint(self):
        """A part of the transaction that is undone alone if the block raises."""
        db = self._store._db
        db.execute("SAVEPOINT one")
        try:
            yield
        except BaseException:
            db.execute("ROLLBACK TO one")
            db.execute("RELEASE one")
            raise
        db.execute("RELEASE one")

    def set_setting(self, key: str, value: str) -> None:
        """`QueryStore.set_setting`, inside the transaction."""
        self._store._db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
                                (key, value))

    def commit(self) -> None:
        """Make the write durable (the table's file is synced before this returns)."""
        self._finish("COMMIT")

    def rollback(self) -> None:
        self._finish("ROLLBACK")

    def _finish(self, how: str) -> None:
        if not self._open:
            return
        self._open = False
        try:
            self._store._db.execute(how)
        except BaseException:
            self._store._abort()
            raise
        self._store._lock.release()


def _metadata_json(metadata: Mapping | None) -> str | None:
    return json.dumps(dict(metadata), ensure_ascii=False) if metadata else None
