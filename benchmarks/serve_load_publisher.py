"""CPU of ``rtf serve``'s publishing path in-process, without HTTP (issue 23).

`serve_load.py` measures the whole server over loopback, with the server's
share of a shared machine in every figure. This program measures the part
that bounds it, the publisher thread, alone and steadily: a `Broker` over a
temporary data folder holds ``--queries`` selective queries (the same
workload as serve_load.py, spread over ``--subscribers`` subscribers), an
event loop in a thread holds one live stream per subscriber (each taking its
chunks as a connection would), and ``--groups`` groups of ``--jobs`` bodies
of ``--batch`` publications (N-Triples, as serve_load.py posts them) are
submitted to the publisher thread, a group at a time.

It reports, per publication: the publisher thread's CPU time (user + system,
from /proc), the engine's own time (``rtf_filter_seconds``), their
difference (the publisher's work outside the engine: reading the body,
`rtf match` lines, grouping by subscriber, the outbox, the SSE text), and the
whole process's CPU time. ``--profile FILE`` writes a cProfile of the
publisher thread's groups (pstats format) and prints its top functions.

    python benchmarks/serve_load_publisher.py                 # 10K queries, 600 groups of 2 x 10
    python benchmarks/serve_load_publisher.py --profile publisher.prof

Linux only (per-thread CPU from /proc). Docs: docs/benchmarks.md, "Issue 23, round 2".
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

from serve_load_peers import Feed, load_workload

from rtf.server.broker import Broker
from rtf.server.config import BrokerConfig
from rtf.server.publisher import Job
from rtf.server.registry import Record

#: Groups run before measuring (caches, the outbox's first pages).
WARM_UP_GROUPS = 50


def thread_cpu(native_id: int) -> float:
    """CPU seconds (user + system) of a thread of this process."""
    fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Streams:
    """An event loop in a thread with one open stream per subscriber, each taking
    its chunks as `rtf.server.api_streams` does."""

    def __init__(self, broker: Broker, subscribers: list[str]):
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, args=(broker, subscribers))
        self._thread.start()
        self._ready.wait()

    def _run(self, broker: Broker, subscribers: list[str]) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main(broker, subscribers))

    async def _main(self, broker: Broker, subscribers: list[str]) -> None:
        self._stop = asyncio.Event()
        broker.hub.bind(asyncio.get_running_loop())
        tasks = [asyncio.create_task(self._take(broker.hub.open(s))) for s in subscribers]
        self._ready.set()
        await self._stop.wait()
        broker.hub.close_all()
        await asyncio.gather(*tasks)

    @staticmethod
    async def _take(stream) -> None:
        while (chunks := await stream.next_chunks()) is not None:
            b"".join(c.data for c in chunks)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        self.loop.close()


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="serve_load_publisher.py",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", "-n", type=int, default=10_000, help="queries (default 10000)")
    p.add_argument("--subscribers", "-s", type=int, default=8, help="subscribers (default 8)")
    p.add_argument("--batch", type=int, default=10, help="publications per body (default 10)")
    p.add_argument("--jobs", type=int, default=2, help="bodies per group (default 2)")
    p.add_argument("--groups", type=int, default=600, help="groups measured (default 600)")
    p.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    p.add_argument("--mix", default="selective", choices=("selective", "paper"),
                   help="the queries, as serve_load.py's --mix (default selective)")
    p.add_argument("--ft-pr", type=int, default=50, metavar="PCT", help="FT_pr (default 50)")
    p.add_argument("--publications", nargs="+", metavar="FILE",
                   help="RDF files (default: the DBpedia sample)")
    p.add_argument("--profile", metavar="FILE", help="cProfile of the measured groups")
    args = p.parse_args(argv)
    for name in ("queries", "subscribers", "batch", "jobs", "groups"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    records, pubs = load_workload(args)
    folder = tempfile.mkdtemp(prefix="rtf-publisher-")
    broker = Broker(BrokerConfig(Path(folder)))
    streams = None
    try:
        broker.registry.put_many([Record(i + 1, r["id"], r["query"], r["subscriber"])
                                  for i, r in enumerate(records)])
        streams = Streams(broker, [f"sub{i}" for i in range(args.subscribers)])
        feed = Feed(pubs, args.batch, sys.maxsize)
        groups = [[feed.body((g * args.jobs + j) * args.batch, args.batch)
                   for j in range(args.jobs)] for g in range(WARM_UP_GROUPS + args.groups)]
        publisher, filtered = broker.publisher, broker.metrics.filter_seconds

        def run(bodies_by_group):
            for bodies in bodies_by_group:
                jobs = [publisher.submit(Job(None, reader=partial(broker.read, b, "nt")))
                        for b in bodies]
                for job in jobs:
                    job.sync_future.result()

        run(groups[:WARM_UP_GROUPS])
        tid = publisher._thread.native_id
        profile = cProfile.Profile() if args.profile else None
        engine0, thread0, process0 = filtered._sum.get(), thread_cpu(tid), time.process_time()
        if profile is not None:
            _profile_thread(publisher, profile, partial(run, groups[WARM_UP_GROUPS:]))
        else:
            run(groups[WARM_UP_GROUPS:])
        engine = filtered._sum.get() - engine0
        thread = thread_cpu(tid) - thread0
        process = time.process_time() - process0
        n = args.groups * args.jobs * args.batch
        print(f"{n:,} publications ({args.groups} groups of {args.jobs} x {args.batch}), "
              f"{args.queries:,} queries, {args.subscribers} subscribers, "
              f"{broker.outbox.last_id:,} events; load average {os.getloadavg()[0]:.2f}")
        print(f"publisher thread CPU {1000 * thread / n:.4f} ms/publication: engine "
              f"{1000 * engine / n:.4f}, outside the engine {1000 * (thread - engine) / n:.4f}; "
              f"process CPU {1000 * process / n:.4f} ms/publication")
        if profile is not None:
            profile.dump_stats(args.profile)
            pstats.Stats(args.profile).sort_stats("tottime").print_stats(20)
    finally:
        if streams is not None:
            streams.close()
        broker.close()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def _profile_thread(publisher, profile: cProfile.Profile, run) -> None:
    """`run()` with `profile` on inside the publisher thread (enabled and disabled by
    jobs of its own, so that only the groups between are profiled)."""
    switch = [profile.enable, profile.disable]

    def toggle():
        switch.pop(0)()
        return []

    publisher.submit(Job(None, reader=toggle)).sync_future.result()
    run()
    publisher.submit(Job(None, reader=toggle)).sync_future.result()


if __name__ == "__main__":
    sys.exit(main())
