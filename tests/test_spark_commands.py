"""``rtf spark stream|replay|queries-log``: the Spark jobs as installed commands (issue 40, item 8).

They were checkout scripts only (``spark/*.py``); now the package holds them
(`rtf.spark.commands`), ``rtf spark ...`` and ``python -m rtf.spark ...`` run
them, and the scripts are the same functions under their old names. Runs on
Spark, through ``rtf spark``, are in tests/test_spark.py (the replay) and
tests/test_spark_stream.py (the stream), on those modules' sessions; here
nothing starts a JVM.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtf.cli import main as rtf_main
from rtf.spark import commands

ROOT = Path(__file__).resolve().parents[1]
#: The console script `pip install` wrote beside this Python.
RTF = Path(sys.executable).parent / "rtf"
Q_RIO = 'SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "rio") }'


def test_rtf_lists_the_spark_commands(capsys):
    with pytest.raises(SystemExit) as exit_:
        rtf_main(["--help"])
    assert exit_.value.code == 0
    assert "rtf spark stream|replay|queries-log" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        rtf_main(["spark", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "pip install 'rtf[spark]'" in out and "Java 17" in out
    for name, (_, _, what) in commands.COMMANDS.items():
        assert f"  {name}" in out and what in out


@pytest.mark.parametrize("name, words", [
    ("stream", ["--input", "--output", "--checkpoint", "--index", "--queries-log", "--stop-when-idle",
                "--taxonomy", "--master", "--log-level", "exactly once", "example",
                "rtf index build --queries queries.jsonl --taxonomy", "rtf spark stream --input",
                "rtf spark queries-log qlog/ register"]),
    ("replay", ["--dump", "--queries", "--index", "--taxonomy", "--algorithm", "--output-format",
                "_metrics.json", "spark-submit", "example", "rtf spark replay --dump"]),
    ("queries-log", ["register", "unregister", "list", "size", "examples",
                     "rtf spark queries-log qlog/ register --id rio"]),
])
def test_each_command_teaches_with_examples_of_itself(name, words, capsys):
    with pytest.raises(SystemExit) as exit_:
        rtf_main(["spark", name, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and out.startswith(f"usage: rtf spark {name} ")
    for word in words:
        assert word in out, word
    assert "python spark/" not in out and "dbpedia_eval" not in out.split("spark-submit")[0]


def test_the_installed_command_and_python_m_share_one_log(tmp_path):
    """As a user runs them after `pip install '.[spark]'`: the console script, then ``-m``."""
    qlog = tmp_path / "qlog"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=120)

    added = run(str(RTF), "spark", "queries-log", str(qlog), "register", "--id", "rio", "--query", Q_RIO,
                "--subscriber", "ann")
    assert (added.returncode, added.stdout) == (0, "operation 1\n"), added.stderr
    bad = run(sys.executable, "-m", "rtf.spark", "queries-log", str(qlog), "register", "--id", "z",
              "--query", "SELECT ?s WHERE { ?s ?p }")
    assert bad.returncode == 1 and bad.stderr.startswith(
        "python -m rtf.spark queries-log: error: operation 1: query 'z': line 1")
    assert len(bad.stderr.splitlines()) == 1
    listed = run(sys.executable, "-m", "rtf.spark", "queries-log", str(qlog), "list")
    [op] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (op["n"], op["op"], op["id"], op["subscriber"]) == (1, "register", "rio", "ann")
    helped = run(sys.executable, "-m", "rtf.spark", "--help")
    assert helped.returncode == 0 and "queries-log" in helped.stdout


def test_rtf_spark_queries_log_needs_no_spark(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(commands, "missing_requirement", lambda: "PySpark is not installed")
    assert rtf_main(["spark", "queries-log", str(tmp_path / "q"), "register", "--id", "a",
                     "--query", Q_RIO]) == 0
    assert capsys.readouterr().out == "operation 1\n"


@pytest.mark.parametrize("name", ["stream", "replay"])
def test_without_pyspark_or_java_a_spark_command_says_what_to_install(name, tmp_path, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m == "pyspark" else real(m, *a))
    assert rtf_main(["spark", name, "--output", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == (f"rtf spark {name}: error: PySpark is not installed: "
                                       "pip install 'rtf[spark]'\n")
    monkeypatch.setattr(importlib.util, "find_spec", real)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert rtf_main(["spark", name, "--output", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == (f"rtf spark {name}: error: Spark needs Java 17, and there is no "
                                       "java on the PATH: install it, or set JAVA_HOME\n")


def test_bad_command_lines_exit_2_in_the_commands_own_words(capsys):
    with pytest.raises(SystemExit) as exit_:
        rtf_main(["spark", "nope"])
    assert exit_.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        rtf_main(["spark", "replay", "--dump", "d", "--queries", "q.jsonl", "--output", "o"])
    assert exit_.value.code == 2
    assert "rtf spark replay: error: --algorithm is required with --queries" in capsys.readouterr().err


def test_the_checkout_scripts_are_the_commands():
    """spark/*.py (for spark-submit and old habits) run the package's code, under their own names."""
    for script, module in [("stream.py", "rtf.spark.stream_command"),
                           ("queries_log.py", "rtf.spark.queries_log_command"),
                           ("dbpedia_eval.py", "rtf.spark.replay_command")]:
        spec = importlib.util.spec_from_file_location(f"script_{script[:-3]}", ROOT / "spark" / script)
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        assert loaded.main.func is importlib.import_module(module).main
        assert len((ROOT / "spark" / script).read_text().splitlines()) < 20


def test_no_message_sends_users_to_the_checkout_scripts():
    """Hints in the library name the installed commands (`rtf spark ...`), not spark/*.py."""
    for path in sorted((ROOT / "rtf").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "python spark/" in line:
                pytest.fail(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")


def test_importing_the_commands_imports_no_pyspark():
    code = ("import sys, rtf.cli, rtf.cli.spark, rtf.spark.commands; "
            "rtf.cli.build_parser(); print(sorted(m for m in sys.modules if m.startswith('pyspark')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"})
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stderr
