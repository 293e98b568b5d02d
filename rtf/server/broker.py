"""The broker: queries (`Registry`), publishing, the outbox and the live streams.

Everything here is synchronous and thread-safe; the HTTP layer (`rtf.server.app`)
calls it from worker threads and streams events on the event loop.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rtf.io.output import match_line
from rtf.io.reader import publications_from_bytes
from rtf.server.metrics import Metrics
from rtf.server.outbox import MAX_AGE_S, MAX_EVENTS, Outbox
from rtf.server.querystore import QueryStore
from rtf.server.registry import Registry
from rtf.server.streams import STREAM_QUEUE, Hub

log = logging.getLogger("rtf.server")

#: Default: a snapshot after this many registrations and removals.
SNAPSHOT_EVERY = 10_000
#: Default largest request body, bytes.
MAX_BODY = 16 << 20


@dataclass
class BrokerConfig:
    """What `rtf serve` was told."""

    data: Path
    algorithm: str = "rtfs"
    taxonomy: Path | None = None
    max_body: int = MAX_BODY
    stream_queue: int = STREAM_QUEUE
    outbox_max_events: int = MAX_EVENTS
    outbox_max_age: float = MAX_AGE_S
    snapshot_every: int = SNAPSHOT_EVERY


class Broker:
    """One broker over the data folder of `config`."""

    def __init__(self, config: BrokerConfig):
        self.config = config
        self.metrics = Metrics()
        started = time.perf_counter()
        # The files are checked to belong together before the long part (the index).
        store = QueryStore(config.data)
        try:
            self.outbox = Outbox(config.data, config.outbox_max_events, config.outbox_max_age,
                                 table=store.table_id)
        except BaseException:
            store.close()
            raise
        try:
            self.registry = Registry(config.data, config.algorithm, config.taxonomy, store)
        except BaseException:
            self.outbox.close()
            store.close()
            raise
        self.registry.startup["seconds"] = round(time.perf_counter() - started, 3)
        self.hub = Hub(self.metrics, config.stream_queue)
        self.metrics.queries.set_function(lambda: len(self.registry.engine))
        self.started = time.time()
        # Matching, numbering the events and handing them to the streams happen
        # under one lock, so that every stream receives ids in increasing order.
        self._publish_lock = threading.Lock()
        self._snapshot_thread: threading.Thread | None = None

    @property
    def engine(self):
        return self.registry.engine

    def publish(self, body: bytes, format: str, group_by: str = "subject"
                ) -> tuple[list[str], int]:
        """Match the publications of RDF `body`: their `rtf match` lines, and how
        many publications there were. `PublicationError` for bad RDF (before
        anything is matched). Matches of queries with a subscriber are stored
        in the outbox and pushed to the subscriber's streams."""
        publications = publications_from_bytes(body, format, group_by, source="<body>")
        engine = self.registry.engine
        metrics = self.metrics
        lines: list[str] = []
        events: list[tuple[str, str]] = []
        with self._publish_lock:
            for pub in publications:
                t0 = time.perf_counter()
                found = engine.match(pub)
                metrics.filter_seconds.observe(time.perf_counter() - t0)
                for m in found:
                    line = match_line(pub.id, m)
                    lines.append(line)
                    if m.subscriber is not None:
                        events.append((m.subscriber, line))
            numbered = self.outbox.append(events)
            self.hub.deliver_threadsafe(numbered)
        metrics.publications.inc(len(publications))
        metrics.matches.inc(len(lines))
        metrics.events.inc(len(numbered))
        return lines, len(publications)

    def changed(self) -> None:
        """After a registration or removal: snapshot in the background when due."""
        if self.registry.changes_since_snapshot >= self.config.snapshot_every:
            self.snapshot_in_background()

    def snapshot_in_background(self) -> None:
        if self._snapshot_thread is not None and self._snapshot_thread.is_alive():
            return
        self._snapshot_thread = threading.Thread(target=self._snapshot, name="rtf-snapshot",
                                                 daemon=True)
        self._snapshot_thread.start()

    def _snapshot(self) -> None:
        try:
            t0 = time.perf_counter()
            size = self.registry.snapshot()
            log.info("snapshot: %d queries, %d bytes, %.2f s", len(self.engine), size,
                     time.perf_counter() - t0)
        except (OSError, sqlite3.Error) as e:  # a full disk: the table is the source of truth,
            log.warning("the snapshot could not be written: %s", e)  # a failed snapshot costs time
        except Exception:
            log.exception("the snapshot could not be written")

    def close(self) -> None:
        """Write a last snapshot (if anything changed) and close the files."""
        if self._snapshot_thread is not None:
            self._snapshot_thread.join()
        if self.registry.changes_since_snapshot or not self.registry.snapshot_path.exists():
            self._snapshot()
        self.outbox.close()
        self.registry.close()
