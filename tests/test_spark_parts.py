"""The parts of the Spark stream that need no Spark: the queries log, the workers' engines,
the batch folders, the stream's state, the failure messages, the scripts' help.

The streaming job itself, end to end, is tested in tests/test_spark_stream.py.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf.engine import Engine
from rtf.spark.batch_output import MANIFEST, TEMPORARY, BatchOutput, read_matches
from rtf.spark.engines import _SLOT, Constant, EnginePlan, engine_at, held_engine
from rtf.spark.oplog import QueriesLog, QueriesLogError, apply_operation
from rtf.spark.stream_state import StreamState, StreamStateError
from tests import worlds

ROOT = Path(__file__).resolve().parents[1]
Q_RIO = 'SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "rio") }'
Q_GAMES = 'SELECT ?s ?o WHERE { ?s <http://ex.org/p> ?o FILTER ftcontains(?o, "games") }'


# ------------------------------------------------------------- queries log


def test_log_numbers_operations_in_order_across_appends(tmp_path):
    log = QueriesLog(tmp_path / "qlog", create=True)
    assert log.size() == 0 and log.read() == []
    assert log.register(Q_RIO, "rio", "ann") == 1
    assert log.append([{"op": "register", "id": "games", "query": Q_GAMES},
                       {"op": "unregister", "id": "rio"}]) == (2, 3)
    assert log.size() == 3
    ops = log.read()
    assert [(n, op["op"], op["id"]) for n, op in ops] == [
        (1, "register", "rio"), (2, "register", "games"), (3, "unregister", "rio")]
    assert ops[0][1]["subscriber"] == "ann"
    assert [n for n, _ in log.read(after=1, upto=2)] == [2]
    assert log.registered() == {"games": 2}
    # Another reader of the same folder sees the same log; the segments are JSON Lines.
    again = QueriesLog(tmp_path / "qlog")
    assert again.id == log.id and again.read() == ops
    lines = (tmp_path / "qlog" / f"{2:020d}.jsonl").read_text().splitlines()
    assert [json.loads(line)["n"] for line in lines] == [2, 3]


def test_log_refuses_bad_operations_and_appends_nothing(tmp_path):
    log = QueriesLog(tmp_path, create=True)
    log.register(Q_RIO, "rio")
    cases = [
        ({"op": "register", "id": "bad", "query": "SELECT ?s WHERE { ?s ?p }"}, "query 'bad'"),
        ({"op": "register", "id": "rio", "query": Q_GAMES}, "already registered (operation 1)"),
        ({"op": "register", "id": "", "query": Q_RIO}, '"id"'),
        ({"op": "register", "id": "x", "query": Q_RIO, "subscriber": 3}, '"subscriber"'),
        ({"op": "rename", "id": "x"}, '"op"'),
    ]
    for op, message in cases:
        with pytest.raises(QueriesLogError, match=message.replace("(", r"\(").replace(")", r"\)")):
            log.append([{"op": "register", "id": "fine", "query": Q_GAMES}, op])
        assert log.size() == 1  # all or nothing: "fine" was not appended either
    log.unregister("rio")
    assert log.register(Q_GAMES, "rio") == 3  # a removed id may come back
    with pytest.raises(QueriesLogError, match="not a queries log"):
        QueriesLog(tmp_path / "elsewhere")


def _append_many(path: str, who: int, n: int) -> None:
    log = QueriesLog(path)
    for i in range(n):
        log.register(Q_RIO, f"w{who}-{i}")


def test_concurrent_appends_never_share_or_skip_a_number(tmp_path):
    QueriesLog(tmp_path, create=True)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), w, 8)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    ops = QueriesLog(tmp_path).read()
    assert [n for n, _ in ops] == list(range(1, 33))
    assert sorted(op["id"] for _, op in ops) == sorted(f"w{w}-{i}" for w in range(4) for i in range(8))


def test_a_removed_segment_or_a_bad_line_is_reported(tmp_path):
    log = QueriesLog(tmp_path, create=True)
    for i in range(3):
        log.register(Q_RIO, f"q{i}")
    segment = tmp_path / f"{2:020d}.jsonl"
    segment.write_text("not json\n")  # a hand-edited line: an operation every worker skips
    n, op = QueriesLog(tmp_path).read()[1]
    assert n == 2 and op["op"] == "invalid"
    assert apply_operation(Engine(), op).startswith(f"{segment}:1")
    segment.unlink()
    with pytest.raises(QueriesLogError, match="starts at operation 3"):
        QueriesLog(tmp_path).size()


def test_apply_operation_says_why_and_leaves_the_engine_as_it_was():
    engine = Engine()
    assert apply_operation(engine, {"op": "register", "id": "rio", "query": Q_RIO}) is None
    assert "already registered" in apply_operation(engine, {"op": "register", "id": "rio", "query": Q_GAMES})
    assert "no such query" in apply_operation(engine, {"op": "unregister", "id": "nope"})
    assert [q.id for q in engine.queries()] == ["rio"]
    assert apply_operation(engine, {"op": "unregister", "id": "rio"}) is None and len(engine) == 0


# --------------------------------------------------------- workers' engines


def _fresh_slot():
    _SLOT.clear()


def _reference(base_queries, ops, pin):
    """The naive engine holding `base_queries` and the operations up to `pin`."""
    engine = Engine("naive", taxonomy=worlds.taxonomy())
    for qid, text in base_queries:
        engine.register(text, qid)
    for n, op in ops:
        if n <= pin:
            apply_operation(engine, op)
    return engine


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.lists(worlds.queries(), min_size=0, max_size=3),
       steps=st.lists(st.tuples(st.sampled_from(["register", "unregister"]), st.integers(0, 5),
                                worlds.queries()), max_size=8),
       pins=st.lists(st.integers(0, 8), min_size=1, max_size=4),
       pubs=st.lists(worlds.publications(), min_size=1, max_size=3))
def test_a_held_engine_brought_forward_matches_the_reference(base, steps, pins, pubs):
    """At every pin, the worker's engine (built once, then brought forward by the
    operations it had not seen) answers as the naive engine built from scratch."""
    _fresh_slot()
    start = Engine("rtfs", taxonomy=worlds.taxonomy())
    for i, text in enumerate(base):
        apply_operation(start, {"op": "register", "id": f"b{i}", "query": text})  # a bad one is left out
    base_queries = [(q.id, base[int(q.id[1:])]) for q in start.queries()]
    # Operations on a few ids, some clashing with the base's or each other's: they fail alike.
    ops = [(n, {"op": kind, "id": f"b{i}" if i < 2 else f"q{i}", "query": text, "subscriber": None})
           if kind == "register" else (n, {"op": kind, "id": f"b{i}" if i < 2 else f"q{i}"})
           for n, (kind, i, text) in enumerate(steps, 1)]
    base_bc = Constant(start.to_bytes())
    for pin in sorted(min(p, len(ops)) for p in pins):
        plan = EnginePlan("L", base_bc, 0, tuple(o for o in ops if o[0] <= pin), pin)
        engine, info = engine_at(plan)
        assert held_engine() == ("L", pin)
        reference = _reference(base_queries, ops, pin)
        assert sorted(q.id for q in engine.queries()) == sorted(q.id for q in reference.queries())
        for pub in pubs:
            assert engine.match(pub) == reference.match(pub)
    _fresh_slot()


@pytest.mark.slow
def test_engine_is_built_once_and_rebuilt_only_when_it_must_be():
    _fresh_slot()
    loads = []

    def load(data, source):
        loads.append(source)
        return Engine.from_bytes(data, source)

    base = Constant(Engine().to_bytes())
    reg = {"op": "register", "id": "rio", "query": Q_RIO}
    plan = EnginePlan("L", base, 0, ((1, reg),), 1, load=load)
    engine, info = engine_at(plan)
    assert len(loads) == 1 and info["ops_applied"] == 1 and len(engine) == 1
    # The same plan, and a later pin: the held engine, brought forward.
    assert engine_at(plan)[0] is engine and len(loads) == 1
    later = EnginePlan("L", base, 0, ((1, reg), (2, {"op": "unregister", "id": "rio"})), 2, load=load)
    assert engine_at(later)[0] is engine and len(engine) == 0 and len(loads) == 1
    # An earlier pin (the engine is ahead of it) or another lineage: built again.
    assert len(engine_at(plan)[0]) == 1 and len(loads) == 2
    engine_at(EnginePlan("M", base, 0, (), 0, load=load))
    assert len(loads) == 3 and held_engine() == ("M", 0)
    # A compacted base at or below the held operation: no rebuild, only what is new.
    _fresh_slot()
    engine_at(plan)
    compacted = Constant(engine_at(plan)[0].to_bytes())
    engine_at(EnginePlan("L", compacted, 1, ((2, {"op": "unregister", "id": "rio"}),), 2, load=load))
    assert len(loads) == 4  # the one build after the slot was cleared
    _fresh_slot()


def _in_a_forked_child(paths: list[str], plans: dict, pub) -> dict:
    """What `engine_at` does with each plan of `plans` in a process forked after `preload(paths)`
    ran in its parent, as rtf's Spark daemon forks its workers: the load report, and per plan
    whether the engine came from the parent, was loaded, and its matches."""
    import gc

    from rtf.spark import engines

    context = multiprocessing.get_context("fork")
    queue = context.Queue()

    def daemon():  # (itself a child: the test process stays unfrozen and without engines)
        engines._SLOT.clear()
        engines._PRELOADED.clear()
        done = engines.preload(paths)
        frozen = gc.get_freeze_count()
        worker = context.Process(target=work, args=(done, frozen))
        worker.start()
        worker.join()

    def work(done, frozen):
        out = {"done": done, "frozen": frozen, "pids": (os.getppid(), os.getpid())}
        for name, plan in plans.items():
            engines._SLOT.clear()
            engine, info = engine_at(plan)
            out[name] = (info["shared"], info["load_s"] > 0, sorted(m.query_id for m in engine.match(pub)))
        queue.put(out)

    parent = context.Process(target=daemon)
    parent.start()
    out = queue.get(timeout=120)
    parent.join()
    return out


def test_a_worker_forked_by_the_daemon_takes_its_engine_only_for_the_same_file(tmp_path):
    """`rtf.spark.daemon`'s preload, then a fork: a plan of the same index (by its header's key)
    takes the parent's engine and loads nothing; a plan of another index, or of the original of a
    file altered on disk (same header, its body changed: the load refuses it), loads its own."""
    from rtf.io.publication import Publication
    from rtf.spark.engines import file_key, index_key

    rio, games = Engine(), Engine()
    rio.register(Q_RIO, "rio")
    games.register(Q_GAMES, "games")
    paths = {name: tmp_path / f"{name}.idx" for name in ("rio", "games", "altered")}
    rio.save(paths["rio"])
    games.save(paths["games"])
    altered = bytearray(paths["rio"].read_bytes())
    altered[-1] ^= 1  # (the body's last byte: a section's padding or data)
    paths["altered"].write_bytes(bytes(altered))
    assert file_key(paths["altered"]) == file_key(paths["rio"])  # the header alone cannot tell
    pub = Publication("x", [("<http://ex.org/x>", "<http://ex.org/p>", '"rio games"')])

    def plan(path, key_of=None):
        data = path.read_bytes()
        return EnginePlan(str(path), Constant(data), key=index_key((key_of or path).read_bytes()))

    out = _in_a_forked_child([str(paths["rio"]), str(tmp_path / "absent.idx")],
                             {"same": plan(paths["rio"]), "other": plan(paths["games"])}, pub)
    assert out["done"][str(paths["rio"])] == index_key(paths["rio"].read_bytes())
    assert out["done"][str(tmp_path / "absent.idx")] == "not a file here"
    assert out["frozen"] > 0  # the daemon's objects out of the collector's sight
    assert out["same"] == (True, False, ["rio"])  # the daemon's engine, nothing loaded
    assert out["other"] == (False, True, ["games"])  # its own
    out = _in_a_forked_child([str(paths["altered"])], {"same": plan(paths["rio"])}, pub)
    assert out["done"][str(paths["altered"])].startswith("not loaded: IndexFileError")
    assert out["same"] == (False, True, ["rio"])


# ------------------------------------------------- documents read from bytes


def test_a_document_in_bytes_reads_as_rtf_match_reads_the_file(tmp_path, dbpedia_slice):
    """What a stream's worker gets (a file's bytes and name) reads as `read_publications`
    reads the file: compressed, with bad lines, broken off mid-archive."""
    import gzip

    from rtf.io.reader import ReadStats, publications_from_bytes, read_publications

    text = "".join(f"{s} {p} {o} .\n" for pub in dbpedia_slice[:60] for s, p, o in pub.triples)
    text = text.replace("\n", "\nnot a triple\n", 3)
    whole = gzip.compress(text.encode())
    for name, data in (("d.nt.gz", whole), ("cut.nt.gz", whole[: len(whole) * 2 // 3])):
        path = tmp_path / name
        path.write_bytes(data)
        file_stats, bytes_stats = ReadStats(), ReadStats()
        expected = [(p.id, p.triples) for p in read_publications(path, skip_invalid=True, stats=file_stats)]
        got = [(p.id, p.triples) for p in publications_from_bytes(data, source=str(path), skip_invalid=True,
                                                                  stats=bytes_stats)]
        assert got == expected and len(got) > 10
        assert (bytes_stats.skipped_lines, len(bytes_stats.breaks)) == (file_stats.skipped_lines,
                                                                         len(file_stats.breaks))
    assert file_stats.breaks and bytes_stats.skipped_lines == 3


# ------------------------------------------------------------ Arrow rows


def test_arrow_rows_hold_the_matches_as_rtf_match_prints_them(dbpedia_slice):
    """Rows built by index (shared publications and bindings) say what `rtf match`'s lines say,
    flushed at any point, ASK queries and subscribers included."""
    from rtf.bench.workload import Mix, generate_queries
    from rtf.io.output import match_line
    from rtf.spark.arrow_matches import MatchRows

    engine = Engine()
    for rec in generate_queries(dbpedia_slice, 150, seed=4, mix=Mix.all_operators(0.5)):
        engine.register(rec["query"], rec["id"], rec["subscriber"])
    engine.register("ASK WHERE { ?s a ?c }", "ask", "ann")
    rows, lines, got = MatchRows(), MatchRows(lines=True), []
    expected = []
    for i, pub in enumerate(dbpedia_slice[:400]):
        found = engine.match(pub)
        expected += [match_line(pub.id, m) for m in found]
        rows.add(pub.id, found)
        lines.add(pub.id, found)
        if i % 37 == 0:
            got += rows.flush().to_pylist()
    got += rows.flush().to_pylist()
    from rtf.spark.arrow_matches import row_line
    as_lines = [row_line(r) for r in got]
    assert len(expected) > 1000 and any('"query": "ask"' in line for line in expected)
    assert as_lines == expected
    assert lines.flush().column(0).to_pylist() == expected


# ------------------------------------------------------------ batch folders


def _parquet_writer(rows):
    def write(folder):
        import pyarrow as pa
        import pyarrow.parquet as pq

        from rtf.spark.arrow_matches import arrow_match_schema

        os.makedirs(folder)
        pq.write_table(pa.Table.from_pylist(rows, schema=arrow_match_schema()), f"{folder}/part-0.parquet")
    return write


ROW = {"publication": "http://ex.org/a", "query": "q1", "subscriber": None,
       "bindings": [[("s", "<http://ex.org/a>")]]}


def test_a_batch_is_published_once_and_readers_never_see_temporary_files(tmp_path):
    out = BatchOutput(tmp_path / "out")
    out.prepare()
    assert out.commit(0, _parquet_writer([ROW]), lambda: {"op": 0})
    # A replay of batch 0 writes nothing; its manifest says what it held.
    assert not out.commit(0, _parquet_writer([ROW, ROW]), lambda: {"op": 0})
    assert out.manifest(0)["op"] == 0 and "committed_at" in out.manifest(0)
    # What a killed run left half-written under _rtf_tmp is not read, then cleared.
    _parquet_writer([ROW] * 5)(str(tmp_path / "out" / TEMPORARY / "batch_id=1.dead"))
    table = read_matches(tmp_path / "out")
    assert table.num_rows == 1 and table.column("batch_id").to_pylist() == [0]
    out.prepare()
    assert os.listdir(tmp_path / "out" / TEMPORARY) == []
    assert out.batch_ids() == [0] and (out.path(0) / MANIFEST).exists()


def test_a_failed_write_leaves_no_batch(tmp_path):
    out = BatchOutput(tmp_path)
    out.prepare()

    def broken(folder):
        _parquet_writer([ROW])(folder)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        out.commit(3, broken, dict)
    assert out.batch_ids() == [] and os.listdir(tmp_path / TEMPORARY) == []
    assert read_matches(tmp_path).num_rows == 0


# ------------------------------------------------------------- stream state


def test_a_pin_is_recorded_once_before_its_batch(tmp_path):
    state = StreamState(tmp_path)
    state.open()
    try:
        assert state.pin(4, lambda: 7) == 7
        assert state.pin(4, lambda: 9) == 7  # a replay keeps the first pin
        state.prune_pins(5)
        assert state.pin(4, lambda: 9) == 9
    finally:
        state.close()


def test_a_checkpoint_belongs_to_one_stream_and_one_driver(tmp_path):
    state = StreamState(tmp_path)
    state.open()
    try:
        assert state.identity({"index_sha256": "a", "output": "/o"})["index_sha256"] == "a"
        assert state.identity({"index_sha256": None, "output": "/o"})["index_sha256"] == "a"
        with pytest.raises(StreamStateError, match="index_sha256 'a', not 'b'"):
            state.identity({"index_sha256": "b", "output": "/o"})
        other = StreamState(tmp_path)
        with pytest.raises(StreamStateError, match=f"driver pid {os.getpid()}"):
            other.open()
    finally:
        state.close()
    other.open()  # free again once the first driver let go
    other.close()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.lists(worlds.queries(), min_size=0, max_size=4),
       steps=st.lists(st.tuples(st.sampled_from(["register", "unregister"]), st.integers(0, 5),
                                worlds.queries()), max_size=6),
       k=st.integers(1, 4), pins=st.lists(st.integers(0, 6), min_size=1, max_size=2),
       pubs=st.lists(worlds.publications(), min_size=1, max_size=2))
def test_query_partitions_of_an_index_and_its_log_answer_as_the_whole(base, steps, k, pins, pubs):
    """The K part files of an index (`split_index`) and the log's operations routed by query id
    (`part_plans`): at every pin each query is in exactly one partition, and the partitions'
    matches together are the naive engine's."""
    import tempfile

    from rtf.io.output import match_line
    from rtf.spark.index_parts import part_names, part_of, part_plans, split_index

    _fresh_slot()
    start = Engine("rtfs", taxonomy=worlds.taxonomy())
    for i, text in enumerate(base):
        apply_operation(start, {"op": "register", "id": f"b{i}", "query": text})
    base_queries = [(q.id, base[int(q.id[1:])]) for q in start.queries()]
    ops = [(n, {"op": kind, "id": f"b{i}" if i < 2 else f"q{i}", "query": text})
           if kind == "register" else (n, {"op": kind, "id": f"b{i}" if i < 2 else f"q{i}"})
           for n, (kind, i, text) in enumerate(steps, 1)]
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder, name) for name in part_names("t", k)]
        info = split_index(start.to_bytes(), paths)
        assert info["written"] and sum(info["queries"]) == len(start)
        assert not split_index(start.to_bytes(), paths)["written"]  # found: written once
        for pin in sorted(min(p, len(ops)) for p in pins):
            plans = part_plans("L", [Constant(str(p)) for p in paths], 0,
                               tuple(o for o in ops if o[0] <= pin), pin, "test")
            reference = _reference(base_queries, ops, pin)
            ids, got = [], []
            for g, plan in enumerate(plans):
                engine, _ = engine_at(plan)
                ids += [q.id for q in engine.queries()]
                assert all(part_of(q.id, k) == g for q in engine.queries())
                got += [match_line(pub.id, m) for pub in pubs for m in engine.match(pub)]
            assert sorted(ids) == sorted(q.id for q in reference.queries())
            assert sorted(got) == sorted(match_line(pub.id, m) for pub in pubs for m in reference.match(pub))
    _fresh_slot()


