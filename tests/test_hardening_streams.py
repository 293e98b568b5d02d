"""Inputs that are pipes, and standard streams that are closed (issue 37, items 7 and 8).

Item 7: `rtf index info <(cat q.idx)` read the file, then `Engine.load`
opened it again and blocked (a FIFO) or found it empty (a process
substitution). Every command that reads a file is run here with that file
given as a FIFO that can be read once -- a second open finds it empty, as
``/dev/fd/63`` does -- and as ``-`` (stdin): each must answer exactly as
with the file itself, or, for ``rtf index add/remove`` (which replace the
index), refuse in one line with exit status 2.

Item 8: a daemon or cron job may start rtf with stdin, stdout or stderr
closed; `rtf match ... >&-` was an AttributeError, exit 70. Every command
is run here, in a forked child, with each stream closed: a command that
needs the stream stops with one line and exit status 1, as ``cat >&-``
does; one that does not answers as usual. Two real processes check the
issue's own command lines end to end.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rtf.cli import main
from rtf.engine import Engine

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    found = {"queries": folder / "q.jsonl", "publications": folder / "p.nt", "taxonomy": folder / "onto.nt",
             "stop": folder / "stop.txt", "one": folder / "one.rq", "index": folder / "q.idx",
             "more": folder / "more.jsonl"}
    shutil.copy(EXAMPLES / "news_queries.jsonl", found["queries"])
    shutil.copy(EXAMPLES / "news.nt", found["publications"])
    shutil.copy(EXAMPLES / "news_ontology.nt", found["taxonomy"])
    found["stop"].write_text("the\nof\n")
    found["one"].write_text('ASK { ?s ?p ?o FILTER ftcontains(?o, "rio") }\n')
    found["more"].write_text(json.dumps({"id": "more", "query": found["one"].read_text()}) + "\n")
    engine = Engine()
    for line in found["queries"].read_text().splitlines():
        record = json.loads(line)
        engine.register(record["query"], record["id"], record.get("subscriber"))
    engine.save(found["index"])
    return found


# ------------------------------------------------------------------ item 7: pipes and stdin


class OnceFifo:
    """A FIFO whose writer gives `content` to the first reader and nothing to any later one
    (as a process substitution's ``/dev/fd/63``: read to its end, it stays at its end)."""

    def __init__(self, path: Path, content: bytes):
        self.path = path
        os.mkfifo(path)
        self._thread = threading.Thread(target=self._write, args=(content,), daemon=True)
        self._thread.start()

    def _write(self, content: bytes) -> None:
        for data in (content, b"", b""):
            try:
                with open(self.path, "wb") as f:  # blocks until a reader opens it
                    f.write(data)
            except OSError:
                return

    def close(self) -> None:
        """End the writer: with a reader held open, its remaining opens do not wait."""
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            self._thread.join(10)
        finally:
            os.close(fd)


#: Every command that reads a file, with {F} where the file goes and the file it is.
READERS = [
    ("check -f {F}", "queries"),
    ("match --queries {F} --publications {publications}", "queries"),
    ("match --index {F} --publications {publications}", "index"),
    ("match --queries {queries} --publications {F}", "publications"),
    ("match --queries {queries} --follow {F} --follow-timeout 0.5", "publications"),
    ("match --queries {queries} --publications {publications} --taxonomy {F}", "taxonomy"),
    ("match --queries {queries} --publications {publications} --stop-words-file {F}", "stop"),
    ("gen-queries --publications {F} -n 5 -o {out}", "publications"),
    ("gen-queries --publications {publications} --taxonomy {F} -n 5 -o {out}", "taxonomy"),
    ("index build --queries {F} --output {out}", "queries"),
    ("index build --queries {queries} --taxonomy {F} --output {out}", "taxonomy"),
    ("index build --queries {queries} --stop-words-file {F} --output {out}", "stop"),
    ("index info {F}", "index"),
    ("index add {copy} --queries {F}", "more"),
    ("bench --queries {F} --publications {publications} --db 2 --pubs 2 --algorithms naive "
     "--in-process --no-memory", "queries"),
    ("bench --publications {F} --db 2 --pubs 2 --algorithms naive --in-process --no-memory", "publications"),
]


@contextlib.contextmanager
def within(seconds: int):
    """TimeoutError if the block takes longer (a second open of a FIFO waits forever)."""
    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_command(template: str, files: dict, folder: Path, given: str, capsys) -> tuple[int, str, bytes]:
    """Run `template` with {F} as `given`; return the exit status, stdout and what it wrote
    to {out} or {copy} (paths in the output are the same in every run)."""
    out, copy = folder / "out", folder / "copy.idx"
    shutil.copy(files["index"], copy)
    out.unlink(missing_ok=True)
    argv = template.format(F=given, out=out, copy=copy, **files).split()
    with within(30):
        code = main(argv)
    stdout = capsys.readouterr().out
    if template.startswith("bench"):  # timings: the table's lines, not its figures
        stdout = "".join(line.split()[0] + "\n" for line in stdout.splitlines() if line.strip())
    stdout = stdout.replace(given, "<F>") if given != "-" else re.sub(r'(?m)^-(?=:)|(?<=")-(?=")|<stdin>', "<F>", stdout)
    written = out.read_bytes() if out.exists() else copy.read_bytes()
    return code, stdout, written


@pytest.mark.parametrize("template, kind", READERS, ids=[t.split(" {")[0] + " " + k for t, k in READERS])
@pytest.mark.parametrize("way", ["fifo", "stdin"])
def test_every_command_reads_a_pipe_or_stdin_as_the_file(template, kind, way, files, tmp_path, capsys,
                                                          monkeypatch):
    expected = run_command(template, files, tmp_path, str(files[kind]), capsys)
    assert expected[0] == 0
    content = files[kind].read_bytes()
    if way == "stdin":
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(content), encoding="utf-8"))
        assert run_command(template, files, tmp_path, "-", capsys) == expected
        return
    fifo = OnceFifo(tmp_path / "fifo", content)
    try:
        assert run_command(template, files, tmp_path, str(fifo.path), capsys) == expected
    finally:
        fifo.close()


