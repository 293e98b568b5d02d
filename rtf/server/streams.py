"""Live subscriber streams: the matches of each publication, handed to the
open Server-Sent Events connections of their subscribers.

Publishing runs in worker threads; the streams live on the event loop. The
broker hands each publication's events over with `Hub.deliver_threadsafe`
(in the order their ids were given, under the broker's publish lock), and
`deliver` puts them on every open stream of their subscriber without ever
waiting: a stream whose queue is full is marked cut, and its connection ends
with a ``cut`` event (the outbox still holds what it missed).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from rtf.server.metrics import Metrics

#: Default bound of a stream's queue, in events.
STREAM_QUEUE = 10_000


class Stream:
    """One open connection of a subscriber."""

    def __init__(self, subscriber: str, maxsize: int):
        self.subscriber = subscriber
        self.queue: asyncio.Queue[tuple[int, str]] = asyncio.Queue(maxsize)
        self.cut = False  # fell behind: its connection ends with a `cut` event
        self.closed = False  # the server is stopping
        self._wake = asyncio.Event()

    async def next_batch(self, limit: int) -> list[tuple[int, str]] | None:
        """The queued events (at least one, at most `limit`; waits for one),
        or None once the stream is cut or closed."""
        while True:
            if self.cut or self.closed:
                return None
            if not self.queue.empty():
                queue = self.queue
                return [queue.get_nowait() for _ in range(min(limit, queue.qsize()))]
            self._wake.clear()
            await self._wake.wait()

    def _put(self, event: tuple[int, str]) -> bool:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.cut = True
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

    def open(self, subscriber: str) -> Stream:
        stream = Stream(subscriber, self.queue_size)
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

    def deliver(self, events: list[tuple[int, str, str]]) -> None:
        """Put ``(id, subscriber, data)`` events on their subscribers' streams."""
        streams = self._streams
        for event_id, subscriber, data in events:
            for stream in streams.get(subscriber, ()):
                if not (stream.cut or stream.closed) and not stream._put((event_id, data)):
                    self.metrics.streams_cut.inc()

    def deliver_threadsafe(self, events: list[tuple[int, str, str]]) -> None:
        """`deliver`, from any thread (calls run on the loop in the order made)."""
        if events and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.deliver, events)

    def close_all(self) -> None:
        """At shutdown: end every stream, and each one opened from now on, at once
        (without a ``cut`` event: nothing was lost, the client reconnects)."""
        self._closing = True
        for streams in self._streams.values():
            for stream in streams:
                stream.closed = True
                stream._wake.set()