def _context(app: str) -> type:
    """A class standing for a SparkContext, as StreamParts asks of one (the files added)."""
    class Context:
        applicationId, added = app, []

        def addFile(self, path):
            self.added.append(path)

    return Context


def test_a_damaged_partition_file_of_a_stream_is_made_again(tmp_path):
    from rtf.spark.stream_parts import StreamParts

    Context = _context("app")
    state = StreamState(tmp_path)
    state.open()
    engine = Engine("rtfs")
    for i in range(6):
        engine.register(Q_RIO, f"q{i}")
    state.add_base(0, engine.to_bytes())
    parts = StreamParts(Context(), state, "stream-id", "L", 2)
    plans = parts.plans(0, None)
    assert len(plans) == 2 and parts.ops() == [0] and len(Context.added) == 2
    held = [len(Engine.load(p)) for p in parts.paths(0)]
    parts.paths(0)[1].write_bytes(parts.paths(0)[1].read_bytes()[:-100])  # damaged
    again = StreamParts(Context(), state, "stream-id", "L", 2)
    again.plans(0, None)
    assert [len(Engine.load(p)) for p in again.paths(0)] == held and sum(held) == 6
    state.close()


def test_the_daemons_map_the_newest_base_and_the_partitions_plans_name_their_files(tmp_path):
    """``--shared-index`` of the stream: the files its daemons map are the base of the log's
    operation as it starts (after a compaction, that one, not the starting base), split into
    the K part files with query partitions; each partition's plan names its file's key, so a
    worker takes the daemon's engine of that file (`rtf.spark.engines.preload`)."""
    from rtf.spark.engines import file_key
    from rtf.spark.stream_parts import StreamParts, shared_files, stream_base

    Context = _context("app-shared")
    state = StreamState(tmp_path)
    state.open()
    for op, n in ((0, 3), (4, 5)):
        engine = Engine("rtfs")
        for i in range(n):
            engine.register(Q_RIO, f"q{i}")
        state.add_base(op, engine.to_bytes())
    shipped, _ = stream_base(Context(), state.base_path(4), True)  # (every base, with --shared-index)
    shipped.unpersist()  # (what a compaction does to the base it replaces: nothing to free)
    assert shared_files(state, None, 2) == [state.base_path(0)]
    assert shared_files(state, None, 6) == [state.base_path(4)]  # a restart after a compaction
    parts = StreamParts(Context(), state, "stream-id", "L", 2)
    files = shared_files(state, parts, 6)
    assert files == parts.paths(4) and sum(len(Engine.load(p)) for p in files) == 5
    plans = parts.plans(6, None)
    assert [plan.key for plan in plans] == [file_key(p) for p in files] and plans[0].key != plans[1].key
    state.close()


