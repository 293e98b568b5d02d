"""One way to log (issue 40, item 11): every message of the command line goes through `logging`
(rtf/cli/logs.py), with -q, -v and --log-level on every command; what a command was asked to
write as data (``rtf match --stats``) keeps its format and stream at any level. And the honest
figures of item 10: ``--stats`` reports the parser's one-off build apart from registration."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rtf.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
QUERIES = str(EXAMPLES / "news_queries.jsonl")
NEWS = str(EXAMPLES / "news.nt")
ONTO = str(EXAMPLES / "news_ontology.nt")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def leaf_parsers(parser: argparse.ArgumentParser, path=()):
    """(words, parser) of every command that runs: ``index add``, ``check``, ..."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, child in action.choices.items():
            yield from leaf_parsers(child, (*path, name))


def test_every_command_takes_quiet_verbose_and_log_level():
    leaves = list(leaf_parsers(build_parser()))
    assert {words[0] for words, _ in leaves} == set(COMMANDS)
    assert ("index", "export") in {words for words, _ in leaves}
    for words, parser in leaves:
        options = parser._option_string_actions
        assert {"-q", "-v", "--log-level"} <= set(options), words


def test_no_module_of_the_command_line_prints_to_stderr_itself():
    """Messages go through `logging`; only `write_stats` writes data there (rtf/cli/logs.py)."""
    bare = re.compile(r"file\s*=\s*sys\.stderr|sys\.stderr\.write|traceback\.print_exc")
    for path in sorted((ROOT / "rtf" / "cli").glob("*.py")) + [ROOT / "rtf" / "io" / "queries.py"]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if bare.search(line) and path.name != "logs.py":
                pytest.fail(f"{path.name}:{number}: {line.strip()}")


@pytest.mark.parametrize("level, shown", [
    ([], True), (["-v"], True), (["-q"], False), (["--log-level", "warning"], False),
    (["--log-level", "warning", "-v"], True), (["-qq"], False)])
def test_the_level_decides_which_messages_a_command_tells(tmp_path, capsys, level, shown):
    code, out, err = run(capsys, "index", "build", "--queries", QUERIES, "--taxonomy", ONTO,
                         "--output", tmp_path / "q.idx", *level)
    assert code == 0 and out == ""
    assert ("rtf index: " in err) == shown, err


def test_warnings_show_with_q_and_not_with_qq_and_errors_always(tmp_path, capsys):
    bad = tmp_path / "bad.nt"
    bad.write_text(open(NEWS, encoding="utf-8").read() + "not a triple\n", encoding="utf-8")
    argv = ["match", "--queries", QUERIES, "--taxonomy", ONTO, "--publications", bad, "--skip-invalid"]
    code, out, err = run(capsys, *argv, "-q")
    assert code == 0 and "rtf: skipped 1 invalid line(s)" in err and out.count("\n") == 3
    code, out2, err = run(capsys, *argv, "-qq")
    assert code == 0 and err == "" and out2 == out
    code, _, err = run(capsys, "index", "info", tmp_path / "missing.idx", "-qq")
    assert code == 1 and err.startswith("rtf: error: ") and err.count("\n") == 1


def test_stats_are_written_at_any_level_as_one_json_line_and_report_the_parser_build(capsys):
    code, _, err = run(capsys, "match", "--queries", QUERIES, "--taxonomy", ONTO, "--publications", NEWS,
                       "--stats", "-qq")
    assert code == 0
    [line] = err.splitlines()
    stats = json.loads(line)
    assert 0 <= stats["parser_build_s"] <= stats["register_s"]
    assert stats["register_queries_per_s"] > 0
    without = stats["register_queries_per_s_without_parser_build"]
    assert without is None or without >= stats["register_queries_per_s"]


def test_verbose_shows_debug_lines_of_the_package(tmp_path):
    """-v: the debug lines of rtf's modules too (here: why the parser could not be kept)."""
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the cache folder should be: it cannot be made
    argv = [sys.executable, "-m", "rtf.cli", "check", "ASK { ?s ?p ?o }"]
    env = {"PYTHONPATH": str(ROOT), "RTF_CACHE_DIR": str(blocked / "cache"), "PATH": "/usr/bin:/bin"}
    quiet = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    loud = subprocess.run([*argv, "-v"], capture_output=True, text=True, timeout=120, env=env)
    assert quiet.returncode == loud.returncode == 0 and quiet.stdout == loud.stdout
    assert quiet.stderr == "" and "cannot keep the parser" in loud.stderr


def test_an_application_running_main_keeps_its_own_logging(capsys):
    """main() adds its handler only while the command runs, and leaves the levels as they were."""
    import logging

    package = logging.getLogger("rtf")
    before = (package.level, package.propagate, list(package.handlers))
    run(capsys, "check", "ASK { ?s ?p ?o }", "-v")
    assert (package.level, package.propagate, list(package.handlers)) == before
