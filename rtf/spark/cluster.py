"""A Spark standalone cluster on this machine: a master and workers started from the PySpark installation.

What ``rtf spark cluster`` runs for a user's trial, and the tests run the
jobs on (docs/spark.md, "A standalone cluster"): the master and each worker
are Spark's own daemons (``spark-class org.apache.spark.deploy.master.Master``
and ``...deploy.worker.Worker``, the classes ``start-master.sh`` and
``start-worker.sh`` start), each a JVM in a process group of its own, bound
to 127.0.0.1 on free ports. A job submitted with ``--master spark://...``
gets one executor (a JVM of its own, with its own Python workers) on each
worker, as on a real cluster; `kill_worker` kills a worker with its
executor and Python workers, as a machine that fails would.

    with StandaloneCluster(workers=2, cores=1, memory="1g") as cluster:
        print(cluster.master_url)          # spark://127.0.0.1:PORT
        ...                                # jobs with --master cluster.master_url
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from rtf.spark.dumps import ReplayError

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: The heap of the master and worker daemons themselves (Spark's default is 1 GiB each).
DAEMON_MEMORY = "256m"


def spark_class() -> str:
    """The ``spark-class`` script of the installed PySpark."""
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.exists():
        raise ReplayError(f"{path}: missing; this PySpark installation cannot start a standalone cluster")
    return str(path)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def kill_tree(pid: int) -> list[int]:
    """SIGKILL process `pid` and every process under it (a worker: its executor JVM, the
    executor's Python daemon and workers, whatever process group they put themselves in);
    the pids killed."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    for proc in procs:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)
    return [p.pid for p in procs]


def spark_worker_ancestor(pid: int | None = None) -> int | None:
    """The Spark standalone worker daemon that process `pid` (default: this one) runs under, or
    None (local mode, another cluster manager)."""
    import psutil

    proc = psutil.Process(pid or os.getpid())
    for parent in proc.parents():
        try:
            if WORKER_CLASS in " ".join(parent.cmdline()):
                return parent.pid
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
    return None


class StandaloneCluster:
    """A master and `workers` workers of `cores` cores and `memory` each, on 127.0.0.1."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g", host: str = "127.0.0.1",
                 folder: str | os.PathLike | None = None, env: dict | None = None):
        if workers < 1 or cores < 1:
            raise ReplayError("a cluster needs at least one worker of at least one core")
        self.n_workers, self.cores, self.memory, self.host = workers, cores, memory, host
        self._own_folder = folder is None
        self.folder = Path(folder or tempfile.mkdtemp(prefix="rtf-spark-cluster-"))
        self.env = {**os.environ, "SPARK_LOCAL_IP": host, "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
                    "SPARK_LOG_DIR": str(self.folder / "logs"), **(env or {})}
        self.port, self.ui_port = free_port(host), free_port(host)
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.ui_port}"

    def _daemon(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "ab")
        try:
            return subprocess.Popen([spark_class(), *args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()

    def start(self, timeout: float = 180.0) -> str:
        """Start the master, then the workers; return the master's URL once every worker has
        registered (`ReplayError` with the end of the logs if they did not in `timeout` s)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.master = self._daemon("master", MASTER_CLASS, "--host", self.host, "--port", str(self.port),
                                   "--webui-port", str(self.ui_port))
        for i in range(self.n_workers):
            self.start_worker(i)
        self.wait_for_workers(self.n_workers, timeout)
        return self.master_url

    def start_worker(self, i: int) -> subprocess.Popen:
        work = self.folder / f"worker{i}"
        work.mkdir(parents=True, exist_ok=True)
        proc = self._daemon(f"worker{i}", WORKER_CLASS, "--host", self.host, "--cores", str(self.cores),
                            "--memory", self.memory, "--work-dir", str(work),
                            "--webui-port", str(free_port(self.host)), self.master_url)
        if i < len(self.workers):
            self.workers[i] = proc
        else:
            self.workers.append(proc)
        return proc

    def status(self) -> dict:
        """The master's own report (its web UI's ``/json/``): workers, cores, applications."""
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        try:
            return int(self.status().get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def wait_for_workers(self, n: int, timeout: float = 180.0) -> None:
        deadline = time.time() + timeout
        while self.alive_workers() < n:
            dead = [p for p in [self.master, *self.workers] if p is not None and p.poll() is not None]
            if dead or time.time() > deadline:
                tail = "".join((self.folder / f"{name}.log").read_text(errors="replace")[-600:]
                               for name in ["master", *(f"worker{i}" for i in range(len(self.workers)))]
                               if (self.folder / f"{name}.log").exists())
                self.stop()
                raise ReplayError(f"the standalone cluster did not start ({len(dead)} daemon(s) exited): "
                                  f"{' '.join(tail.split())[-1200:]}")
            time.sleep(0.5)

    def revive(self, timeout: float = 180.0) -> int:
        """Start again every worker that is gone (killed); wait until all are registered; how
        many were started."""
        dead = [i for i, proc in enumerate(self.workers) if proc.poll() is not None]
        for i in dead:
            self.start_worker(i)
        self.wait_for_workers(self.n_workers, timeout)
        return len(dead)

    def kill_worker(self, i: int) -> list[int]:
        """SIGKILL worker `i` with its executor and Python workers; the pids killed."""
        return kill_tree(self.workers[i].pid)

    def stop(self) -> None:
        """Kill the workers (with whatever runs under them), then the master; remove a folder of
        our own."""
        for proc in [*self.workers, self.master]:
            if proc is not None and proc.poll() is None:
                kill_tree(proc.pid)
            if proc is not None:
                proc.wait()
        self.workers, self.master = [], None
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
