"""The load peers of benchmarks/serve_load.py: the publication feed, registration, SSE subscribers, publishers.

Each peer runs in threads of the benchmark's process over loopback (httpx,
httpx-sse), recording when it sent or received what, so that the
benchmark can compute rates, latencies and check every match.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from urllib.parse import quote

import httpx
import httpx_sse

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
                               mix=bench_mix(args.ft_pr, "selective"), prefix="q")
    for i, rec in enumerate(records):
        rec["subscriber"] = f"sub{i % args.subscribers}"
    return records, sample_publications(pubs, len(pubs), args.seed)


def renamed(triples, round_: int):
    """The triples with their subject (wherever it occurs) renamed for round `round_` > 0."""
    subject = triples[0][0]
    if round_ == 0 or not subject.startswith("<"):
        return triples
    new = f"{subject[:-1]}_load{round_ + 1}>"
    return [tuple(new if term == subject else term for term in t) for t in triples]


class Feed:
    """The bodies to post: `batch` publications each, in turn, at most `limit` in all."""

    def __init__(self, pubs: list, batch: int, limit: int):
        self.pubs = pubs
        self.batch = batch
        self.limit = limit
        self.taken = 0
        self._lock = threading.Lock()

    def take(self) -> bytes | None:
        with self._lock:
            start = self.taken
            n = min(self.batch, self.limit - start)
            if n <= 0:
                return None
            self.taken += n
        lines = []
        for k in range(start, start + n):
            round_, i = divmod(k, len(self.pubs))
            for t in renamed(self.pubs[i].triples, round_):
                lines.append(f"{t[0]} {t[1]} {t[2]} .\n")
        return "".join(lines).encode()


# ---------------------------------------------------------- registration


def register(url: str, records: list[dict], connections: int, deadline: float) -> dict:
    """PUT every record over `connections` connections; timings and outcomes."""
    work = iter(records)
    lock = threading.Lock()
    refused: list[str] = []
    errors: list[str] = []

    def worker():
        with httpx.Client(base_url=url, timeout=60) as client:
            while time.monotonic() < deadline:
                with lock:
                    rec = next(work, None)
                if rec is None:
                    return
                try:
                    r = client.put(f"/queries/{quote(rec['id'], safe='')}",
                                   json={"query": rec["query"], "subscriber": rec["subscriber"]})
                except httpx.HTTPError as e:
                    errors.append(f"PUT {rec['id']}: {e!r}")
                    continue
                if r.status_code == 400:
                    refused.append(rec["id"])  # the generator can write what the parser refuses
                elif r.status_code != 201:
                    errors.append(f"PUT {rec['id']}: {r.status_code} {r.text[:200]}")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, name=f"register-{i}") for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    done = len(records) - len(refused) - len(errors)
    return {"queries": done, "refused": refused, "errors": errors, "seconds": seconds,
            "per_s": done / seconds if seconds else 0.0, "connections": connections}


# ----------------------------------------------------------- subscribers


class Subscriber(threading.Thread):
    """One SSE stream: records (receive time, event id, data) of every match event.

    Connects with ``Last-Event-ID`` (0 at first, the last id received after a
    ``cut``), so that nothing the outbox holds is missed; stops when `stop`
    is set and the stream ends.
    """

    def __init__(self, url: str, name: str, stop: threading.Event):
        super().__init__(name=f"subscriber-{name}", daemon=True)
        self.url = url
        self.subscriber = name
        self.stop = stop
        self.connected = threading.Event()
        self.events: list[tuple[float, int, str]] = []
        self.last_id = 0
        self.cuts = 0
        self.gaps: list[str] = []
        self.errors: list[str] = []
        self.connections = 0

    def run(self) -> None:
        timeout = httpx.Timeout(30.0, read=60.0)  # the server pings idle streams every 15 s
        clock = time.perf_counter
        events = self.events
        with httpx.Client(base_url=self.url, timeout=timeout) as client:
            while len(self.errors) < MAX_STREAM_FAILURES:
                cut = False
                try:
                    with httpx_sse.connect_sse(
                            client, "GET", f"/subscribers/{quote(self.subscriber)}/matches",
                            headers={"Last-Event-ID": str(self.last_id)}) as source:
                        source.response.raise_for_status()
                        self.connections += 1
                        self.connected.set()
                        for sse in source.iter_sse():
                            t = clock()
                            if sse.event == "match":
                                event_id = int(sse.id)
                                events.append((t, event_id, sse.data))
                                self.last_id = event_id
                            elif sse.event == "cut":
                                if self.stop.is_set():
                                    return  # the server shuts down
                                self.cuts += 1
                                cut = True
                                break
                            elif sse.event == "gap":
                                self.gaps.append(sse.data)
                except (httpx.HTTPError, httpx_sse.SSEError, ValueError) as e:
                    if self.stop.is_set():
                        return
                    self.errors.append(f"{self.subscriber}: {e!r}")
                    time.sleep(0.2)
                    continue
                if self.stop.is_set():
                    return
                if not cut:
                    self.errors.append(f"{self.subscriber}: the server ended the stream")


# ------------------------------------------------------------ publishers


@dataclass
class Post:
    body: bytes
    sent: float
    answered: float
    status: int
    text: str
    publications: int = 0


@dataclass
class Publishing:
    posts: list[Post] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0


def publish(url: str, feed: Feed, publishers: int, duration: float) -> Publishing:
    """K publisher threads posting `feed`'s bodies for `duration` seconds."""
    out = Publishing()
    headers = {"Content-Type": "application/n-triples"}
    clock = time.perf_counter

    def worker():
        with httpx.Client(base_url=url, timeout=60) as client:
            while clock() < end:
                body = feed.take()
                if body is None:
                    return
                sent = clock()
                try:
                    r = client.post("/publications", content=body, headers=headers)
                except httpx.HTTPError as e:
                    out.errors.append(f"POST: {e!r}")
                    continue
                post = Post(body, sent, clock(), r.status_code, r.text,
                            int(r.headers.get("x-rtf-publications", 0)))
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


def drain(client: httpx.Client, subscribers: list[Subscriber], timeout: float) -> dict:
    """Wait until the subscribers received every event numbered (or `timeout`)."""
    target = client.get("/health").raise_for_status().json()["last_event_id"]
    t0 = time.perf_counter()
    while True:
        received = sum(len(s.events) for s in subscribers)
        if received >= target or time.perf_counter() - t0 > timeout:
            return {"events_numbered": target, "events_received": received,
                    "seconds": time.perf_counter() - t0, "complete": received >= target}
        time.sleep(POLL_S)


