"""The stream's checkpoint and output, lost, replaced or damaged (issue 37, items 1 and 2).

A stream's output folder goes with one checkpoint: batch ids restart at 0
with a new one, so "batch N is already there" only means "nothing to do"
for the stream that committed it, from the same files. Every file of the
checkpoint and every manifest the stream reads ends, when damaged or lost,
in one line naming it and saying what to do -- or is rebuilt exactly.

Most of it needs no Spark: a stream's state is built here as a run leaves
it (the library's own writers, with Spark's part faked by its file names),
a file is damaged, and the checks a run makes before Spark starts
(`check_config`, `check_checkpoint`, then `StreamJob.prepare` on a stand-in
session) are run on it, for every file and every way of damaging it
(hypothesis). The end-to-end test, on Spark, is in tests/test_spark_stream.py
(its shared session): ``spark/stream.py``'s `main`, a one-triple file a batch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf.engine import Engine
from rtf.spark.batch_output import MANIFEST, BatchOutput
from rtf.spark.dumps import ReplayError
from rtf.spark.durable import RecordError
from rtf.spark.oplog import QueriesLog
from rtf.spark.stream import StreamConfig, StreamJob, check_checkpoint, check_config
from rtf.spark.stream_state import StreamState, check_base

ROOT = Path(__file__).resolve().parents[1]
EX = "http://ex.org/"
QUERY = f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }}"
#: Words of the "what to do" part of every refusal.
FIXES = ("restore", "delete it", "move ", "start a new stream", "restart with", "use a new --output")


def _load_main():
    spec = importlib.util.spec_from_file_location("stream_script", ROOT / "spark" / "stream.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


stream_main = _load_main()


# ------------------------------------------------------- a stream's state


def _index_bytes(*ids: str) -> bytes:
    engine = Engine("rtfs")
    for i in ids:
        engine.register(QUERY, i)
    return engine.to_bytes()


def build_stream(root: Path) -> dict:
    """The files a stream leaves after committing batches 0 and 1 and pinning batch 2
    (uncommitted), with a queries log of 2 operations compacted into a base at operation 2."""
    (root / "in").mkdir(parents=True)
    (root / "q.idx").write_bytes(_index_bytes("q0"))
    log = QueriesLog(root / "qlog", create=True)
    log.register(QUERY, "q1")
    log.register(QUERY, "q2")
    state = StreamState(root / "ck")
    state.open()
    identity = state.identity({"index_sha256": _sha(root / "q.idx"), "queries_log": log.id,
                               "output": str((root / "out").resolve())})
    state.add_base(0, (root / "q.idx").read_bytes())
    state.add_base(2, _index_bytes("q0", "q1", "q2"))
    for batch, op in ((0, 1), (1, 2), (2, 2)):
        state.pin(batch, lambda op=op: op)
    state.close()
    (root / "ck" / "metadata").write_text('{"id":"5f0e2a4c-1d2b-4c3a-9e8f-0a1b2c3d4e5f"}')
    for log_name, batches in (("offsets", (0, 1, 2)), ("commits", (0, 1)), ("sources/0", (0, 1, 2))):
        (root / "ck" / log_name).mkdir(parents=True)
        for b in batches:
            (root / "ck" / log_name / str(b)).write_text("v1\n{}\n")
    out = BatchOutput(root / "out")
    out.prepare()
    for batch in (0, 1):
        files = [{"path": f"file:{root}/in/f{batch}.nt", "mtime": 1.5e9 + batch, "bytes": 40 + batch}]
        assert out.commit(batch, os.makedirs, lambda batch=batch, files=files: {
            "batch": batch, "stream": identity["stream"], "op": batch + 1, "files": files})
    return identity


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def config(root: Path, index: bool = True) -> StreamConfig:
    return StreamConfig(input=str(root / "in"), output=str(root / "out"), checkpoint=str(root / "ck"),
                        index=str(root / "q.idx") if index else None, queries_log=str(root / "qlog"))


def preflight(root: Path, index: bool = True) -> None:
    """What a run checks and writes before Spark starts: ``main``'s checks, then
    `StreamJob.prepare` (the lock, the checks again, the identity, the starting index)."""
    output, state, log_ops = check_config(config(root, index))
    check_checkpoint(config(root, index), output, state, log_ops)
    job = StreamJob(types.SimpleNamespace(sparkContext=None), config(root, index))
    try:
        job.prepare()
    finally:
        job.state.close()


def argv(root: Path, index: bool = True) -> list[str]:
    return ["--input", str(root / "in"), "--output", str(root / "out"), "--checkpoint", str(root / "ck"),
            "--queries-log", str(root / "qlog"), *(["--index", str(root / "q.idx")] if index else [])]


class _NoSpark:
    """A session that must not be used: the run is refused before it would be."""

    def __getattr__(self, name):
        raise AssertionError(f"the run went on to use Spark ({name})")


def refused_line(root: Path, index: bool = True) -> str:
    """``spark/stream.py``'s exit status 1 and its one line on stderr, before Spark starts."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = stream_main(argv(root, index) + ["--log-level", "ERROR"], spark=_NoSpark())
    lines = err.getvalue().splitlines()
    assert status == 1 and len(lines) == 1 and lines[0].startswith("stream.py: error: "), err.getvalue()
    return lines[0]


