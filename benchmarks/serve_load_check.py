"""The checks of benchmarks/serve_load.py: the expected matches from a local engine, compared
with every POST's answer and every subscriber's events (each exactly once), and latencies."""

from __future__ import annotations

import json
import re
import time
import zlib

from serve_load_peers import Feed, Publishing, Received

def percentiles(values) -> dict:
    import numpy as np

    ordered = np.sort(np.asarray(values, dtype=np.float64))
    if not len(ordered):
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    # linear interpolation between closest ranks, as rtf.bench.timing.percentile
    return {"n": len(ordered), "p50_ms": 1000 * float(np.percentile(ordered, 50)),
            "p99_ms": 1000 * float(np.percentile(ordered, 99)), "max_ms": 1000 * float(ordered[-1])}


def timeline(pub: Publishing) -> list[int]:
    """Publications answered in each second of the publishing phase (does the rate hold?)."""
    counts = [0] * (int(pub.ended - pub.started) + 1)
    for p in pub.posts:
        counts[min(len(counts) - 1, int(p.answered - pub.started))] += p.publications
    return counts


#: A match line's parts (`rtf.io.output.match_line`): publication, query, subscriber (JSON),
#: the answer.
LINE = re.compile(r'^\{"publication": ("(?:[^"\\]|\\.)*"), "query": ("(?:[^"\\]|\\.)*"), '
                  r'"subscriber": (null|"(?:[^"\\]|\\.)*"), (.*)\}$', re.M)


def grouped(text: str) -> list[tuple[str | None, int, str]]:
    """The grouped lines (docs/server.md, "Grouped events") of one publication's match
    lines, written here from the lines' parts: ``(subscriber JSON, matches, line)``."""
    runs: dict = {}  # subscriber -> [[answer, queries], ...]
    publication = None
    for publication, query, subscriber, answer in LINE.findall(text):
        mine = runs.setdefault(subscriber, [])
        if mine and mine[-1][0] == answer:
            mine[-1][1].append(query)
        else:
            mine.append([answer, [query]])
    return [(subscriber, len(queries), f'{{"publication": {publication}, "subscriber": {subscriber}, '
                                       f'"queries": [{", ".join(queries)}], {answer}}}')
            for subscriber, mine in runs.items() for answer, queries in mine]


