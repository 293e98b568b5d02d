"""The broker's queries: the engine in memory, the SQLite table on disk, kept equal.

A registration is written to the table and to the engine as one step: the
table row is begun (not committed), the engine takes the query, then the row
is committed; if anything fails, both are left as they were. So a ``201``
means: committed to disk, and matching.

Many registrations (`put_many`, ``POST /queries``) are one transaction and
one disk sync: all or nothing, or each record on its own.

At start the engine comes from the index snapshot (``snapshot.idx``, the
`rtf.io.store` format) when the table's note says it was made with the same
algorithm and taxonomy, for this table (`QueryStore.table_id`), and holds
exactly the queries the note's digest covers; it is then brought level with
the table. The note also records `through`, the `seq` of the newest row the
snapshot had seen: a row's seq grows with every registration (a replaced
query gets a new one), so a row at or below it is one the snapshot holds as
it is, and a row above it came later. A query of the snapshot whose row is
gone, is newer than `through`, or has another text or subscriber, is
unregistered; rows it lacks are registered. Without a usable snapshot every
row is registered from its text. So a snapshot or a table copied from
another data folder is never trusted over the table.

`import_index` starts an empty data folder from a saved index (`Engine.load`'s
format) without parsing a query: its queries become the table's rows in one
transaction, and the file itself the snapshot.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import signal
import sqlite3
import stat
import sys
import threading
from collections.abc import Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtf.engine import Engine, freeze_long_lived
from rtf.errors import IndexFileError, QueryError, RtfError
from rtf.io.files import write_atomically
from rtf.io.processes import ForkedPool, forked_pool
from rtf.io.taxonomy import Taxonomy
from rtf.matching.query_table import bulk_memos
from rtf.query.analysis import normal_analysis
from rtf.parser import parse_query
from rtf.query.model import Query
from rtf.io.store import map_index
from rtf.server import snapshot_check
from rtf.server.querystore import SNAPSHOT, QueryStore, StoredQuery
from rtf.server.stopping import StoppingError

log = logging.getLogger("rtf.server")

#: Registrations after which the index is frozen again at least (see `Registry._after_changes`).
FREEZE_EVERY = 1000


class NotOwnerError(RtfError):
    """A subscriber's request on a query of another subscriber."""


class BulkRefusedError(RtfError):
    """A bad record in an all-or-nothing `Registry.put_many`: nothing was registered."""

    def __init__(self, record: "Record"):
        self.record = record
        super().__init__(str(record.outcome))


class ImportRefusedError(RtfError):
    """An index that cannot start this data folder (not empty, another algorithm or
    taxonomy, not an index)."""


@dataclass
class Record:
    """One registration of many (`Registry.put_many`): where it came from (`line`),
    what to register, and once done its outcome."""

    line: int
    id: str
    query: str
    subscriber: str | None = None
    metadata: Mapping | None = None
    parsed: Query | None = None
    #: "created", "replaced", or the error (a `QueryError`, `NotOwnerError`, ...)
    outcome: str | Exception | None = None


