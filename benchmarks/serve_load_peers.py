"""The load peers of benchmarks/serve_load.py: the publication feed, registration, SSE subscribers, publishers.

Registration and the publishers run in threads of the benchmark's process;
each subscriber runs in a process of its own and reads its stream with a
regular expression over whole chunks (no Python object per event but the
few numbers it keeps), so that the benchmark's side of the 2-core machine
costs far less than the server's. Every peer records when it sent or
received what, so that the benchmark can compute rates, latencies and
check every match.
"""

from __future__ import annotations

import array
import json
import multiprocessing
import re
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from urllib.parse import quote

import httpx

from rtf.io import datasets

#: Seconds between two polls while waiting for streams or for the drain.
POLL_S = 0.05
#: Consecutive stream failures after which a subscriber gives up.
MAX_STREAM_FAILURES = 20


# -------------------------------------------------------------- workload


def load_workload(args) -> tuple[list[dict], list]:
    """The query records (id, query, subscriber) and the publications to post, in order."""
    from rtf.bench.inputs import bench_mix, load_publications, sample_publications
    from rtf.bench.workload import generate_queries

    paths = args.publications or [str(p) for p in datasets.dbpedia_files()]
    if not paths:
        raise SystemExit(f"serve_load: {datasets.missing_message()} (or pass --publications)")
    pubs = load_publications(paths)
    records = generate_queries(pubs, args.queries, seed=args.seed,
                               mix=bench_mix(args.ft_pr, args.mix), prefix="q")
    for i, rec in enumerate(records):
        rec["subscriber"] = f"sub{i % args.subscribers}"
    return records, sample_publications(pubs, len(pubs), args.seed)


def renamed(triples, round_: int, texts: bool = False):
    """The triples with their subject (wherever it occurs) renamed for round `round_` > 0;
    with `texts`, every literal also gets the word ``r<round>`` (no text repeats)."""
    subject = triples[0][0]
    if round_ == 0 or not subject.startswith("<"):
        return triples
    new = f"{subject[:-1]}_load{round_ + 1}>"
    out = []
    for t in triples:
        s, p, o = (new if term == subject else term for term in t)
        if texts and o.startswith('"'):
            end = o.rindex('"')
            o = f"{o[:end]} r{round_}{o[end:]}"
        out.append((s, p, o))
    return out


class Feed:
    """The bodies to post: `batch` publications each, in turn, at most `limit` in all.
    Publication k of the feed is the same whenever it is asked for (`body`)."""

    def __init__(self, pubs: list, batch: int, limit: int, distinct_texts: bool = False):
        self.pubs = pubs
        self.batch = batch
        self.limit = limit
        self.distinct_texts = distinct_texts
        self.taken = 0
        self._lock = threading.Lock()

    def take(self) -> tuple[int, int] | None:
        """The next body's publications: (first index, count); None once all are taken."""
        with self._lock:
            start = self.taken
            n = min(self.batch, self.limit - start)
            if n <= 0:
                return None
            self.taken += n
        return start, n

    def body(self, start: int, n: int) -> bytes:
        lines = []
        for k in range(start, start + n):
            round_, i = divmod(k, len(self.pubs))
            for t in renamed(self.pubs[i].triples, round_, self.distinct_texts):
                lines.append(f"{t[0]} {t[1]} {t[2]} .\n")
        return "".join(lines).encode()

    def publication_ids(self, n: int) -> dict[bytes, int]:
        """The JSON text of the id of each of the first `n` publications -> its index
        (how a subscriber tells which publication an event is of)."""
        out = {}
        for k in range(n):
            round_, i = divmod(k, len(self.pubs))
            subject = renamed(self.pubs[i].triples, round_)[0][0]
            pub_id = subject[1:-1] if subject.startswith("<") else subject
            out[json.dumps(pub_id, ensure_ascii=False)[1:-1].encode()] = k
        return out


# ---------------------------------------------------------- registration


