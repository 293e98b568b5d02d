"""Load benchmark of ``rtf serve`` (issue 12): K publishers and S subscribers against N queries.

Not a timed test: a program that measures, bounded in count and time, over
loopback only. It

1. starts its own ``rtf serve --data TMPDIR --port 0`` (the port comes from
   the "listening on" line);
2. registers ``--queries`` N queries of the selective workload
   (``rtf gen-queries --selective``: `rtf.bench.workload.Mix.selective`, FT_pr
   50 %, fixed seed; ``--mix paper``: the RTF paper's) generated from the DBpedia sample, spread over S
   subscribers ``sub0..sub{S-1}``, with ``PUT /queries/{id}`` over
   ``--connections`` connections (or ``--bulk N`` queries per ``POST /queries``
   body), and times it;
3. connects S Server-Sent Events streams (``GET /subscribers/NAME/matches``,
   one process each, reading the chunked stream from a plain socket, so that
   the benchmark's side does not take the cores the server needs) and waits
   until the server counts S open streams;
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

Latency: publish-to-delivery is the time a subscriber process received an
event minus the time the publisher thread sent the POST of its
publication (one machine, one monotonic clock: `time.perf_counter`); the
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

The server's CPU time per publication (user + system, psutil) and its
resident memory over the run (``--rss-every``; ``--distinct-texts`` for a
soak where no text repeats) are reported beside the rates. Needs the server
extra (``pip install 'rtf[server]'``) and, for
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
except ImportError as e:  # pragma: no cover - a message rather than a traceback
    sys.exit(f"serve_load: {e.name} is missing: pip install 'rtf[server]'")

import psutil
from prometheus_client.parser import text_string_to_metric_families

import rtf
from rtf.io import datasets
from rtf.server.process import ServerProcess
from serve_load_check import expected_and_compare, percentiles, timeline
from serve_load_peers import POLL_S, Feed, Subscriber, drain, load_workload, publish, register

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
    p.add_argument("--mix", default="selective", choices=("selective", "paper"),
                   help="the queries: the selective mix (about 2 %% of them match a publication) "
                        "or the RTF paper's (about 11 %%; issue 43's serve target) (default selective)")
    p.add_argument("--ft-pr", type=int, default=50, metavar="PCT",
                   help="FT_pr of the mix, percent (default 50)")
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
    p.add_argument("--bulk", type=int, default=0, metavar="N",
                   help="register with POST /queries, N queries per body (default 0: one PUT each)")
    p.add_argument("--distinct-texts", action="store_true",
                   help="publications posted again also get a word added to every literal, so "
                        "that no text repeats (a soak of the server's and the engine's caches)")
    p.add_argument("--rss-every", type=float, default=1.0, metavar="SECONDS",
                   help="sample the server's resident memory this often while publishing "
                        "(default 1)")
    p.add_argument("--grouped", action="store_true",
                   help="subscribers read grouped streams and publishers ask for grouped answers: "
                        "one event or line per publication, subscriber and answer "
                        "(docs/server.md, \"Grouped events\")")
    p.add_argument("--outbox-max-events", type=int, metavar="N",
                   help="the server's retention per subscriber (default: the server's, 100,000): "
                        "raise it when the publishers outpace the subscribers, whose events the "
                        "outbox would drop before they read them (a gap, an error here)")
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
    feed = Feed(pubs, args.batch, args.max_publications, args.distinct_texts)
    log(f"{len(records)} queries generated, {len(pubs)} publications to post in turn")
    pub_index = feed.publication_ids(args.max_publications)

    tmp = None
    if args.data:
        data = Path(args.data)
    else:
        tmp = tempfile.mkdtemp(prefix="rtf-serve-load-")
        data = Path(tmp)
    # A session of its own: a Ctrl-C at the terminal reaches us, and we stop it.
    retention = ["--outbox-max-events", str(args.outbox_max_events)] if args.outbox_max_events else []
    server = ServerProcess(data, "--host", "127.0.0.1", "--algorithm", args.algorithm, *retention,
                           start_timeout=STARTUP_TIMEOUT_S, new_session=True)
    deadline = time.monotonic() + args.timeout
    watchdog = threading.Timer(args.timeout, _abort, (server, args.timeout))
    watchdog.daemon = True
    watchdog.start()
    subscribers: list[Subscriber] = []
    rss = RssSampler(args.rss_every)
    try:
        t0 = time.perf_counter()
        server.start()
        startup_s = time.perf_counter() - t0
        log(server.banner)
        url = server.url
        assert url is not None
        admin = httpx.Client(base_url=url, timeout=60)

        proc = psutil.Process(server.pid)
        cpu_reg0 = proc.cpu_times()
        reg = register(url, records, args.connections, deadline, args.bulk)
        cpu_reg1 = proc.cpu_times()
        reg["server_cpu_s"] = _cpu(cpu_reg0, cpu_reg1)
        log(f"registered {reg['queries']} queries in {reg['seconds']:.1f} s "
            f"({reg['per_s']:.0f}/s, server CPU {reg['server_cpu_s']:.1f} s), "
            f"{len(reg['refused'])} refused, {len(reg['errors'])} errors")
        wait_until_quiet(proc, deadline)

        subscribers = [Subscriber(url, f"sub{i}", pub_index, args.grouped)
                       for i in range(args.subscribers)]
        for s in subscribers:
            s.start()
        while server_metrics(admin).get("rtf_streams", 0) < len(subscribers):
            if time.monotonic() > deadline or not all(s.process.is_alive() for s in subscribers):
                raise RuntimeError("the subscriber streams did not all open")
            time.sleep(POLL_S)
        log(f"{len(subscribers)} streams open; publishing for {args.duration:g} s "
            f"with {args.publishers} publishers, {args.batch} publication(s) per POST")

        me = psutil.Process()
        cpu0, my0 = proc.cpu_times(), me.cpu_times()
        peers0 = _children_cpu(me, server.pid)
        profiler = start_profiler(args, server.pid)
        rss.start(proc)
        pub = publish(url, feed, args.publishers, args.duration, args.grouped)
        cpu1, my1 = proc.cpu_times(), me.cpu_times()
        peers1 = _children_cpu(me, server.pid)
        rss.stop()
        wall = pub.ended - pub.started
        log(f"{len(pub.posts)} POSTs in {wall:.1f} s; draining the streams")
        drained = drain(admin, lambda: server_metrics(admin).get("rtf_events_sent_total", 0),
                        args.drain_timeout)
        metrics = server_metrics(admin)
        health = admin.get("/health").json()
        admin.close()
        if profiler is not None:
            _, err = profiler.communicate(timeout=args.duration + 60)
            if profiler.returncode != 0:
                log(f"py-spy failed ({profiler.returncode}): {err.strip()[-500:]}")
    finally:
        for s in subscribers:
            s.stop.set()
        t0 = time.perf_counter()
        server.stop(SHUTDOWN_TIMEOUT_S)
        shutdown_s = time.perf_counter() - t0
        received = [s.result() for s in subscribers]
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    log("server stopped; computing the expected matches with a local engine")

    refused = set(reg["refused"])
    compared = expected_and_compare(records, refused, args.algorithm, pub, feed, received,
                                    args.grouped)
    watchdog.cancel()

    publications = compared["local_engine"]["publications"]
    stream_errors = [e for got in received for e in got.errors]
    gaps = [g for got in received for g in got.gaps]
    errors = (reg["errors"] + pub.errors + stream_errors + [f"gap: {g}" for g in gaps]
              + compared["errors"])
    if not drained["complete"]:
        errors.append(f"the server sent {drained['events_sent']:.0f} of "
                      f"{drained['events_numbered']} events within {args.drain_timeout:g} s")
    if compared["events"]["out_of_order"]:
        errors.append(f"{compared['events']['out_of_order']} events arrived out of id order")
    matches = compared["answers"]["matches_expected"]
    ok_posts = compared["answers"]["posts"]
    server_cpu = _cpu(cpu0, cpu1)

    def cpu_share(seconds):
        return round(100 * seconds / wall, 1) if wall else None

    return {
        "benchmark": "rtf serve under load (issues 12, 23)",
        "command": " ".join(["python", "benchmarks/serve_load.py"] + sys.argv[1:]),
        "environment": {"rtf": rtf.__version__, "python": platform.python_version(),
                        "cpus": os.cpu_count(), "load_average": list(os.getloadavg()),
                        "platform": platform.platform()},
        "parameters": {"queries": args.queries, "publishers": args.publishers,
                       "subscribers": args.subscribers, "duration_s": args.duration,
                       "max_publications": args.max_publications, "batch": args.batch,
                       "connections": args.connections, "bulk": args.bulk, "seed": args.seed,
                       "ft_pr": args.ft_pr, "mix": args.mix, "algorithm": args.algorithm,
                       "distinct_texts": args.distinct_texts, "grouped": args.grouped,
                       "outbox_max_events": args.outbox_max_events,
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
                       "server_cpu_s": server_cpu,
                       "server_cpu_user_s": cpu1.user - cpu0.user,
                       "server_cpu_system_s": cpu1.system - cpu0.system,
                       "server_cpu_ms_per_publication":
                           1000 * server_cpu / publications if publications else None,
                       "server_cpu_pct": cpu_share(server_cpu),
                       "bench_cpu_pct": cpu_share(_cpu(my0, my1)),
                       "subscribers_cpu_pct": cpu_share(peers1 - peers0)},
        "rss": rss.report(),
        "drain": drained,
        "answers": compared["answers"],
        "events": compared["events"] | {"stream_cuts": sum(got.cuts for got in received),
                                        "gaps": len(gaps)},
        "publish_to_delivery": compared["publish_to_delivery"],
        "per_subscriber": compared["per_subscriber"],
        "local_engine": compared["local_engine"],
        "errors": len(errors),
        "error_samples": errors[:20],
        "ok": not errors and compared["events"]["delivered"] == compared["events"]["expected"]
              and compared["events"]["duplicates"] == compared["events"]["unexpected"] == 0
              and compared["answers"]["equal"] == ok_posts,
        "total_s": time.perf_counter() - t_start,
    }


def _cpu(a, b) -> float:
    """CPU seconds (user + system) between two `cpu_times()`."""
    return (b.user - a.user) + (b.system - a.system)


def _children_cpu(me: psutil.Process, server_pid: int) -> float:
    """CPU seconds of this process's children but the server (the subscriber processes)."""
    total = 0.0
    for child in me.children():
        if child.pid == server_pid:
            continue
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def wait_until_quiet(proc: psutil.Process, deadline: float, limit_s: float = 60) -> None:
    """Registration may have started a background snapshot (--snapshot-every): wait until
    the server uses under a fifth of a core (or `limit_s`), so that it does not run
    inside the measurement."""
    end = min(deadline, time.monotonic() + limit_s)
    while time.monotonic() < end:
        before = proc.cpu_times()
        time.sleep(0.5)
        if _cpu(before, proc.cpu_times()) < 0.1:
            return


