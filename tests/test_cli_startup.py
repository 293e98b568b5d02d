"""The command line starts fast (issue 40, item 3): `rtf --version` and `rtf --help` import no
command module and none of the engine, `rtf check` only the parser; and the query parser's
LALR tables are kept on disk between processes (rtf/parser/grammar.py), never stale, never
another user's, and a cache that cannot be written costs the build and nothing else.

What is counted here is what a process imports, not seconds, which depend on the machine
(measure them with `python -X importtime -m rtf --help` and hyperfine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtf.parser import grammar

ROOT = Path(__file__).resolve().parents[1]

#: Modules that `rtf --version` and `rtf --help` must not import: every command's own module,
#: the engine and what it stands on (numpy, Lark, the parser, the readers).
HEAVY = ("numpy", "lark", "rtf.engine", "rtf.parser", "rtf.io.reader", "rtf.io.processes", "rtf.filter",
         "rtf.cli.match", "rtf.cli.check", "rtf.cli.index", "rtf.cli.bench", "rtf.cli.serve", "rtf.cli.gen_queries")

_PROBE = """\
import json, sys
from rtf.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
sys.stdout.flush()
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def modules_after(*argv: str, env: dict | None = None) -> tuple[set[str], str]:
    """The modules a fresh process has imported once `rtf ARGV` ran, and what it wrote."""
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    return {m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)}, done.stdout


@pytest.mark.parametrize("argv", [["--version"], ["--help"], []])
def test_version_and_help_import_no_command_and_none_of_the_engine(argv):
    heavy, out = modules_after(*argv)
    assert heavy == set()
    assert "rtf" in out


def test_help_still_lists_every_command_with_its_line():
    from rtf.cli import COMMANDS

    _, out = modules_after("--help")
    out = " ".join(out.split())  # (argparse wraps the lines)
    for name, (_, line) in COMMANDS.items():
        assert f" {name} " in out and line in out


def test_a_command_help_imports_its_own_module_only():
    heavy, out = modules_after("index", "--help")
    assert "rtf.cli.index" in heavy
    assert not heavy & {"rtf.cli.match", "rtf.cli.bench", "rtf.cli.serve", "rtf.cli.check"}
    assert "rtf index export" in out


def test_check_imports_the_parser_but_not_the_engine_or_numpy():
    heavy, out = modules_after("check", "ASK { ?s ?p ?o }")
    assert "rtf.parser" in heavy and "rtf.cli.check" in heavy
    assert not heavy & {"numpy", "rtf.engine", "rtf.filter", "rtf.cli.match", "rtf.cli.bench",
                        "rtf.io.processes"}  # (the query files' reader: for -f and stdin only)
    assert "branch 1" in out


# ------------------------------------------------------------------ parser cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache folder for this test, and `lark_parser` built anew."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(grammar.CACHE_ENV, str(folder))
    grammar.lark_parser.cache_clear()
    yield folder
    grammar.lark_parser.cache_clear()


def tables(folder: Path) -> list[Path]:
    return sorted(folder.glob("ftsparql-*.lark-tables"))


def parses(parser) -> bool:
    return parser.parse('ASK { ?s <http://ex/p> ?o FILTER ftcontains(?o, "rio") }') is not None


def test_a_built_parser_is_saved_and_the_next_process_loads_it(cache):
    built = grammar.parser_builds.built
    assert parses(grammar.lark_parser(positions=False))
    assert grammar.parser_builds.built == built + 1
    assert len(tables(cache)) == 1
    assert cache.stat().st_mode & 0o777 == 0o700  # made private
    assert tables(cache)[0].stat().st_mode & 0o077 == 0
    grammar.lark_parser.cache_clear()  # as a new process
    loaded = grammar.parser_builds.loaded
    assert parses(grammar.lark_parser(positions=False))
    assert (grammar.parser_builds.built, grammar.parser_builds.loaded) == (built + 1, loaded + 1)


def test_another_grammar_or_lark_or_option_is_another_file(cache, monkeypatch):
    grammar.lark_parser(positions=False)
    grammar.lark_parser(positions=True)
    assert len(tables(cache)) == 2  # the options are part of the key
    text = grammar.grammar_text()
    names = {grammar._cache_path(text, {"x": 1}), grammar._cache_path(text + "\n", {"x": 1})}
    monkeypatch.setattr(grammar.lark, "__version__", "0.0.0")
    names.add(grammar._cache_path(text, {"x": 1}))
    assert len(names) == 3  # the grammar's text and Lark's version too: never stale tables