def test_index_info_of_a_pipe_reads_it_once(files, tmp_path, capsys):
    """The issue's command: `rtf index info <(cat q.idx)`."""
    fifo = OnceFifo(tmp_path / "fifo", files["index"].read_bytes())
    try:
        with within(30):
            assert main(["index", "info", str(fifo.path)]) == 0
    finally:
        fifo.close()
    info = json.loads(capsys.readouterr().out)
    assert info["queries"] == 3 and info["bytes"] == files["index"].stat().st_size


@pytest.mark.parametrize("command", ["add", "remove"])
@pytest.mark.parametrize("way", ["fifo", "stdin"])
def test_index_add_and_remove_refuse_an_index_they_cannot_replace(command, way, files, tmp_path, capsys):
    """They replace the index by renaming a new file over it: a pipe would get a regular file
    in its place (a FIFO) or the new index written into nowhere (/dev/fd/63), reported done."""
    fifo = OnceFifo(tmp_path / "fifo", files["index"].read_bytes()) if way == "fifo" else None
    target = str(fifo.path) if fifo else "-"
    extra = ["--queries", str(files["one"])] if command == "add" else ["--ids", "rio-games"]
    try:
        with within(30):
            assert main(["index", command, target, *extra]) == 2
    finally:
        if fifo:
            fifo.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rewrites the index in place" in err
    assert fifo is None or fifo.path.exists() and not fifo.path.is_file()