def test_the_newest_base_at_or_below_a_pin(tmp_path):
    state = StreamState(tmp_path)
    state.open()
    for op in (0, 5, 9):
        state.add_base(op, f"index {op}".encode())
    assert [state.newest_base(p) for p in (0, 4, 5, 8, 12)] == [0, 0, 5, 5, 9]
    state.prune_bases(9)
    assert state.base_ops() == [0, 9]
    state.close()


# ------------------------------------------------------------ messages, help


class _FakeContext:
    def __init__(self, master, conf=None):
        self.master = master
        self._conf = conf or {}

    def getConf(self):
        return self._conf


def test_a_dead_worker_is_named_with_what_to_do():
    from rtf.spark.session import attempts, failure_message

    assert [attempts(_FakeContext(m)) for m in ("local[2]", "local[*,2]", "local[4, 3]", "local")] == [1, 2, 3, 1]
    assert attempts(_FakeContext("spark://h:7077", {"spark.task.maxFailures": "6"})) == 6
    error = RuntimeError("Job aborted due to stage failure\norg.apache.spark.SparkException: Python worker "
                         "exited unexpectedly (crashed). Consider setting 'x' to true\nCaused by: "
                         "java.io.EOFException")
    once = failure_message(error, _FakeContext("local[2]"), "a micro-batch")
    assert "Python worker died while running a micro-batch" in once and "1 attempt " in once
    assert "--master 'local[2,2]'" in once and "Consider setting" not in once and "\n" not in once
    assert "dmesg" in failure_message(error, _FakeContext("local[2,2]"))
    plain = RuntimeError("org.apache.spark.SparkException: Job aborted\nCaused by: java.io.IOException: No space left")
    assert failure_message(plain) == "Spark job failed: java.io.IOException: No space left"