def assert_refusal(error: Exception, names: str) -> None:
    text = str(error)
    assert "\n" not in text and names in text and any(f in text for f in FIXES), text


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("stream")
    return root, build_stream(root)


def copy_stream(template_root: Path, folder: Path) -> Path:
    """A copy of the template stream in `folder` (the paths its files hold made its own)."""
    root = folder / template_root.name
    shutil.copytree(template_root, root, symlinks=True)
    for path in [root / "ck" / "rtf" / "stream.json", *(root / "out").rglob(MANIFEST)]:
        path.write_text(path.read_text().replace(str(template_root), str(root)))
    return root


@contextlib.contextmanager
def copy_of(template_root: Path):
    """A fresh copy of the template stream, removed afterwards."""
    import tempfile

    with tempfile.TemporaryDirectory(dir=template_root.parent) as folder:
        yield copy_stream(template_root, Path(folder))


def test_an_undamaged_stream_passes_and_a_new_one_starts(template, tmp_path):
    root, _ = template
    with copy_of(root) as copy:
        preflight(copy)
        preflight(copy, index=False)  # the checkpoint has the index
    build_stream(tmp_path)
    shutil.rmtree(tmp_path / "ck")
    shutil.rmtree(tmp_path / "out")
    preflight(tmp_path)
    assert StreamState(tmp_path / "ck").recorded()["stream"]


# ---------------------------------------- 1. an output and its checkpoint


def test_a_lost_checkpoint_beside_its_output_is_refused(template):
    root, identity = template
    with copy_of(root) as copy:
        shutil.rmtree(copy / "ck")
        line = refused_line(copy)
        assert f"holds 2 committed batch(es) of stream {identity['stream']}" in line
        assert "is new" in line and "--checkpoint that wrote them" in line
        assert not (copy / "ck").exists()  # the refusal wrote nothing
    with copy_of(root) as copy:  # a stream's checkpoint pointed at another stream's output
        other = copy.parent / "other"
        build_stream(other)
        shutil.rmtree(copy / "out")
        shutil.copytree(other / "out", copy / "out")
        line = refused_line(copy)
        assert "was committed by stream" in line and identity["stream"] in line


@pytest.mark.parametrize("lost, words", [
    (["offsets", "commits", "sources", "metadata"], "has lost Spark's part"),
    (["out/batch_id=1"], "has lost 1 batch(es)"),
    (["ck/rtf"], "stream.json: missing, but the checkpoint holds"),
    (["sources"], "sources: missing, but Spark's offsets of batch 2 are there"),
])
def test_half_of_a_stream_lost_is_refused(template, lost, words):
    root, _ = template
    with copy_of(root) as copy:
        for name in lost:
            path = copy / name if "/" in name else copy / "ck" / name
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        assert words in refused_line(copy)


def test_a_batch_is_skipped_only_when_this_stream_committed_it_from_the_same_files(template):
    root, identity = template
    with copy_of(root) as copy:
        out, me = BatchOutput(copy / "out"), identity["stream"]
        files = [(f"file:{copy}/in/f1.nt", 1.5e9 + 1, 41)]
        assert out.replayed(1, me, files, "ck") and not out.replayed(2, me, files, "ck")
        for other_stream, other_files, words in [
            ("0" * 32, files, "was committed by stream"),
            (me, files + [(f"file:{copy}/in/new.nt", 0.0, 9)], "not of the 2 file(s) of Spark's batch 1"),
            (me, [(f"file:{copy}/in/f1.nt", 1.5e9 + 1, 42)], "lost or replaced"),
        ]:
            with pytest.raises(ReplayError) as error:
                out.replayed(1, other_stream, other_files, "ck")
            assert_refusal(error.value, words)


# ------------------------------------------------------ 2. damaged files