class RssSampler:
    """The server's resident memory every `every` seconds while publishing."""

    def __init__(self, every: float):
        self.every = every
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, proc: psutil.Process) -> None:
        t0 = time.perf_counter()

        def sample():
            while True:
                try:
                    self.samples.append((time.perf_counter() - t0, proc.memory_info().rss / 2**20))
                except psutil.Error:
                    return
                if self._stop.wait(self.every):
                    return

        self._thread = threading.Thread(target=sample, name="rss", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def report(self) -> dict:
        """RSS at the start, after warm-up (a fifth of the run), at the end, and the growth
        after warm-up (MB), with the samples."""
        if not self.samples:
            return {}
        warm = self.samples[len(self.samples) // 5]
        return {"start_mb": round(self.samples[0][1], 1), "warm_up_mb": round(warm[1], 1),
                "warm_up_s": round(warm[0], 1), "end_mb": round(self.samples[-1][1], 1),
                "peak_mb": round(max(mb for _, mb in self.samples), 1),
                "growth_after_warm_up_mb": round(self.samples[-1][1] - warm[1], 1),
                "samples": [(round(t, 1), round(mb, 1)) for t, mb in self.samples]}


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
                         f"{reg['connections']} connections"
                         + (f", {reg['bulk']} per POST /queries" if reg["bulk"] else ", one PUT each")
                         + f" (server CPU {reg['server_cpu_s']:.1f} s)"),
        ("load", f"K={p['publishers']} publishers, S={p['subscribers']} subscribers, "
                 f"batch {p['batch']}, {pub['seconds']:.1f} s"),
        ("publications/s", f"**{pub['publications_per_s']:,.1f}** ({pub['publications']:,} "
                           f"publications in {pub['posts']:,} POSTs)"),
        ("matches", f"{pub['matches']:,} ({pub['matches_per_s']:,.1f}/s); "
                    f"{ev['expected']:,} " + (f"grouped events for subscribers, holding "
                                              f"{ev['matches_delivered']:,} matches delivered"
                                              if ev["grouped"] else "events for subscribers")),
        ("POST round trip p50 / p99 / max", _fmt_ms(pub["post_round_trip"])),
        ("publish-to-delivery p50 / p99 / max", _fmt_ms(r["publish_to_delivery"])),
        ("delivered vs expected", f"{ev['delivered']:,} / {ev['expected']:,} "
                                  f"(duplicates {ev['duplicates']}, missed {ev['missed']}, "
                                  f"unexpected {ev['unexpected']}, cuts {ev['stream_cuts']})"),
        ("POST answers vs expected", f"{ans['equal']:,} / {ans['posts']:,} equal"),
        ("errors", f"**{r['errors']}**"),
        ("server filter time (mean)", f"{r['server']['filter_seconds_mean_ms']:.2f} ms/publication"),
        ("local engine alone", f"{le['publications_per_s'] or 0:,.1f} publications/s "
                               f"(p50 / p99 {le['filter_latency']['p50_ms'] or 0:.2f} / "
                               f"{le['filter_latency']['p99_ms'] or 0:.2f} ms); the server "
                               f"**{pub['publications_per_s'] / (le['publications_per_s'] or 1):.2f}x**"
                               + (" (grouped)" if ev["grouped"] else "")),
        ("server CPU per publication", f"{pub['server_cpu_ms_per_publication'] or 0:.3f} ms "
                                       f"({pub['server_cpu_s']:.1f} s); the engine alone "
                                       f"{1000 * le['filter_cpu_s'] / max(1, le['publications']):.3f} ms "
                                       "CPU (its thread)"),
        ("server RSS start / warm-up / end", (f"{r['rss']['start_mb']} / {r['rss']['warm_up_mb']} / "
                                              f"{r['rss']['end_mb']} MB (growth after warm-up "
                                              f"{r['rss']['growth_after_warm_up_mb']} MB)")
                                             if r["rss"] else "-"),
        ("CPU while publishing", f"server {pub['server_cpu_pct']} %, publishers "
                                 f"{pub['bench_cpu_pct']} %, subscribers "
                                 f"{pub['subscribers_cpu_pct']} % (of one core; "
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
