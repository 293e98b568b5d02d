"""``rtf spark cluster``: a Spark standalone cluster on this machine, for a trial of the jobs on a real cluster.

Starts a master and workers from the PySpark installation (`rtf.spark.cluster`),
bound to 127.0.0.1, prints the master's URL, and runs until Ctrl-C or SIGTERM,
then stops them all. See docs/spark.md, "A standalone cluster".
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

EPILOG = """\
example (two workers of one core and 1 GiB; the jobs submitted to it use
--master spark://127.0.0.1:7077, and their Python workers run the driver's Python):
  rtf spark cluster --workers 2 --cores 1 --memory 1g &
  rtf spark replay --dump examples/news.nt --index news.idx --output out/ \\
      --master spark://127.0.0.1:7077 --conf spark.executor.memory=512m
  kill %1        # stops the workers (their executors too) and the master

The master's web UI (--ui-port, default 8080) lists the workers and applications.
Logs, and the executors' work folders, are under --folder (default: a temporary
folder, removed at the end).
"""

PROG = "rtf spark cluster"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--workers", type=int, default=2, metavar="N", help="workers to start (default 2)")
    p.add_argument("--cores", type=int, default=1, metavar="C", help="cores each worker offers (default 1)")
    p.add_argument("--memory", default="1g", metavar="MEM",
                   help="memory each worker offers its executors (default 1g; an executor takes "
                        "spark.executor.memory, 1g unless the job says less)")
    p.add_argument("--port", type=int, default=7077, help="the master's port (default 7077)")
    p.add_argument("--ui-port", type=int, default=8080, help="the master's web UI port (default 8080)")
    p.add_argument("--folder", metavar="DIR", help="logs and work folders (default: a temporary folder)")
    return p


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    args = build_parser(prog).parse_args(argv)
    from rtf.spark.cluster import StandaloneCluster
    from rtf.spark.dumps import ReplayError

    try:
        cluster = StandaloneCluster(args.workers, args.cores, args.memory, folder=args.folder)
    except ReplayError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    cluster.port, cluster.ui_port = args.port, args.ui_port
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        t = time.perf_counter()
        cluster.start()
        print(cluster.master_url, flush=True)
        print(f"{prog}: {args.workers} worker(s) of {args.cores} core(s) and {args.memory} up in "
              f"{time.perf_counter() - t:.1f} s; web UI {cluster.ui_url}; logs in {cluster.folder}; "
              "Ctrl-C stops it", file=sys.stderr, flush=True)
        while True:
            time.sleep(1)
    except ReplayError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: stopping", file=sys.stderr, flush=True)
    finally:
        cluster.stop()
    return 0
