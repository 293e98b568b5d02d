"""Load benchmark of ``rtf serve`` (issue 12): K publishers and S subscribers against N queries.

Not a timed test: a program that measures, bounded in count and time, over
loopback only. It

1. starts its own ``rtf serve --data TMPDIR --port 0`` (the port comes from
   the "listening on" line);
2. registers ``--queries`` N queries of the selective workload
   (``rtf gen-queries --selective``: `rtf.bench.workload.Mix.selective`, FT_pr
   50 %, fixed seed) generated from the DBpedia sample, spread over S
   subscribers ``sub0..sub{S-1}``, with ``PUT /queries/{id}`` over
   ``--connections`` connections, and times it;
3. connects S Server-Sent Events streams (``GET /subscribers/NAME/matches``,
   one thread each, httpx + httpx_sse) and waits until the server counts S
   open streams;
4. runs K publisher threads for ``--duration`` seconds (or until
   ``--max-publications``): each posts ``--batch`` publications per
   ``POST /publications`` body (N-Triples), taken in turn from the sample
   in a fixed random order (`rtf.bench.inputs.sample_publications`); a
   publication posted a second time gets its subject renamed
   (``..._load2``), so every posted publication, hence every match line,
   is unique;
5. waits until the subscribers have received every event the server
   numbered (``/health``'s ``last_event_id``), or ``--drain-timeout``;
6. stops the server, then computes the expected matches independently with
   a local `rtf.engine.Engine` holding the same queries, for the
   publications actually posted, and compares them with (a) every POST's
   answer and (b) what each subscriber received: every event exactly once
   (duplicates, misses and unexpected events counted apart).

Latency: publish-to-delivery is the time a subscriber thread received an
event minus the time the publisher thread sent the POST of its
publication (one process, one monotonic clock: `time.perf_counter`); the
POST round trip is also reported. Both as p50 / p99 / max.

The report is a table on stdout and, with ``--json FILE``, a JSON
document. The exit status is 0 when there were no errors and every
expected match was answered and delivered exactly once, else 1 (2 when
the hard ``--timeout`` struck). Everything runs on one machine: the
server, the publishers and the subscribers share its cores, so read the
rates with the ``cpu`` figures beside them.

    python benchmarks/serve_load.py                                  # K=2, S=8, 10K queries, 30 s
    python benchmarks/serve_load.py --publishers 4 --json load.json
    python benchmarks/serve_load.py --profile server.svg             # py-spy flame graph of the server
    python benchmarks/serve_load.py --queries 200 --duration 2 --publications small.nt.gz   # a smoke run

Needs httpx and httpx-sse (``pip install httpx httpx-sse``) and, for
``--profile``, py-spy. Docs: docs/benchmarks.md, "rtf serve under load".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

try:
    import httpx
    import httpx_sse  # noqa: F401 (the peers' SSE client: checked here, with a message)
except ImportError as e:  # pragma: no cover - a message rather than a traceback
    sys.exit(f"serve_load: {e.name} is missing: pip install httpx httpx-sse")

import psutil
from prometheus_client.parser import text_string_to_metric_families

import rtf
from rtf.io import datasets
from rtf.server.process import ServerProcess
from serve_load_peers import MAX_STREAM_FAILURES, POLL_S, Feed, Publishing, Subscriber, drain, load_workload, publish, register

#: Seconds the server may take to start serving (it may rebuild an index).
STARTUP_TIMEOUT_S = 120
#: Seconds the server may take to stop (it writes a snapshot) before it is killed.
SHUTDOWN_TIMEOUT_S = 120



# ---------------------------------------------------------------- server


def server_metrics(client: httpx.Client) -> dict[str, float]:
    """The server's Prometheus samples without labels, by name."""
    text = client.get("/metrics").raise_for_status().text
    return {sample.name: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if not sample.labels}


# -------------------------------------------------------------- analysis


def percentiles(values: list[float]) -> dict:
    from rtf.bench.timing import percentile

    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    return {"n": len(ordered), "p50_ms": 1000 * percentile(ordered, 0.50),
            "p99_ms": 1000 * percentile(ordered, 0.99), "max_ms": 1000 * ordered[-1]}


