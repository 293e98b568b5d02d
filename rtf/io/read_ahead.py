"""Publications read and parsed ahead by another process while this one matches them.

Reading a publication (decompressing, parsing N-Triples with pyoxigraph,
making its key triples) costs ~25 us; matching one at 100,000 selective
queries ~250 us. At that rate reading was a tenth of ``rtf match``'s time
in the thread that matches. `ReadAhead` starts a Python process that reads
the files (``python -m rtf.io.read_ahead``: `rtf.io.reader.read_publications`
with the same arguments, sent pickled on its stdin) and sends the
publications back pickled on its stdout, `BATCH` at a time, parsing the
next batch while this process matches one; unpickling them costs a fifth of
reading them. The process is started, not forked: a forked one shared this
process's pages copy-on-write, and the matching thread, writing reference
counts all over them, copied them one fault at a time (~13,000 faults, which
cost the filter more than the reading saved).

Nothing changes in what is read: the same publications in the same order
(each with the instant it was read, which ``NOW()`` reads), the reader's
`ReadStats` as the reader left them, and an error of the input (a bad
line, a file that cannot be opened or breaks off) raised after the
publications read before it, as `read_publications` raises it. Where the
process cannot be started, or ends abruptly, the files are read here (from
the start: the publications given already are skipped). Live input (stdin,
``--follow``) is not for this module: each publication must come out as
soon as it is complete.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable, Iterator
from itertools import islice

#: Publications sent back at a time (amortises the pickling and the pipe).
BATCH = 64
#: Files smaller than this (in all, as stored) are read here: starting a process costs more.
MIN_BYTES = 1 << 20

_PROTOCOL = pickle.HIGHEST_PROTOCOL


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
    arguments and `stats`, the `ReadStats` it updates: both pickled to it), started when
    this is made. `publications` reads them through it; `close` (or leaving the context)
    stops it."""

    def __init__(self, read: Callable[[], Iterator], stats):
        import subprocess

        self.read = read
        self.stats = stats
        self.received = 0  # publications the process has read
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "rtf.io.read_ahead"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            pickle.dump((read, stats), self._process.stdin, _PROTOCOL)
            self._process.stdin.close()
        except (OSError, pickle.PicklingError, AttributeError, TypeError):  # read here
            self.close()

    def publications(self) -> Iterator:
        """The publications of ``read()``, read by the process (see the module)."""
        stats = self.stats
        given = 0
        process = getattr(self, "_process", None)
        if process is not None:
            try:
                while True:
                    pubs, read_stats, error = pickle.load(process.stdout)
                    vars(stats).update(vars(read_stats))
                    given += len(pubs)
                    self.received = given
                    yield from pubs
                    if error is not None:
                        raise error
                    if len(pubs) < BATCH:
                        return
            except (EOFError, OSError, pickle.UnpicklingError):  # the process ended abruptly
                self.close()
            # (read again here, after what was given)
            for name, value in vars(type(stats)()).items():
                setattr(stats, name, value)
        yield from islice(self.read(), given, None)

    def close(self) -> None:
        process = self.__dict__.pop("_process", None)
        if process is not None:
            for pipe in (process.stdin, process.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
            if process.poll() is None:
                process.kill()
            process.wait()

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_ahead(read: Callable[[], Iterator], stats) -> Iterator:
    """`ReadAhead(read, stats).publications()`, the process stopped at their end."""
    with ReadAhead(read, stats) as ahead:
        yield from ahead.publications()


def _serve(stdin, stdout) -> None:
    """The reading process: ``(read, stats)`` from `stdin`, then batches of ``(publications,
    stats, error)`` on `stdout` until the publications end, an error of the input stops
    them, or nobody reads (the pipe closed)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C reaches the group: the reader stops it)
    read, stats = pickle.load(stdin)
    pubs = read()
    while True:
        batch, error = [], None
        try:
            for pub in islice(pubs, BATCH):
                batch.append(pub)
        except Exception as e:  # raised by the reader after the publications before it
            error = e
        try:
            data = pickle.dumps((batch, stats, error), _PROTOCOL)
        except Exception:  # an error that cannot be pickled: told as it reads
            data = pickle.dumps((batch, stats, RuntimeError(f"{type(error).__name__}: {error}")), _PROTOCOL)
        stdout.write(data)
        stdout.flush()
        if error is not None or len(batch) < BATCH:
            return


if __name__ == "__main__":
    try:
        _serve(sys.stdin.buffer, sys.stdout.buffer)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
