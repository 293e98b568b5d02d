"""Live subscriber streams: the matches of each publication, handed to the
open Server-Sent Events connections of their subscribers.

Publishing runs in a worker thread; the streams live on the event loop. The
publisher hands each append's events over as `Chunk`s, one per subscriber
(its events of the append as grouped lines, `rtf.server.events`, written as
Server-Sent Events of either kind when a stream first asks for it, once for all
of that subscriber's connections), with one `Hub.deliver_threadsafe`
call per append (in the order their ids were given). `deliver` puts them on
every open stream of their subscriber without ever waiting: a stream that
would hold more than its bound of events is marked cut, and its connection
ends with a ``cut`` event (the outbox still holds what it missed).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque

from rtf.server.config import STREAM_QUEUE
from rtf.server.events import Chunk, sse_matches  # noqa: F401  (sse_matches: re-exported)
from rtf.server.metrics import Metrics


class Stream:
    """One open connection of a subscriber."""

    def __init__(self, subscriber: str, maxsize: int, grouped: bool = False):
        self.subscriber = subscriber
        #: its events grouped by publication (`rtf.server.events`), or one a match
        self.grouped = grouped
        self.maxsize = maxsize
        self.chunks: deque[Chunk] = deque()
        self.queued = 0  # events in `chunks` (grouped: grouped events)
        self.cut = False  # fell behind: its connection ends with a `cut` event
        self.closed = False  # the server is stopping
        self._wake = asyncio.Event()

    async def next_chunks(self) -> list[Chunk] | None:
        """Every queued chunk (waits for one), or None once the stream is cut or closed."""
        while True:
            if self.cut or self.closed:
                return None
            if self.chunks:
                taken = list(self.chunks)
                self.chunks.clear()
                self.queued = 0
                return taken
            self._wake.clear()
            await self._wake.wait()

    def _put(self, chunk: Chunk) -> bool:
        size = chunk.events if self.grouped else chunk.size
        if self.queued + size > self.maxsize:
            self.cut = True
            self.chunks.clear()
        else:
            self.chunks.append(chunk)
            self.queued += size
        self._wake.set()
        return not self.cut


class Hub:
    """The open streams, by subscriber (used on the event loop only)."""

    def __init__(self, metrics: Metrics, queue_size: int = STREAM_QUEUE):
        self.metrics = metrics
        self.queue_size = queue_size
        self._streams: dict[str, set[Stream]] = defaultdict(set)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def open(self, subscriber: str, grouped: bool = False) -> Stream:
        stream = Stream(subscriber, self.queue_size, grouped)
        stream.closed = self._closing
        self._streams[subscriber].add(stream)
        self.metrics.streams.inc()
        return stream

    def close(self, stream: Stream) -> None:
        streams = self._streams.get(stream.subscriber)
        if streams is not None and stream in streams:
            streams.discard(stream)
            self.metrics.streams.dec()
            if not streams:
                del self._streams[stream.subscriber]

    def deliver(self, chunks: list[tuple[str, Chunk]]) -> None:
        """Put ``(subscriber, chunk)`` pairs on their subscribers' streams."""
        streams = self._streams
        for subscriber, chunk in chunks:
            for stream in streams.get(subscriber, ()):
                if not (stream.cut or stream.closed) and not stream._put(chunk):
                    self.metrics.streams_cut.inc()

    def call_soon(self, callback, *args) -> bool:
        """Run `callback(*args)` on the loop, from any thread (calls run in the order
        made); False when there is no loop to run it (not started, or stopped)."""
        if self._loop is None or self._loop.is_closed():
            return False
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # closed meanwhile
            return False
        return True

    def deliver_threadsafe(self, chunks: list[tuple[str, Chunk]]) -> None:
        """`deliver`, from any thread (calls run on the loop in the order made)."""
        if chunks:
            self.call_soon(self.deliver, chunks)

    def close_all(self) -> None:
        """At shutdown: end every stream, and each one opened from now on, at once
        (without a ``cut`` event: nothing was lost, the client reconnects)."""
        self._closing = True
        for streams in self._streams.values():
            for stream in streams:
                stream.closed = True
                stream._wake.set()