def timeline(pub: Publishing) -> list[int]:
    """Publications answered in each second of the publishing phase (does the rate hold?)."""
    counts = [0] * (int(pub.ended - pub.started) + 1)
    for p in pub.posts:
        counts[min(len(counts) - 1, int(p.answered - pub.started))] += p.publications
    return counts


def expected_and_compare(records: list[dict], refused: set[str], algorithm: str,
                         pub: Publishing, subscribers: list[Subscriber]) -> dict:
    """Match the posted publications with a local engine holding the same queries; compare
    with the POST answers and the subscribers' events."""
    from rtf.io.output import match_line
    from rtf.engine import Engine, freeze_long_lived
    from rtf.errors import QueryError
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

    answers_equal = answers_reordered = 0
    expected_lines = 0
    expected: dict[str, dict[str, int]] = {}  # subscriber -> line -> post index
    filter_times: list[float] = []
    publications = 0
    for index, post in enumerate(pub.posts):
        if post.status != 200:
            continue
        lines: list[str] = []
        posted = publications_from_bytes(post.body, "nt")
        if post.publications != len(posted):
            errors.append(f"POST #{index}: X-RTF-Publications {post.publications}, "
                          f"expected {len(posted)}")
        for p in posted:
            t = time.perf_counter()
            found = engine.match(p)
            filter_times.append(time.perf_counter() - t)
            publications += 1
            for m in found:
                line = match_line(p.id, m)
                lines.append(line)
                if m.subscriber is not None:
                    mine = expected.setdefault(m.subscriber, {})
                    if line in mine:
                        errors.append(f"two posts give the same match line: {line[:200]}")
                    mine[line] = index
        expected_lines += len(lines)
        answer = post.text.splitlines()
        if answer == lines:
            answers_equal += 1
        elif sorted(answer) == sorted(lines):
            answers_reordered += 1
        else:
            errors.append(f"POST #{index}: answered {len(answer)} matches, expected {len(lines)}")

    delivered = duplicates = unexpected = out_of_order = 0
    latencies: list[float] = []
    per_subscriber = {}
    for s in subscribers:
        mine = expected.get(s.subscriber, {})
        seen: set[str] = set()
        last = 0
        for t, event_id, data in s.events:
            if event_id <= last:
                out_of_order += 1
            last = max(last, event_id)
            index = mine.get(data)
            if index is None:
                unexpected += 1
            elif data in seen:
                duplicates += 1
            else:
                seen.add(data)
                delivered += 1
                latencies.append(t - pub.posts[index].sent)
        per_subscriber[s.subscriber] = {"expected": len(mine), "delivered": len(seen),
                                        "received": len(s.events), "cuts": s.cuts,
                                        "connections": s.connections}
    expected_events = sum(len(v) for v in expected.values())
    unknown = set(expected) - {s.subscriber for s in subscribers}
    if unknown:
        errors.append(f"matches for subscribers without a stream: {sorted(unknown)[:5]}")
    total_filter = sum(filter_times)
    return {
        "errors": errors,
        "local_engine": {"register_s": local_register_s, "publications": publications,
                         "filter_s": total_filter,
                         "publications_per_s": publications / total_filter if total_filter else None,
                         "filter_latency": percentiles(filter_times)},
        "answers": {"posts": sum(1 for p in pub.posts if p.status == 200),
                    "equal": answers_equal, "same_lines_other_order": answers_reordered,
                    "matches_expected": expected_lines},
        "events": {"expected": expected_events, "delivered": delivered,
                   "duplicates": duplicates, "missed": expected_events - delivered,
                   "unexpected": unexpected, "out_of_order": out_of_order},
        "per_subscriber": per_subscriber,
        "publish_to_delivery": percentiles(latencies),
    }