@pytest.mark.parametrize("argv", [
    "match --queries - --publications -", "match --index - --publications -",
    "match --queries {queries} --publications - -", "index build --queries - --stop-words-file - --output {out}",
])
def test_two_inputs_from_stdin_are_refused(argv, files, tmp_path, capsys, monkeypatch):
    """The second would find standard input at its end and read nothing, silently."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(files["queries"].read_bytes())))
    assert main(argv.format(out=tmp_path / "out", **files).split()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "standard input can be read once" in err


# ------------------------------------------------------------------ item 8: closed streams


#: Every command, with the streams it needs ("": neither stdin nor stdout).
COMMANDS = [
    ("check ASK{{?s?p?o}}", "stdout"),
    ("check", "stdin stdout"),  # the query from stdin
    ("check -f {queries}", "stdout"),
    ("match --queries {queries} --publications {publications}", "stdout"),
    ("match --queries {queries} --publications -", "stdin stdout"),
    ("match --queries {queries} --publications {publications} --output {out} --stats", ""),
    ("match --index {index} --publications {publications} --output {out}", ""),
    ("gen-queries --publications {publications} -n 5 -o {out}", ""),
    ("index build --queries {queries} --output {out}", ""),
    ("index info {index}", "stdout"),
    ("index add {copy} --queries {one}", ""),
    ("index remove {copy} --ids rio-games", ""),
    ("bench --publications {publications} --db 2 --pubs 2 --algorithms naive --in-process --no-memory",
     "stdout"),
    ("--help", "stdout"),
    ("--version", "stdout"),
]


def in_child(argv: list[str], closed: int | None, err_path: Path, stdin: bytes = b"") -> int:
    """The exit status of `main(argv)` in a forked child whose descriptor `closed` is closed
    as a process started with it closed has it (Python's `sys` stream None); stderr goes
    to `err_path` unless closed, stdin comes from `stdin` unless closed."""
    read_end, write_end = os.pipe()
    os.write(write_end, stdin)
    os.close(write_end)
    pid = os.fork()
    if pid == 0:  # the child: no return from here
        code = 99
        try:
            os.dup2(read_end, 0)
            err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(err, 2)
            out = os.open(os.devnull, os.O_WRONLY)
            os.dup2(out, 1)
            for fd in (read_end, err, out):
                os.close(fd)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
            if closed is not None:
                os.close(closed)
                setattr(sys, ("stdin", "stdout", "stderr")[closed], None)
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
        finally:
            os._exit(code)
    os.close(read_end)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.slow
@pytest.mark.parametrize("template, needs", COMMANDS, ids=[t.split(" {")[0] for t, _ in COMMANDS])
def test_every_command_with_each_standard_stream_closed(template, needs, files, tmp_path):
    err_path = tmp_path / "err"
    out, copy = tmp_path / "out", tmp_path / "copy.idx"

    def run(closed: int | None) -> tuple[int, bytes]:
        shutil.copy(files["index"], copy)
        out.unlink(missing_ok=True)
        argv = template.format(out=out, copy=copy, **files).split()
        stdin = files["one" if template == "check" else "publications"].read_bytes()
        code = in_child(argv, closed, err_path, stdin=stdin)
        return code, out.read_bytes() if out.exists() else copy.read_bytes()

    usual = run(None)
    assert usual[0] == 0
    for closed, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        code, written = run(closed)
        if name in needs.split():  # one line (after what a command told before: rtf bench)
            verb = "read the standard input" if name == "stdin" else "write the standard output"
            err = err_path.read_text()
            assert code == 1 and err.endswith(f"cannot {verb}: it is closed\n"), (name, err)
            assert err.splitlines()[-1].startswith("rtf: error: ") and "Traceback" not in err
        else:
            assert (code, written) == usual, name


@pytest.mark.parametrize("shell, stream", [
    ("{rtf} match --queries {queries} --publications {publications} >&-", "output"),
    ("{rtf} match --queries {queries} --publications - <&-", "input"),
])
def test_the_issue_s_command_lines(shell, stream, files):
    rtf = f"{sys.executable} -m rtf.cli"
    done = subprocess.run(["bash", "-c", shell.format(rtf=rtf, **files)], capture_output=True, text=True,
                          timeout=120)
    verb = "write" if stream == "output" else "read"
    # one error line (after the warnings the queries earn: one uses a/rdfs:subClassOf*
    # and no taxonomy is given)
    lines = [line for line in done.stderr.splitlines(keepends=True) if not line.startswith("rtf: warning: ")]
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("rtf: error: ") and lines[0].endswith(f"cannot {verb} the standard {stream}: it is closed\n")


def test_a_closed_stderr_keeps_the_exit_status(files, tmp_path):
    rtf = f"{sys.executable} -m rtf.cli"
    ok = subprocess.run(["bash", "-c", f"{rtf} index build --queries {files['queries']} --output {tmp_path / 'x.idx'} 2>&-"],
                        timeout=120)
    bad = subprocess.run(["bash", "-c", f"{rtf} index info {tmp_path / 'missing.idx'} 2>&-"], timeout=120)
    assert (ok.returncode, bad.returncode) == (0, 1) and Engine.load(tmp_path / "x.idx")
