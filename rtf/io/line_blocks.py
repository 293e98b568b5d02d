"""The ``ids`` lines of ``rtf match`` made and written in blocks by a thread of their own,
while the next publications are matched.

At 100,000 selective queries a publication matches ~2,800 queries: its
``ids`` line is ~28 KB. Making the lines and writing them had cost a sixth
of matching, in the thread that matches. So `LineBlockWriter` takes each
publication's ``(id, matches)`` as it is (`deferred`), and its thread makes
a block of them into lines (`ids_block`: the engine's matches of a block
take their ids from the query table's column in one gather, which numpy
makes without the GIL) and writes them, a few MB at a time (without the GIL
too). Lines already made (by ``--workers`` processes) are written after what
was gathered before them. The output is the one `rtf.io.output` makes for
each publication, byte for byte, in input order. (The ``jsonl`` lines are
not for this thread: Python's string work holds the GIL, so there they were
made no faster, and joined in blocks of 40 MB their pages were faulted in
again, 2 s of system time for 3 GB.)

>>> import io
>>> from rtf.engine import Match
>>> out = io.BytesIO()
>>> writer = LineBlockWriter(out)
>>> writer.write(("http://ex/a", [Match("q1", None, frozenset({()}))]))
>>> writer.write(b"made before\\n")
>>> writer.close()
>>> out.getvalue()
b'{"publication": "http://ex/a", "queries": ["q1"]}\\nmade before\\n'
"""

from __future__ import annotations

from rtf.io.output import IDS_SEPARATOR, ids_line, match_ids_bytes

#: Matches gathered before a block is made into lines and written (~100 publications of
#: ~2,800 matches; ~3 MB of ``ids`` lines).
BLOCK_MATCHES = 1 << 18
#: Bytes of lines already made that weigh as one match in a block (4 MB make a block).
BYTES_A_MATCH = 16
#: Bytes joined into one write: few writes (each takes the GIL back), and no buffer so large
#: that each block's would be mapped and its pages faulted in again (over 32 MB, glibc maps
#: every one: 2 s of system time for the 3 GB of ``jsonl`` at 100K selective queries).
WRITE_BYTES = 1 << 22


def deferred(pub, found) -> tuple:
    """The renderer of ``ids`` for `LineBlockWriter`: the publication's matches as they are,
    made into its line in the writer's thread."""
    return pub.id, found


def ids_block(pieces: list) -> list[bytes]:
    """The ``ids`` line (`rtf.io.output.match_ids_bytes`) of each ``(publication id,
    matches)`` piece (none empty), in order. The engine's matches of one state of the query
    table take their ids from its column in one gather for the block (`IdColumns.ids_pieces`)."""
    columns = [found.id_columns() if hasattr(found, "id_columns") else None for _, found in pieces]
    first = columns[0]
    if first is not None and all(c is first for c in columns):
        import numpy as np

        slots = [found.slots for _, found in pieces]
        ends = np.cumsum([len(s) for s in slots])
        texts = first.ids_pieces(np.concatenate(slots), ends)
        if texts is not None:  # (each id followed by the separator, the last too)
            cut = len(IDS_SEPARATOR)
            return [ids_line(pub_id, memoryview(text)[:-cut]) for (pub_id, _), text in zip(pieces, texts)]
    return [match_ids_bytes(pub_id, found) for pub_id, found in pieces]


class LineBlockWriter:
    """Writes the lines of ``rtf match`` to `out` (a binary file) in blocks, by a thread.

    `write` takes a publication's ``(id, matches)`` (from `deferred`; its ``ids`` line is
    made in the thread, by `ids_block`) or the bytes of lines already made. One block at a
    time is made and written, in order, while the next is gathered; a failed write (a
    closed pipe, a full disk) is raised by the next `write` or by `close`, and nothing is
    written after it. `close` writes what is left; the file itself is the caller's to
    flush and close.
    """

    def __init__(self, out):
        from concurrent.futures import ThreadPoolExecutor

        self.out = out
        self.broken = False
        self._pieces: list = []  # bytes, or (id, matches) to make into lines
        self._size = 0  # matches, or bytes, gathered
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="rtf-match-lines")
        self._pending = None  # the block under way in the thread

    def write(self, piece) -> None:
        """Write one publication's ``(id, matches)``, or bytes of lines."""
        pieces = self._pieces
        if pieces and type(piece) is not type(pieces[-1]):
            self._write_gathered()
        self._pieces.append(piece)
        self._size += len(piece[1]) if type(piece) is tuple else len(piece) // BYTES_A_MATCH
        if self._size >= BLOCK_MATCHES:
            self._write_gathered()

    def _write_gathered(self) -> None:
        pieces = self._pieces
        if pieces:
            self._pieces, self._size = [], 0
            self._wait()  # (the block before: its error is raised here)
            if not self.broken:
                self._pending = self._pool.submit(self._write_now, pieces)

    def _write_now(self, pieces: list) -> None:
        try:
            write = self.out.write
            joined: list = []
            size = 0
            for data in ids_block(pieces) if type(pieces[0]) is tuple else pieces:
                joined.append(data)
                size += len(data)
                if size >= WRITE_BYTES:
                    write(b"".join(joined))
                    joined, size = [], 0
            if joined:
                write(b"".join(joined))
        except BaseException:
            self.broken = True
            raise

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        """Write what was gathered (nothing more after a write failed) and stop the thread."""
        try:
            if not self.broken:
                self._write_gathered()
            self._wait()
        finally:
            self._pool.shutdown(wait=True)
