"""What the replay runs in the Spark executors: parsing dump lines, filtering records, worker figures.

The functions here are plain functions (`parse_lines`, `filter_records`),
so they are tested without Spark. The engines themselves are kept by
`rtf.spark.engines` (one per Python worker).
"""

from __future__ import annotations

import os
import pickle
import time
import zlib
from collections.abc import Iterable, Iterator
from itertools import groupby
from operator import itemgetter

from rtf.io.publication import Publication
from rtf.query.terms import display_iri

#: Characters of lines parsed in one pyoxigraph call (as `rtf.io.sources.CHUNK_BYTES`).
BATCH_CHARS = 1 << 20

#: Kept bad-line examples per partition (the counts are always complete).
MAX_EXAMPLES = 3


def build_group_engines(algorithm: str, queries: str, k: int, strategy: str,
                        taxonomy: str | None = None):
    """(groups, one `GroupMatcher` or None per group, the taxonomy): the queries
    of the file split into `k` groups by `strategy` (`rtf.spark.partition`)."""
    from rtf.engine import Engine
    from rtf.io.queries import load_queries, register_all
    from rtf.io.taxonomy import Taxonomy
    from rtf.spark.partition import (
        build_group_matchers,
        parse_records,
        partition_queries,
    )

    tax = Taxonomy.from_file(taxonomy) if taxonomy else Taxonomy.empty()
    records = parse_records(load_queries(queries), str(queries))
    groups = partition_queries([(r["id"], r["query"]) for r in records], k, strategy)
    matchers = build_group_matchers(groups, records, lambda: Engine(algorithm, taxonomy=tax),
                                    register_all, str(queries))
    return groups, matchers, tax


def pickle_blob(engine) -> bytes:
    """The engine as bytes to broadcast (pickle, highest protocol).

    The taxonomy pickles as its edges only; the per-literal text caches are
    module globals, not part of the engine, so nothing is shipped twice.
    """
    return pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)


def unpickle_blob(blob: bytes):
    return pickle.loads(blob)


#: The query-group router of the running job (`rtf.spark.partition.Router`), by broadcast token.
_ROUTERS: dict[str, object] = {}


def engine_memory(blob: bytes) -> int:
    """Bytes an engine takes once unpickled (tracemalloc: Python allocations, taxonomy included)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        engine = unpickle_blob(blob)
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del engine
    return size


def worker_rss_mb() -> float | None:
    """Resident memory of this Python worker now, in MB (None where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def max_rss(figures) -> float | None:
    """The largest ``rss_mb`` among tasks' figures (MB, one decimal), None if none has one."""
    values = [f["rss_mb"] for f in figures if f.get("rss_mb") is not None]
    return round(max(values), 1) if values else None


def subject_partition(subject: str) -> int:
    """Partition hash of a subject key: CRC-32, the same in every worker and run."""
    return zlib.crc32(subject.encode("utf-8"))


def _batches(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    chars = 0
    for line in lines:
        batch.append(line)
        chars += len(line) + 1
        if chars >= size:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def parse_lines(lines: Iterable[str], source: str, counters: dict,
                batch_chars: int = BATCH_CHARS) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """Subject runs ``(subject, [(p, o), ...])`` of N-Triples `lines`.

    Lines are parsed a batch at a time with `parse_ntriples_lines`; a run is
    a maximal sequence of consecutive triples with one subject inside a
    batch (runs cut by a batch boundary are merged by the grouping stage).
    `counters` receives ``lines``, ``bytes`` (UTF-8, newlines included),
    ``triples``, ``bad_lines``, ``replacement_char_lines`` (lines holding
    U+FFFD, which is what Hadoop makes of invalid UTF-8) and ``parse_s``, and
    ``bad_examples`` (up to `MAX_EXAMPLES` first bad lines).
    """
    from rtf.io.reader import parse_ntriples_lines

    first = itemgetter(0)
    start = 1
    for batch in _batches(lines, batch_chars):
        t = time.perf_counter()
        # Line numbers in the warning count from this batch's first line.
        triples, bad = parse_ntriples_lines(batch, f"{source} (batch at line {start} of the split)")
        start += len(batch)
        counters["parse_s"] = counters.get("parse_s", 0.0) + time.perf_counter() - t
        counters["lines"] = counters.get("lines", 0) + len(batch)
        text = "\n".join(batch)
        counters["bytes"] = counters.get("bytes", 0) + len(text.encode("utf-8")) + 1
        if "\ufffd" in text:
            # Hadoop decodes lines as UTF-8 and replaces invalid bytes with U+FFFD
            # (where `rtf match` would reject the line): count such lines.
            counters["replacement_char_lines"] = (counters.get("replacement_char_lines", 0)
                                                  + sum("\ufffd" in line for line in batch))
        counters["triples"] = counters.get("triples", 0) + len(triples)
        if bad:
            counters["bad_lines"] = counters.get("bad_lines", 0) + bad
            examples = counters.setdefault("bad_examples", [])
            if len(examples) < MAX_EXAMPLES:
                examples += _bad_examples(batch, MAX_EXAMPLES - len(examples))
        for subject, run in groupby(triples, first):
            yield subject, [(p, o) for _, p, o in run]


def _bad_examples(batch: list[str], n: int) -> list[str]:
    """Up to `n` of the lines of `batch` that do not parse alone (for the report)."""
    import pyoxigraph as ox

    out = []
    for line in batch:
        try:
            ox.parse(line, ox.RdfFormat.N_TRIPLES).__next__()
        except StopIteration:  # a blank or comment line
            continue
        except SyntaxError as e:
            text = line if len(line) <= 200 else line[:200] + "..."
            out.append(f"{text}  <- {e.msg.split(': ', 1)[-1]}")
            if len(out) == n:
                break
    return out


def publication_of(subject: str, pairs: list[tuple[str, str]]) -> Publication:
    """The publication of a grouped subject (id as in `rtf match`: the IRI without brackets).

    The terms are pyoxigraph's (`parse_ntriples_lines`): canonical, not checked again."""
    return Publication.from_canonical(display_iri(subject), [(subject, p, o) for p, o in pairs])


def filter_records(engine, records: Iterable[tuple[str, list[tuple[str, str]]]],
                   stats: dict) -> Iterator[str]:
    """Match each grouped subject against `engine`; yield `rtf match` output lines.

    `stats` receives ``publications``, ``triples``, ``matches`` and
    ``filter_s`` (time inside ``engine.match`` only).
    """
    from rtf.io.output import match_line

    clock = time.perf_counter
    publications = triples = matches = 0
    filter_s = 0.0
    try:
        for subject, pairs in records:
            pub = publication_of(subject, pairs)
            t = clock()
            found = engine.match(pub)
            filter_s += clock() - t
            publications += 1
            triples += len(pub)
            matches += len(found)
            for m in found:
                yield match_line(pub.id, m)
    finally:
        stats["publications"] = stats.get("publications", 0) + publications
        stats["triples"] = stats.get("triples", 0) + triples
        stats["matches"] = stats.get("matches", 0) + matches
        stats["filter_s"] = stats.get("filter_s", 0.0) + filter_s