def test_quantiles_by_nearest_rank():
    from rtf.spark.stream import quantile

    values = sorted(float(i) for i in range(1, 101))
    assert [quantile(values, q) for q in (0.5, 0.99, 1.0)] == [50.0, 99.0, 100.0]
    assert quantile([3.0], 0.99) == 3.0


@pytest.mark.parametrize("name", ["rtf.spark.oplog", "rtf.spark.durable", "rtf.spark.engines"])
def test_module_examples_run(name):
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(name)).failed == 0


@pytest.mark.parametrize("script, words", [
    ("stream.py", ["--input", "--output", "--checkpoint", "--queries-log", "--stop-when-idle",
                   "--max-files-per-trigger", "--trigger-seconds", "--log-level", "pyarrow",
                   "exactly once", "local[2,2]", "example"]),
    ("queries_log.py", ["register", "unregister", "list", "examples"]),
])
def test_scripts_help_teaches(script, words):
    proc = subprocess.run([sys.executable, str(ROOT / "spark" / script), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for word in words:
        assert word in proc.stdout


def test_queries_log_script_appends_lists_and_refuses(tmp_path):
    script = [sys.executable, str(ROOT / "spark" / "queries_log.py"), str(tmp_path / "qlog")]

    def run(*argv):
        return subprocess.run([*script, *argv], capture_output=True, text=True, timeout=60)

    assert run("register", "--id", "rio", "--query", Q_RIO).stdout == "operation 1\n"
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "g", "query": Q_GAMES, "subscriber": "bo", "team": "x"}) + "\n"
                       + json.dumps({"id": "h", "query": Q_RIO}) + "\n")
    assert run("register", "--queries", str(queries)).stdout == "operations 2..3\n"
    bad = run("register", "--id", "z", "--query", "SELECT ?s WHERE { ?s ?p }")
    assert bad.returncode == 1 and bad.stderr.startswith("queries_log.py: error: operation 1: query 'z':")
    assert len(bad.stderr.strip().splitlines()) == 1
    assert run("unregister", "--id", "rio").stdout == "operation 4\n"
    listed = [json.loads(line) for line in run("list").stdout.splitlines()]
    assert [(o["n"], o["op"], o["id"]) for o in listed] == [
        (1, "register", "rio"), (2, "register", "g"), (3, "register", "h"), (4, "unregister", "rio")]
    assert listed[1]["metadata"] == {"team": "x"} and listed[1]["subscriber"] == "bo"
    assert run("size").stdout == "4\n"


