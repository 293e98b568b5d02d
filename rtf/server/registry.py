"""The broker's queries: the engine in memory, the SQLite table on disk, kept equal.

A registration is written to the table and to the engine as one step: the
table row is begun (not committed), the engine takes the query, then the row
is committed; if anything fails, both are left as they were. So a ``201``
means: committed to disk, and matching.

At start the engine comes from the index snapshot (``snapshot.idx``, the
`rtf.io.store` format) when the table's note says it was made with the same
algorithm and taxonomy, for this table (`QueryStore.table_id`), and holds
exactly the queries the note's digest covers; it is then brought level with
the table: each engine query carries, as metadata, the `seq` of the row it
was registered from, and a query whose row is gone, or has another seq, text
or subscriber, is unregistered; rows it lacks are registered. Without a
usable snapshot every row is registered from its text. So a snapshot or a
table copied from another data folder is never trusted over the table.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from rtf.engine import Engine
from rtf.errors import IndexFileError, QueryError, RtfError
from rtf.parser import parse_query
from rtf.server.querystore import QueryStore, StoredQuery

log = logging.getLogger("rtf.server")

#: The engine metadata key holding the row's seq (server-internal: the API
#: shows the user's metadata, read from the table).
SEQ = "seq"


class NotOwnerError(RtfError):
    """A subscriber's request on a query of another subscriber."""


class Registry:
    """The registered queries of a broker whose data lives in `directory`."""

    SNAPSHOT = "snapshot.idx"

    def __init__(self, directory: str | os.PathLike, algorithm: str = "rtfs",
                 taxonomy: str | os.PathLike | None = None, store: QueryStore | None = None):
        """`store`: the folder's query table, if the caller opened it already."""
        self.directory = Path(directory)
        self.store = store if store is not None else QueryStore(self.directory)
        self.snapshot_path = self.directory / self.SNAPSHOT
        #: What a usable snapshot was made with: this algorithm, taxonomy and table.
        self._identity = {"algorithm": algorithm, "taxonomy": _file_digest(taxonomy),
                          "table": self.store.table_id}
        self._snapshot_lock = threading.Lock()
        self.changes_since_snapshot = 0
        #: What start-up did: "snapshot" or "rebuilt", rows replayed, rows that failed.
        self.startup: dict = {}
        self.engine = self._open(algorithm, taxonomy)

    # --------------------------------------------------------------- start

    def _open(self, algorithm: str, taxonomy) -> Engine:
        engine = self._load_snapshot(algorithm)
        source = "snapshot" if engine is not None else "rebuilt"
        if engine is None:
            engine = Engine(algorithm, taxonomy)
        rows = {row.id: row for row in self.store.all()}
        removed = 0
        for registered in engine.queries():  # the snapshot's queries that are not the table's
            row = rows.get(registered.id)
            if (row is None or row.seq != registered.metadata.get(SEQ)
                    or row.query != registered.query.text or row.subscriber != registered.subscriber):
                engine.unregister(registered.id)
                removed += 1
        replayed = failed = 0
        for row in rows.values():
            if row.id in engine:
                continue
            try:
                engine.register(row.query, row.id, row.subscriber, {SEQ: row.seq})
                replayed += 1
            except QueryError as e:  # registered by an older rtf, refused by this one
                failed += 1
                log.warning("query %r in %s no longer registers, skipped: %s",
                            row.id, self.store.path, e)
        self.changes_since_snapshot = replayed + removed
        self.startup = {"from": source, "replayed": replayed, "removed": removed,
                        "failed": failed, "queries": len(engine)}
        return engine

    def _load_snapshot(self, algorithm: str) -> Engine | None:
        """The snapshot, if it is the one this table's note describes: same algorithm
        and taxonomy, this table, and the very queries the note's digest covers."""
        if not self.snapshot_path.exists():
            return None
        note = _read_note(self.store.setting("snapshot"))
        if {k: note.get(k) for k in self._identity} != self._identity:
            log.warning("%s was made with another algorithm, taxonomy or query table (or never "
                        "finished): rebuilding the index from %s", self.snapshot_path, self.store.path)
            return None
        try:
            engine = Engine.load(self.snapshot_path)
        except IndexFileError as e:
            log.warning("cannot use the snapshot: %s; rebuilding the index from %s",
                        e, self.store.path)
            return None
        if engine.algorithm != algorithm or _queries_digest(engine) != note.get("queries"):
            log.warning("%s is not the snapshot %s describes (copied from elsewhere?): rebuilding "
                        "the index from it", self.snapshot_path, self.store.path)
            return None
        return engine

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
                    engine.register(parsed, query_id, subscriber, {SEQ: pending.seq})
                except BaseException:
                    _restore(engine, old)
                    raise
                try:
                    pending.commit()
                except BaseException:
                    engine.unregister(query_id)
                    _restore(engine, old)
                    raise
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

    def get(self, query_id: str) -> StoredQuery | None:
        return self.store.get(query_id)

    def _changed(self) -> None:
        self.changes_since_snapshot += 1

    # ------------------------------------------------------------ snapshot

    def snapshot(self) -> int:
        """Save the engine as the snapshot (atomically); returns its size in bytes.

        The table's note of the snapshot (the algorithm, taxonomy and table it
        was made with, and a digest of the queries it holds) is cleared first
        and written last, so a snapshot cut short by a crash is never trusted.
        """
        with self._snapshot_lock:
            changes = self.changes_since_snapshot
            self.store.set_setting("snapshot", "")
            with self.engine._lock:  # the digest and the file: one state of the engine
                note = json.dumps({**self._identity, "queries": _queries_digest(self.engine)})
                size = self.engine.save(self.snapshot_path)
            self.store.set_setting("snapshot", note)
            self.changes_since_snapshot -= changes
            return size

    def close(self) -> None:
        self.store.close()


def _restore(engine: Engine, old) -> None:
    """Register again the query a failed change had taken out (None: there was none)."""
    if old is not None:
        engine.register(old.query, old.id, old.subscriber, old.metadata)


def _queries_digest(engine: Engine) -> str:
    """A digest of the engine's queries as the table holds them: id, seq, subscriber, text."""
    rows = [[q.id, q.metadata.get(SEQ), q.subscriber, q.query.text] for q in engine.queries()]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


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