def register(url: str, records: list[dict], connections: int, deadline: float,
             bulk: int = 0) -> dict:
    """PUT every record over `connections` connections (or POST them `bulk` per body);
    timings and outcomes."""
    lock = threading.Lock()
    refused: list[str] = []
    errors: list[str] = []
    if bulk:
        work = iter([records[i:i + bulk] for i in range(0, len(records), bulk)])
    else:
        work = iter(records)

    def put_one(client, rec):
        r = client.put(f"/queries/{quote(rec['id'], safe='')}",
                       json={"query": rec["query"], "subscriber": rec["subscriber"]})
        if r.status_code == 400:
            refused.append(rec["id"])  # the generator can write what the parser refuses
        elif r.status_code != 201:
            errors.append(f"PUT {rec['id']}: {r.status_code} {r.text[:200]}")

    def post_many(client, recs):
        body = "".join(json.dumps({"id": r["id"], "query": r["query"],
                                   "subscriber": r["subscriber"]}) + "\n" for r in recs)
        r = client.post("/queries", params={"atomic": "false"}, content=body.encode(),
                        headers={"Content-Type": "application/x-ndjson"})
        if r.status_code != 200:
            errors.append(f"POST /queries: {r.status_code} {r.text[:200]}")
            return
        for line in r.text.splitlines():
            result = json.loads(line)
            if result["status"] == 400:
                refused.append(result["id"])
            elif result["status"] not in (200, 201):
                errors.append(f"POST /queries line {result['line']}: {result}")

    def worker():
        with httpx.Client(base_url=url, timeout=600) as client:
            while time.monotonic() < deadline:
                with lock:
                    item = next(work, None)
                if item is None:
                    return
                try:
                    (post_many if bulk else put_one)(client, item)
                except httpx.HTTPError as e:
                    errors.append(f"registering: {e!r}")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, name=f"register-{i}") for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    done = len(records) - len(refused) - len(errors)
    return {"queries": done, "refused": refused, "errors": errors, "seconds": seconds,
            "per_s": done / seconds if seconds else 0.0, "connections": connections,
            "bulk": bulk}


# ----------------------------------------------------------- subscribers

#: A match event as the server writes it; groups: id, data, the publication's JSON text.
#: (A grouped stream's `matches` events, one per publication and answer, are read alike.)
MATCH_EVENT = re.compile(rb'id: (\d+)\r?\nevent: match(?:es)?\r?\ndata: ({"publication": "((?:[^"\\]|\\.)*)"'
                         rb'[^\r\n]*)\r?\n\r?\n')


@dataclass
class Received:
    """What one subscriber received: per match event its receive time, id, the index of
    its publication in the feed (-1: unknown) and two checksums of its data."""

    subscriber: str
    times: array.array = field(default_factory=lambda: array.array("d"))
    ids: array.array = field(default_factory=lambda: array.array("q"))
    pubs: array.array = field(default_factory=lambda: array.array("q"))
    crc: array.array = field(default_factory=lambda: array.array("I"))
    adler: array.array = field(default_factory=lambda: array.array("I"))
    cuts: int = 0
    gaps: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    connections: int = 0
    last_id: int = 0

    def take(self, block: bytes, pub_index: dict[bytes, int], clock=time.perf_counter) -> None:
        """Record the match events of `block` (whole events)."""
        found = MATCH_EVENT.findall(block)
        if not found:
            return
        t = clock()
        ids = [int(f[0]) for f in found]
        data = [f[1] for f in found]
        self.times.extend([t] * len(found))
        self.ids.extend(ids)
        self.pubs.extend([pub_index.get(f[2], -1) for f in found])
        self.crc.extend(map(zlib.crc32, data))
        self.adler.extend(map(zlib.adler32, data))
        self.last_id = ids[-1]


def _other_events(block: bytes) -> list[tuple[str, dict]]:
    """The events of `block` that are not matches (open, gap, cut): (event, data)."""
    out = []
    for event in block.replace(b"\r\n", b"\n").split(b"\n\n"):
        kind = data = None
        for line in event.split(b"\n"):
            if line.startswith(b"event: "):
                kind = line[7:].decode()
            elif line.startswith(b"data: "):
                data = line[6:]
        if kind not in (None, "match") and data is not None:
            out.append((kind, json.loads(data)))
    return out


class StreamEnded(Exception):
    """The server closed the stream (or answered something else than 200)."""


def raw_stream(url: str, path: str, last_id: int, timeout: float = 60.0):
    """The body of ``GET path`` as it arrives (HTTP/1.1 chunked transfer decoded here):
    a plain socket, so that reading costs a few calls per chunk of events, not per
    event or per read as an HTTP client library's layers do."""
    host, _, port = url.removeprefix("http://").rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
                     f"Last-Event-ID: {last_id}\r\n\r\n".encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = sock.recv(1 << 20)
            if not data:
                raise StreamEnded("the server closed the connection before answering")
            buf += data
        head, _, buf = buf.partition(b"\r\n\r\n")
        status = head.split(b" ", 2)[1]
        if status != b"200":
            raise StreamEnded(f"the server answered {head.splitlines()[0].decode(errors='replace')}")
        if b"transfer-encoding: chunked" not in head.lower():
            raise StreamEnded("the stream is not chunked")
        while True:
            end = buf.find(b"\r\n")
            if end >= 0:
                size = int(buf[:end].split(b";")[0], 16)
                if size == 0:
                    return
                if len(buf) >= end + 2 + size + 2:
                    yield buf[end + 2:end + 2 + size]
                    buf = buf[end + 2 + size + 2:]
                    continue
            data = sock.recv(1 << 20)
            if not data:
                return
            buf += data


