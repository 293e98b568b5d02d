"""The SparkSession of rtf's Spark drivers, its Python workers, and one-line messages for Spark's failures.

`make_session` starts local mode with task retries by default
(``local[*,2]``: a task whose Python worker dies is run once more) and
takes any ``--conf KEY=VALUE``. `use_worker_python` makes the Python
workers of any session -- the drivers' or a user's own, as
`rtf.spark.match_publications` meets it -- run a Python that has rtf, or
says in one line what to set. `failure_message` turns a failed job's Java
stack into the line a user needs, naming a Python worker's death for what
it is.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from rtf.spark.dumps import ReplayError

#: The default master: every core, and two attempts per task.
DEFAULT_MASTER = "local[*,2]"

#: Standalone masters on this machine's loopback, as `rtf spark cluster` starts them.
LOOPBACK_MASTERS = ("spark://127.0.0.1:", "spark://localhost:")

#: What Spark says when a Python worker process dies under a task.
_WORKER_DEATH = ("Python worker exited unexpectedly", "Connection reset",
                 "EOFException", "Broken pipe", "crashed")


def make_session(app: str, master: str | None, conf: list[str] = (), prog: str = "rtf"):
    """A SparkSession: `DEFAULT_MASTER` unless `master` (or spark-submit's) says otherwise."""
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # set by spark-submit's Python runner
    if master is None and not under_submit:
        master = DEFAULT_MASTER
    from pyspark.sql import SparkSession

    # Our own progress lines replace Spark's console progress bar (--conf can bring it back).
    builder = SparkSession.builder.appName(app).config("spark.ui.showConsoleProgress", "false")
    if master:
        builder = builder.master(master)
        if master.startswith(LOOPBACK_MASTERS):
            # A cluster on the loopback (`rtf spark cluster`) reaches the driver there, not at
            # the address of the machine's network interface that Spark would pick.
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1")
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"{prog}: error: --conf expects KEY=VALUE, not {item!r}")
        builder = builder.config(key.strip(), value.strip())
    return builder.getOrCreate()


def active_session():
    """The SparkSession this process already runs (a notebook's, a test's), else None: a
    command run in the same process uses it rather than start a second one, and leaves it
    running (its master and settings are the session's own)."""
    if "pyspark" not in sys.modules:  # (then there is none, and PySpark stays unimported)
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


# ------------------------------------------------------- the Python workers

#: The setting Spark documents for the workers' Python (it takes precedence over
#: `PYTHON_ENV`), and the environment variable.
PYTHON_CONF = "spark.pyspark.python"
PYTHON_ENV = "PYSPARK_PYTHON"
#: The workers' Python when neither is set (`pyspark.core.context`): whatever
#: ``python3`` the PATH finds -- not the Python of a virtualenv that is not activated.
SPARK_DEFAULT_PYTHON = "python3"

#: What a worker's Python must import to run rtf's tasks (its own imports are lazy).
_PROBE = ("import importlib.util, sys\n"
          "import rtf\n"
          "missing = [m for m in ('pyoxigraph', 'lark', 'pyarrow') if importlib.util.find_spec(m) is None]\n"
          "print('%d.%d' % sys.version_info[:2], *missing)\n")

#: (application id, the workers' Python) already checked in this driver.
_CHECKED: set[tuple[str, str]] = set()


class WorkerPythonError(ReplayError):
    """The Python workers of a session cannot run rtf (one line: what to set)."""


