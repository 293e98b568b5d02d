"""Every slot's query id and subscriber as columns, for writers that take them by slot.

`Engine.match` lists a publication's matches as the query table's slots in
query-id order (`rtf.matching.results.Matches`); a match list makes its ids
and subscribers as Python lists only when something reads them. Reading a
query-id string for the first time after matching is a cache miss (25-80 ns
an id at 100,000 queries: each string lives apart), paid once to list the
ids and again by every writer that joins them. So the writers of many
matches (``rtf match --output-format ids|jsonl|arrow|parquet``) do not read
them: they take them by slot from `IdColumns`, columns of every slot's id
(and subscriber) that copy bytes lying side by side. For ``ids`` and
``jsonl``, fixed-width numpy rows of each id as JSON writes it (with what
follows it on the line): one gather, one cache miss an id, no pyarrow; for
``arrow`` and ``parquet``, Arrow string arrays and ``take``.

The columns describe the table at one moment: a registration or removal
makes them stale (`IdColumn.changed`, called before and after the change, so
that columns copied during one are not kept). They are made again lazily,
like the id ranks (`rtf.matching.id_order`, ski rental): while stale, the
writers read the lists, and once they have read about as many ids as are
registered, the columns are made again (one pass over the table's ids). A
bulk registration followed by a stream of publications makes them once; a
registration before every publication never costs more than twice the
lists. A match list whose query set changed since (`Matches.settle`) reads
its own lists.
"""

from __future__ import annotations

import numpy as np

# (the text of ids and lines is rtf.io.output's: its id separator, its JSON strings and the
# part of a line between a query id and its bindings)
from rtf.io.output import IDS_SEPARATOR, _json_string, _middle_text


#: The longest id (JSON-escaped, with its separator) kept in the fixed-width column of the
#: ``ids`` output, in bytes; a longer one makes that column an Arrow one (a few bytes of
#: padding are cheaper than Arrow's offsets, which are a second cache miss per id).
MAX_FIXED_WIDTH = 96


class IdColumns:
    """One state of the table's slots, never changed once made: `generation`, the state it
    is of, and each slot's id and subscriber as Arrow columns (`arrow`) and as the ``ids``
    and ``jsonl`` outputs write them (`ids_text`, `lines_text`), each made when first asked
    for."""

    __slots__ = ("generation", "_slot_id", "_slot_subscriber", "_ids", "_quoted", "_quoted_len",
                 "_lines", "_codes")

    def __init__(self, generation: int, slot_id: np.ndarray, slot_subscriber: np.ndarray | None):
        self.generation = generation
        self._slot_id = slot_id.copy()
        self._slot_subscriber = None if slot_subscriber is None else slot_subscriber.copy()
        self._ids = self._quoted = self._quoted_len = self._lines = self._codes = None

    def arrow(self):
        """(ids, subscribers) as pyarrow string arrays by slot (see the class), or None when
        Arrow cannot hold an id or subscriber (a lone surrogate has no UTF-8): then read
        the matches' lists, as for the ids that are not in any column."""
        if self._ids is None:
            import pyarrow as pa

            try:
                self._ids = (pa.array(self._slot_id.tolist(), pa.string()),
                             None if self._slot_subscriber is None else
                             pa.array(self._slot_subscriber.tolist(), pa.string()))
            except (UnicodeError, ValueError):  # (pyarrow's errors are ValueErrors)
                self._ids = False
        return self._ids or None

    def ids_text(self, slots: np.ndarray) -> bytes | None:
        """The ids of `slots` as the JSON array of ``--output-format ids`` holds them, in
        UTF-8: each as JSON writes it between its quotes, followed by `IDS_SEPARATOR`
        (the last one too). None when an id has no UTF-8 (a lone surrogate): then read
        the matches' lists."""
        if self._quoted is None:
            self._quoted = _fixed([_json_string(q)[1:-1] + IDS_SEPARATOR if q is not None else ""
                                   for q in self._slot_id.tolist()])
        return _taken(self._quoted, slots)

    def ids_pieces(self, slots: np.ndarray, ends: np.ndarray) -> list[bytes] | None:
        """`ids_text` of consecutive pieces of `slots`, cut before each of `ends` (increasing,
        the last ``len(slots)``; no piece empty): one gather for them all (`rtf serve`'s
        grouped events of many publications). None where `ids_text` is."""
        self.ids_text(slots[:0])  # (the column, made when first asked for)
        column = self._quoted
        if column is False:
            return None
        rows, padded = column
        if not isinstance(rows, np.ndarray):  # (an Arrow column: ids too long for fixed width)
            cuts = ends.tolist()
            return [_taken(column, slots[a:b]) for a, b in zip([0, *cuts], cuts)]
        text = rows.take(slots).tobytes()
        if padded:  # each row's length without its padding
            if self._quoted_len is None:
                self._quoted_len = np.char.str_len(rows)
            text = _unpadded(text, self._quoted_len, rows.itemsize)
            cuts = np.cumsum(self._quoted_len.take(slots))[ends - 1].tolist()
        else:
            cuts = (ends * rows.itemsize).tolist()
        return [text[a:b] for a, b in zip([0, *cuts], cuts)]

    def lines_text(self, slots: np.ndarray) -> bytes | None:
        """What the JSON lines of `slots`' matches hold between the quotes that open their
        query id and the bindings: the id as JSON writes it, then '", "subscriber": ' and
        the subscriber's JSON, ', ' and a newline (which JSON text never holds raw), in
        UTF-8; or None, as `ids_text`."""
        if self._lines is None:
            ids = self._slot_id.tolist()
            subscribers = [None] * len(ids) if self._slot_subscriber is None else self._slot_subscriber.tolist()
            self._lines = _fixed([_json_string(q)[1:-1] + _middle_text(s) + "\n" if q is not None else ""
                                  for q, s in zip(ids, subscribers)])
        return _taken(self._lines, slots)


    def subscriber_codes(self) -> tuple[list, np.ndarray]:
        """The distinct subscribers (None first when a slot has none) and each slot's
        number among them (int32): a match list's slots grouped by subscriber with numpy
        (``codes[slots]``), no subscriber string read per match (`rtf serve`'s grouped
        events)."""
        if self._codes is None:
            subscribers = ([None] * len(self._slot_id) if self._slot_subscriber is None
                           else self._slot_subscriber.tolist())
            names = [None] + sorted(set(subscribers).difference([None]))
            number = {name: k for k, name in enumerate(names)}
            self._codes = names, np.fromiter(map(number.__getitem__, subscribers), np.int32,
                                             len(subscribers))
        return self._codes