def subscribe(url: str, name: str, pub_index: dict[bytes, int], stop, connected, out,
              grouped: bool = False) -> None:
    """One subscriber (the body of a subscriber process): read the stream from event 0,
    reconnecting after a cut with Last-Event-ID; send `Received` to `out` once `stop`
    is set and the stream ended."""
    got = Received(name)
    path = f"/subscribers/{quote(name)}/matches" + ("?grouped=true" if grouped else "")
    while len(got.errors) < MAX_STREAM_FAILURES:
        cut = False
        try:
            rest = b""
            for chunk in raw_stream(url, path, got.last_id):
                if not got.connections:
                    connected.set()
                rest += chunk
                # events end with a blank line (LF, or CRLF from older servers)
                end = max(rest.rfind(b"\n\n") + 2, rest.rfind(b"\r\n\r\n") + 4)
                if end < 4:
                    continue
                block, rest = rest[:end], rest[end:]
                got.take(block, pub_index)
                if b"event: cut" in block or b"event: gap" in block:
                    for kind, data in _other_events(block):
                        if kind == "gap":
                            got.gaps.append(data)
                        elif kind == "cut":
                            cut = True
                if cut:
                    break
            got.connections += 1
        except (OSError, StreamEnded, ValueError) as e:
            if stop.is_set():
                break
            got.errors.append(f"{name}: {e!r}")
            time.sleep(0.2)
            continue
        if stop.is_set():
            break
        if cut:
            got.cuts += 1
        else:
            got.errors.append(f"{name}: the server ended the stream")
    out.send(got)
    out.close()


class Subscriber:
    """A subscriber process (`subscribe`); `result()` once it ended."""

    def __init__(self, url: str, name: str, pub_index: dict[bytes, int], grouped: bool = False):
        ctx = multiprocessing.get_context("fork")  # the publication index is inherited
        self.subscriber = name
        self.stop = ctx.Event()
        self.connected = ctx.Event()
        self._recv, send = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=subscribe, name=f"subscriber-{name}", daemon=True,
                                   args=(url, name, pub_index, self.stop, self.connected, send, grouped))
        self._received: Received | None = None

    def start(self) -> None:
        self.process.start()

    def result(self, timeout: float = 60) -> Received:
        if self._received is None:
            if self._recv.poll(timeout):
                self._received = self._recv.recv()
            else:
                self._received = Received(self.subscriber, errors=[
                    f"{self.subscriber}: the subscriber process sent nothing in {timeout:g} s"])
            self.process.join(10)
            if self.process.is_alive():
                self.process.kill()
        return self._received


# ------------------------------------------------------------ publishers


@dataclass
class Post:
    start: int  # the feed's index of its first publication
    count: int
    sent: float
    answered: float
    status: int
    crc: int  # of the answer's body
    lines: int
    publications: int = 0
    error: str = ""
    body: bytes = b""  # a grouped answer, checked once the run is over


@dataclass
class Publishing:
    posts: list[Post] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0


def publish(url: str, feed: Feed, publishers: int, duration: float,
            grouped: bool = False) -> Publishing:
    """K publisher threads posting `feed`'s bodies for `duration` seconds (`grouped`:
    asking for grouped answers)."""
    out = Publishing()
    headers = {"Content-Type": "application/n-triples"}
    clock = time.perf_counter

    def worker():
        with httpx.Client(base_url=url, timeout=120) as client:
            while clock() < end:
                taken = feed.take()
                if taken is None:
                    return
                body = feed.body(*taken)
                sent = clock()
                try:
                    r = client.post("/publications", content=body, headers=headers,
                                    params={"grouped": "true"} if grouped else None)
                except httpx.HTTPError as e:
                    out.errors.append(f"POST: {e!r}")
                    continue
                answered = clock()
                post = Post(taken[0], taken[1], sent, answered, r.status_code,
                            zlib.crc32(r.content), r.content.count(b"\n"),
                            int(r.headers.get("x-rtf-publications", 0)),
                            body=r.content if grouped else b"")
                out.posts.append(post)
                if r.status_code != 200:
                    out.errors.append(f"POST: {r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=worker, name=f"publisher-{i}") for i in range(publishers)]
    out.started = clock()
    end = out.started + duration
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.ended = clock()
    return out


def drain(client: httpx.Client, events_expected_by, timeout: float) -> dict:
    """Wait until the server's streams sent every event numbered (rtf_events_sent reaches
    the outbox's newest id), or `timeout`."""
    target = client.get("/health").raise_for_status().json()["last_event_id"]
    t0 = time.perf_counter()
    while True:
        sent = events_expected_by()
        if sent >= target or time.perf_counter() - t0 > timeout:
            return {"events_numbered": target, "events_sent": sent,
                    "seconds": time.perf_counter() - t0, "complete": sent >= target}
        time.sleep(POLL_S)
