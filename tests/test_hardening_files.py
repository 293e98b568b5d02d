"""Files the command line writes, raced and interrupted (issue 21 item 7 and the cosmetic list).

`rtf index add/remove/build` read, change and replace an index: run at once
they must each take effect (the index's folder is locked from the read to
the rename). `--output` is replaced atomically, yet written where it is when
it names a descriptor (``/dev/stdout`` to a pipe, or to a file the shell
opened with ``>>``), and a SIGTERM leaves neither a temporary file nor a
changed output. Every test runs real processes: races need them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtf.engine import Engine

EX = "http://ex.org/"


def rtf(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rtf.cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def query(tag: str, i: int) -> str:
    return f'ASK {{ ?s <{EX}{tag}> ?t FILTER ftcontains(?t, "w{i}") }}'


def write_queries(path: Path, tag: str, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"{tag}{i}", "query": query(tag, i)}) + "\n"
                            for i in range(n)))
    return path


def finish(procs: list[subprocess.Popen]) -> list[tuple[int, str]]:
    out = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        out.append((p.returncode, err))
    return out


# ------------------------------------------------------ 7. rtf index at once


@pytest.fixture(scope="module")
def base_index(tmp_path_factory) -> Path:
    """An index of 3,000 queries: loading and saving it takes long enough for the
    concurrent updates below to overlap."""
    folder = tmp_path_factory.mktemp("index")
    engine = Engine("rtfs")
    for i in range(3000):
        engine.register(query("base", i), f"base{i}")
    engine.save(folder / "base.idx")
    return folder / "base.idx"


@pytest.mark.slow
def test_concurrent_adds_all_take_effect(base_index, tmp_path):
    """The issue's probe: 4 concurrent `rtf index add`, 6 rounds, lost 5,400 queries."""
    idx = tmp_path / "q.idx"
    idx.write_bytes(base_index.read_bytes())
    expected = {f"base{i}" for i in range(3000)}
    for round_ in range(3):
        files = [write_queries(tmp_path / f"r{round_}p{k}.jsonl", f"r{round_}p{k}-", 200)
                 for k in range(4)]
        results = finish([rtf("index", "add", idx, "--queries", f) for f in files])
        assert all(code == 0 for code, _ in results), results
        expected |= {f"r{round_}p{k}-{i}" for k in range(4) for i in range(200)}
        assert {q.id for q in Engine.load(idx).queries()} == expected


@pytest.mark.slow
@pytest.mark.parametrize("mix", [("add", "remove", "add", "remove"), ("remove", "remove", "add"),
                                 ("add", "add", "remove", "remove", "add")])
def test_concurrent_adds_and_removes_all_take_effect(base_index, tmp_path, mix):
    """Any mix of updates at once: the result is every one of them applied."""
    idx = tmp_path / "q.idx"
    idx.write_bytes(base_index.read_bytes())
    expected = {f"base{i}" for i in range(3000)}
    procs = []
    for k, op in enumerate(mix):
        if op == "add":
            f = write_queries(tmp_path / f"p{k}.jsonl", f"p{k}-", 150)
            procs.append(rtf("index", "add", idx, "--queries", f))
            expected |= {f"p{k}-{i}" for i in range(150)}
        else:
            ids = [f"base{i}" for i in range(k * 100, k * 100 + 100)]
            procs.append(rtf("index", "remove", idx, "--ids", *ids))
            expected -= set(ids)
    results = finish(procs)
    assert all(code == 0 for code, _ in results), results
    assert {q.id for q in Engine.load(idx).queries()} == expected


@pytest.mark.slow
def test_a_waiting_update_says_so(base_index, tmp_path):
    """An update that finds another at work prints one line and waits for it."""
    from rtf.io.files import lock_folder
    idx = tmp_path / "q.idx"
    idx.write_bytes(base_index.read_bytes())
    held = lock_folder(tmp_path)
    try:
        p = rtf("index", "add", idx, "--queries", write_queries(tmp_path / "a.jsonl", "a", 3))
        # Its first line says it waits (read as it comes: a busy machine may take seconds to
        # start it, and the lock must still be held when it gets there).
        first = p.stderr.readline()
        assert p.poll() is None  # waiting
    finally:
        import os
        os.close(held)
    code, err = finish([p])[0]
    assert code == 0
    assert first.startswith(f"rtf index: another rtf index is changing a file beside {idx}: waiting"), first + err
    assert len(Engine.load(idx)) == 3003


# --------------------------------------------------- --output and descriptors