#: Every file a run reads: its path in a stream's folder, and what it holds.
FILES = {
    "stream.json": ("ck/rtf/stream.json", "json"),
    "pin of a committed batch": ("ck/rtf/pins/000000000001.json", "json"),
    "pin of the batch in flight": ("ck/rtf/pins/000000000002.json", "json"),
    "starting index": ("ck/rtf/bases/00000000000000000000.idx", "index"),
    "compacted index": ("ck/rtf/bases/00000000000000000002.idx", "index"),
    "newest batch's manifest": ("out/batch_id=1/_rtf_batch.json", "json"),
    "Spark's metadata": ("ck/metadata", "json"),
    "the run lock": ("ck/rtf/lock", "lock"),
}
DAMAGES = ("deleted", "empty", "truncated", "garbage", "wrong JSON type", "missing key", "wrong value")
#: What is rebuilt exactly, or never read, when lost: (file, damage, with --index).
REBUILT = {("pin of a committed batch", "deleted"), ("pin of the batch in flight", "deleted"),
           ("compacted index", "deleted"), ("starting index", "deleted", True),
           # Not detected (docs/limits.md): a compacted index replaced by another whole one.
           ("compacted index", "wrong value")}
#: Values of the wrong kind for some key (`_invalid` keeps those wrong for the key drawn).
WRONG = st.sampled_from([None, -1, 1.5, True, "", "x", [], {}, [{"path": 1}], 10**20])


def _expected_refusal(name: str, damage: str, index: bool) -> bool:
    kind = FILES[name][1]
    if kind == "lock":
        return False
    return (name, damage) not in REBUILT and (name, damage, index) not in REBUILT


@st.composite
def damage_of(draw, data: bytes, kind: str, damage: str):
    """The bytes `damage` leaves of file bytes `data` (None: deleted)."""
    if damage == "deleted":
        return None
    if damage == "empty":
        return draw(st.sampled_from([b"", b"\n", b"  \n"]))
    if damage == "truncated":
        return data[:draw(st.integers(1, len(data.rstrip()) - 1))]  # short of its last character
    if damage == "garbage":
        return draw(st.binary(min_size=1, max_size=300).filter(lambda b: b.strip()))
    if kind == "index":  # a binary file: its "wrong value" is another, valid, index
        return _index_bytes("intruder")
    if kind == "lock":  # another driver's pid
        return draw(st.integers(1, 2**22)).to_bytes(4, "little")
    record = json.loads(data)
    if damage == "wrong JSON type":
        value = draw(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                               st.text(max_size=20), st.lists(st.integers(), max_size=3)))
        return json.dumps(value).encode()
    key = draw(st.sampled_from(sorted(k for k in record if k in _CHECKED[_kind(record)])))
    if damage == "missing key":
        del record[key]
    else:
        record[key] = draw(WRONG.filter(lambda v: _invalid(key, v)))
    return json.dumps(record).encode()


#: The keys each record's reader checks (the rest -- counts, times -- are for people).
_CHECKED = {"identity": {"stream", "index_sha256", "queries_log", "output"},
            "pin": {"batch", "op", "pinned_at"}, "manifest": {"batch", "stream", "files"},
            "spark": {"id"}}


def _kind(record: dict) -> str:
    return ("identity" if "index_sha256" in record else "pin" if "pinned_at" in record
            else "manifest" if "files" in record else "spark")


def _invalid(key: str, value) -> bool:
    """Whether `value` is one that the check of `key` must refuse."""
    if key == "queries_log":
        return value is not None and not (isinstance(value, str) and value)
    if key in ("batch", "op"):
        return not (type(value) is int and value >= 0)
    if key == "pinned_at":
        return type(value) not in (int, float)
    if key == "files":
        return value != [] and not (isinstance(value, list) and all(
            isinstance(f, dict) and isinstance(f.get("path"), str) and f["path"] for f in value))
    return not (isinstance(value, str) and value)


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("name", sorted(FILES))
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(index=st.booleans(), data=st.data())
def test_every_file_damaged_in_every_way_is_refused_in_one_line_or_rebuilt(template, tmp_path, name, damage,
                                                                           index, data):
    root, identity = template
    relative, kind = FILES[name]
    if kind in ("index", "lock") and damage in ("wrong JSON type", "missing key"):
        pytest.skip("a file of bytes, not JSON: its wrong values are drawn as 'wrong value'")
    copy = copy_stream(root, tmp_path) if not (tmp_path / root.name).exists() else tmp_path / root.name
    path = copy / relative
    before = path.read_bytes()
    after = data.draw(damage_of(before, kind, damage))
    path.unlink()
    if after is not None:
        path.write_bytes(after)
    try:
        if not _expected_refusal(name, damage, index):
            preflight(copy, index)  # rebuilt, or not needed: the run goes on
            assert StreamState(copy / "ck").recorded()["stream"] == identity["stream"]
            if name == "starting index":
                assert _sha(path) == identity["index_sha256"]
            return
        with pytest.raises(ReplayError) as error:
            preflight(copy, index)
        assert_refusal(error.value, str(path))
        line = refused_line(copy, index)  # and the script says it so, before Spark starts
        assert line == f"stream.py: error: {error.value}"
    finally:  # the next example damages the stream as it was
        path.write_bytes(before)


