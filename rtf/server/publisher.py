"""Publishing: one thread matches the posted publications, in order of arrival.

A POST hands its publications over as a `Job`; the publisher thread takes
every job waiting (a *group*), matches their publications, writes each
publication's `rtf match` lines in one piece (`rtf.io.output.match_lines`),
gathers the lines of queries with a subscriber by subscriber, appends them
to the outbox in one transaction (one row per subscriber), and hands the
numbered events to the live streams with one call to the event loop, which
then answers the group's requests. So a busy server commits and wakes the
loop once per group instead of once per publication or match, and every
stream receives ids in increasing order (one thread numbers them).
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
from itertools import compress, groupby, repeat
from operator import is_not, itemgetter

from rtf.io.output import match_lines
from rtf.server.metrics import Metrics
from rtf.server.outbox import Outbox
from rtf.server.streams import Chunk, Hub, sse_matches

log = logging.getLogger("rtf.server")

_first, _second = itemgetter(0), itemgetter(1)

#: Most publications matched in one group (one outbox transaction): bounds the
#: time a request waits behind others.
GROUP_PUBLICATIONS = 2000


@dataclass
class Published:
    """What a job gave: its `rtf match` lines (each ending in a newline), counts,
    and with ``keep_matches`` each publication's id and matches (`Matches`)."""

    text: str
    publications: int
    matches: int
    events: int
    kept: list | None = None


@dataclass
class Job:
    """Publications to match, or the RDF body to read them from (`reader()` gives
    them; its `PublicationError` is the job's outcome); the outcome goes to
    `future` (an asyncio future, set on its loop) or, without one, to `sync_future`."""

    publications: list | None
    keep_matches: bool = False
    future: asyncio.Future | None = None
    sync_future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    reader: Callable[[], list] | None = None

    @property
    def size(self) -> int:
        """Publications, or a guess for a body not read yet (for the group's bound)."""
        return len(self.publications) if self.publications is not None else 1


class Publisher:
    """The publishing thread of a broker (started at once; `stop` ends it)."""

    def __init__(self, engine, outbox: Outbox, hub: Hub, metrics: Metrics):
        self.engine = engine
        self.outbox = outbox
        self.hub = hub
        self.metrics = metrics
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="rtf-publisher", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> Job:
        self._jobs.put(job)
        return job

    async def publish(self, reader: Callable[[], list], keep_matches: bool = False) -> Published:
        """Match the publications `reader()` gives (called in the publisher's thread:
        reading a body costs the event loop nothing), from the event loop: their
        lines, once the events are stored and handed to the streams."""
        job = Job(None, keep_matches, asyncio.get_running_loop().create_future(), reader=reader)
        self.submit(job)
        return await job.future

    def publish_sync(self, publications: list, keep_matches: bool = False) -> Published:
        """`publish`, from any thread but the event loop's: waits for the outcome."""
        return self.submit(Job(publications, keep_matches)).sync_future.result()

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
                self._process(group)
            except BaseException as e:  # a bug: every request of the group is answered with it
                log.exception("publishing failed")
                self._finish([], [(j, None, e) for j in group])
            if stopping:
                return

    def _process(self, group: list[Job]) -> None:
        engine, metrics = self.engine, self.metrics
        observe = metrics.filter_seconds.observe
        clock = time.perf_counter
        events: dict[str, list[str]] = {}  # the group's lines by subscriber, in order
        outcomes: list[tuple[Job, Published | None, BaseException | None]] = []
        for job in group:
            try:
                pushed: list[tuple[str, str]] = []  # (subscriber, line) of the job's matches
                parts: list[str] = []
                kept: list | None = [] if job.keep_matches else None
                matches = 0
                if job.publications is None:
                    job.publications = job.reader()
                for pub in job.publications:
                    t0 = clock()
                    found = engine.match(pub)
                    observe(clock() - t0)
                    if kept is not None:
                        kept.append((pub.id, found))
                    if not found:
                        continue
                    text = match_lines(pub.id, found)
                    parts.append(text)
                    matches += len(found)
                    subscribers = found.subscribers
                    # the lines of queries with a subscriber, in C (no Python step per match)
                    pushed.extend(compress(zip(subscribers, text.split("\n")),
                                           map(is_not, subscribers, repeat(None))))
            except Exception as e:  # this request fails alone (bad RDF; its events are not kept)
                outcomes.append((job, None, e))
                continue
            # by subscriber, each one's lines in their order (a stable sort, in C)
            pushed.sort(key=_first)
            for subscriber, pairs in groupby(pushed, _first):
                events.setdefault(subscriber, []).extend(map(_second, pairs))
            outcomes.append((job, Published("".join(parts), len(job.publications), matches,
                                            len(pushed), kept), None))
        try:
            numbered = self.outbox.append(list(events.items()))
        except Exception as e:  # not stored: no request of the group is answered with matches
            self._finish([], [(job, None, error or e) for job, _, error in outcomes])
            return
        chunks = [(sub, Chunk(first, first + len(lines) - 1, sse_matches(first, lines)))
                  for sub, first, lines in numbered]
        for job, done, _ in outcomes:
            if done is not None:
                metrics.publications.inc(done.publications)
                metrics.matches.inc(done.matches)
        metrics.events.inc(sum(len(lines) for _, _, lines in numbered))
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
        self.hub.deliver(chunks)
        for job, done, error in outcomes:
            if job.future.done():  # the request was cancelled (its client left)
                continue
            if error is not None:
                job.future.set_exception(error)
            else:
                job.future.set_result(done)