# ------------------------------------------------------------------ main


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="serve_load.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Defaults: the issue's K=2, S=8, 10,000 queries, 30 s. Exit status 0: no errors "
               "and every expected match answered and delivered exactly once.")
    p.add_argument("--queries", "-n", type=int, default=10_000, metavar="N",
                   help="queries registered (default 10000)")
    p.add_argument("--publishers", "-k", type=int, default=2, metavar="K",
                   help="concurrent publisher threads (default 2)")
    p.add_argument("--subscribers", "-s", type=int, default=8, metavar="S",
                   help="subscribers, one SSE stream each; the queries are spread over them "
                        "(default 8)")
    p.add_argument("--duration", type=float, default=30.0, metavar="SECONDS",
                   help="seconds of publishing (default 30)")
    p.add_argument("--max-publications", type=int, default=100_000, metavar="N",
                   help="stop publishing after N publications (default 100000)")
    p.add_argument("--batch", type=int, default=1, metavar="B",
                   help="publications (subjects) per POST body (default 1)")
    p.add_argument("--connections", type=int, default=4, metavar="C",
                   help="connections registering the queries (default 4)")
    p.add_argument("--publications", nargs="+", metavar="FILE",
                   help="RDF files to take publications and the queries' vocabulary from "
                        "(default: the DBpedia sample, via $RTF_DATA_DIR or ../shared/data)")
    p.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    p.add_argument("--ft-pr", type=int, default=50, metavar="PCT",
                   help="FT_pr of the selective mix, percent (default 50)")
    p.add_argument("--algorithm", default="rtfs", help="engine of the server (default rtfs)")
    p.add_argument("--drain-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="wait at most this long after publishing for the streams to catch up "
                        "(default 60)")
    p.add_argument("--timeout", type=float, default=1200.0, metavar="SECONDS",
                   help="hard limit on the whole run: the server is killed and the program "
                        "exits with status 2 (default 1200)")
    p.add_argument("--data", metavar="DIR",
                   help="the server's data folder (default: a temporary one, removed after)")
    p.add_argument("--profile", metavar="FILE",
                   help="record the server with py-spy while publishing: FILE.svg a flame graph, "
                        "FILE.json speedscope, else py-spy's raw collapsed stacks")
    p.add_argument("--profile-gil", action="store_true",
                   help="with --profile: sample only the thread holding the GIL")
    p.add_argument("--json", metavar="FILE", help="write the whole report as JSON")
    args = p.parse_args(argv)
    for name in ("queries", "publishers", "subscribers", "max_publications", "batch",
                 "connections"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.duration <= 0 or args.timeout <= 0:
        p.error("--duration and --timeout must be positive")
    return args


def start_profiler(args, pid: int) -> subprocess.Popen | None:
    if not args.profile:
        return None
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("serve_load: --profile needs py-spy (pip install py-spy)")
    fmt = {".svg": "flamegraph", ".json": "speedscope"}.get(Path(args.profile).suffix, "raw")
    command = [spy, "record", "--pid", str(pid), "--duration", str(max(1, round(args.duration))),
               "--rate", "100", "--format", fmt, "--output", args.profile, "--nonblocking"]
    if args.profile_gil:
        command.append("--gil")
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def run(args) -> dict:
    t_start = time.perf_counter()
    log = lambda s: print(f"serve_load: {s}", file=sys.stderr, flush=True)  # noqa: E731
    records, pubs = load_workload(args)
    log(f"{len(records)} queries generated, {len(pubs)} publications to post in turn")

    tmp = None
    if args.data:
        data = Path(args.data)
    else:
        tmp = tempfile.mkdtemp(prefix="rtf-serve-load-")
        data = Path(tmp)
    # A session of its own: a Ctrl-C at the terminal reaches us, and we stop it.
    server = ServerProcess(data, "--host", "127.0.0.1", "--algorithm", args.algorithm,
                           start_timeout=STARTUP_TIMEOUT_S, new_session=True)
    deadline = time.monotonic() + args.timeout
    watchdog = threading.Timer(args.timeout, _abort, (server, args.timeout))
    watchdog.daemon = True
    watchdog.start()
    stop = threading.Event()
    subscribers: list[Subscriber] = []
    try:
        t0 = time.perf_counter()
        server.start()
        startup_s = time.perf_counter() - t0
        log(server.banner)
        url = server.url
        assert url is not None
        admin = httpx.Client(base_url=url, timeout=60)

        reg = register(url, records, args.connections, deadline)
        log(f"registered {reg['queries']} queries in {reg['seconds']:.1f} s "
            f"({reg['per_s']:.0f}/s), {len(reg['refused'])} refused, {len(reg['errors'])} errors")

        names = [f"sub{i}" for i in range(args.subscribers)]
        subscribers = [Subscriber(url, name, stop) for name in names]
        for s in subscribers:
            s.start()
        while server_metrics(admin).get("rtf_streams", 0) < len(subscribers):
            if time.monotonic() > deadline or any(len(s.errors) >= MAX_STREAM_FAILURES
                                                  for s in subscribers):
                raise RuntimeError("the subscriber streams did not all open")
            time.sleep(POLL_S)
        log(f"{len(subscribers)} streams open; publishing for {args.duration:g} s "
            f"with {args.publishers} publishers")

        proc = psutil.Process(server.pid)
        me = psutil.Process()
        cpu0, my0 = proc.cpu_times(), me.cpu_times()
        profiler = start_profiler(args, server.pid)
        feed = Feed(pubs, args.batch, args.max_publications)
        pub = publish(url, feed, args.publishers, args.duration)
        cpu1, my1 = proc.cpu_times(), me.cpu_times()
        wall = pub.ended - pub.started
        log(f"{len(pub.posts)} POSTs in {wall:.1f} s; draining the streams")
        drained = drain(admin, subscribers, args.drain_timeout)
        metrics = server_metrics(admin)
        health = admin.get("/health").json()
        admin.close()
        if profiler is not None:
            _, err = profiler.communicate(timeout=args.duration + 60)
            if profiler.returncode != 0:
                log(f"py-spy failed ({profiler.returncode}): {err.strip()[-500:]}")
    finally:
        stop.set()
        t0 = time.perf_counter()
        server.stop(SHUTDOWN_TIMEOUT_S)
        shutdown_s = time.perf_counter() - t0
        for s in subscribers:
            s.join(10)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    log("server stopped; computing the expected matches with a local engine")

    refused = set(reg["refused"])
    compared = expected_and_compare(records, refused, args.algorithm, pub, subscribers)
    watchdog.cancel()

    publications = compared["local_engine"]["publications"]
    stream_errors = [e for s in subscribers for e in s.errors]
    gaps = [g for s in subscribers for g in s.gaps]
    errors = (reg["errors"] + pub.errors + stream_errors + [f"gap: {g}" for g in gaps]
              + compared["errors"])
    if not drained["complete"]:
        errors.append(f"the streams received {drained['events_received']} of "
                      f"{drained['events_numbered']} events within {args.drain_timeout:g} s")
    if compared["events"]["out_of_order"]:
        errors.append(f"{compared['events']['out_of_order']} events arrived out of id order")
    matches = compared["answers"]["matches_expected"]
    ok_posts = compared["answers"]["posts"]

    def cpu_share(a, b):
        return round(100 * ((b.user - a.user) + (b.system - a.system)) / wall, 1) if wall else None

    return {
        "benchmark": "rtf serve under load (issue 12)",
        "command": " ".join(["python", "benchmarks/serve_load.py"] + sys.argv[1:]),
        "environment": {"rtf": rtf.__version__, "python": platform.python_version(),
                        "cpus": os.cpu_count(), "load_average": list(os.getloadavg()),
                        "platform": platform.platform()},
        "parameters": {"queries": args.queries, "publishers": args.publishers,
                       "subscribers": args.subscribers, "duration_s": args.duration,
                       "max_publications": args.max_publications, "batch": args.batch,
                       "connections": args.connections, "seed": args.seed,
                       "ft_pr": args.ft_pr, "mix": "selective", "algorithm": args.algorithm,
                       "publications_source": [_public(p) for p in args.publications or
                                               datasets.dbpedia_files()]},
        "server": {"banner": server.banner.replace(str(data), "DATA"), "startup_s": startup_s,
                   "shutdown_s": shutdown_s, "health": health,
                   "filter_seconds_mean_ms": 1000 * metrics.get("rtf_filter_seconds_sum", 0)
                   / max(1, metrics.get("rtf_filter_seconds_count", 0)),
                   "metrics": {k: v for k, v in metrics.items() if k.startswith("rtf_")}},
        "registration": {k: v for k, v in reg.items() if k != "refused"}
                        | {"refused": len(reg["refused"])},
        "publishing": {"seconds": wall, "posts": len(pub.posts), "posts_ok": ok_posts,
                       "publications": publications,
                       "publications_per_s": publications / wall if wall else None,
                       "posts_per_s": len(pub.posts) / wall if wall else None,
                       "matches": matches, "matches_per_s": matches / wall if wall else None,
                       "post_round_trip": percentiles([p.answered - p.sent for p in pub.posts]),
                       "per_second": timeline(pub),
                       "server_cpu_pct": cpu_share(cpu0, cpu1),
                       "bench_cpu_pct": cpu_share(my0, my1)},
        "drain": drained,
        "answers": compared["answers"],
        "events": compared["events"] | {"stream_cuts": sum(s.cuts for s in subscribers),
                                        "gaps": len(gaps)},
        "publish_to_delivery": compared["publish_to_delivery"],
        "per_subscriber": compared["per_subscriber"],
        "local_engine": compared["local_engine"],
        "errors": len(errors),
        "error_samples": errors[:20],
        "ok": not errors and compared["events"]["delivered"] == compared["events"]["expected"]
              and compared["answers"]["equal"] + compared["answers"]["same_lines_other_order"]
              == ok_posts,
        "total_s": time.perf_counter() - t_start,
    }


def _public(path) -> str:
    """A path relative to where the program ran (as rtf bench's JSON names its inputs)."""
    return os.path.relpath(path)


def _abort(server: ServerProcess, timeout: float) -> None:
    print(f"serve_load: the hard timeout of {timeout:g} s struck; killing the server",
          file=sys.stderr, flush=True)
    if server.running:
        server.kill()
    os._exit(2)


def _fmt_ms(d: dict) -> str:
    if not d["n"]:
        return "-"
    return f"{d['p50_ms']:.1f} / {d['p99_ms']:.1f} / {d['max_ms']:.1f} ms"


def format_report(r: dict) -> str:
    p, reg, pub, ev = r["parameters"], r["registration"], r["publishing"], r["events"]
    le, ans = r["local_engine"], r["answers"]
    rows = [
        ("queries", f"{reg['queries']:,} registered ({p['mix']}, FT_pr {p['ft_pr']} %, "
                    f"seed {p['seed']}, {p['algorithm']}); {reg['refused']} refused as invalid"),
        ("registration", f"{reg['seconds']:.1f} s, {reg['per_s']:,.0f} queries/s over "
                         f"{reg['connections']} connections"),
        ("load", f"K={p['publishers']} publishers, S={p['subscribers']} subscribers, "
                 f"batch {p['batch']}, {pub['seconds']:.1f} s"),
        ("publications/s", f"**{pub['publications_per_s']:,.1f}** ({pub['publications']:,} "
                           f"publications in {pub['posts']:,} POSTs)"),
        ("matches", f"{pub['matches']:,} ({pub['matches_per_s']:,.1f}/s); "
                    f"{ev['expected']:,} events for subscribers"),
        ("POST round trip p50 / p99 / max", _fmt_ms(pub["post_round_trip"])),
        ("publish-to-delivery p50 / p99 / max", _fmt_ms(r["publish_to_delivery"])),
        ("delivered vs expected", f"{ev['delivered']:,} / {ev['expected']:,} "
                                  f"(duplicates {ev['duplicates']}, missed {ev['missed']}, "
                                  f"unexpected {ev['unexpected']}, cuts {ev['stream_cuts']})"),
        ("POST answers vs expected", f"{ans['equal'] + ans['same_lines_other_order']:,} / "
                                     f"{ans['posts']:,} equal"
                                     + (f" ({ans['same_lines_other_order']} in another order)"
                                        if ans["same_lines_other_order"] else "")),
        ("errors", f"**{r['errors']}**"),
        ("server filter time (mean)", f"{r['server']['filter_seconds_mean_ms']:.2f} ms/publication"),
        ("local engine alone", f"{le['publications_per_s'] or 0:,.1f} publications/s "
                               f"(p50 / p99 {le['filter_latency']['p50_ms'] or 0:.2f} / "
                               f"{le['filter_latency']['p99_ms'] or 0:.2f} ms)"),
        ("CPU while publishing", f"server {pub['server_cpu_pct']} %, benchmark process "
                                 f"{pub['bench_cpu_pct']} % (of one core; "
                                 f"{r['environment']['cpus']} cores, load average "
                                 f"{r['environment']['load_average'][0]:.2f})"),
        ("drain after the last POST", f"{r['drain']['seconds']:.2f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"| {'measure':<{width}} | value |", f"|{'-' * (width + 2)}|---|"]
    lines += [f"| {k:<{width}} | {v} |" for k, v in rows]
    if r["error_samples"]:
        lines.append("")
        lines += ["error: " + e for e in r["error_samples"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    report = run(args)
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