def test_stream_refuses_bad_folders_in_one_line_before_spark_starts(tmp_path):
    """No JVM is started for these: the error is the only line."""
    (tmp_path / "in").mkdir()
    (tmp_path / "q.idx").write_bytes(Engine().to_bytes())
    base = ["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
            "--checkpoint", str(tmp_path / "ckpt")]
    cases = [
        (["--input", str(tmp_path / "nope"), *base[2:], "--index", str(tmp_path / "q.idx")], "no such folder"),
        ([*base, "--index", str(tmp_path / "missing.idx")], "--index"),
        ([*base], "give the queries"),
        ([*base[:2], "--output", "hdfs://nn/out", *base[4:], "--index", str(tmp_path / "q.idx")], "atomic"),
        ([*base, "--queries-log", str(tmp_path / "in")], "not a queries log"),
        ([*base, "--index", str(tmp_path / "q.idx"), "--trigger-seconds", "0"], "must be positive"),
    ]
    (tmp_path / "in" / "log.json").write_text("{}")  # a folder that is not a queries log
    for argv, message in cases:
        proc = subprocess.run([sys.executable, str(ROOT / "spark" / "stream.py"), *argv],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode in (1, 2), (argv, proc.stderr)
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, (argv, proc.stderr)


# ------------------------------------------------ URIs: s3://, s3a:// are not local paths (issue 42)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[a-z][a-z0-9+.-]{1,8}", fullmatch=True).filter(lambda s: s != "file"),
       st.from_regex(r"[a-z0-9][a-z0-9/._-]{0,20}", fullmatch=True))
