"""Live subscriber streams: the matches of each publication, handed to the
open Server-Sent Events connections of their subscribers.

Publishing runs in a worker thread; the streams live on the event loop. The
publisher hands each append's events over as `Chunk`s, one per subscriber
(its events of the append, already written as Server-Sent Events, shared by
all of that subscriber's connections), with one `Hub.deliver_threadsafe`
call per append (in the order their ids were given). `deliver` puts them on
every open stream of their subscriber without ever waiting: a stream that
would hold more than its bound of events is marked cut, and its connection
ends with a ``cut`` event (the outbox still holds what it missed).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from itertools import repeat
from typing import NamedTuple

from rtf.server.config import STREAM_QUEUE
from rtf.server.metrics import Metrics

#: The start of a match event, up to its data (the id filled in).
_MATCH_HEAD = b"id: %d\nevent: match\ndata: "


def sse_matches(first_id: int, lines: list[bytes] | list[str]) -> bytes:
    """`lines` (``rtf match`` lines, UTF-8 or text, no newline in them) as `match`
    events with ids ``first_id``, ``first_id + 1``, ...: one join in C, no call per
    event."""
    n = len(lines)
    if n and isinstance(lines[0], str):
        lines = "\n".join(lines).encode().split(b"\n")
    parts: list[bytes] = [b""] * (3 * n)
    parts[0::3] = map(_MATCH_HEAD.__mod__, range(first_id, first_id + n))
    parts[1::3] = lines
    parts[2::3] = repeat(b"\n\n", n)
    return b"".join(parts)


class Chunk(NamedTuple):
    """A subscriber's events ``first_id..last_id`` (consecutive), as SSE bytes."""

    first_id: int
    last_id: int
    data: bytes

    @property
    def size(self) -> int:
        return self.last_id - self.first_id + 1

    def after(self, event_id: int) -> "Chunk | None":
        """The part of the chunk above `event_id` (None if nothing is)."""
        if event_id < self.first_id:
            return self
        if event_id >= self.last_id:
            return None
        events = self.data.split(b"\n\n")  # one event each (an event holds no blank line)
        kept = events[event_id - self.first_id + 1:-1]
        return Chunk(event_id + 1, self.last_id, b"\n\n".join(kept) + b"\n\n")


class Stream:
    """One open connection of a subscriber."""

    def __init__(self, subscriber: str, maxsize: int):
        self.subscriber = subscriber
        self.maxsize = maxsize
        self.chunks: deque[Chunk] = deque()
        self.queued = 0  # events in `chunks`
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
        if self.queued + chunk.size > self.maxsize:
            self.cut = True
            self.chunks.clear()
        else:
            self.chunks.append(chunk)
            self.queued += chunk.size
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
