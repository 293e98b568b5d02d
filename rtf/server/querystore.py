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
import re
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from rtf.io.metadata import MAX_METADATA_BYTES, metadata_problem
from rtf.server.sqlite_files import StorageError, connect, storage_error

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


#: Stored metadata longer than this is not read (a row written by hand): its JSON could
#: not be within `MAX_METADATA_BYTES` unless it is mostly spaces or ``\\u`` escapes.
READ_METADATA_CHARS = 16 * MAX_METADATA_BYTES

#: The index snapshot's name in the data folder (`rtf.server.registry`).
SNAPSHOT = "snapshot.idx"


class StoredQuery(NamedTuple):
    """A row of the query table, as it can be shown: `problem` says why some of it could
    not be (a row written by hand or by an older rtf: text that is not text, metadata
    that is not JSON or over the bounds); those fields are then shown replaced."""

    seq: int
    id: str
    query: str
    subscriber: str | None
    metadata: dict | None
    problem: str | None = None

    def as_json(self) -> dict:
        """What the HTTP API shows of it: always JSON within the metadata bounds; a row
        that could not be shown as it is says why in ``unreadable``."""
        shown = {"id": self.id, "subscriber": self.subscriber, "query": self.query,
                 "metadata": self.metadata or {}}
        if self.problem:
            shown["unreadable"] = self.problem
        return shown


def _row(row, with_metadata: bool = True) -> StoredQuery:
    """A row as read (any SQLite value in any column: a table written by hand holds
    BLOBs, numbers or NULL where rtf writes text), checked for being shown."""
    seq, qid, text, subscriber, metadata = row
    if (type(qid) is str and type(text) is str and (subscriber is None or type(subscriber) is str)
            and (metadata is None or not with_metadata)):
        return StoredQuery(seq, qid, text, subscriber, None)  # (as rtf writes a row: nothing to check)
    problems: list[str] = []
    qid = _text(qid, "id", problems)
    text = _text(text, "query", problems)
    subscriber = None if subscriber is None else _text(subscriber, "subscriber", problems)
    shown = _metadata(metadata, problems) if with_metadata else None
    return StoredQuery(seq, qid, text, subscriber, shown, "; ".join(problems) or None)


def _text(value, name: str, problems: list[str]) -> str:
    if type(value) is str:  # read as UTF-8 by SQLite: valid
        return value
    if isinstance(value, _NotUtf8):
        problems.append(f"its {name} is not valid UTF-8 in the table (shown with U+FFFD)")
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if isinstance(value, bytes):
        problems.append(f"its {name} is a BLOB in the table, not text (shown decoded)")
        return value.decode("utf-8", "replace")
    problems.append(f"its {name} is {'NULL' if value is None else 'a number'} in the table, "
                    "not text")
    return "" if value is None else str(value)


def _metadata(value, problems: list[str]) -> dict | None:
    """Stored metadata (JSON text), or None; metadata that could not be accepted
    today (not a JSON object, too deep, too large) is replaced by none."""
    if value is None or value == "":
        return None
    problem = None
    if not isinstance(value, str):
        problem = f"it is {'a BLOB' if isinstance(value, bytes) else 'a number'} in the table, not text"
    elif len(value) > READ_METADATA_CHARS:  # not even read: far over the limit
        problem = f"{len(value)} characters of JSON, over the limit of {MAX_METADATA_BYTES} bytes"
    else:
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            problem = "it is not JSON"
        else:
            problem = (metadata_problem(parsed) if isinstance(parsed, dict)
                       else None if parsed is None else "it is not a JSON object")
            if problem is None or parsed is None:  # null: none
                return parsed
    problems.append(f"its metadata is not shown ({problem})")
    return None


