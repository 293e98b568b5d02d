"""The Python workers of a Spark session run a Python that has rtf (issue 40, item 2).

PySpark starts its Python workers with ``spark.pyspark.python``, else
``PYSPARK_PYTHON``, else the ``python3`` of the PATH; a script run as
``.venv/bin/python script.py`` without the virtualenv activated had workers
without rtf and died in ~200 lines of Java and Python. The choice is tested
here on a stand-in SparkContext (no Java), and docs/spark.md's DataFrame
example is run as the README allows, in a process whose PATH finds a
``python3`` that cannot import rtf (a stand-in, so that the test fails
without the fix whatever the machine's own ``python3`` holds).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtf.spark import session
from rtf.spark.session import WorkerPythonError, use_worker_python
from tests.test_spark import NO_SPARK, spark_test

#: Spark, rtf serve processes or a browser: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def python_without_rtf(folder: Path) -> Path:
    """A ``python3`` (this Python, with a package ``rtf`` that fails to import first on its path)."""
    shadow = folder / "shadow" / "rtf"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'rtf'\", name='rtf')\n", encoding="utf-8")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python3"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{shadow.parent}" exec "{sys.executable}" "$@"\n',
                      encoding="utf-8")
    python.chmod(0o755)
    return python


class Conf:
    def __init__(self, values: dict[str, str]):
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class FakeContext:
    """What `use_worker_python` reads of a SparkContext: as PySpark sets it at start."""

    count = 0

    def __init__(self, master: str, conf: dict[str, str] | None = None, env_python: str | None = None):
        FakeContext.count += 1
        self.master, self._conf = master, Conf(conf or {})
        self.applicationId = f"app-{FakeContext.count}"
        self.pythonExec = env_python or session.SPARK_DEFAULT_PYTHON
        self.tasks = 0

    def getConf(self) -> Conf:
        return self._conf

    def parallelize(self, data, slices):  # the probe of a cluster's workers: run here
        context = self

        class Rdd:
            def mapPartitions(self, f):
                context.tasks += 1
                return type("Collected", (), {"collect": lambda _self: list(f(iter(data)))})()
        return Rdd()


@pytest.fixture
def no_python_env(monkeypatch, tmp_path):
    """Nothing set, and a folder of the driver's own (a local master's workers start in it:
    from the checkout, they would find its rtf/ there)."""
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("master", ["local", "local[2,2]", "local[*]", "local-cluster[2,1,1024]"])
def test_a_local_master_with_nothing_set_runs_the_drivers_python(master, no_python_env):
    sc = FakeContext(master)
    assert use_worker_python(sc) == sys.executable and sc.pythonExec == sys.executable


def test_what_the_user_set_is_kept_and_the_setting_wins_over_the_environment(tmp_path, no_python_env):
    link = tmp_path / "python-wrapper"
    link.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    link.chmod(0o755)
    assert use_worker_python(FakeContext("local[2]", env_python=str(link))) == str(link)
    sc = FakeContext("local[2]", conf={"spark.pyspark.python": str(link)}, env_python="/no/such/python")
    assert use_worker_python(sc) == str(link) and sc.pythonExec == str(link)


def test_a_python_without_rtf_is_refused_at_once_in_one_line(tmp_path, no_python_env):
    python = python_without_rtf(tmp_path)
    with pytest.raises(WorkerPythonError) as caught:
        use_worker_python(FakeContext("local[2,2]", env_python=str(python)))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"the Python workers run {python} (set by PYSPARK_PYTHON), and it cannot "
                              "import rtf (ModuleNotFoundError: No module named 'rtf'): set PYSPARK_PYTHON")
    assert message.endswith(f"e.g. {sys.executable}")


def test_a_python_that_cannot_run_is_refused(no_python_env):
    with pytest.raises(WorkerPythonError, match=r"run /no/such/python \(set by spark.pyspark.python\), and it "
                                                r"cannot import rtf \(cannot run it: No such file"):
        use_worker_python(FakeContext("local", conf={"spark.pyspark.python": "/no/such/python"}))


def test_a_clusters_workers_are_checked_by_one_task(tmp_path, no_python_env):
    """On a cluster nothing is chosen for the user: Spark's default is checked where it runs."""
    sc = FakeContext("spark://host:7077")
    assert use_worker_python(sc) == "python3" and sc.tasks == 1
    use_worker_python(sc)
    assert sc.tasks == 1  # once per context and Python
    sc = FakeContext("yarn")
    source = session._PROBE
    try:  # the task's answer when the workers lack rtf
        session._PROBE = "raise ModuleNotFoundError(\"No module named 'rtf'\")"
        with pytest.raises(WorkerPythonError, match=r"run python3 \(set by Spark's default\), and it cannot "
                                                    r"import rtf .*on every node"):
            use_worker_python(sc)
    finally:
        session._PROBE = source


# ------------------------------------------------------------ on Spark, as a user runs it


def _blocks(language: str) -> list[str]:
    text = (ROOT / "docs" / "spark.md").read_text(encoding="utf-8")
    section = text[text.index("## The DataFrame API"):text.index("`match_publications(df, index, *")]
    return [block.split("\n", 1)[1] for block in section.split("```")[1::2] if block.startswith(language + "\n")]


def _user_environment(tmp_path: Path, path_first: Path | None = None) -> dict[str, str]:
    """The environment of a shell where the virtualenv is not activated."""
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "VIRTUAL_ENV", "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = os.pathsep.join(([str(path_first)] if path_first else []) + path)
    return env


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """The bundled example and the index of the doc's first block, as in a checkout (built
    once: the tests only run the doc's script in it)."""
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    folder = tmp_path_factory.mktemp("checkout")
    (folder / "examples").symlink_to(ROOT / "examples")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    [build] = _blocks("sh")
    subprocess.run(["bash", "-euo", "pipefail", "-c", build], cwd=folder, env=env, check=True, timeout=120)
    [script] = _blocks("python")
    (folder / "match_news.py").write_text(script, encoding="utf-8")
    return folder


@spark_test
def test_the_dataframe_example_runs_with_the_venv_not_activated(tmp_path, checkout):
    """`.venv/bin/python match_news.py` with a PATH whose python3 has no rtf: the matches of rtf match."""
    python3 = python_without_rtf(tmp_path / "other")
    run = subprocess.run([sys.executable, "match_news.py"], cwd=checkout, capture_output=True, text=True,
                         env=_user_environment(tmp_path, python3.parent), timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    printed = run.stdout.strip().splitlines()[-1]
    [shown] = ["".join(line.removeprefix("# ").strip() for line in _blocks("python")[0].splitlines()
                       if line.startswith("# ") and not line.startswith("# match_news"))]
    assert printed.replace(" ", "") == shown.replace(" ", "")
    from rtf.engine import Engine
    from rtf.io.reader import read_publications

    engine = Engine.load(checkout / "news.idx")
    expected = sorted((p.id, m.query_id, m.subscriber) for p in read_publications(ROOT / "examples" / "news.nt")
                      for m in engine.match(p))
    assert printed == str(expected)


@spark_test
def test_a_python_set_without_rtf_fails_at_once_in_one_line(tmp_path, checkout):
    python3 = python_without_rtf(tmp_path / "other")
    env = dict(_user_environment(tmp_path), PYSPARK_PYTHON=str(python3))
    run = subprocess.run([sys.executable, "match_news.py"], cwd=checkout, capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rtf.spark.session.WorkerPythonError: the Python workers run {python3} "
                           "(set by PYSPARK_PYTHON), and it cannot import rtf")
    assert "Py4JJavaError" not in run.stderr and "Traceback" in run.stderr  # raised before any job ran
