"""What `rtf serve` answers a request that its stop (SIGTERM, Ctrl-C) overtakes.

A client must be able to tell whether its request was carried out, so the
rule is the one a database gives: **committed <=> 2xx**; a request that was
not carried out is answered ``503`` with ``Retry-After`` (or, at worst, its
connection closes before any byte of the answer), and may be sent again
once the server is back. Never ``500`` for work that may have happened.

How the server keeps it:

- At the signal, `Registry.stopping` is set; a bulk registration still
  parsing or registering gives up at its next record, rolls its transaction
  back and answers ``503`` (`StoppingError`). One that reached its commit
  finishes it and answers ``200``.
- uvicorn waits 5 s for the requests in progress, then cancels them (a
  second Ctrl-C: at once). A thread cannot be cancelled: the routes that
  write wait for their write to end anyway (`to_the_end`), and answer what
  it did.
- A request cancelled before it answered, with no write under way (its body
  still arriving, a read), is answered ``503`` by `StopGuard`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rtf.errors import RtfError

#: Seconds a client is told to wait before sending a refused request again.
RETRY_AFTER_S = 5

#: The answer to a request the stop overtook before anything of it was done.
NOT_DONE = ("the server is stopping: nothing of this request was done; send it again once the "
            "server is back (Retry-After)")

T = TypeVar("T")


class StoppingError(RtfError):
    """The server began to stop before this write was committed: it was rolled back."""

    def __init__(self, message: str = "the server is stopping: nothing was registered (the "
                                      "transaction was rolled back); send the request again "
                                      "once the server is back (Retry-After)"):
        super().__init__(message)


def retry_headers() -> dict[str, str]:
    return {"Retry-After": str(RETRY_AFTER_S), "Connection": "close"}


async def to_the_end(future: Awaitable[T]) -> T:
    """Await `future` (a thread's work) to its end, even when the request is cancelled
    meanwhile: its result, or its exception. The cancellations absorbed are taken back
    (`Task.uncancel`): the request goes on to answer what was done."""
    future = asyncio.ensure_future(future)
    task = asyncio.current_task()
    absorbed = 0
    try:
        while True:
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                if future.cancelled():  # the work itself was cancelled: nothing to wait for
                    raise
                absorbed += 1
    finally:
        for _ in range(absorbed):
            task.uncancel()


async def in_thread_to_the_end(fn: Callable[..., T], *args) -> T:
    """``fn(*args)`` in a worker thread, awaited with `to_the_end`."""
    loop = asyncio.get_running_loop()
    return await to_the_end(loop.run_in_executor(None, functools.partial(fn, *args)))