@pytest.fixture
def inputs(tmp_path) -> tuple[Path, Path]:
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "rio", "query": f'ASK {{ ?s <{EX}t> ?o FILTER ftcontains(?o, "rio") }}'}) + "\n")
    p = tmp_path / "p.nt"
    p.write_text("".join(f'<{EX}s{i}> <{EX}t> "Rio {i}" .\n' for i in range(3)))
    return q, p


@pytest.mark.parametrize("target", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_output_to_stdout_through_a_pipe(inputs, target):
    """The issue's probe: `--output /dev/stdout` to a pipe failed."""
    q, p = inputs
    done = subprocess.run([sys.executable, "-m", "rtf.cli", "match", "--queries", q,
                           "--publications", p, "--output", target], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [json.loads(x)["publication"] for x in done.stdout.splitlines()] == [
        f"{EX}s{i}" for i in range(3)]


def test_output_to_stdout_appended_by_the_shell_keeps_the_file(inputs, tmp_path):
    q, p = inputs
    log = tmp_path / "log.jsonl"
    log.write_text("kept\n")
    with open(log, "a") as appended:
        done = subprocess.run([sys.executable, "-m", "rtf.cli", "match", "--queries", q,
                               "--publications", p, "--output", "/dev/stdout"],
                              stdout=appended, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert lines[0] == "kept" and len(lines) == 4


@pytest.mark.parametrize("live", ["follow", "stdin"])
def test_sigterm_leaves_no_temporary_file_and_the_old_output(inputs, tmp_path, live):
    """The issue's probe: SIGTERM during `--output F` left `.F.*.tmp`."""
    q, p = inputs
    out = tmp_path / "out.jsonl"
    out.write_text("the old output\n")
    source = ["--follow", p] if live == "follow" else ["--publications", "-"]
    proc = subprocess.Popen([sys.executable, "-m", "rtf.cli", "match", "--queries", q, *source,
                             "--output", out], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    if live == "stdin":
        proc.stdin.write(p.read_text())
        proc.stdin.flush()
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(".out.jsonl.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob(".out.jsonl.*.tmp")), "the run never started writing"
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert list(tmp_path.glob(".out.jsonl.*")) == []
    assert out.read_text() == "the old output\n"


# ------------------------------------------------ 4. the command line's writes, disk full


def run_limited(fsize: int, *args) -> subprocess.CompletedProcess:
    """`rtf ARGS` whose files may not grow past `fsize` bytes (EFBIG, as a full disk)."""
    launcher = ("import resource, sys; n = int(sys.argv[1]); "
                "resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); "
                "sys.argv = ['rtf'] + sys.argv[2:]; from rtf.cli import main; sys.exit(main())")
    return subprocess.run([sys.executable, "-c", launcher, str(fsize), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["match", "gen-queries", "index add", "index build"])
def test_a_full_disk_fails_in_one_line_and_keeps_the_old_file(base_index, inputs, tmp_path, command):
    q, p = inputs
    big_p = tmp_path / "big.nt"
    big_p.write_text("".join(f'<{EX}s{i}> <{EX}t> "Rio {i} {"x" * 50}" .\n' for i in range(3000)))
    old = tmp_path / "old.out"
    if command.startswith("index"):
        old.write_bytes(base_index.read_bytes())
    else:
        old.write_text("the old output\n")
    before = old.read_bytes()
    args = {"match": ["match", "--queries", write_queries(tmp_path / "many.jsonl", "t", 1), "--publications", big_p,
                      "--output", old],
            "gen-queries": ["gen-queries", "--publications", big_p, "-n", "2000", "-o", old],
            "index add": ["index", "add", old, "--queries", write_queries(tmp_path / "m.jsonl", "m", 500)],
            "index build": ["index", "build", "--queries", write_queries(tmp_path / "m.jsonl", "m", 2000),
                            "--output", old]}[command]
    if command == "match":  # every publication matches: a large output
        (tmp_path / "many.jsonl").write_text(json.dumps(
            {"id": "all", "query": f"SELECT ?s ?o WHERE {{ ?s <{EX}t> ?o }}"}) + "\n")
    # room for less than the new file (the old one is only read)
    done = run_limited(20_000 if command == "index build" else len(before) + 10_000, *args)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("rtf: error: "), done.stderr
    assert "File too large" in done.stderr
    assert old.read_bytes() == before
    assert [f.name for f in tmp_path.iterdir() if f.name.startswith(".")] == []
