"""Quick-starting JVMs for the Spark tests: the options every Spark JVM of a run gets, and a
class-data archive of Spark's classes made once per checkout.

The suite starts dozens of Spark JVMs (a session per module, every ``rtf spark`` driver a
test kills and restarts, a standalone cluster's master, workers and executors), each for
seconds of work on a few hundred rows, so their start-up is most of the Spark tests' CPU:

- `SPARK_JVM_OPTIONS`: the C1 compiler only and the serial collector. The JIT's C2 work and
  a parallel collector's threads never pay back in a run of seconds (a local session used
  for two small jobs: 10.5 s of CPU instead of 20; tests/test_spark_stream.py 99 s instead of
  155). Spark runs the same code either way.
- `UNVERIFIED_OPTIONS`: no bytecode verification of the class path's classes (Spark's jars,
  loaded from the JDK's own archive or from jars nobody edits): a local session started
  cold took 11.4 s of CPU instead of 12.9 (two pairs, quiet machine). The class archive
  below is made with verification on, as the JVM requires; a JVM mapping it verifies less
  than its maker did, which the JVM allows.
- **A dynamic class-data sharing archive** (JDK 13+, `-XX:ArchiveClassesAtExit` /
  `-XX:SharedArchiveFile`): the classes a small Spark session loads (SQL, Parquet, Arrow to
  Python, a streaming query), parsed and verified once and mapped by every later JVM. A
  local session's JVM then starts on 4.5-4.9 s of CPU instead of 9.0-9.5 (7.4-7.8 s wall
  instead of 10-12). The archive is made in the background by the first run that may have
  Spark tests (`may_hold_spark_tests`, `start_archive`) and kept in pytest's cache folder (``.pytest_cache``, ignored by
  git), ~190 MB. Until it exists, the run's Spark modules come after each worker's first
  other module and wait for it (`wait_for_archive`), so that their JVMs map it from the start. The JVM checks the archive itself
  (the same JVM, the same class path, jars of the same size and time) and ignores it silently
  otherwise (``-Xlog:cds*=off``). The standalone cluster's executors map it too
  (``spark.executor.extraJavaOptions``: their class path begins as the driver's).

A variable already set before the run (even to nothing) is kept: ``SPARK_SUBMIT_OPTS=``
runs the Spark tests on the JVM's defaults.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

#: The options of every Spark JVM the tests start, the archive's aside.
SPARK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: Bytecode verification off for the classes of the class path (the JDK's own are never verified).
UNVERIFIED_OPTIONS = "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"

#: Both: what a test's JVM gets, the archive aside (`set_options`).
QUICK_OPTIONS = f"{SPARK_JVM_OPTIONS} {UNVERIFIED_OPTIONS}"

#: The variables Spark's launcher reads them from: the drivers (a session of the test's own
#: process, or a job's ``spark-submit``) and the standalone cluster's master and workers.
#: (A cluster's executors take ``spark.executor.extraJavaOptions``: tests/test_spark_cluster.py.)
SPARK_JVM_VARIABLES = ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS")

#: The test modules that start Spark JVMs: a run that collects none of them makes no archive.
SPARK_MODULES = ("tests/test_spark", "tests/test_partition.py", "tests/test_stream_checkpoint.py")

#: What the archive's JVM does: the kinds of work the tests give Spark, each once, small.
_ARCHIVE_SESSION = r"""
import tempfile
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").appName("rtf-tests-class-archive")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
with tempfile.TemporaryDirectory() as folder:
    frame = spark.createDataFrame([(i, f"s{i % 3}") for i in range(100)], "n long, s string")
    frame.groupBy("s").count().collect()
    frame.write.parquet(f"{folder}/p")
    spark.read.parquet(f"{folder}/p").mapInArrow(lambda batches: batches, frame.schema).collect()
    frame.select("s").write.text(f"{folder}/in")
    query = (spark.readStream.text(f"{folder}/in").writeStream.format("parquet")
             .option("checkpointLocation", f"{folder}/c").option("path", f"{folder}/out")
             .trigger(availableNow=True).start())
    query.awaitTermination()
