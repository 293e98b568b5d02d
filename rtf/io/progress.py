"""Progress bars on long reads and registrations: on a terminal only, with a total where it is known.

`progress` counts items (queries, publications) against their number when the
iterable has a length. `read_progress` follows a stream of publications read
from files by the bytes read, against the files' size: for a plain file its
size, for a ``.gz`` file the uncompressed size its trailer records; so the
bar shows how far it is and how long is left (ETA). Where no size is known
(stdin, ``--follow``, ``.bz2``) it counts publications, as `progress` does.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class _Counting(Protocol):
    bytes_read: int  # what a `rtf.io.reader.ReadStats` counts as it reads


def _on_terminal() -> bool:
    return sys.stderr.isatty()


def progress(iterable: Iterable[T], desc: str, total: int | None = None, unit: str = "it") -> Iterable[T]:
    """A tqdm progress bar on stderr when stderr is a terminal; the iterable otherwise."""
    if not _on_terminal():
        return iterable
    from tqdm import tqdm
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    return tqdm(iterable, desc=desc, total=total, unit=unit, file=sys.stderr, leave=False)


def input_size(paths: Iterable[Any]) -> int | None:
    """The uncompressed bytes of the files `paths`, if every one is known; else None.

    A plain file's size; a gzip file's from its trailer (ISIZE, the size modulo
    4 GiB of its last member: trusted only when it is at least the compressed
    size); None for stdin (``-``), a stream, a ``.bz2`` file or anything unreadable.
    """
    total = 0
    for path in paths:
        if not isinstance(path, (str, os.PathLike)) or str(path) == "-":
            return None
        try:
            size = os.stat(path).st_size
            name = Path(path).name.lower()
            if name.endswith(".gz"):
                with open(path, "rb") as f:
                    f.seek(-4, os.SEEK_END)
                    (unpacked,) = struct.unpack("<I", f.read(4))
                if unpacked < size:
                    return None
                size = unpacked
            elif name.endswith(".bz2"):
                return None
        except (OSError, struct.error):
            return None
        total += size
    return total


def read_progress(publications: Iterable[T], stats: _Counting, paths: Iterable[Any] | None,
                  desc: str = "reading") -> Iterable[T]:
    """`publications` with a bar of the bytes `stats` has read out of the files' size
    (`input_size`), on a terminal; counted by publication when the size is unknown
    (`paths` None: a live feed, whose size is not its end)."""
    if not _on_terminal():
        return publications
    total = None if paths is None else input_size(paths)
    if total is None:
        return progress(publications, desc, unit="pub")
    return _by_bytes(publications, stats, total, desc)


def _by_bytes(publications: Iterable[T], stats: _Counting, total: int, desc: str) -> Iterator[T]:
    from tqdm import tqdm
    with tqdm(desc=desc, total=total, unit="B", unit_scale=True, unit_divisor=1024,
              file=sys.stderr, leave=False) as bar:
        for count, publication in enumerate(publications, 1):
            if stats.bytes_read > bar.n:
                if stats.bytes_read > (bar.total or 0):  # a size that was wrong: no total then
                    bar.total = None
                bar.update(stats.bytes_read - bar.n)
                bar.set_postfix_str(f"{count:,} pub", refresh=False)
            yield publication