def test_any_uri_scheme_is_a_scheme_and_a_local_path_is_not(scheme, rest):
    """RFC 3986's scheme: a letter, then letters, digits, '+', '-', '.'. ``s3://`` and ``s3a://``
    were taken for local paths (their digit): ``--output s3a://b/x`` wrote into ./s3a:/b/x."""
    from rtf.spark.dumps import has_scheme

    assert has_scheme(f"{scheme}://{rest}")
    assert not has_scheme(f"file://{rest}") and not has_scheme(rest) and not has_scheme(f"./{scheme}:/{rest}")


def test_the_stream_refuses_parquet_batches_on_an_object_store(tmp_path):
    from rtf.spark.dumps import ReplayError
    from rtf.spark.stream import stream_output

    for uri in ("s3://bucket/out", "s3a://bucket/out", "hdfs://nn/out"):
        with pytest.raises(ReplayError, match="on an object store use --output-format delta"):
            stream_output(uri, "parquet")
    assert not (Path.cwd() / "s3:").exists() and not (Path.cwd() / "s3a:").exists()


def test_the_package_shipped_to_a_cluster_imports_every_module(tmp_path):
    """`package_zip` is what a cluster's executors import rtf from (``sc.addPyFile``): every
    module of it must import from the zip alone -- rtf/algebra has no ``__init__.py``, which the
    zip importer does not take for a package, and every task on the standalone cluster failed."""
    from rtf.spark.replay import package_zip

    zipped = package_zip(tmp_path)
    code = ("import sys, importlib, zipfile; sys.path.insert(0, sys.argv[1]); import rtf; "
            "assert rtf.__file__.startswith(sys.argv[1]), rtf.__file__; "
            "names = [n[:-3].replace('/', '.').removesuffix('.__init__') for n in zipfile.ZipFile(sys.argv[1]).namelist() "
            "if n.endswith('.py') and '/examples/' not in n and '/grammar/' not in n and not n.endswith('__main__.py')]; "
            "[importlib.import_module(n) for n in names if not n.startswith(('rtf.server', 'rtf.bench.plots'))]; "
            "print(len(names))")
    run = subprocess.run([sys.executable, "-c", code, zipped], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert int(run.stdout) > 50