class QueryStore:
    """The query table of ``DIR/queries.sqlite3``; every method is thread-safe."""

    FILE = "queries.sqlite3"

    def __init__(self, directory: Path, importing: bool = False):
        """`importing`: the table is to be filled from a saved index (``--import-index``);
        otherwise a table without queries or identity beside a snapshot is refused
        (`StorageError`): the file was lost, emptied or replaced, and starting would
        write a snapshot of nothing over the last copy of the queries."""
        folder = Path(directory)
        self.path = folder / self.FILE
        #: What to do when the file is damaged (docs/server.md, "Recovering a data folder").
        self.recovery = (f"restore it from a backup, or rebuild it from {folder / SNAPSHOT} or an "
                         'exported query file (docs/server.md, "Recovering a data folder")')
        lost = not importing and (folder / SNAPSHOT).exists()
        if lost and (not self.path.exists() or self.path.stat().st_size == 0):
            self._refuse_lost_table(folder / SNAPSHOT)  # before SQLite makes a table there
        self._db = connect(self.path, "FULL", SCHEMA, self.recovery)
        self._lock = threading.Lock()
        try:
            if lost and self.setting("table") is None and not self.count():
                self._refuse_lost_table(folder / SNAPSHOT)
            # the table's identity, made with it
            self._db.execute("INSERT OR IGNORE INTO settings (key, value) VALUES ('table', ?)",
                             (uuid.uuid4().hex,))
            #: The table's identity (see the module's docstring).
            self.table_id: str = self.setting("table")
        except (sqlite3.Error, StorageError) as e:
            self._db.close()
            if isinstance(e, StorageError):
                raise
            raise self.unusable(e) from None

    def _refuse_lost_table(self, snapshot: Path) -> None:
        raise StorageError(f"{self.path} holds no queries (it was missing, emptied or replaced) "
                           f"while {snapshot} is there: the folder's queries are not in it; "
                           f"{self.recovery}")

    def unusable(self, error: sqlite3.Error) -> StorageError:
        """`error`, met reading the table at start, as the sentence that says what to do."""
        return storage_error(self.path, error, self.recovery)

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
        rows = self._select("SELECT seq, id, query, subscriber, metadata FROM queries "
                            "WHERE id = ?", (query_id,))
        return _row(rows[0]) if rows else None

    def page(self, subscriber: str | None = None, after: int = 0, limit: int = 1000,
             with_metadata: bool = True, contains: str | None = None) -> list[StoredQuery]:
        """Up to `limit` rows with ``seq > after`` in registration order (of one subscriber;
        whose id or text `contains` that string, ASCII letters of either case: a scan)."""
        columns = "metadata" if with_metadata else "NULL"
        sql = f"SELECT seq, id, query, subscriber, {columns} FROM queries WHERE seq > ?"
        args: list = [after]
        if subscriber is not None:
            sql += " AND subscriber = ?"
            args.append(subscriber)
        if contains:
            pattern = "%" + re.sub(r"([\\%_])", r"\\\1", contains) + "%"
            sql += " AND (id LIKE ? ESCAPE '\\' OR query LIKE ? ESCAPE '\\')"
            args += [pattern, pattern]
        sql += " ORDER BY seq LIMIT ?"
        args.append(limit)
        return [_row(r, with_metadata) for r in self._select(sql, args)]

    def all(self, after: int = 0) -> Iterator[StoredQuery]:
        """Every row (with ``seq > after``), in registration order (read page by page), without
        its metadata."""
        while rows := self.page(after=after, limit=10_000, with_metadata=False):
            yield from rows
            after = rows[-1].seq

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The table's connection, its lock held (for reads made in bulk: `rtf.server.snapshot_check`)."""
        with self._lock:
            yield self._db

    def max_seq(self) -> int:
        """The newest row's seq (0: no row)."""
        return self._select("SELECT MAX(seq) FROM queries", ())[0][0] or 0

    def versions(self) -> dict[str, int]:
        """id -> seq of every row."""
        return dict(self._select("SELECT id, seq FROM queries", ()))

    def _select(self, sql: str, args) -> list[tuple]:
        with self._lock:
            return self._fetch(sql, args)

    def _fetch(self, sql: str, args) -> list[tuple]:
        """The rows `sql` selects (the caller holds the lock). Text that is not UTF-8 (a
        row written by hand) is read as `_NotUtf8`, which `_row` shows with U+FFFD,
        instead of failing the whole read."""
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.OperationalError as e:
            if "decode" not in str(e):
                raise
            self._db.text_factory = _lenient_text
            try:
                return self._db.execute(sql, args).fetchall()
            finally:
                self._db.text_factory = str

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM queries").fetchone()[0]

    def subscribers(self) -> int:
        """How many subscribers have a query: a scan of the subscriber index (60 ms at a
        million queries)."""
        with self._lock:
            return self._db.execute("SELECT COUNT(DISTINCT subscriber) FROM queries").fetchone()[0]

    def setting(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
                             (key, value))


#: `PendingWrite.put` looks the id's row up itself.
_LOOK = object()
#: Ids per statement of `PendingWrite.rows_of` (SQLite allows 32,766 parameters).
_IDS_PER_SELECT = 500


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
            metadata: Mapping | None, delete: bool = False, known=_LOOK) -> int | None:
        """Remove the row of `query_id` and, unless `delete`, insert the new one: its seq.
        `known`: the row of that id as `rows_of` gave it in this transaction (None: none),
        not looked up again."""
        db = self._store._db
        if known is _LOOK:
            found = self._store._fetch("SELECT subscriber FROM queries WHERE id = ?", (query_id,))
            old = found[0] if found else None
        else:
            old = known
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

    def rows_of(self, query_ids: list[str]) -> dict[str, tuple]:
        """The rows of those ids that the table holds, ``id -> (subscriber,)`` (a few
        statements for many ids, where `put` looks one up)."""
        found: dict[str, tuple] = {}
        for k in range(0, len(query_ids), _IDS_PER_SELECT):
            part = query_ids[k:k + _IDS_PER_SELECT]
            for query_id, subscriber in self._store._fetch(
                    f"SELECT id, subscriber FROM queries WHERE id IN ({', '.join('?' * len(part))})",
                    part):
                found[query_id] = (subscriber,)
        return found

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


class _NotUtf8(str):
    """Text of the table that is not UTF-8, its bad bytes read as lone surrogates."""


def _lenient_text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _NotUtf8(raw.decode("utf-8", "surrogateescape"))


def _metadata_json(metadata: Mapping | None) -> str | None:
    return json.dumps(dict(metadata), ensure_ascii=False) if metadata else None
