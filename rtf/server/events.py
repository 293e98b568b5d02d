"""A subscriber's events, two ways: one per match, or grouped by publication.

A match event's data is the `rtf match` line of one match::

    {"publication": "http://ex/a", "query": "q1", "subscriber": "alice", "bindings": [...]}

A *grouped* line holds the consecutive matches (in query-id order) of one
publication for one subscriber that share one answer, as Elasticsearch's
percolator answers all the queries a document matches at once::

    {"publication": "http://ex/a", "subscriber": "alice", "queries": ["q1", "q2"], "bindings": [...]}

Each of its matches is the match line with one of its queries (a CONSTRUCT's
answer is ``"triples"``). The publisher makes grouped lines only (a few bytes a
match: the query id), the outbox stores them, and a stream of single matches
expands them, with a few C-level byte operations, into the lines it would
have had. Ids stay one per match: the matches of a grouped line are numbered
consecutively, and its event's id is its last match's.

The byte operations rest on one property of JSON text: a string's quote is
escaped inside it, so ``", "`` (quote, comma, space, quote) and ``"], "``
occur only between strings, never inside one.
"""

from __future__ import annotations

from itertools import accumulate, islice, repeat

import numpy as np

# (the JSON text of strings and answers is rtf.io.output's, so that an expanded line is
# byte for byte the `rtf match` line)
from rtf.io.output import _ASK_ANSWER, _answer_text, _json_string

#: The start of an event, up to its data (the id filled in).
_MATCH_HEAD = b"id: %d\nevent: match\ndata: "
_GROUPED_HEAD = b"id: %d\nevent: matches\ndata: "

#: What separates two query ids in a grouped line, and what precedes and ends them.
_SEP = b'", "'
_SUBSCRIBER = b', "subscriber": '
_QUERIES = b', "queries": ["'
_QUERIES_END = b'"], '
_QUERY = b', "query": "'


def sse_matches(first_id: int, lines: list[bytes] | list[str]) -> bytes:
    """`lines` (``rtf match`` lines, UTF-8 or text, no newline in them) as `match`
    events with ids ``first_id``, ``first_id + 1``, ...: one join in C, no call per
    event."""
    n = len(lines)
    if n and isinstance(lines[0], str):
        lines = "\n".join(lines).encode().split(b"\n")
    parts: list[bytes] = [b""] * (3 * n)
    parts[0::3] = map(_MATCH_HEAD.__mod__, range(first_id, first_id + n))
    parts[1::3] = lines
    parts[2::3] = repeat(b"\n\n", n)
    return b"".join(parts)


def sse_grouped(first_id: int, counts: list[int], lines: list[bytes]) -> bytes:
    """Grouped `lines` holding `counts` matches each, the first numbered `first_id`, as
    `matches` events (each with the id of its last match)."""
    n = len(lines)
    parts: list[bytes] = [b""] * (3 * n)
    parts[0::3] = map(_GROUPED_HEAD.__mod__, islice(accumulate(counts, initial=first_id - 1), 1, None))
    parts[1::3] = lines
    parts[2::3] = repeat(b"\n\n", n)
    return b"".join(parts)


# ------------------------------------------------------------- grouped lines


def grouped_runs(pub_id: str, matches) -> list[tuple]:
    """One publication's `Matches` as grouped lines, ``(subscriber, count, line)``, each
    subscriber's in query-id order (subscriber None too: the caller drops it)."""
    return grouped_lines([(pub_id, matches)])


def grouped_lines(found: list[tuple]) -> list[tuple]:
    """The grouped lines (`grouped_runs`) of each ``(publication id, Matches)`` of `found`,
    in their order: one list (`GroupedLines`)."""
    lines = GroupedLines()
    for pub_id, matches in found:
        lines.add(pub_id, matches)
    return lines.runs()


class GroupedLines:
    """The grouped lines of publications matched one after the other: `add` each one's
    `Matches` as soon as it is matched, then `runs` gives them all, in order.

    The usual publication (every match shares one answer: star queries about the
    subject) keeps only its slots: the slots of all such publications in a row are
    grouped by publication and subscriber with one numpy sort and their ids taken from
    the query table's column of them (`IdColumns.ids_pieces`) at once, no Python step
    per match and a few numpy calls per request, not per publication. (Keeping the
    `Matches` instead, each with its list of answers, made every collection of the
    cyclic collector meanwhile rescan them.) Others are grouped match by match."""

    __slots__ = ("_out", "_batch", "_columns")

    def __init__(self):
        self._out: list[tuple] = []
        self._batch: list[tuple] = []  # (head, slots, answer) of the usual ones in a row
        self._columns = None  # the table's columns those slots are of

    def add(self, pub_id: str, matches) -> None:
        n = len(matches)
        if not n:
            return
        head = b'{"publication": ' + _json_string(pub_id).encode()
        solutions = matches.solutions
        columns = matches.id_columns() if hasattr(matches, "id_columns") else None
        if columns is not None and solutions.count(solutions[0]) == n and not matches.has_ask():
            if columns is not self._columns:  # (the first, or the table changed meanwhile)
                self._flush()
                # (None: an id has no UTF-8; then every publication is grouped match by match)
                self._columns = columns if columns.ids_text(matches.slots[:0]) is not None else None
            if self._columns is not None:
                self._batch.append((head, matches.slots, _answer_text(solutions[0]).encode()))
                return
        self._flush()
        self._out += _runs_one_by_one(head, matches)

    def runs(self) -> list[tuple]:
        """Every publication's grouped lines, ``(subscriber, count, line)``, in order."""
        self._flush()
        return self._out

    def _flush(self) -> None:
        if self._batch:
            self._out += _by_slot(self._batch, self._columns)
            self._batch = []


