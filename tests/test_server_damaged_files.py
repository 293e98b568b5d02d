"""Issue 37 item 5: a data folder damaged while the server was stopped.

A damaged ``queries.sqlite3`` exited 70 ("internal error: DatabaseError:
database disk image is malformed; please report it") when the damage was in
a page read after opening. Now every start checks its databases
(`rtf.server.sqlite_files`): whatever the damage -- truncated, garbage
header or pages, wrong schema, locked, not a file, no permission, an empty
or missing table beside a snapshot -- the server exits 1 with one line that
names the file and the way back, or (a WAL, shared-memory or journal file
left over) serves every acknowledged query. The ways back docs/server.md
gives ("Recovering a data folder") are run here too.

Real server processes (`rtf.server.process`): what is tested is the command.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf.server.process import ServerFailed, ServerProcess, run_serve, serve_command
from tests.test_server import q_words

#: Spark, rtf serve processes or a browser: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow

httpx = pytest.importorskip("httpx")

NDJSON = {"Content-Type": "application/x-ndjson"}
QUERIES = {f"q{i}": {"id": f"q{i}", "query": q_words("df", f"w{i}"), "subscriber": f"s{i % 3}",
                     "metadata": {"n": i, "pad": "x" * 200}} for i in range(300)}
PAGE = 4096


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """A stopped data folder: 300 queries with metadata, outbox events, a snapshot."""
    data = tmp_path_factory.mktemp("damaged") / "b"
    with ServerProcess(data) as server, server.client() as http:
        body = "".join(json.dumps(q) + "\n" for q in QUERIES.values())
        assert http.post("/queries", content=body, headers=NDJSON).status_code == 200
        http.post("/publications", content='<http://ex.org/a> <http://ex.org/p> "w1 w2" .\n',
                  headers={"Content-Type": "application/n-triples"})
    return data


def copy_of(stopped: Path, tmp_path: Path) -> Path:
    data = tmp_path / "b"
    shutil.copytree(stopped, data)
    return data


def assert_refused(done: subprocess.CompletedProcess, name: str, *says: str) -> None:
    """Exit 1, one line naming the file (and saying `says`), never "please report"."""
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("rtf: error: "), done.stderr
    assert name in done.stderr and "please report" not in done.stderr, done.stderr
    for words in says:
        assert words in done.stderr, done.stderr


def listed(server: ServerProcess) -> dict[str, dict]:
    with server.client() as http:
        return {q["id"]: q for q in server_queries(http)}


def server_queries(http) -> list[dict]:
    found, after = [], 0
    while True:
        r = http.get("/queries", params={"after": after, "limit": 1000})
        assert r.status_code == 200, r.text
        found += r.json()["queries"]
        if r.json()["next"] is None:
            return found
        after = r.json()["next"]


def assert_serves_everything(data: Path) -> None:
    with ServerProcess(data) as server:
        assert listed(server) == QUERIES
        assert server.health()["queries"] == len(QUERIES)
    assert "Traceback" not in server.stderr, server.stderr


WAY_BACK = ("is damaged", "restore it from a backup", "snapshot.idx", "exported query file",
            "Recovering a data folder")


# ------------------------------------------------------------ the probe


def test_a_damaged_page_of_rows_is_exit_1_naming_the_file_and_the_way_back(stopped, tmp_path):
    """The probe: garbage in a page of rows (read after opening) exited 70."""
    data = copy_of(stopped, tmp_path)
    table = data / "queries.sqlite3"
    raw = bytearray(table.read_bytes())
    last = len(raw) // PAGE - 1  # a leaf of the queries table (rows are appended)
    raw[last * PAGE:(last + 1) * PAGE] = random.Random(7).randbytes(PAGE)
    table.write_bytes(bytes(raw))
    assert_refused(run_serve(data), "queries.sqlite3", *WAY_BACK)
    assert table.read_bytes() == raw  # refused before anything was written


# ------------------------------------------------------------ every damage


def damage(path: Path, kind: str, where: float, seed: int) -> None:
    raw = bytearray(path.read_bytes())
    rng = random.Random(seed)
    pages = max(1, len(raw) // PAGE)
    page = min(int(where * pages), pages - 1)
    if kind == "truncated":
        del raw[max(1, int(where * len(raw))):]
    elif kind == "garbage header":
        raw[:100] = rng.randbytes(100)
    elif kind == "garbage page":
        raw[page * PAGE:(page + 1) * PAGE] = rng.randbytes(PAGE)
    elif kind == "zeroed page":
        raw[page * PAGE:(page + 1) * PAGE] = bytes(PAGE)
    elif kind == "flipped bytes":
        for _ in range(8):
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(raw))


@settings(max_examples=14, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(name=st.sampled_from(["queries.sqlite3", "outbox.sqlite3"]),
       kind=st.sampled_from(["truncated", "garbage header", "garbage page", "zeroed page",
                             "flipped bytes"]),
       where=st.floats(0, 1), seed=st.integers(0, 2**16))
def test_fuzz_a_damaged_database_is_refused_in_one_line_or_served(stopped, tmp_path_factory,
                                                                   name, kind, where, seed):
    """Any damage to either database: exit 1 in one line naming it, or (damage SQLite
    cannot see, such as a flipped bit in a row's text) the server serves, and every
    listing answers 200."""
    data = copy_of(stopped, tmp_path_factory.mktemp("fuzz"))
    damage(data / name, kind, where, seed)
    server = ServerProcess(data)
    try:
        server.start()
    except ServerFailed:
        done = subprocess.CompletedProcess(server.command, server.process.returncode, "",
                                           server.stderr)
        assert_refused(done, name)
        assert any(w in done.stderr for w in (  # a flipped byte in the outbox's note of its
            "is damaged", "holds no queries", "was not made by rtf serve",  # table: another's
            "another data folder's queries")), done.stderr
        return
    try:
        with server.client() as http:
            server_queries(http)
            assert http.get("/health").status_code == 200
    finally:
        server.stop()
    assert "Traceback" not in server.stderr, server.stderr


@pytest.mark.parametrize("name", ["queries.sqlite3", "outbox.sqlite3"])
def test_a_file_that_is_not_rtfs_or_not_a_file(stopped, tmp_path, name):
    data = copy_of(stopped, tmp_path)
    for suffix in ("", "-wal", "-shm"):
        (data / (name + suffix)).unlink(missing_ok=True)
    db = sqlite3.connect(data / name)
    db.execute("CREATE TABLE queries (seq INTEGER PRIMARY KEY, id TEXT)" if name.startswith("q")
               else "CREATE TABLE batches (last_id INTEGER PRIMARY KEY)")
    db.close()
    assert_refused(run_serve(data), name, "was not made by rtf serve")
    (data / name).unlink()
    (data / name).mkdir()
    assert_refused(run_serve(data), name, "is a folder, not a database file")


@pytest.mark.parametrize("how", ["empty", "missing"])
def test_a_lost_table_beside_its_snapshot_is_refused(stopped, tmp_path, how):
    """An empty or deleted queries.sqlite3 next to snapshot.idx: starting would serve no
    queries and write an empty snapshot over the last copy of them."""
    data = copy_of(stopped, tmp_path)
    for suffix in ("-wal", "-shm"):
        (data / ("queries.sqlite3" + suffix)).unlink(missing_ok=True)
    if how == "empty":
        (data / "queries.sqlite3").write_bytes(b"")
    else:
        (data / "queries.sqlite3").unlink()
    before = (data / "snapshot.idx").read_bytes()
    files = sorted(p.name for p in data.iterdir())
    assert_refused(run_serve(data), "queries.sqlite3", "holds no queries", "snapshot.idx",
                   "Recovering a data folder")
    assert sorted(p.name for p in data.iterdir()) == files  # nothing made, nothing written
    assert (data / "snapshot.idx").read_bytes() == before


def test_a_database_locked_by_another_program(stopped, tmp_path):
    data = copy_of(stopped, tmp_path)
    holder = sqlite3.connect(data / "queries.sqlite3", isolation_level=None,
                             check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert_refused(run_serve(data), "queries.sqlite3", "locked by another program")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert_serves_everything(data)


def _without_root_overrides() -> bool:
    """Whether this process may run the server without root's permission overrides
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), or is not root anyway."""
    if os.geteuid() != 0:
        return True
    probe = ("import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
             "sys.exit(any(libc.prctl(24, c, 0, 0, 0) for c in (1, 2)))")
    return subprocess.run([sys.executable, "-c", probe]).returncode == 0


def run_as_user(data: Path) -> subprocess.CompletedProcess:
    """``rtf serve`` as an ordinary user would run it: as root, without the capabilities
    that let root read and write any file."""
    launcher = ("import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); "
                "[libc.prctl(24, c, 0, 0, 0) for c in (1, 2)]; "
                "os.execv(sys.executable, [sys.executable] + sys.argv[1:])")
    return subprocess.run([sys.executable, "-c", launcher, *serve_command(data)[1:]],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.skipif(sys.platform != "linux" or not _without_root_overrides(),
                    reason="needs Linux capabilities to drop, or a user that is not root")
@pytest.mark.parametrize("name, mode", [("queries.sqlite3", 0o000), ("outbox.sqlite3", 0o444)])
def test_a_database_without_permission(stopped, tmp_path, name, mode):
    """Unreadable, or readable only (SQLite would then write to a WAL that can never be
    copied back): refused, naming the user."""
    data = copy_of(stopped, tmp_path)
    (data / name).chmod(mode)
    try:
        assert_refused(run_as_user(data), name, "uid")
    finally:
        (data / name).chmod(0o644)
    assert_serves_everything(data)


@pytest.mark.parametrize("leftover", ["wal of a crash", "garbage wal", "garbage shm",
                                      "garbage journal", "another database's wal"])
def test_a_leftover_wal_shm_or_journal_loses_nothing(stopped, tmp_path, leftover):
    """Files SQLite leaves beside a database: the server serves every acknowledged query
    (SQLite replays a real WAL, and ignores one whose checksums do not match)."""
    data = copy_of(stopped, tmp_path)
    table = data / "queries.sqlite3"
    if leftover == "wal of a crash":  # the last registrations only in the WAL, then SIGKILL
        extra = {"late": {"id": "late", "query": q_words("df", "late"), "subscriber": None,
                          "metadata": {}}}
        server = ServerProcess(data).start()
        with server.client() as http:
            assert http.put("/queries/late", json={"query": extra["late"]["query"]}).status_code == 201
        server.kill()
        assert Path(f"{table}-wal").stat().st_size > 0
        with ServerProcess(data) as server:
            assert listed(server) == {**QUERIES, **extra}
        return
    if leftover == "another database's wal":
        # SQLite cannot tell (a WAL does not name its database): it replays the other
        # table's identity too, and the outbox refuses to serve another table's queries
        other = tmp_path / "other"
        with ServerProcess(other) as server, server.client() as http:
            http.put("/queries/x", json={"query": q_words("df", "other")})
            server.kill()
        shutil.copy(other / "queries.sqlite3-wal", f"{table}-wal")
        assert_refused(run_serve(data), "outbox.sqlite3", "another data folder's queries")
        return
    else:
        suffix = {"garbage wal": "-wal", "garbage shm": "-shm", "garbage journal": "-journal"}
        Path(f"{table}{suffix[leftover]}").write_bytes(random.Random(3).randbytes(3 * PAGE + 7))
    assert_serves_everything(data)


# ------------------------------------------------------------ the ways back (docs/server.md)


def aside(data: Path, *names: str) -> Path:
    """Move the named files (and their -wal, -shm) into a folder beside `data`."""
    kept = data.parent / "damaged"
    kept.mkdir(exist_ok=True)
    for name in names:
        for suffix in ("", "-wal", "-shm"):
            if (data / (name + suffix)).exists():
                shutil.move(data / (name + suffix), kept / (name + suffix))
    return kept


def test_the_way_back_from_the_snapshot(stopped, tmp_path):
    data = copy_of(stopped, tmp_path)
    damage(data / "queries.sqlite3", "garbage page", 0.99, 1)
    assert run_serve(data).returncode == 1
    kept = aside(data, "queries.sqlite3", "outbox.sqlite3", "snapshot.idx")
    with ServerProcess(data, "--import-index", kept / "snapshot.idx") as server:
        got = listed(server)
    # the snapshot holds every query, without its metadata
    assert got == {qid: {**q, "metadata": {}} for qid, q in QUERIES.items()}


def test_the_way_back_from_an_exported_query_file(stopped, tmp_path):
    data = copy_of(stopped, tmp_path)
    export = tmp_path / "export.jsonl"
    with ServerProcess(data) as server, server.client() as http:  # exported while it served
        export.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n"
                                  for q in server_queries(http)), encoding="utf-8")
    damage(data / "queries.sqlite3", "garbage header", 0, 2)
    assert run_serve(data).returncode == 1
    aside(data, "queries.sqlite3", "outbox.sqlite3", "snapshot.idx")
    with ServerProcess(data) as server, server.client() as http:
        r = http.post("/queries", content=export.read_bytes(), headers=NDJSON)
        assert r.json()["registered"] == len(QUERIES), r.text
        assert listed(server) == QUERIES


def _recover_works() -> bool:
    """Whether a sqlite3 command is here whose ``.recover`` works (Debian's 3.40.1 fails
    with "SQL logic error" even on a sound file)."""
    if shutil.which("sqlite3") is None:
        return False
    done = subprocess.run(["sqlite3", ":memory:", ".recover"], capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(not _recover_works(), reason="needs a sqlite3 command whose .recover works")
def test_the_way_back_with_sqlite3_recover(stopped, tmp_path):
    """``sqlite3 damaged .recover | sqlite3 queries.sqlite3`` keeps the rows SQLite can
    still read and the table's identity, so the outbox and snapshot stay usable."""
    data = copy_of(stopped, tmp_path)
    damage(data / "queries.sqlite3", "garbage page", 0.99, 1)
    kept = aside(data, "queries.sqlite3")
    dump = subprocess.run(["sqlite3", kept / "queries.sqlite3", ".recover"], capture_output=True,
                          check=True).stdout
    subprocess.run(["sqlite3", data / "queries.sqlite3"], input=dump, check=True)
    with ServerProcess(data) as server:
        got = listed(server)
    assert got and all(QUERIES[qid] == q for qid, q in got.items() if "unreadable" not in q)
    assert len(got) < len(QUERIES)  # the damaged page's rows are gone; the others are back


def test_a_damaged_outbox_way_back_keeps_the_queries(stopped, tmp_path):
    data = copy_of(stopped, tmp_path)
    damage(data / "outbox.sqlite3", "garbage header", 0, 4)
    assert_refused(run_serve(data), "outbox.sqlite3", "move it away to start with an empty outbox")
    aside(data, "outbox.sqlite3")
    assert_serves_everything(data)
