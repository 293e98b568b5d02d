"""Query texts parsed ahead in forked processes while this one indexes them (``--workers``).

Registering a query is parsing it (Lark, ~110 µs a selective query) and
indexing it (~80 µs), one after the other. With `workers` > 1,
`Engine.register_many` and `rtf.io.builder.IndexBuilder` hand the texts to
that many forked processes, `CHUNK` at a time and a few chunks ahead, and
index what comes back, in order, while the next chunks are being parsed:
on two cores the two halves overlap.

Nothing changes in what is registered. A worker parses exactly as this
process would (`rtf.parser.parse_query`, under the engine's text analysis);
its queries come back pickled, and their terms are shared again as they
are unpickled (`rtf.query.terms.shared`). A text a worker could not parse
comes back as it was, and this process parses it itself, so a bad query is
refused with the same error, line and column, at the same position of the
batch; a chunk whose answer cannot come back (an error in the pool, or a
worker that ended abruptly: then every chunk left) is parsed here the same
way, and so is everything where no process can be forked.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import replace
from itertools import islice

from rtf.io.processes import forked_pool
from rtf.query.text import analysed

# (rtf.parser is imported where it is used: `rtf match --index` imports this module,
# through the engine, and never parses a query)

#: Query texts a worker parses at a time (amortises the pickling both ways).
CHUNK = 2048
#: Chunks sent ahead per worker before the first comes back.
IN_FLIGHT = 3


class Ahead:
    """A query text (`text`) parsed by a worker under the engine's text analysis (`query`):
    what `parse_ahead` puts in a record in place of the text. `Engine.register` takes it
    as the text already parsed, and never from elsewhere."""

    __slots__ = ("query", "text")

    def __init__(self, query, text: str):
        self.query = query
        self.text = text


def original(record):
    """`record` as it was given to `parse_ahead` (its text in place of an `Ahead`)."""
    if isinstance(record, tuple) and record and type(record[0]) is Ahead:
        return (record[0].text, *record[1:])
    return record


def parsed_ahead(records: Iterable, workers: int, analysis=None) -> Iterator | None:
    """`parse_ahead` of `records` with `workers` > 1; None with 1 (the records are parsed by
    the engine as they come). ValueError unless `workers` is a positive int. The caller
    closes the iterator when it is done with it (the workers stop then)."""
    if type(workers) is not int or workers < 1:
        raise ValueError(f"workers must be a positive int, not {workers!r}")
    return parse_ahead(records, workers, analysis) if workers > 1 else None


_ANALYSIS: dict = {}  # a worker's text analysis, set as it starts (`_start_worker`)


def parse_ahead(records: Iterable, workers: int, analysis=None) -> Iterator:
    """`records` (``(query, ...)`` tuples, as `Engine.register_many` takes them), in order,
    each whose query is a text a worker parsed under `analysis` with an `Ahead` for it.

    Reads at most ``workers * IN_FLIGHT * CHUNK`` records ahead of the one it
    yields; an error raised by `records` is raised once the records before it
    are yielded, where reading them one by one would have raised it (so a bad
    query earlier in a batch is still the first error). The workers are
    stopped when the iterator ends or is closed.
    """
    from rtf.parser import PARSE_CACHE

    try:
        pool = forked_pool(workers, _start_worker, (analysis,))
    except (OSError, ValueError):  # no fork on this system, or no room for a process: parsed here
        yield from records
        return
    with pool:
        for (chunk, texts, keys, known, _), parsed in pool.ordered_map(
                _parse_chunk, _chunks(iter(records), analysis), workers * IN_FLIGHT,
                argument=_sent, fallback=_parse_here):
            for record, text, key, query, new in zip(chunk, texts, keys, known, parsed):
                if query is None and new is not None:
                    # One object for equal texts, as when parsed here: cached as `parse_query` caches.
                    query = PARSE_CACHE.get(key)
                    if query is None:
                        # Its text is this one, not a copy: the record's string lives on in the
                        # query as when parsed here (a copy left 14 MB more at 100K queries).
                        query = replace(new, text=text)
                        PARSE_CACHE.put(key, query)
                yield record if query is None else (Ahead(query, text), *record[1:])


def _chunks(records: Iterator, analysis) -> Iterator[tuple]:
    """``(records, their texts, their parse-cache keys, the queries already cached, the
    texts to send)``, `CHUNK`
    records at a time; an error of `records` is raised after the chunk read before it."""
    while True:
        chunk = []
        try:
            for record in islice(records, CHUNK):
                chunk.append(record)
        except Exception:
            if chunk:
                yield _prepared(chunk, analysis)
            raise
        if not chunk:
            return
        yield _prepared(chunk, analysis)


def _prepared(chunk: list, analysis) -> tuple:
    from rtf.parser import PARSE_CACHE, cache_key

    texts = [_text_of(record) for record in chunk]
    keys = [None if text is None else cache_key(text, analysis) for text in texts]
    # A text this process parsed or received before is not sent again (as
    # `parse_query` would not parse it again): its query is the one cached.
    known = [None if key is None else PARSE_CACHE.get(key) for key in keys]
    sent = [text if query is None else None for text, query in zip(texts, known)]
    return chunk, texts, keys, known, sent


def _sent(item: tuple) -> list:
    return item[4]


def _parse_here(item: tuple) -> list:
    """A chunk whose parse did not come back: its records go to the engine as they are."""
    return [None] * len(item[0])


def _text_of(record) -> str | None:
    """The query text of `record`, or None (not a text: it goes to the engine as it is)."""
    if isinstance(record, tuple) and record and type(record[0]) is str:
        return record[0]
    return None


def _start_worker(analysis) -> None:
    """In a worker: it parses under `analysis`. (The parser's caches get locks of their
    own at the fork, `rtf.parser.cache.fork_safe`; a Ctrl-C, which reaches the whole
    process group, ends the worker quietly, `rtf.io.processes`.)"""
    _ANALYSIS["analysis"] = analysis


def _parse_chunk(texts: list) -> list:
    """In a worker: each text's parsed query (its text left out: the parent has it), or None
    where it has none or fails to parse."""
    from rtf.parser import parse_query

    analysis = _ANALYSIS.get("analysis")
    parsed: list = []
    with analysed(analysis) if analysis is not None else nullcontext():
        for text in texts:
            try:
                parsed.append(None if text is None else replace(parse_query(text), text=""))
            except Exception:  # this process parses it again and reports it
                parsed.append(None)
    return parsed
