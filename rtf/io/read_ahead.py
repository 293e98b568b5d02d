"""Publications read and parsed ahead in a forked process while this one matches them.

Reading a publication (decompressing, parsing N-Triples with pyoxigraph,
making its key triples) costs ~25 us; matching one at 100,000 selective
queries ~250 us. At that rate reading was a tenth of ``rtf match``'s time
in the thread that matches. `read_ahead` forks one process that reads the
files (`rtf.io.reader.read_publications`, the same arguments) and sends
the publications back pickled, `BATCH` at a time and a few batches ahead;
unpickling them costs a fifth of reading them.

Nothing changes in what is read: the same publications in the same order
(each with the instant it was read, which ``NOW()`` reads), the reader's
`ReadStats` as the reader left them, and an error of the input (a bad
line, a file that cannot be opened or breaks off) raised after the
publications read before it, as `read_publications` raises it. Where no
process can be forked, or the reading process ends abruptly, the files
are read here (from the start: the publications sent already are skipped).
Live input (stdin, ``--follow``) is not for this module: each publication
must come out as soon as it is complete.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from itertools import count, islice

#: Publications sent back at a time (amortises the pickling and the pipe).
BATCH = 64
#: Batches read ahead of the one awaited.
AHEAD = 4
#: Files smaller than this (in all, as stored) are read here: forking costs more.
MIN_BYTES = 1 << 20

_READER: dict = {}  # the reading process's publications, made in it (`_start`)


def worth_reading_ahead(paths: list) -> bool:
    """Whether `paths` are files of at least `MIN_BYTES` in all (a path that is not a
    plain file, stdin for one, is read here)."""
    total = 0
    for path in paths:
        if not isinstance(path, (str, os.PathLike)) or str(path) == "-" or not os.path.isfile(path):
            return False
        total += os.path.getsize(path)
    return total >= MIN_BYTES


class ReadAhead:
    """A reading process for the publications of ``read()`` (`read_publications` with its
    arguments and `stats`, the `ReadStats` it updates), forked when this is made: make it
    before loading the index. (Forked after, the process shared the index's pages
    copy-on-write, and the matching thread, writing reference counts all over them,
    copied them one fault at a time: ~20,000 faults at 100,000 queries, a tenth of the
    filter's time.) `publications` reads them through it; `close` (or leaving the
    context) stops it."""

    def __init__(self, read: Callable[[], Iterator], stats):
        from rtf.io.processes import forked_pool

        self.read = read
        self.stats = stats
        try:
            self._pool = forked_pool(1, _start, (read, stats))
        except OSError:  # no process can be forked here: read here
            self._pool = None

    def publications(self) -> Iterator:
        """The publications of ``read()``, read in the process (see the module)."""
        from rtf.errors import WorkerLostError

        pool, stats = self._pool, self.stats
        given = 0
        if pool is not None:
            try:
                with pool:
                    for _, (pubs, read_stats, error) in pool.ordered_map(_next_batch, count(), AHEAD):
                        vars(stats).update(vars(read_stats))
                        given += len(pubs)
                        yield from pubs
                        if error is not None:
                            raise error
                        if len(pubs) < BATCH:
                            return
            except WorkerLostError:
                pass
            # (the reading process ended abruptly: read again here, after what was given)
            for name, value in vars(type(stats)()).items():
                setattr(stats, name, value)
        yield from islice(self.read(), given, None)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_ahead(read: Callable[[], Iterator], stats) -> Iterator:
    """`ReadAhead(read, stats).publications()`, the process stopped at their end."""
    with ReadAhead(read, stats) as ahead:
        yield from ahead.publications()


def _start(read: Callable[[], Iterator], stats) -> None:
    """In the reading process: the reader, and the stats it updates."""
    _READER.update(pubs=read(), stats=stats)


def _next_batch(_) -> tuple:
    """In the reading process: the next `BATCH` publications (fewer at the end), the
    reader's stats, and the error that stopped it (None)."""
    pubs = []
    error = None
    reader = _READER["pubs"]
    try:
        for pub in islice(reader, BATCH):
            pubs.append(pub)
    except Exception as e:  # raised in the reading process after the publications before it
        error = e
        _READER["pubs"] = iter(())
    return pubs, _READER.get("stats"), error