def test_a_torn_or_foreign_file_is_not_loaded_but_rebuilt(cache):
    grammar.lark_parser(positions=False)
    [path] = tables(cache)
    path.write_bytes(path.read_bytes()[:100])  # torn
    grammar.lark_parser.cache_clear()
    built = grammar.parser_builds.built
    assert parses(grammar.lark_parser(positions=False))
    assert grammar.parser_builds.built == built + 1
    assert path.stat().st_size > 100  # replaced by a whole one
    os.chmod(path, 0o666)  # one that others may write: never loaded (it could be planted)
    grammar.lark_parser.cache_clear()
    assert parses(grammar.lark_parser(positions=False))
    assert grammar.parser_builds.built == built + 2


def test_a_link_in_place_of_the_file_is_not_followed(cache, tmp_path):
    grammar.lark_parser(positions=False)
    [path] = tables(cache)
    real = tmp_path / "elsewhere"
    path.rename(real)
    path.symlink_to(real)
    assert grammar._load(path) is None
    assert grammar._load(real) is not None


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_cache_folder_costs_the_build_and_nothing_else(cache):
    cache.mkdir(mode=0o500)
    try:
        built = grammar.parser_builds.built
        assert parses(grammar.lark_parser(positions=False))
        assert grammar.parser_builds.built == built + 1
        assert tables(cache) == []
    finally:
        cache.chmod(0o700)


def test_a_cache_folder_that_cannot_be_made_costs_the_build_and_nothing_else(tmp_path, monkeypatch):
    """(As root too, whom a read-only folder does not stop: a file stands where a folder should.)"""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(grammar.CACHE_ENV, str(tmp_path / "file" / "cache"))
    grammar.lark_parser.cache_clear()
    try:
        built = grammar.parser_builds.built
        assert parses(grammar.lark_parser(positions=False))
        assert grammar.parser_builds.built == built + 1
        assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    finally:
        grammar.lark_parser.cache_clear()


def test_an_empty_setting_turns_the_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv(grammar.CACHE_ENV, "")
    assert grammar.cache_folder() is None
    monkeypatch.delenv(grammar.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert grammar.cache_folder() == tmp_path / "rtf"


def test_only_the_most_recent_files_are_kept(cache):
    cache.mkdir(mode=0o700)
    for n in range(grammar.KEEP_FILES + 5):
        old = cache / f"ftsparql-{n:04d}.lark-tables"
        old.write_bytes(b"x")
        os.utime(old, (1000 + n, 1000 + n))
    grammar.lark_parser(positions=False)
    kept = tables(cache)
    assert len(kept) == grammar.KEEP_FILES
    assert not (cache / "ftsparql-0000.lark-tables").exists()


def test_two_processes_share_the_cache_and_parse_alike(tmp_path):
    """A real second process loads what the first saved, and both answer `rtf check` the same."""
    env = {grammar.CACHE_ENV: str(tmp_path / "cache")}
    first = modules_after("check", 'SELECT ?x WHERE { ?x <http://ex/p> "a" }', env=env)[1]
    assert len(tables(tmp_path / "cache")) == 1
    second = modules_after("check", 'SELECT ?x WHERE { ?x <http://ex/p> "a" }', env=env)[1]
    assert first == second and "branch 1" in first


def test_processes_started_together_on_an_empty_cache_all_parse_and_leave_one_whole_file(tmp_path):
    """Writers race: each writes a file of its own and renames it into place, so every reader
    finds a whole file or none, and no temporary file is left."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{grammar.CACHE_ENV: str(tmp_path / "cache")})
    argv = [sys.executable, "-m", "rtf.cli", "check", 'ASK { ?x <http://ex/p> "a" }']
    running = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
               for _ in range(4)]
    outputs = [p.communicate(timeout=300) for p in running]
    assert all(p.returncode == 0 for p in running), outputs
    assert len({out for out, _ in outputs}) == 1
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [tables(tmp_path / "cache")[0].name]
    assert grammar._load(tables(tmp_path / "cache")[0]) is not None
