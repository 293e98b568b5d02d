"""rtf's PySpark daemon: one engine per executor, mapped once, shared by every Python worker.

PySpark starts one *daemon* per executor (per Python and environment) that
forks a Python worker for each task slot; Spark's setting
``spark.python.daemon.module`` names the module it runs (default
``pyspark.daemon``). Set it to ``rtf.spark.daemon`` (what ``--shared-index``
of ``rtf spark replay`` and ``rtf spark stream`` does) and name the saved
index files in the executors' environment variable ``RTF_SPARK_SHARED_INDEX``
(paths separated by ``:``; `rtf.spark.match_publications` with
``shared_index=True`` sets it from the job's index): before it forks any
worker, this daemon maps each of those files that is on its machine
(`rtf.engine.Engine.load`), makes what each worker would make for itself
(`Engine.before_fork`) and freezes every object out of the garbage
collector's sight (``gc.freeze``); then it runs PySpark's daemon unchanged.
A worker whose task needs the index of one of those files -- told by the
header's length and SHA-256 of the file's body, which the load checked,
never by its name (`rtf.spark.engines.index_key`) -- takes the daemon's
engine instead of building one from the broadcast bytes: the workers share
its pages (copy-on-write) and load nothing. A file that is not on the
machine, or does not load, is skipped: the workers build their own engines,
as without this module.

Nothing is written to standard output before PySpark's daemon runs (it is
the daemon's channel to the executor); what was loaded is said on standard
error, which goes to the executor's log.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

#: The executors' environment variable naming the index files to load before forking.
SHARED_INDEX_ENV = "RTF_SPARK_SHARED_INDEX"
#: The value of ``spark.python.daemon.module`` that runs this module.
DAEMON_MODULE = "rtf.spark.daemon"
DAEMON_CONF = "spark.python.daemon.module"
#: What every worker imports for rtf's tasks, imported once here too when an index is
#: shared, so that their ~60 MB a worker are shared pages as well. (PySpark's own daemon
#: imports its worker after the fork because pyarrow starts a thread: jemalloc's
#: background thread, which jemalloc itself prepares for a fork; the workers forked
#: after it run Arrow as usual -- the tests and benchmarks run through it.)
WORKER_MODULES = ("pyarrow", "pyspark.worker", "rtf.spark.dataframe", "rtf.io.reader", "rtf.io.arrow_matches")


def shared_paths(environ=os.environ) -> list[str]:
    """The index files the environment names (`SHARED_INDEX_ENV`)."""
    return [p for p in environ.get(SHARED_INDEX_ENV, "").split(os.pathsep) if p]


def main() -> None:
    paths = shared_paths()
    if paths:
        t = time.perf_counter()
        with _stdout_to_stderr():  # (stdout is the daemon's channel to the executor)
            done = _load(paths)
        for path, what in done.items():
            print(f"rtf daemon {os.getpid()}: {path}: {what}", file=sys.stderr)
        print(f"rtf daemon {os.getpid()}: loaded in {time.perf_counter() - t:.2f} s", file=sys.stderr)
    from pyspark import daemon

    daemon.manager()


def _load(paths: list[str]) -> dict[str, str]:
    import importlib

    from rtf.spark.engines import preload

    for name in WORKER_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # (then each worker's own import fails, and says so)
            pass
    return preload(paths)


@contextlib.contextmanager
def _stdout_to_stderr():
    """Standard output, Python's and the file descriptor's, sent to standard error meanwhile."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


if __name__ == "__main__":
    main()


# ------------------------------------------------------------------ the driver's side


def daemon_conf(shared: bool = True) -> list[str]:
    """The ``--conf`` items that make a session's executors run this daemon (none unless `shared`)."""
    return [f"{DAEMON_CONF}={DAEMON_MODULE}"] if shared else []


def share_index(sc, paths) -> list[str]:
    """Ask the executors' daemons to load the saved indexes at `paths` (this machine's paths,
    which must be the executors' too: a file an executor does not have, or that is not there
    yet when its daemon starts, is not loaded there) before they fork: the Python functions
    made from now on carry `SHARED_INDEX_ENV`. Call it before the job's first Python task:
    Spark starts a daemon for each environment, and the daemon of an earlier one keeps its
    idle workers. Returns the paths (absolute). `ReplayError` unless the session was started
    with ``spark.python.daemon.module=rtf.spark.daemon`` (it cannot be set later)."""
    from rtf.spark.dumps import ReplayError

    module = sc.getConf().get(DAEMON_CONF)
    if module != DAEMON_MODULE:
        raise ReplayError(f"a shared index needs the Spark setting {DAEMON_CONF}={DAEMON_MODULE} "
                          f"when the session starts (it is {module or 'unset'}): "
                          f"add --conf {DAEMON_CONF}={DAEMON_MODULE}")
    paths = [os.path.abspath(p) for p in paths]
    sc.environment[SHARED_INDEX_ENV] = os.pathsep.join(paths)
    # Spark starts one daemon per environment, and the Python functions of a session that a
    # stream's micro-batches run on lack this variable that the first session's carry: a
    # second daemon, a second copy of the index. Set for all, their environments are one.
    sc.environment.setdefault("SPARK_SIMPLIFIED_TRACEBACK", "1")
    return paths
