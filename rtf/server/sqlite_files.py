"""Opening the SQLite files of a data folder (``queries.sqlite3``, ``outbox.sqlite3``),
and saying in one sentence what is wrong with one that cannot be used.

`connect` trusts no file: besides opening it in WAL mode and applying the
schema, it checks that the tables hold the columns the schema names (a
file made by hand or by another program is refused) and runs SQLite's
``PRAGMA quick_check``, which reads every page of every table and index
(about 0.2 s per million query rows): a damaged page is found at start,
where the server refuses to run, instead of by the first request that
touches it, which would answer ``503`` -- or, for a page of an index, a
listing that silently misses rows.

Every failure is a `StorageError` whose message names the file, the cause
as SQLite gives it, and what the operator does next (`storage_error`):
restore or rebuild a damaged file (the caller's `recovery` advice), close
the program that locks it, fix its permissions, free space.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from rtf.errors import RtfError

#: Seconds a start waits for a lock another program holds on a file (a sqlite3 shell
#: in a transaction), before refusing to start; then requests wait up to `BUSY_S`.
START_BUSY_S = 5.0
BUSY_S = 30.0

# SQLite's primary result codes (https://www.sqlite.org/rescode.html)
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT = 3, 5, 6, 8, 10, 11
_FULL, _CANTOPEN, _AUTH, _NOTADB = 13, 14, 23, 26


class StorageError(RtfError):
    """A SQLite file of the data folder that cannot be opened or used (damaged, not
    SQLite, not rtf's, locked, unreadable, on a full disk, or belonging to another
    data folder)."""


def connect(path: Path, synchronous: str, schema: str, recovery: str,
            page_size: int | None = None) -> sqlite3.Connection:
    """A connection to the SQLite file `path` in WAL mode with `schema` applied and the
    file checked (see the module's docstring), usable from any thread (callers
    serialise their use of it). `StorageError` if the file cannot be used; `recovery`
    says what to do when it is damaged. `page_size`: the page size of a file made now
    (a file that exists keeps its own)."""
    if path.is_file() and not os.access(path, os.R_OK | os.W_OK):
        # SQLite would open a read-only file and write to its WAL, never copied back
        raise StorageError(f"{path} cannot be read and written: {_permission_advice(path)}")
    db = None
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                             timeout=START_BUSY_S)
        # checked before anything is written: a file refused is left as it was
        problems = [str(row[0]) for row in db.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise StorageError(f"{path} is damaged ({_one_line(problems)}): {recovery}")
        _check_columns(db, path, schema, recovery)
        if page_size is not None:  # (SQLite ignores it once the file has a page)
            db.execute(f"PRAGMA page_size={int(page_size)}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.executescript(schema)
        db.execute("BEGIN IMMEDIATE")  # another program's write lock: refused now, not at
        db.execute("ROLLBACK")         # the first request
        db.execute(f"PRAGMA busy_timeout={int(BUSY_S * 1000)}")
        return db
    except (sqlite3.Error, StorageError) as e:
        if db is not None:
            db.close()
        if isinstance(e, StorageError):
            raise
        raise storage_error(path, e, recovery) from None


def _check_columns(db: sqlite3.Connection, path: Path, schema: str, recovery: str) -> None:
    """Every table of `schema` that the file holds has at least the schema's columns
    (CREATE TABLE IF NOT EXISTS leaves a table of that name alone, whatever it holds);
    the tables it lacks are made by the schema."""
    wanted = sqlite3.connect(":memory:")
    try:
        wanted.executescript(schema)
        tables = [name for (name,) in wanted.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            need = [row[1] for row in wanted.execute(f"PRAGMA table_info({table})")]
            have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            missing = [column for column in need if column not in have]
            if have and missing:
                raise StorageError(f"{path} was not made by rtf serve (its table {table!r} has "
                                   f"no column {missing[0]!r}): {recovery}")
    finally:
        wanted.close()


def _one_line(problems: list[str]) -> str:
    """quick_check's report (lines under a "*** in database main ***" heading) as one line."""
    lines = [line.strip() for text in problems for line in text.splitlines()]
    found = [line for line in lines if line and not line.startswith("***")]
    return "; ".join(found[:2])[:200] or "quick_check failed"


def storage_error(path: Path, error: sqlite3.Error, recovery: str) -> StorageError:
    """`error`, met opening or reading `path`, as one sentence that names the file and
    says what to do (`recovery` when the file is damaged or not rtf's)."""
    text = str(error) or type(error).__name__
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    if code in (_CORRUPT, _NOTADB) or "malformed" in text or "not a database" in text:
        return StorageError(f"{path} is damaged ({text}): {recovery}")
    if code in (_BUSY, _LOCKED):
        return StorageError(f"{path} is locked by another program ({text}): stop the program "
                            "that holds it (a sqlite3 shell in a transaction, a backup tool), "
                            "then start again")
    if code == _FULL or "full" in text:
        return StorageError(f"cannot use {path}: {text}: free some space")
    if code in (_READONLY, _PERM, _AUTH):
        return StorageError(f"{path} cannot be written ({text}): {_permission_advice(path)}")
    if code == _CANTOPEN:
        return StorageError(f"cannot open {path} ({text}): {_why_not_open(path)}")
    if code == _IOERR:
        return StorageError(f"cannot use {path}: {text}: free some space if the disk is full, "
                            "else check the disk (the system log says more)")
    if "no such table" in text or "no such column" in text:
        return StorageError(f"{path} was not made by rtf serve ({text}): {recovery}")
    return StorageError(f"cannot use {path}: {text}: check that the folder is readable and "
                        "writable")


def _why_not_open(path: Path) -> str:
    """What keeps SQLite from opening `path`, as advice."""
    if path.is_dir():
        return "it is a folder, not a database file: move it away (restore the file if it was one)"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return (f"this user (uid {os.getuid()}) may not write in {path.parent}: fix its owner "
                "or permissions")
    return "check that the folder is readable and writable"


def _permission_advice(path: Path) -> str:
    return (f"let this user (uid {os.getuid()}) read and write it and its folder ({path.parent}), "
            "on a disk that is not mounted read-only")
