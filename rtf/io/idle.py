"""Live feeds that go quiet: a publication read so far is handed on after some idle time.

A publication is complete when the next subject starts, or the input ends:
the last publication of a feed that pauses would wait for the next one
(``rtf match --publications -`` or ``--follow``). `marked_when_idle` reads
the parsed batches of a live source in a thread of its own and passes them
on, adding `IDLE` once whenever `seconds` pass without one; `grouped_when_idle`
(for `rtf.io.reader`) ends the publication under way there, as the end of the
input would. Triples of that subject that come later make another publication of
the same id: the price of not waiting (the same choice as a session window
that closes after a gap).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

#: What `marked_when_idle` puts between batches after a quiet spell.
IDLE: Any = object()

_END = object()


def marked_when_idle(batches: Iterable, seconds: float) -> Iterator:
    """`batches`, read ahead in a daemon thread, with `IDLE` after each `seconds` without one.

    An exception raised by `batches` is raised here, in order. Closing the iterator stops
    the thread once its read in progress returns (a read blocked on a quiet stdin returns
    with its next data, or never: the thread is a daemon and does not keep the process).
    """
    items: queue.Queue = queue.Queue(maxsize=64)  # a few batches ahead at most
    stop = threading.Event()

    def read() -> None:
        try:
            for batch in batches:
                if stop.is_set():
                    return
                items.put((batch, None))
        except BaseException as e:  # handed to the reader, raised there
            items.put((_END, e))
            return
        items.put((_END, None))

    threading.Thread(target=read, name="rtf-live-feed", daemon=True).start()
    idle = False  # an IDLE was given since the last batch
    try:
        while True:
            try:
                batch, error = items.get(timeout=None if idle else seconds)
            except queue.Empty:
                idle = True
                yield IDLE
                continue
            if batch is _END:
                if error is not None:
                    raise error
                return
            idle = False
            yield batch
    finally:
        stop.set()


def grouped_when_idle(batches: Iterable, seconds: float | None, group: Callable[[Iterator], Iterator]
                      ) -> Iterator:
    """``group(batches)``'s publications; with `seconds`, `group` is run anew on the batches
    that follow each quiet spell of `seconds` (`marked_when_idle`): the publication under way
    at the spell is handed on then, as at the end of the input."""
    if not seconds:
        yield from group(iter(batches))
        return
    marked = marked_when_idle(batches, seconds)
    ended = False

    def until_idle() -> Iterator:
        nonlocal ended
        for batch in marked:
            if batch is IDLE:
                return
            yield batch
        ended = True

    try:
        while not ended:
            yield from group(until_idle())
    finally:
        marked.close()
