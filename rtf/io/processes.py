"""Pools of forked worker processes, for the commands that spread work over cores.

`rtf match --workers` forks its matchers after registering the queries (each
has the engine, shared copy-on-write); registration forks parsers
(`rtf.io.parse_ahead`). Both take their pool here, made the same way.
"""

from __future__ import annotations

import signal


def forked_pool(workers: int, initializer=None, initargs: tuple = ()):
    """A `multiprocessing` pool of `workers` forked processes (use it as a context).

    Each worker inherits this process's memory as it is now (what it needs is
    left in a module global before the call: nothing is pickled to start it).
    SIGTERM is held while the workers are forked, and each releases it only once
    it has the default action (`_quiet_worker`): a SIGTERM that reached a worker
    still holding the parent's Python handler would be dropped when the handler
    changed, and the pool's terminate() would then wait for it forever.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        return context.Pool(workers, initializer=_quiet_worker, initargs=(initializer, initargs))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _quiet_worker(initializer, initargs: tuple) -> None:
    """In a worker: SIGTERM (the pool's way to stop it) just ends it, as before the
    parent's handler (`rtf.cli.Terminated`, for the parent's cleanups) was inherited;
    then `initializer(*initargs)`, if given."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    if initializer is not None:
        initializer(*initargs)