#: The most (publication, subscriber) keys `_by_slot` sorts at once: 16 bits, radix-sorted
#: (with many subscribers, fewer publications at once).
_KEYS = 1 << 16


def _by_slot(batch: list[tuple], columns) -> list[tuple]:
    """The grouped lines of `batch`'s publications (``(head, slots, answer)``, each of
    whose matches share `answer`), their ids taken by slot from `columns`."""
    names, by_slot = columns.subscriber_codes()
    k = len(names)
    step = max(1, _KEYS // k)
    if len(batch) > step:
        return [run for at in range(0, len(batch), step) for run in _by_slot(batch[at:at + step], columns)]
    if len(batch) == 1:
        slots = batch[0][1]
        key = by_slot[slots]
    else:
        slots = np.concatenate([slots for _, slots, _ in batch])
        key = by_slot[slots] + np.repeat(np.arange(0, k * len(batch), k, dtype=np.int32),
                                         [len(slots) for _, slots, _ in batch])
    keys = k * len(batch)
    counts = np.bincount(key, minlength=keys)
    present = np.flatnonzero(counts)
    if len(present) > len(batch):  # some publication has several subscribers: group them
        # (a stable sort: each group keeps query-id order; radix for 16-bit keys)
        slots = slots[np.argsort(key.astype(np.uint16) if keys <= _KEYS else key, kind="stable")]
    sizes = counts[present]
    pieces = columns.ids_pieces(slots, np.cumsum(sizes))
    subscribers: dict[int, bytes] = {}  # code -> its JSON (of those present only)
    out = []
    for key, n, text in zip(present.tolist(), sizes.tolist(), pieces):
        p, code = divmod(key, k)
        head, _, answer = batch[p]
        subscriber = subscribers.get(code)
        if subscriber is None:
            subscriber = subscribers[code] = _subscriber_json(names[code])
        out.append((names[code], n, b"".join((head, _SUBSCRIBER, subscriber, _QUERIES,
                                              text[:-len(_SEP)], _QUERIES_END, answer, b"}"))))
    return out


def _subscriber_json(subscriber) -> bytes:
    return b"null" if subscriber is None else _json_string(subscriber).encode()


def _runs_one_by_one(head: bytes, matches) -> list[tuple]:
    """`grouped_runs` of any matches: each subscriber's consecutive matches with one
    answer make a line."""
    ids, subscribers, solutions = matches.query_ids, matches.subscribers, matches.solutions
    asks = ([rq.is_ask for rq in matches.registered] if matches.has_ask()
            else repeat(False, len(ids)))
    runs: dict = {}  # subscriber -> [[answer, ids], ...]
    for qid, subscriber, answer, ask in zip(ids, subscribers, solutions, asks):
        text = _ASK_ANSWER if ask else _answer_text(answer)
        mine = runs.setdefault(subscriber, [])
        if mine and mine[-1][0] == text:
            mine[-1][1].append(qid)
        else:
            mine.append([text, [qid]])
    out = []
    for subscriber, mine in runs.items():
        middle = _SUBSCRIBER + _subscriber_json(subscriber) + _QUERIES
        for text, qids in mine:
            out.append((subscriber, len(qids), b"".join((
                head, middle, '", "'.join([_json_string(q)[1:-1] for q in qids]).encode(),
                b'"], ', text.encode(), b"}"))))
    return out


def _parts(line: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    """A grouped line's publication part (``{"publication": "..."``), subscriber JSON,
    ids text (``q1", "q2``) and answer (``"bindings": [...]``)."""
    s = line.index(_SUBSCRIBER)
    q = line.index(_QUERIES, s)
    e = line.index(b'"], "', q)
    return line[:s], line[s + len(_SUBSCRIBER):q], line[q + len(_QUERIES):e], line[e + 4:-1]


def expanded(lines: list[bytes]) -> list[bytes]:
    """The match lines of grouped `lines`, in order (UTF-8, no newline)."""
    out: list[bytes] = []
    for line in lines:
        publication, subscriber, ids, answer = _parts(line)
        head = publication + _QUERY
        tail = b'", "subscriber": ' + subscriber + b", " + answer + b"}"
        out += (head + ids.replace(_SEP, tail + b"\n" + head) + tail).split(b"\n")
    return out


def skipped(line: bytes, k: int) -> bytes:
    """A grouped line without its first `k` matches."""
    publication, subscriber, ids, answer = _parts(line)
    kept = _SEP.join(ids.split(_SEP)[k:])
    return b"".join((publication, _SUBSCRIBER, subscriber, _QUERIES, kept, b'"], ', answer, b"}"))


def grouped_of(line: bytes) -> bytes:
    """The grouped line of one match line (rows stored by an older rtf)."""
    q = line.index(_QUERY)
    s = line.index(b'", "subscriber": ', q)
    rest = line[s + len(b'", "subscriber": '):]
    a = rest.index(b', "')  # after the subscriber's JSON (null or a string)
    return b"".join((line[:q], _SUBSCRIBER, rest[:a], _QUERIES, line[q + len(_QUERY):s],
                     b'"], ', rest[a + 2:]))


# -------------------------------------------------------------------- chunks


class Chunk:
    """A subscriber's events ``first_id..last_id`` (consecutive ids, one a match): grouped
    lines with their counts (`counts`, `lines`), or match lines (`counts` None: rows of
    an older rtf); its Server-Sent Events of each kind made when first asked for, once
    for all the subscriber's streams."""

    __slots__ = ("first_id", "last_id", "counts", "lines", "_data", "_grouped")

    def __init__(self, first_id: int, counts: list[int] | None, lines: list[bytes]):
        self.first_id = first_id
        self.counts = counts
        self.lines = lines
        self.last_id = first_id + (sum(counts) if counts is not None else len(lines)) - 1
        self._data = self._grouped = None

    @property
    def size(self) -> int:
        """Matches (one event each on a stream of single matches)."""
        return self.last_id - self.first_id + 1

    @property
    def events(self) -> int:
        """Events on a grouped stream."""
        return len(self.lines)

    def match_lines(self) -> list[bytes]:
        """One line a match, in order."""
        return self.lines if self.counts is None else expanded(self.lines)

    @property
    def data(self) -> bytes:
        """The events, one a match (`match` events)."""
        if self._data is None:
            self._data = sse_matches(self.first_id, self.match_lines())
        return self._data

    @property
    def grouped(self) -> bytes:
        """The events, one a grouped line (`matches` events)."""
        if self._grouped is None:
            if self.counts is None:
                self._grouped = sse_grouped(self.first_id, [1] * len(self.lines),
                                            [grouped_of(line) for line in self.lines])
            else:
                self._grouped = sse_grouped(self.first_id, self.counts, self.lines)
        return self._grouped

    def sse(self, grouped: bool) -> bytes:
        return self.grouped if grouped else self.data

    def after(self, event_id: int) -> "Chunk | None":
        """The part of the chunk above `event_id` (None if nothing is)."""
        if event_id < self.first_id:
            return self
        if event_id >= self.last_id:
            return None
        skip = event_id - self.first_id + 1
        if self.counts is None:
            return Chunk(event_id + 1, None, self.lines[skip:])
        counts, lines = list(self.counts), list(self.lines)
        while counts[0] <= skip:
            skip -= counts.pop(0)
            lines.pop(0)
        if skip:
            counts[0] -= skip
            lines[0] = skipped(lines[0], skip)
        return Chunk(event_id + 1, counts, lines)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Chunk) and (self.first_id, self.last_id) == (other.first_id, other.last_id)
                and self.match_lines() == other.match_lines())

    def __repr__(self) -> str:
        return f"Chunk({self.first_id}..{self.last_id}, {len(self.lines)} lines)"


# ------------------------------------------------------------ stored rows

#: The first byte of an outbox row of grouped lines (a row of match lines starts with
#: its first line, which never holds a NUL byte: JSON escapes it).
_ROW_MARK = b"\0"


def row_data(counts: list[int], lines: list[bytes]) -> bytes:
    """An outbox row of grouped lines: the mark, the counts, then the lines."""
    return b"\n".join([_ROW_MARK + b" ".join(map(b"%d".__mod__, counts)), *lines])


def row_chunk(first_id: int, data: bytes | str) -> Chunk:
    """The chunk of a stored row (`row_data`, or the match lines of an older rtf's)."""
    if isinstance(data, str):
        data = data.encode()
    if data[:1] == _ROW_MARK:
        head, *lines = data.split(b"\n")
        return Chunk(first_id, list(map(int, head[1:].split())), lines)
    return Chunk(first_id, None, data.split(b"\n"))