@pytest.mark.parametrize("name, key, value, words", [
    ("stream.json", "output", "/elsewhere", "belongs to a stream with output '/elsewhere'"),
    ("stream.json", "queries_log", "0123", "belongs to a stream with queries_log '0123'"),
    ("stream.json", "index_sha256", "ab" * 32, "not the index"),
    ("stream.json", "stream", "f" * 32, "was committed by stream"),
    ("pin of the batch in flight", "batch", 7, '"batch" is 7, not 2'),
    ("pin of the batch in flight", "op", 3, "the queries log holds 2 operation(s)"),
    ("newest batch's manifest", "batch", 0, '"batch" is 0, not 1'),
    ("newest batch's manifest", "stream", "f" * 32, "was committed by stream ffff"),
])
def test_a_value_that_does_not_fit_the_stream_is_refused(template, name, key, value, words):
    root, _ = template
    with copy_of(root) as copy:
        path = copy / FILES[name][0]
        record = json.loads(path.read_text())
        record[key] = value
        path.write_text(json.dumps(record))
        with pytest.raises(ReplayError) as error:
            preflight(copy)
        assert_refusal(error.value, words)


def test_a_restart_without_the_queries_log_it_follows_is_refused(template):
    root, _ = template
    with copy_of(root) as copy:
        bare = StreamConfig(input=str(copy / "in"), output=str(copy / "out"), checkpoint=str(copy / "ck"))
        output, state, _ = check_config(bare)
        with pytest.raises(ReplayError, match="restart with --queries-log DIR"):
            check_checkpoint(bare, output, state, None)


def test_a_lost_starting_index_is_asked_for_and_taken_back_only_as_it_was(template):
    root, identity = template
    with copy_of(root) as copy:
        base = copy / FILES["starting index"][0]
        base.unlink()
        with pytest.raises(RecordError, match="missing; restart with --index IDX") as error:
            preflight(copy, index=False)
        assert identity["index_sha256"] in str(error.value)
        (copy / "q.idx").write_bytes(_index_bytes("another"))
        with pytest.raises(RecordError, match=f"not {copy / 'q.idx'}"):
            preflight(copy)
        assert not base.exists()


def test_a_pin_damaged_during_a_run_is_told_when_its_batch_reads_it(tmp_path):
    state = StreamState(tmp_path)
    state.open()
    try:
        assert state.pin(3, lambda: 5) == 5
        (state.pins / "000000000003.json").write_text('{"batch": 3, "op": "5"}')
        with pytest.raises(RecordError, match='"op" must be an operation number, not "5"; delete it'):
            state.pin(3, lambda: 5)
    finally:
        state.close()


def test_a_base_is_checked_by_header_and_checksum(tmp_path):
    path = tmp_path / "b.idx"
    data = _index_bytes("q0")
    for damaged, words in [(data[:-1], "truncated"), (data[:16] + b"\xff" + data[17:], "truncated or"),
                           (data[:-5] + b"12345", "checksum"), (b"\0" * 100, "not an rtf index")]:
        path.write_bytes(damaged)
        with pytest.raises(RecordError, match=words):
            check_base(path, None, tmp_path / "stream.json")
    path.write_bytes(data)
    check_base(path, _sha(path), tmp_path / "stream.json")


@pytest.mark.parametrize("spark_says, line", [
    ("org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query [id = 1, runId = 2] "
     "terminated with exception: Failed to read log file file:/c/ck/offsets/0. [MALFORMED_LOG_FILE] Log "
     "file was malformed: failed to read correct log version from garbage. SQLSTATE: KD002 SQLSTATE: "
     "XXKST\n\tat org.apache.spark...",
     "/c/ck/offsets/0: Spark cannot read this file of its checkpoint ([MALFORMED_LOG_FILE] Log file was "
     "malformed: failed to read correct log version from garbage.); restore the checkpoint from a backup, "
     "or start a new stream: a new --checkpoint and a new --output"),
    ("terminated with exception: Failed to read log file file:/c/ck/commits/0. Incomplete log file in "
     "the offset commit log SQLSTATE: XXKST",
     "/c/ck/commits/0: Spark cannot read this file of its checkpoint (Incomplete log file in the offset "
     "commit log); restore the checkpoint from a backup, or start a new stream: a new --checkpoint and a "
     "new --output"),
    ("Job aborted due to stage failure: disk full", None),
])
def test_spark_failing_on_a_file_of_its_checkpoint_is_said_in_one_line(spark_says, line):
    from rtf.spark.stream import spark_checkpoint_error

    error = spark_checkpoint_error(RuntimeError(spark_says))
    assert (None if error is None else str(error)) == line
