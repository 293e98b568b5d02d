"""Publishing: one thread matches the posted publications, in order of arrival.

A POST hands its publications over as a `Job`; the publisher thread takes
every job waiting (a *group*), matches their publications, and writes each
publication's matches twice, in UTF-8: its `rtf match` lines in one piece
(`rtf.io.output.match_bytes`; joined once per job, the POST's answer), and
its *grouped lines* (`rtf.server.events.grouped_runs`: one per subscriber and
answer, the query ids taken by slot; a POST asking for grouped answers gets
these instead, and the match lines are not made). It appends each
subscriber's grouped lines to the outbox in one transaction (one row per
subscriber) and hands them, as a `Chunk` per subscriber, to the live streams
with one call to the event loop, which then answers the group's requests; a
stream writes a chunk's Server-Sent Events (one per match, or grouped) when
it first sends it. So a busy server commits and wakes the loop once per group
instead of once per publication or match, stores a few bytes a match (the
query id), and every stream receives ids in increasing order (one thread
numbers them).

Matching and storing stay in this one thread: a second thread for the
outbox, tried, lowered the rate (each hand-over between two busy threads
waits for the GIL's switch interval; docs/benchmarks.md, "Issue 23, round 2").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from rtf.io.output import match_bytes
from rtf.server.metrics import Metrics
from rtf.server.outbox import Outbox
from rtf.server.recent import Recent
from rtf.server.stopping import to_the_end
from rtf.server.events import Chunk, GroupedLines
from rtf.server.streams import Hub

log = logging.getLogger("rtf.server")

#: Most publications matched in one group (one outbox transaction): bounds the
#: time a request waits behind others.
GROUP_PUBLICATIONS = 2000


@dataclass
class Published:
    """What a job gave: its `rtf match` lines (each ending in a newline; a grouped job's
    grouped lines, `rtf.server.events`) as UTF-8 `body`, counts, and with ``keep_matches`` each publication's id and matches
    (`Matches`)."""

    body: bytes
    publications: int
    matches: int
    events: int
    kept: list | None = None

    @property
    def text(self) -> str:
        """The lines, as text."""
        return self.body.decode()


@dataclass
class Job:
    """Publications to match, or the RDF body to read them from (`reader()` gives
    them; its `PublicationError` is the job's outcome); the outcome goes to
    `future` (an asyncio future, set on its loop) or, without one, to `sync_future`."""

    publications: list | None
    keep_matches: bool = False
    #: answer grouped lines (`rtf.server.events`), not one `rtf match` line a match
    grouped: bool = False
    future: asyncio.Future | None = None
    sync_future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    reader: Callable[[], list] | None = None

    @property
    def size(self) -> int:
        """Publications, or a guess for a body not read yet (for the group's bound)."""
        return len(self.publications) if self.publications is not None else 1


class Matched(NamedTuple):
    """A matched group: its events by subscriber, ``(counts, grouped lines)``
    (`rtf.server.events`), and each job's outcome: ``(job, Published, None)`` or
    ``(job, None, error)``."""

    events: dict[str, tuple[list[int], list[bytes]]]
    outcomes: list


class Publisher:
    """The publishing thread of a broker (started at once; `stop` ends it)."""

    def __init__(self, engine, outbox: Outbox, hub: Hub, metrics: Metrics,
                 recent: Recent | None = None):
        self.engine = engine
        self.outbox = outbox
        self.hub = hub
        self.metrics = metrics
        #: The matched publications kept to explain pushed matches (`rtf.server.recent`).
        self.recent = recent if recent is not None else Recent()
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="rtf-publisher", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> Job:
        self._jobs.put(job)
        return job

    async def publish(self, reader: Callable[[], list], keep_matches: bool = False,
                      grouped: bool = False) -> Published:
        """Match the publications `reader()` gives (called in the publisher's thread:
        reading a body costs the event loop nothing), from the event loop: their
        lines (`grouped`: grouped lines), once the events are stored and handed to the
        streams."""
        job = Job(None, keep_matches, grouped, asyncio.get_running_loop().create_future(),
                  reader=reader)
        self.submit(job)
        return await to_the_end(job.future)  # once submitted, answered with what it did

    def publish_sync(self, publications: list, keep_matches: bool = False,
                     grouped: bool = False) -> Published:
        """`publish`, from any thread but the event loop's: waits for the outcome."""
        return self.submit(Job(publications, keep_matches, grouped)).sync_future.result()

    def stop(self) -> None:
        """End the thread once the jobs already submitted are done."""
        self._jobs.put(None)
        self._thread.join()

    # ----------------------------------------------------------- the thread

    def _run(self) -> None:
        jobs = self._jobs
        while True:
            job = jobs.get()
            if job is None:
                return
            group, size, stopping = [job], job.size, False
            while size < GROUP_PUBLICATIONS:
                try:
                    more = jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                group.append(more)
                size += more.size
            try:
                self._store(self._match(group))
            except BaseException as e:  # a bug: every request of the group is answered with it
                log.exception("publishing failed")
                self._finish([], [(j, None, e) for j in group])
            if stopping:
                return

    def _match(self, group: list[Job]) -> Matched:
        """Match the group's publications: each job's outcome, and the events of its
        matches by subscriber, as grouped lines (`rtf.server.events`)."""
        engine = self.engine
        observe = self.metrics.filter_seconds.observe
        remember = self.recent.add
        clock = time.perf_counter
        events: dict[str, tuple[list[int], list[bytes]]] = {}  # subscriber -> (counts, lines)
        outcomes: list[tuple[Job, Published | None, BaseException | None]] = []
        for job in group:
            try:
                parts: list[bytes] = []
                lines = GroupedLines()  # (each publication's added once matched)
                kept: list | None = [] if job.keep_matches else None
                if job.publications is None:
                    job.publications = job.reader()
                matches = 0
                for pub in job.publications:
                    t0 = clock()
                    found = engine.match(pub)
                    observe(clock() - t0)
                    if kept is not None:
                        kept.append((pub.id, found))
                    if found:
                        if not job.grouped:
                            parts.append(match_bytes(pub.id, found))
                        lines.add(pub.id, found)
                        matches += len(found)
                        remember(pub)
                runs = lines.runs()  # (the job's at once: a few numpy calls)
                # made as UTF-8 once: the answer's body
                if job.grouped:
                    parts = [line for _, _, line in runs]
                    parts.append(b"")
                    body = b"\n".join(parts) if len(parts) > 1 else b""
                else:
                    body = b"".join(parts)
            except Exception as e:  # this request fails alone (bad RDF; its events are not kept)
                outcomes.append((job, None, e))
                continue
            pushed = 0
            for subscriber, n, line in runs:
                if subscriber is not None:
                    mine = events.get(subscriber)
                    if mine is None:
                        mine = events[subscriber] = ([], [])
                    mine[0].append(n)
                    mine[1].append(line)
                    pushed += n
            outcomes.append((job, Published(body, len(job.publications), matches, pushed, kept), None))
        return Matched(events, outcomes)

    def _store(self, matched: Matched) -> None:
        """Store the group's events in the outbox (one transaction), hand them to the
        streams and answer the jobs."""
        events, outcomes = matched
        try:
            numbered = self.outbox.append(events.items())
        except Exception as e:  # not stored: no request of the group is answered with matches
            self._finish([], [(job, None, error or e) for job, _, error in outcomes])
            return
        chunks = [(sub, Chunk(first, *runs)) for sub, first, runs in numbered]
        metrics = self.metrics
        for job, done, _ in outcomes:
            if done is not None:
                metrics.publications.inc(done.publications)
                metrics.matches.inc(done.matches)
        metrics.events.inc(sum(chunk.size for _, chunk in chunks))
        self._finish(chunks, outcomes)

    def _finish(self, chunks, outcomes) -> None:
        """Hand the chunks to the streams and answer the jobs: on the event loop, in
        one call, when there is one; the jobs without an asyncio future here."""
        on_loop = [o for o in outcomes if o[0].future is not None]
        if not self.hub.call_soon(self._finish_on_loop, chunks, on_loop):
            for job, _, _ in on_loop:  # no loop any more: nobody awaits these
                job.sync_future.cancel()
        for job, done, error in outcomes:
            if job.future is None:
                if error is not None:
                    job.sync_future.set_exception(error)
                else:
                    job.sync_future.set_result(done)

    def _finish_on_loop(self, chunks, outcomes) -> None:
        # The requests first: their answers are written before the streams' events (the
        # loop runs the woken tasks in this order), so that a publisher waiting for its
        # answer does not also wait for every stream's write.
        for job, done, error in outcomes:
            if job.future.done():  # the request was cancelled (its client left)
                continue
            if error is not None:
                job.future.set_exception(error)
            else:
                job.future.set_result(done)
        self.hub.deliver(chunks)