def expected_and_compare(records: list[dict], refused: set[str], algorithm: str,
                         pub: Publishing, feed: Feed, received: list[Received],
                         grouped_events: bool = False) -> dict:
    """Match the posted publications with a local engine holding the same queries; compare
    with the POST answers (checksum and line count) and the subscribers' events (each
    event's checksums against the expected lines', per subscriber). `grouped_events`: the
    answers and events are grouped lines (compared as sets per POST, and per subscriber)."""
    import numpy as np

    from rtf.engine import Engine, freeze_long_lived
    from rtf.errors import QueryError
    from rtf.io.output import match_lines
    from rtf.io.reader import publications_from_bytes

    errors: list[str] = []
    engine = Engine(algorithm)
    t0 = time.perf_counter()
    for rec in records:
        if rec["id"] in refused:
            continue
        try:
            engine.register(rec["query"], rec["id"], rec["subscriber"])
        except QueryError as e:
            errors.append(f"the server registered {rec['id']} but the local engine refuses it: {e}")
    freeze_long_lived()
    local_register_s = time.perf_counter() - t0

    answers_equal = 0
    expected_lines = 0
    expected: dict[str, list[int]] = {}  # subscriber -> checksum key of each expected line
    sent_at = np.full(feed.taken, np.nan)  # publication index -> when its POST was sent
    filter_times: list[float] = []
    filter_cpu = 0.0
    weight: dict[int, int] = {}  # an event's key -> the matches it holds
    publications = 0
    for index, post in enumerate(pub.posts):
        if post.status != 200:
            continue
        sent_at[post.start:post.start + post.count] = post.sent
        posted = publications_from_bytes(feed.body(post.start, post.count), "nt")
        if post.publications != len(posted):
            errors.append(f"POST #{index}: X-RTF-Publications {post.publications}, "
                          f"expected {len(posted)}")
        parts = []
        groups = []
        for p in posted:
            c, t = time.thread_time(), time.perf_counter()
            found = engine.match(p)
            filter_times.append(time.perf_counter() - t)
            filter_cpu += time.thread_time() - c
            publications += 1
            text = match_lines(p.id, found)
            parts.append(text)
            if grouped_events:
                runs = grouped(text)
                groups += [line for _, _, line in runs]
                events = [(json.loads(subscriber), line, n) for subscriber, n, line in runs]
            else:
                events = [(subscriber, line, 1) for subscriber, line in
                          zip(found.subscribers, text.split("\n"))]
            for subscriber, line, n in events:
                if subscriber is not None:
                    data = line.encode()
                    key = zlib.crc32(data) << 32 | zlib.adler32(data)
                    expected.setdefault(subscriber, []).append(key)
                    weight[key] = n
        answer = "".join(parts).encode()
        before = expected_lines
        expected_lines += answer.count(b"\n")
        if grouped_events:
            same = sorted(groups) == sorted(post.body.decode().splitlines())
        else:
            same = zlib.crc32(answer) == post.crc and answer.count(b"\n") == post.lines
        if same:
            answers_equal += 1
        else:
            errors.append(f"POST #{index}: answered {post.lines} matches, expected "
                          f"{expected_lines - before} (or other lines)")

    delivered = duplicates = unexpected = out_of_order = delivered_matches = 0
    latencies = []
    per_subscriber = {}
    for got in received:
        want = np.unique(np.array(expected.get(got.subscriber, []), dtype=np.uint64))
        if len(want) != len(expected.get(got.subscriber, [])):
            errors.append(f"two posts give the same match line for {got.subscriber}")
        ids = np.frombuffer(got.ids, dtype=np.int64)
        out_of_order += int(np.sum(np.diff(ids) <= 0)) if len(ids) > 1 else 0
        keys = (np.frombuffer(got.crc, dtype=np.uint32).astype(np.uint64) << np.uint64(32)
                | np.frombuffer(got.adler, dtype=np.uint32).astype(np.uint64))
        seen, counts = np.unique(keys, return_counts=True)
        known = np.isin(seen, want)
        mine = int(known.sum())
        delivered += mine
        delivered_matches += sum(map(weight.__getitem__, seen[known].tolist()))
        duplicates += int((counts[known] - 1).sum())
        unexpected += int(counts[~known].sum())
        pubs = np.frombuffer(got.pubs, dtype=np.int64)
        ok = (pubs >= 0) & (pubs < len(sent_at))
        lat = np.frombuffer(got.times, dtype=np.float64)[ok] - sent_at[pubs[ok]]
        latencies.append(lat[~np.isnan(lat)])
        if int((~ok).sum()):
            errors.append(f"{got.subscriber}: {int((~ok).sum())} events of unknown publications")
        per_subscriber[got.subscriber] = {"expected": len(want), "delivered": mine,
                                          "received": len(keys), "cuts": got.cuts,
                                          "connections": got.connections}
    expected_events = sum(len(v) for v in expected.values())
    unknown = set(expected) - {got.subscriber for got in received}
    if unknown:
        errors.append(f"matches for subscribers without a stream: {sorted(unknown)[:5]}")
    total_filter = sum(filter_times)
    return {
        "errors": errors,
        "local_engine": {"register_s": local_register_s, "publications": publications,
                         "filter_s": total_filter, "filter_cpu_s": filter_cpu,
                         "publications_per_s": publications / total_filter if total_filter else None,
                         "filter_latency": percentiles(filter_times)},
        "answers": {"posts": sum(1 for p in pub.posts if p.status == 200),
                    "equal": answers_equal, "matches_expected": expected_lines},
        "events": {"expected": expected_events, "delivered": delivered,
                   "duplicates": duplicates, "missed": expected_events - delivered,
                   "unexpected": unexpected, "out_of_order": out_of_order,
                   "grouped": grouped_events, "matches_delivered": delivered_matches},
        "per_subscriber": per_subscriber,
        "publish_to_delivery": percentiles(np.concatenate(latencies).tolist()
                                           if latencies else []),
    }