class Registry:
    """The registered queries of a broker whose data lives in `directory`."""

    SNAPSHOT = SNAPSHOT

    def __init__(self, directory: str | os.PathLike, algorithm: str = "rtfs",
                 taxonomy: str | os.PathLike | None = None, store: QueryStore | None = None,
                 import_index: str | os.PathLike | None = None, text_analysis=None):
        """`store`: the folder's query table, if the caller opened it already;
        `import_index`: a saved index to start an empty folder from
        (`ImportRefusedError` if the folder holds queries made otherwise);
        `text_analysis`: the engine's (`rtf.query.analysis`), None for the default words."""
        self.directory = Path(directory)
        self.store = (store if store is not None
                      else QueryStore(self.directory, importing=import_index is not None))
        self.snapshot_path = self.directory / self.SNAPSHOT
        #: What a usable snapshot was made with: this algorithm, taxonomy and table.
        #: (a note without text_analysis, written before it was a setting: the default words)
        self._identity: dict[str, Any] = {"algorithm": algorithm, "taxonomy": _file_digest(taxonomy),
                          "table": self.store.table_id,
                          "text_analysis": None}
        self.text_analysis = normal_analysis(text_analysis)
        if self.text_analysis is not None:
            self._identity["text_analysis"] = self.text_analysis.as_dict()
        self._snapshot_lock = threading.Lock()
        #: Set when the server begins to stop: `put_many` gives up (`StoppingError`).
        self.stopping = threading.Event()
        self.changes_since_snapshot = 0
        self._unfrozen = 0  # queries changed since the index was last frozen (`_after_changes`)
        #: The seq of the newest row the engine holds (changed under the engine's lock).
        self._through = 0
        #: What start-up did: "snapshot" or "rebuilt", rows replayed, rows that failed.
        self.startup: dict = {}
        engine = None
        try:  # a damaged page may show only now, reading the rows
            if import_index is not None:
                engine = self._import(Path(import_index), algorithm, taxonomy)
            self.engine = engine if engine is not None else self._open(algorithm, taxonomy)
            # Every model is read by each snapshot (under the engine's lock): kept, not
            # parsed again from the texts each time (`rtf.matching.registered.TextRecord`).
            self.engine.keep_models = True
        except sqlite3.Error as e:
            raise self.store.unusable(e) from None

    # --------------------------------------------------------------- start

    def _open(self, algorithm: str, taxonomy) -> Engine:
        loaded = self._load_snapshot(algorithm)
        if loaded is None:
            engine, through, held = Engine(algorithm, taxonomy, text_analysis=self.text_analysis), 0, []
        else:
            engine, through, held, scan = loaded
        engine.keep_models = True  # (a loaded snapshot's too: see `__init__`)
        gone = None
        if loaded is not None and held is None:  # its queries compared with their rows in bulk
            gone = snapshot_check.compare(self.store, engine, scan)
            if gone is None:  # (a row that differs, ...: compared one by one, as an old note's)
                held = _query_rows(engine.queries())
        if gone is not None:  # (the rows after the snapshot: those to replay)
            rows = {row.id: row for row in self.store.all(after=through)}
            latest = self.store.max_seq()
        else:
            rows = {row.id: row for row in self.store.all()}
            gone = [qid for qid, subscriber, text in held  # the snapshot's queries that are not the table's
                    if not _same(rows.get(qid), through, subscriber, text)]
            latest = rows_seq(rows)
        for qid in gone:
            engine.unregister(qid)
        replayed = failed = 0
        for row in rows.values():
            try:
                if row.problem:  # a row written by hand: shown by GET /queries, never matched
                    raise ValueError(row.problem)
                if row.id in engine:  # (ValueError for an empty id)
                    continue
                engine.register(row.query, row.id, row.subscriber)
                replayed += 1
            except (QueryError, TypeError, ValueError) as e:  # registered by an older rtf, or
                failed += 1                                    # written by hand: refused now
                log.warning("query %.80r (row %d) in %s does not register, skipped: %s",
                            row.id, row.seq, self.store.path, e)
        self.changes_since_snapshot = replayed + len(gone)
        self._through = max(latest, through)
        self.startup = {"from": "snapshot" if loaded is not None else "rebuilt", "replayed": replayed,
                        "removed": len(gone), "failed": failed, "queries": len(engine)}
        return engine

    def _import(self, path: Path, algorithm: str, taxonomy) -> Engine | None:
        """Start the empty folder from the index at `path`: its queries become the
        table's rows and the file the snapshot (the snapshot first, then rows and
        note in one transaction: a crash leaves the folder empty or complete).
        None (after a log line) when the folder was started from this very file."""
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ImportRefusedError(f"cannot read the index {path}: {e.strerror or e}") from None
        digest = hashlib.sha256(data).hexdigest()
        held = self.store.count()
        if held:
            if self.store.setting("imported") == digest:
                log.info("%s was started from %s already: serving it as it is", self.directory, path)
                return None
            raise ImportRefusedError(
                f"{self.directory} holds {held} queries already: --import-index starts an empty "
                "data folder (leave it out to serve the folder as it is)")
        try:
            engine = Engine.from_bytes(data, str(path))
        except IndexFileError as e:
            raise ImportRefusedError(str(e)) from None
        if engine.algorithm != algorithm:
            raise ImportRefusedError(f"{path} is an index of the {engine.algorithm} algorithm: "
                                     f"start with --algorithm {engine.algorithm}")
        wanted = Taxonomy.from_file(taxonomy) if taxonomy is not None else Taxonomy.empty()
        if engine.taxonomy != wanted:
            if not len(engine.taxonomy):
                raise ImportRefusedError(f"{path} was built without a taxonomy: start without "
                                         "--taxonomy")
            raise ImportRefusedError(
                f"{path} was built with a taxonomy of {len(engine.taxonomy)} classes, not this "
                "server's: start with --taxonomy naming the ontology it was built with")
        if engine.text_analysis != self.text_analysis:
            built = engine.text_analysis and json.dumps(engine.text_analysis.as_dict())
            raise ImportRefusedError(
                f"{path} was built with the text analysis {built or 'of the default words'}, not this "
                "server's: start with that --text-analysis (`rtf index info` prints it)")
        queries = engine.queries()
        held = _query_rows(queries)
        write_atomically(self.snapshot_path, data)
        pending = self.store.begin()
        try:
            pending.insert_all((qid, text, subscriber, q.metadata or None)
                               for (qid, subscriber, text), q in zip(held, queries))
            through = pending.max_seq()
            pending.set_setting("snapshot", json.dumps({**self._identity, "through": through,
                                                        "file": snapshot_check.file_digest(data)}))
            pending.set_setting("imported", digest)
            pending.commit()
        finally:
            pending.rollback()
        self._through = through
        self.startup = {"from": "import", "replayed": 0, "removed": 0, "failed": 0,
                        "queries": len(engine), "imported": len(queries)}
        return engine

    def _load_snapshot(self, algorithm: str) -> tuple[Engine, int, list | None, object] | None:
        """The snapshot, its `through`, and from a note of an older rtf its queries
        (`_query_rows`), else the table's rows being read (`snapshot_check.TableScan`), if it is the one
        this table's note describes: same algorithm and taxonomy, this table, and the very
        file (or queries) the note's digest covers."""
        if not self.snapshot_path.exists():
            return None
        note = _read_note(self.store.setting("snapshot"))
        if ({k: note.get(k) for k in self._identity} != self._identity
                or not isinstance(note.get("through"), int)):
            log.warning("%s was made with another algorithm, taxonomy or query table (or never "
                        "finished): rebuilding the index from %s", self.snapshot_path, self.store.path)
            return None
        # (a note that names its file: the table's rows read meanwhile, `TableScan`)
        scan = snapshot_check.TableScan(self.store, note["through"]) if "file" in note else None
        if scan is not None:
            scan.start()
        kept = None
        try:
            kept = self._loaded(algorithm, note, scan)
        except IndexFileError as e:
            log.warning("cannot use the snapshot: %s; rebuilding the index from %s",
                        e, self.store.path)
            return None
        finally:
            if kept is None and scan is not None:
                scan.cancel()
        if kept is None:
            log.warning("%s is not the snapshot %s describes (copied from elsewhere?): rebuilding "
                        "the index from it", self.snapshot_path, self.store.path)
        return kept

    def _loaded(self, algorithm: str, note: dict, scan) -> tuple | None:
        """`_load_snapshot`'s engine, if its file (or, from an older note, its queries) is the
        one `note` describes."""
        data = map_index(self.snapshot_path)
        engine = Engine.from_bytes(data, str(self.snapshot_path))  # (its digest verified)
        if engine.algorithm != algorithm:
            return None
        if scan is not None:
            same = snapshot_check.file_digest(data) == note["file"]
            return (engine, note["through"], None, scan) if same else None
        held = _query_rows(engine.queries())  # (a note of an older rtf: the digest of its queries)
        return (engine, note["through"], held, None) if _digest(held) == note.get("queries") else None

    # ------------------------------------------------------------- changes

    def put(self, query_id: str, text: str, subscriber: str | None,
            metadata: Mapping | None = None, owner: str | None = None) -> bool:
        """Register `text` as `query_id` (replacing a query of that id): True if it is new.

        Durable when it returns. A `QueryError` for a bad query, `NotOwnerError`
        when `owner` is given and the id belongs to another subscriber; in
        both cases nothing changed.
        """
        parsed = parse_query(text)  # a bad query fails before anything is touched
        pending = self.store.begin_put(query_id, text, subscriber, metadata)
        engine = self.engine
        try:
            with engine._lock:
                old = engine.get(query_id) if query_id in engine else None
                existing = old is not None or pending.replaced
                if owner is not None and pending.replaced and pending.old_subscriber != owner:
                    raise NotOwnerError(f"query {query_id!r} belongs to another subscriber")
                if old is not None:
                    engine.unregister(query_id)
                try:
                    engine.register(parsed, query_id, subscriber)
                except BaseException:
                    _restore(engine, old)
                    raise
                try:
                    pending.commit()
                except BaseException:
                    engine.unregister(query_id)
                    _restore(engine, old)
                    raise
                self._through = pending.seq
        finally:
            pending.rollback()  # a no-op once committed
        self._changed()
        return not existing

    def delete(self, query_id: str, owner: str | None = None) -> None:
        """Remove `query_id` for good. KeyError if it is unknown; `NotOwnerError` as `put`."""
        pending = self.store.begin_delete(query_id)
        engine = self.engine
        try:
            if not pending.replaced:
                raise KeyError(f"no registered query with id {query_id!r}")
            if owner is not None and pending.old_subscriber != owner:
                raise NotOwnerError(f"query {query_id!r} belongs to another subscriber")
            with engine._lock:
                old = engine.get(query_id) if query_id in engine else None
                if old is not None:
                    engine.unregister(query_id)
                try:
                    pending.commit()
                except BaseException:
                    _restore(engine, old)
                    raise
        finally:
            pending.rollback()
        self._changed()

    def put_many(self, records: list[Record], owner: str | None = None,
                 atomic: bool = True) -> list[Record]:
        """Register many queries in one transaction (one disk sync), each as `put`
        would: every record's `outcome` says what became of it.

        `atomic`: all or nothing; the first bad record (by line) raises
        `BulkRefusedError` and nothing changed. Otherwise the bad records get
        their error as outcome and the others are registered. Two records with
        one id: the second is an error.

        Once `stopping` is set, a call that has not reached its commit raises
        `StoppingError` at its next record, everything rolled back; a commit
        under way is finished (rtf.server.stopping).
        """
        with collector_paused():
            return self._put_many(records, owner, atomic)

    def _put_many(self, records: list[Record], owner: str | None, atomic: bool) -> list[Record]:
        first_line: dict[str, int] = {}
        for r in records:  # parsed first, outside every lock
            self._unless_stopping()
            if r.id in first_line:
                r.outcome = QueryError(f"the id {r.id!r} is given twice (lines {first_line[r.id]} "
                                       f"and {r.line})")
            else:
                first_line[r.id] = r.line
                try:
                    r.parsed = parse_query(r.query)
                except QueryError as e:
                    r.outcome = e
        if not atomic and all(r.outcome is not None for r in records):
            return records
        engine = self.engine
        done: list[tuple[Record, object]] = []  # (record, the engine's query it replaced)
        pending = self.store.begin()
        try:
            # (the memos of `Engine.register_many` too: each variable layout's columns
            # computed once; under the engine's lock, as every user of them)
            with engine._lock, bulk_memos(shapes=False):
                try:
                    last = self._put_each(pending, records, owner, atomic, done)
                    self._unless_stopping()
                    pending.commit()
                except BaseException:
                    for r, old in reversed(done):
                        engine.unregister(r.id)
                        _restore(engine, old)
                    raise
                if last is not None:
                    self._through = last
        finally:
            pending.rollback()  # a no-op once committed
        self.changes_since_snapshot += len(done)
        self._after_changes(len(done))
        return records

    def _put_each(self, pending, todo: list[Record], owner, atomic: bool, done: list) -> int | None:
        """`put_many`'s writes, inside its transaction and under the engine's lock, in
        line order (so that, all or nothing, the first bad line is the one refused).

        Each record is checked (its owner) and registered in the engine before its row
        is written: a refused record changed nothing, with no savepoint to undo; the
        rows of the ids are looked up at once."""
        engine = self.engine
        rows = pending.rows_of([r.id for r in todo if r.outcome is None])
        last = None
        for r in todo:
            self._unless_stopping()
            if r.outcome is not None:  # refused already (its text, or its id given twice)
                if atomic:
                    raise BulkRefusedError(r)
                continue
            row = rows.get(r.id)
            try:
                if owner is not None and row is not None and row[0] != owner:
                    raise NotOwnerError(f"query {r.id!r} belongs to another subscriber")
                old = engine.get(r.id) if r.id in engine else None
                if old is not None:
                    engine.unregister(r.id)
                try:
                    engine.register(r.parsed, r.id, r.subscriber)
                except BaseException:
                    _restore(engine, old)
                    raise
            except (QueryError, NotOwnerError) as e:
                r.outcome = e
                if atomic:
                    raise BulkRefusedError(r) from None
                continue
            try:  # (a failure here fails the whole transaction: the caller undoes `done`)
                last = pending.put(r.id, r.query, r.subscriber, r.metadata, known=row)
            except BaseException:
                engine.unregister(r.id)
                _restore(engine, old)
                raise
            done.append((r, old))
            r.outcome = "replaced" if row is not None or old is not None else "created"
        return last

    def _unless_stopping(self) -> None:
        if self.stopping.is_set():
            raise StoppingError()

    def get(self, query_id: str) -> StoredQuery | None:
        return self.store.get(query_id)

    def _changed(self) -> None:
        self.changes_since_snapshot += 1
        self._after_changes(1)

    def _after_changes(self, n: int) -> None:
        """After `n` queries were registered, replaced or removed over HTTP. Registered ones
        are as long-lived as those of the start: once the changes are many (a quarter of the
        index, at least `FREEZE_EVERY`), what is alive is moved out of
        the cyclic collector's sight too, as at start, instead of being rescanned by every
        full collection while publications stream (a rescan of the whole index: tens of
        milliseconds added to a publication's delivery)."""
        self._unfrozen += n
        if self._unfrozen >= max(FREEZE_EVERY, len(self.engine) // 4):
            self._unfrozen = 0
            freeze_long_lived()

    # ------------------------------------------------------------ snapshot

    def snapshot(self) -> int:
        """Save the engine as the snapshot (atomically); returns its size in bytes.

        The table's note of the snapshot (the algorithm, taxonomy and table it
        was made with, and the file's digest) is cleared first and written last,
        so a snapshot cut short by a crash is never trusted. The file is written
        by a process forked for it (`_forked_saver`): the engine is held only for
        the fork, and matches and registrations go on while it is saved.
        """
        with self._snapshot_lock:
            self.store.set_setting("snapshot", "")
            with self.engine._lock:  # `through` and the file: one state of the engine
                through, changes = self._through, self.changes_since_snapshot
                saver = _forked_saver(self.engine)
                if saver is None:  # no process could be forked: saved here, the engine held
                    size = self.engine.save(self.snapshot_path)
            if saver is not None:  # saved by the child, the engine free meanwhile
                with saver:
                    ((_, size),) = saver.ordered_map(_save_kept, [str(self.snapshot_path)], 1)
            note = {**self._identity, "through": through,
                    "file": snapshot_check.written_digest(self.snapshot_path)}
            self.store.set_setting("snapshot", json.dumps(note))
            self.changes_since_snapshot -= changes
            return size

    def close(self) -> None:
        self.store.close()


@contextmanager
def collector_paused():
    """Around a bulk registration, as in `Engine.register_many`: the cyclic collector
    paused (its full collections rescan the growing index)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _forked_saver(engine: Engine) -> ForkedPool | None:
    """A process forked now to save `engine` as it is (copy-on-write: what this process
    changes after the fork is not in it), as Redis's BGSAVE writes its snapshot; None
    where no process can be forked. A million queries take ~12-20 s to save: the engine
    would be held, and every match and registration wait, that long; the fork takes
    milliseconds. Output buffered here is flushed first (the child would write it again)."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    try:
        return forked_pool(1, _keep, (engine,))
    except (OSError, ValueError):  # (ValueError: this platform has no fork)
        return None


_KEPT: list[Engine] = []  # the engine a snapshot's forked process saves


def _keep(engine: Engine) -> None:
    """In the forked process: keep `engine`; no collection (it would touch, so copy, the
    whole index); a stop signal to the server's group lets the save finish (the process
    ends when the server closes its pipe, or once saved if the server is gone); and the
    server's sockets closed: a server restarted meanwhile could not bind its port."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.disable()
    with suppress(OSError):  # (no /dev/fd: nothing closed)
        for fd in map(int, os.listdir("/dev/fd")):
            with suppress(OSError):  # (the listing's own descriptor, gone)
                if stat.S_ISSOCK(os.fstat(fd).st_mode):
                    os.close(fd)
    _KEPT.append(engine)


def _save_kept(path: str) -> int:
    """In the forked process: save the engine; then, saved or not (a full disk), a stop
    signal ends it again: the pool stops it so once the answer is back."""
    try:
        return _KEPT[0].save(path)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _restore(engine: Engine, old) -> None:
    """Register again the query a failed change had taken out (None: there was none)."""
    if old is not None:
        engine.register(old.query, old.id, old.subscriber, old.metadata)


def _query_rows(queries) -> list[tuple[str, str | None, str]]:
    """An engine's `queries` as the table holds them: (id, subscriber, text), in the
    engine's order (a loaded model is not decoded: its text is read alone)."""
    return [(q.id, q.subscriber, q.text) for q in queries]


def _same(row: StoredQuery | None, through: int, subscriber: str | None, text: str) -> bool:
    """Whether a query of the snapshot (its `subscriber` and `text`) is `row` as it is now."""
    return not (row is None or row.seq > through or row.problem
                or row.query != text or row.subscriber != subscriber)


def _digest(rows: list[tuple[str, str | None, str]]) -> str:
    """The digest of `_query_rows` a snapshot's note recorded before it named its file
    (lists and tuples dump alike): an older rtf's note, still read."""
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def rows_seq(rows: dict[str, StoredQuery]) -> int:
    """The newest seq among `rows` (0: none)."""
    return max((row.seq for row in rows.values()), default=0)


def _read_note(text: str | None) -> dict:
    try:
        note = json.loads(text) if text else {}
    except ValueError:
        return {}
    return note if isinstance(note, dict) else {}


def _file_digest(path: str | os.PathLike | None) -> str:
    if path is None:
        return ""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