def use_worker_python(sc) -> str:
    """Make the Python workers of `sc` run a Python that has rtf; return its command.

    Spark starts its Python workers with ``spark.pyspark.python``, else
    ``PYSPARK_PYTHON``, else ``python3`` from the PATH -- and a driver
    started with plain ``python`` reads only the environment variable, when
    the SparkContext starts. So a script run as ``.venv/bin/python
    script.py`` without the virtualenv activated had workers without rtf
    (``ModuleNotFoundError: No module named 'rtf'``, under 200 lines of
    Java). Here, before rtf hands Spark a Python function:

    - ``spark.pyspark.python``, when set, is what the workers run (as Spark
      documents it);
    - else ``PYSPARK_PYTHON`` as it was when the context started;
    - else, with a local master (``local``, ``local[...]``,
      ``local-cluster[...]``, a standalone master on the loopback as
      ``rtf spark cluster`` starts: workers on this machine), this driver's own
      Python (`sys.executable`); on a cluster, Spark's default.

    The Python so chosen is checked once per context: run here for a local
    master, in one small Spark task otherwise. One that cannot import rtf
    (or pyoxigraph, lark, pyarrow), or whose version is not the driver's, is
    a `WorkerPythonError` naming it and what to set.
    """
    conf = sc.getConf().get(PYTHON_CONF)
    if conf:
        sc.pythonExec, chosen_by = conf, PYTHON_CONF
    elif sc.pythonExec != SPARK_DEFAULT_PYTHON or os.environ.get(PYTHON_ENV) == SPARK_DEFAULT_PYTHON:
        chosen_by = PYTHON_ENV
    elif _is_local(sc.master):
        sc.pythonExec, chosen_by = sys.executable, None
    else:
        chosen_by = "Spark's default"
    key = (sc.applicationId, sc.pythonExec)
    if key not in _CHECKED:
        _check_worker_python(sc, chosen_by)
        _CHECKED.add(key)
    return sc.pythonExec


def _is_local(master: str) -> bool:
    """Whether the workers run on this machine: local modes, and a standalone master on the
    loopback (`rtf spark cluster`'s)."""
    return master == "local" or master.startswith(("local[", "local-cluster[", *LOOPBACK_MASTERS))


def _check_worker_python(sc, chosen_by: str | None) -> None:
    """`WorkerPythonError` unless the workers' Python imports rtf and is the driver's version."""
    answer = _probe_here(sc.pythonExec) if _is_local(sc.master) else _probe_in_a_task(sc)
    version, *missing = answer.split() if answer[:1].isdigit() else ("", answer)
    driver = "%d.%d" % sys.version_info[:2]
    if version == driver and not missing:
        return
    if not version:
        problem = f"it cannot import rtf ({answer})"
    elif missing:
        problem = f"it lacks {', '.join(missing)}"
    else:
        problem = f"it is Python {version} and the driver Python {driver} (Spark needs the same)"
    where = f"set by {chosen_by}" if chosen_by else "this driver's Python"
    fix = (f"set {PYTHON_ENV} (or --conf {PYTHON_CONF}=...) to a Python {driver} that has rtf "
           + (f"installed, e.g. {sys.executable}" if _is_local(sc.master) else
              "and its dependencies on every node (docs/spark.md, \"On a cluster\")"))
    raise WorkerPythonError(f"the Python workers run {sc.pythonExec} ({where}), and {problem}: {fix}")


def _probe_here(python: str) -> str:
    """What `_PROBE` prints when `python` runs it here (a local master's workers), or why it failed."""
    try:
        run = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    except OSError as e:
        return f"cannot run it: {e.strerror or e}"
    if run.returncode == 0:
        return run.stdout.strip()
    return (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]


def _probe_in_a_task(sc) -> str:
    """What `_PROBE` prints in one Spark task (a cluster's workers), or why it failed."""
    source = _PROBE

    def probe(_rows):  # nested: Spark ships its code, so the worker needs no rtf to run it
        import contextlib
        import io
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(source, {})
        except Exception as e:  # noqa: BLE001 (the answer names it)
            return [f"{type(e).__name__}: {e}"]
        return [out.getvalue().strip()]

    try:
        return sc.parallelize([0], 1).mapPartitions(probe).collect()[0]
    except Exception as e:  # noqa: BLE001 (a worker that does not start: the job fails)
        return spark_error_summary(e)


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
