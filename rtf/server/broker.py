"""The broker: queries (`Registry`), publishing (`Publisher`), the outbox and the
live streams, over one data folder.

The HTTP layer (`rtf.server.app`) calls the registry from worker threads,
hands publications to the publisher thread and streams events on the event
loop.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time

from rtf.engine import freeze_long_lived
from rtf.io.reader import publications_from_bytes
from rtf.server.config import BrokerConfig
from rtf.server.metrics import Metrics
from rtf.server.outbox import Outbox
from rtf.server.publisher import Published, Publisher
from rtf.server.querystore import QueryStore
from rtf.server.registry import Registry
from rtf.server.streams import Hub

log = logging.getLogger("rtf.server")


class Broker:
    """One broker over the data folder of `config`."""

    def __init__(self, config: BrokerConfig):
        self.config = config
        self.metrics = Metrics()
        started = time.perf_counter()
        # The files are checked to belong together before the long part (the index).
        store = QueryStore(config.data, importing=config.import_index is not None)
        try:
            self.outbox = Outbox(config.data, config.outbox_max_events, config.outbox_max_age,
                                 table=store.table_id)
        except BaseException:
            store.close()
            raise
        try:
            self.registry = Registry(config.data, config.algorithm, config.taxonomy, store,
                                     config.import_index, config.text_analysis)
        except BaseException:
            self.outbox.close()
            store.close()
            raise
        self.registry.startup["seconds"] = round(time.perf_counter() - started, 3)
        freeze_long_lived()  # the index lives as long as the server: out of the collector's sight
        self.hub = Hub(self.metrics, config.stream_queue)
        self.metrics.queries.set_function(lambda: len(self.registry.engine))
        self.started = time.time()
        # One thread matches, numbers the events and hands them to the streams,
        # so that every stream receives ids in increasing order.
        self.publisher = Publisher(self.registry.engine, self.outbox, self.hub, self.metrics)
        self._snapshot_thread: threading.Thread | None = None
        self._subscribers_stale = True

    @property
    def engine(self):
        return self.registry.engine

    @staticmethod
    def read(body: bytes, format: str, group_by: str = "subject") -> list:
        """The publications of RDF `body`; `PublicationError` for bad RDF."""
        return publications_from_bytes(body, format, group_by, source="<body>")

    def publish(self, body: bytes, format: str, group_by: str = "subject") -> Published:
        """Match the publications of RDF `body` (from any thread but the event loop's):
        their `rtf match` lines and counts. `PublicationError` for bad RDF (before
        anything is matched). Matches of queries with a subscriber are stored in
        the outbox and pushed to the subscriber's streams."""
        return self.publisher.publish_sync(self.read(body, format, group_by))

    def count_subscribers(self) -> None:
        """Set the subscribers gauge (for /metrics; from a worker thread): a scan of the
        table's index, made again only after a registration or removal."""
        if self._subscribers_stale:
            self._subscribers_stale = False  # (a change meanwhile sets it again)
            self.metrics.subscribers.set(self.registry.store.subscribers())

    def begin_stop(self) -> None:
        """The server received its stop signal: bulk registrations under way give up
        (rolled back, answered 503), and no snapshot starts in the background (`close`
        writes the last one)."""
        self.registry.stopping.set()

    def changed(self) -> None:
        """After a registration or removal: snapshot in the background when due (and the
        subscribers are counted again at the next /metrics)."""
        self._subscribers_stale = True
        if (self.registry.changes_since_snapshot >= self.config.snapshot_every
                and not self.registry.stopping.is_set()):
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
        self.publisher.stop()
        if self._snapshot_thread is not None:
            self._snapshot_thread.join()
        if self.registry.changes_since_snapshot or not self.registry.snapshot_path.exists():
            self._snapshot()
        self.outbox.close()
        self.registry.close()