def _fixed(texts: list[str]):
    """`texts` in UTF-8 as fixed-width rows (numpy bytes) padded with NUL bytes, which none of
    them holds (JSON escapes it), and whether some row is padded; as a pyarrow array when
    one is longer than `MAX_FIXED_WIDTH`; False when one has no UTF-8."""
    try:
        encoded = [text.encode() for text in texts]
    except UnicodeError:
        return False
    width = max(map(len, encoded), default=1)
    if width <= MAX_FIXED_WIDTH:
        return np.array(encoded, dtype=f"S{max(width, 1)}"), any(len(e) != width for e in encoded)
    import pyarrow as pa

    return pa.array(encoded, pa.binary()), False


def _taken(column, slots: np.ndarray) -> bytes | None:
    """The rows `slots` of a `_fixed` column, joined (None for False). One gather of
    fixed-width rows is a cache miss per row; Arrow's offsets are a second one."""
    if column is False:
        return None
    rows, padded = column
    if isinstance(rows, np.ndarray):
        text = rows.take(slots).tobytes()  # (take: 3 times faster than rows[slots] for bytes rows)
        return text.translate(None, b"\0") if padded else text  # (twice as fast as replace)
    taken = rows.take(slots)
    offsets = np.frombuffer(taken.buffers()[1], np.int32, len(taken) + 1, 4 * taken.offset)
    return taken.buffers()[2][int(offsets[0]):int(offsets[-1])].to_pybytes()


def _unpadded(text: bytes, lengths: np.ndarray, width: int) -> bytes:
    """Fixed-width rows of `width` bytes without their NUL padding. `bytes.replace` jumps
    from NUL to NUL (memchr): far faster than `translate`'s byte-by-byte copy when the
    column holds under 1 % of NULs (most ids as wide as the widest), far slower above."""
    if int(lengths.sum()) >= 0.99 * width * len(lengths):
        return text.replace(b"\0", b"")
    return text.translate(None, b"\0")


class IdColumn:
    """The query table's `IdColumns`, made again lazily after a change (see the module)."""

    __slots__ = ("generation", "built", "debt")

    def __init__(self):
        self.generation = 0  # changes made to the slots' ids
        self.built: IdColumns | None = None
        self.debt = 0  # ids read as lists since the columns went stale

    def changed(self) -> None:
        """A query is being registered or removed (called before the table changes and
        again once it has: columns copied in between are not kept, see `columns`)."""
        self.generation += 1
        self.debt = 0

    def columns(self, table, wanted: int) -> IdColumns | None:
        """The columns of `table`'s slots as they are now, or None while they are stale and
        reading `wanted` ids as lists is still the cheaper way."""
        built, generation = self.built, self.generation
        if built is not None and built.generation == generation:
            return built
        self.debt += wanted
        if self.debt < len(table.queries):
            return None
        built = _copied(table, generation)
        if self.generation != generation:  # changed while it was copied: not this state
            return None
        self.built = built
        return built

    def make(self, table, output: str | None = None) -> None:
        """Make the columns now, and the text of them that writers of `output` take
        ("ids", "jsonl", "arrow" or "parquet"; `rtf.engine.Engine.before_fork`)."""
        built = self.built
        if built is None or built.generation != self.generation:
            built = self.built = _copied(table, self.generation)
        none = np.zeros(0, dtype=np.intp)
        if output == "ids":
            built.ids_text(none)
        elif output == "jsonl":
            built.lines_text(none)
        elif output in ("arrow", "parquet"):
            built.arrow()

    def __reduce__(self):  # (a copy of the table, Spark's, makes its own when it needs them)
        return (IdColumn, ())


def _copied(table, generation: int) -> IdColumns:
    """The columns of `table`'s slots as they are now (`generation`: the state they copy)."""
    return IdColumns(generation, table.slot_id, table.slot_subscriber if table.subscribed else None)