spark.stop()
"""


def pyspark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def archive_path(cache_folder: Path) -> Path | None:
    """The archive for this JVM and this pyspark (None without either): named after both, so
    another JDK or another pyspark makes its own."""
    try:
        import pyspark
    except ImportError:
        return None
    java = shutil.which("java")
    if java is None:
        return None
    key = f"{os.path.realpath(java)}|{pyspark_home()}|{pyspark.__version__}"
    return cache_folder / f"spark-{pyspark.__version__}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.jsa"


def set_options(archive: Path | None) -> None:
    """`SPARK_JVM_OPTIONS` and `UNVERIFIED_OPTIONS`, and the archive when given (whether it
    exists yet or not: a JVM started before it does runs without it), into each of
    `SPARK_JVM_VARIABLES` not set yet."""
    options = QUICK_OPTIONS
    if archive is not None:
        options += f" -XX:SharedArchiveFile={archive} -Xlog:cds*=off"
    for name in SPARK_JVM_VARIABLES:
        os.environ.setdefault(name, options)


def jvm_options() -> str:
    """The options this run's Spark JVMs get (for executors' ``extraJavaOptions``)."""
    return os.environ.get(SPARK_JVM_VARIABLES[0], QUICK_OPTIONS)


def may_hold_spark_tests(args) -> bool:
    """Whether a run of pytest's arguments `args` (files, folders, node ids) may collect
    tests of `SPARK_MODULES`: no argument, a folder, or one of their files."""
    names = tuple(module.removeprefix("tests/") for module in SPARK_MODULES)
    paths = [Path(arg.split("::", 1)[0]) for arg in args]
    return not paths or any(path.is_dir() or path.name.startswith(names) for path in paths)


#: Set by the run that makes the archive, before its workers start: the archive's path. A
#: worker's Spark module waits for it (`wait_for_archive`) and is handed out after the first
#: modules of the others (tests/module_order.py), so that no JVM starts cold while it is made.
PENDING_VARIABLE = "RTF_TEST_SPARK_ARCHIVE_PENDING"

#: The longest a Spark module waits for the archive (then its JVMs start without it).
ARCHIVE_WAIT_SECONDS = 240.0


def building_marker(archive: Path) -> Path:
    """The file that says the archive is being made: the maker's pid, removed when it ends."""
    return archive.with_name(f"{archive.name}.building")


def archive_pending() -> bool:
    """Whether this run is making the archive (`PENDING_VARIABLE`), made or not yet."""
    return bool(os.environ.get(PENDING_VARIABLE))


def _maker_alive(marker: Path) -> bool:
    try:
        pid = int(marker.read_text().strip() or "0")
        os.kill(pid, 0)
        return pid > 0
    except (OSError, ValueError):
        return False


def wait_for_archive(timeout: float = ARCHIVE_WAIT_SECONDS, poll: float = 0.5) -> bool:
    """Wait until the archive this run is making exists (True), its maker has ended or died
    without it, or `timeout` s have passed (False). At once when none is being made."""
    pending = os.environ.get(PENDING_VARIABLE)
    if not pending:
        return False
    archive = Path(pending)
    marker = building_marker(archive)
    deadline = time.monotonic() + timeout
    while not archive.exists():
        if not marker.exists() or not _maker_alive(marker) or time.monotonic() >= deadline:
            return archive.exists()
        time.sleep(poll)
    return True


def build_archive(archive: Path, timeout: float = 300) -> bool:
    """Run `_ARCHIVE_SESSION` in a JVM that writes its loaded classes at exit, under a
    temporary name renamed to `archive` once whole (a JVM never maps half an archive)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"partial-{os.getpid()}-{archive.name}")
    environment = {**os.environ, "PYSPARK_PYTHON": sys.executable,  # (Spark's workers: this Python)
                   SPARK_JVM_VARIABLES[0]: f"{SPARK_JVM_OPTIONS} -XX:ArchiveClassesAtExit={partial}"}
    try:
        # (output to pipes, read to their end: the JVM writes the archive after the Python
        # process that started it has exited, and holds the pipes until it has)
        done = subprocess.run([sys.executable, "-c", _ARCHIVE_SESSION], env=environment, timeout=timeout,
                              stdin=subprocess.DEVNULL, capture_output=True)
        if done.returncode == 0 and partial.exists():
            os.replace(partial, archive)
            return True
        return False
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        partial.unlink(missing_ok=True)
        building_marker(archive).unlink(missing_ok=True)


def start_archive(archive: Path | None) -> threading.Thread | None:
    """Make `archive` in a daemon thread, unless it exists (or there is none to make); until
    it ends, its `building_marker` holds this process's pid, and `PENDING_VARIABLE` tells
    the processes started later (xdist's workers) where the archive will be."""
    if archive is None or archive.exists():
        return None
    archive.parent.mkdir(parents=True, exist_ok=True)
    building_marker(archive).write_text(str(os.getpid()))
    os.environ[PENDING_VARIABLE] = str(archive)
    thread = threading.Thread(target=build_archive, args=(archive,), name="spark-class-archive", daemon=True)
    thread.start()
    return thread


def is_spark_module(module: str) -> bool:
    """Whether the test module `module` (a node id's file part) starts Spark JVMs."""
    return module.startswith(SPARK_MODULES)
