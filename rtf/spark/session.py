"""The SparkSession of rtf's Spark drivers, and one-line messages for Spark's failures.

`make_session` starts local mode with task retries by default
(``local[*,2]``: a task whose Python worker dies is run once more), runs
the local Python workers with this Python (which has rtf), and takes any
``--conf KEY=VALUE``. `failure_message` turns a failed job's Java stack
into the line a user needs, naming a Python worker's death for what it is.
"""

from __future__ import annotations

import os
import re
import sys

#: The default master: every core, and two attempts per task.
DEFAULT_MASTER = "local[*,2]"

#: What Spark says when a Python worker process dies under a task.
_WORKER_DEATH = ("Python worker exited unexpectedly", "Connection reset",
                 "EOFException", "Broken pipe", "crashed")


def make_session(app: str, master: str | None, conf: list[str] = (), prog: str = "rtf"):
    """A SparkSession: `DEFAULT_MASTER` unless `master` (or spark-submit's) says otherwise."""
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # set by spark-submit's Python runner
    if master is None and not under_submit:
        master = DEFAULT_MASTER
    if master and master.startswith("local"):
        # Local workers must run this Python, which has rtf installed
        # (PySpark's default is whatever `python3` is on the PATH).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    # Our own progress lines replace Spark's console progress bar (--conf can bring it back).
    builder = SparkSession.builder.appName(app).config("spark.ui.showConsoleProgress", "false")
    if master:
        builder = builder.master(master)
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"{prog}: error: --conf expects KEY=VALUE, not {item!r}")
        builder = builder.config(key.strip(), value.strip())
    return builder.getOrCreate()


def attempts(sc) -> int:
    """How many times this context runs a task before the job fails."""
    match = re.fullmatch(r"local\[[^,\]]+,\s*(\d+)\]", sc.master)
    if match:
        return int(match.group(1))
    if sc.master.startswith("local[") or sc.master == "local":
        return 1
    return int(sc.getConf().get("spark.task.maxFailures", "4"))


def spark_error_summary(error: Exception) -> str:
    """The most telling line of a Spark failure: the Python or Java exception at its root."""
    text = str(error)
    causes = re.findall(r"^\s*(?:Caused by: )?((?:[\w.]+\.)?\w*(?:Error|Exception): .+?)(?: SQLSTATE: \w+\)?)?$",
                        text, re.MULTILINE)
    causes = [c for c in causes if not c.startswith(("org.apache.spark.SparkException: Job aborted",
                                                     "org.apache.spark.api.python.PythonException"))]
    if causes:
        return causes[-1].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def failure_message(error: Exception, sc=None, what: str = "the job") -> str:
    """One line for a failed Spark job; a dead Python worker is said to be one."""
    text = str(error)
    if any(sign in text for sign in _WORKER_DEATH) and "PythonException" not in text.split("\n", 1)[0]:
        tries = attempts(sc) if sc is not None else None
        gave_up = (f"Spark gave up after {tries} attempt{'s' if tries != 1 else ''} of the task"
                   if tries else "Spark gave up on the task")
        hint = ("run with a master that retries, e.g. --master 'local[2,2]', or raise "
                "spark.task.maxFailures" if tries == 1 else
                "look for the OOM killer in `dmesg`, and give each worker more memory "
                "(fewer cores per executor, spark.executor.pyspark.memory) or fewer queries")
        cause = spark_error_summary(error).split(". Consider setting", 1)[0]
        return (f"a Python worker died while running {what} (killed by a signal, or out of "
                f"memory?) and {gave_up}: {hint} (Spark: {cause})")
    return f"Spark job failed: {spark_error_summary(error)}"
