"""Replaying RDF dumps through an engine on Spark.

This is the library behind ``spark/dbpedia_eval.py`` (see ``docs/spark.md``).
The job has five stages, each timed on its own:

1. **read+parse.** One ``sc.textFile`` per dump file: Hadoop decompresses
   ``.gz`` and ``.bz2`` (a ``.gz`` file is one partition, plain and ``.bz2``
   files are split). Each partition's lines are parsed in the executors, in
   batches of about `BATCH_CHARS` characters, by
   `rtf.reader.parse_ntriples_lines` (one pyoxigraph call per batch). Bad
   lines are skipped and counted in an accumulator, never a failed task.
   Consecutive triples with the same subject leave the partition as one
   record ``(subject, [(p, o), ...])`` (a sorted dump sends each resource's
   triples as one record, not one per triple).
2. **group.** ``combineByKey`` on the subject, over *all* files, into N
   partitions by CRC-32 of the subject: a resource whose types, abstract and
   properties come in different files (as DBpedia ships them) becomes one
   publication.
3. **broadcast.** The engine is built once on the driver from the queries,
   pickled (`serialize_engine`) and broadcast as bytes. With a saved index
   (``--index``) the driver broadcasts the index file's bytes as they are,
   checked but not loaded.
4. **filter.** ``mapPartitionsWithIndex``: each Python worker unpickles the
   engine (or loads it from the index bytes, `rtf.store.load_engine_bytes`)
   the first time it meets the broadcast and keeps it (`_ENGINES`), so
   a worker that runs many partitions pays it once; every publication goes
   through ``engine.match``.
5. **write.** The matches, as the lines of ``rtf match`` (`rtf.cli.match_line`),
   go to JSON Lines part files with ``saveAsTextFile``; ``metrics.json`` beside
   them holds the counts, stage times and throughputs.

Stages run one Spark job each over persisted RDDs so that each can be timed
(``timed=True``); ``timed=False`` runs the whole pipeline as one job with no
cache, for dumps too large to persist, and then only the executor-side times
(parse, filter) and the total are known.

The functions that run in the executors are plain functions of this module
(`parse_lines`, `filter_records`), so they are tested without Spark; the
Spark part (`run_replay`) imports pyspark lazily.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import platform
import time
import uuid
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from itertools import groupby
from operator import itemgetter
from pathlib import Path

from rtf.errors import RtfError
from rtf.machine import machine_info
from rtf.publication import Publication
from rtf.terms import display_iri

__all__ = ["ReplayError", "ReplayConfig", "DUMP_SUFFIXES", "dump_files", "build_engine",
           "serialize_engine", "load_engine", "parse_lines", "filter_records",
           "subject_partition", "run_replay", "package_zip"]

#: Characters of lines parsed in one pyoxigraph call (as `rtf.reader.CHUNK_BYTES`).
BATCH_CHARS = 1 << 20

#: Line-based RDF that `parse_ntriples_lines` reads: N-Triples, and DBpedia's
#: ``.ttl`` dumps, which are N-Triples lines (full IRIs, one triple a line).
LINE_SYNTAXES = (".nt", ".ttl")
COMPRESSIONS = ("", ".gz", ".bz2")
DUMP_SUFFIXES = tuple(s + c for s in LINE_SYNTAXES for c in COMPRESSIONS)

#: Kept bad-line examples per partition (the counts are always complete).
MAX_EXAMPLES = 3


class ReplayError(RtfError):
    """A problem with the job's arguments or inputs (one readable line)."""


# -------------------------------------------------------------------- inputs


def _has_scheme(path: str) -> bool:
    """True for ``hdfs://...``, ``s3a://...``; False for local paths and ``file:``."""
    head, sep, _ = path.partition("://")
    return bool(sep) and head.isalpha() and len(head) > 1 and head != "file"


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def is_dump_file(name: str) -> bool:
    return name.lower().endswith(DUMP_SUFFIXES)


def dump_files(paths: Iterable[str], list_dir: Callable[[str], list[str]] | None = None,
               warn: Callable[[str], None] = lambda message: None) -> list[str]:
    """The dump files named by `paths`: files as given, directories as their dump files.

    A directory contributes its files ending in one of `DUMP_SUFFIXES`
    (sorted; other files are reported through `warn`); a file named
    explicitly must have one of those suffixes. Local paths are checked
    here; a URI with a scheme (``hdfs://``) is listed with `list_dir` (a
    Hadoop file system listing) when given, else passed on as it is.
    """
    out: list[str] = []
    for raw in paths:
        path = str(raw)
        if _has_scheme(path):
            if list_dir is not None and not is_dump_file(path):
                names = list_dir(path)
                if names is not None:  # a directory
                    out += _pick(path, names, warn)
                    continue
            if not is_dump_file(path):
                raise ReplayError(f"{path}: not a dump file (expected one of {', '.join(DUMP_SUFFIXES)})")
            out.append(path)
            continue
        local = Path(_local(path))
        if local.is_dir():
            names = sorted(p.name for p in local.iterdir() if p.is_file())
            out += [str(local / n) for n in _pick(str(local), names, warn, full=False)]
        elif local.is_file():
            if not is_dump_file(local.name):
                lower = local.name.lower()
                hint = (" (N-Quads: convert to N-Triples first)" if ".nq" in lower or ".tql" in lower
                        else "")
                raise ReplayError(f"{path}: not a line-based dump file{hint}; expected a name "
                                  f"ending in one of {', '.join(DUMP_SUFFIXES)}")
            out.append(str(local))
        else:
            raise ReplayError(f"{path}: no such file or directory")
    if not out:
        raise ReplayError("no dump files found in " + ", ".join(map(str, paths)))
    return out


def _pick(directory: str, names: list[str], warn, full: bool = True) -> list[str]:
    picked = [n for n in names if is_dump_file(n)]
    # Hidden and bookkeeping files (.crc, _SUCCESS) are skipped silently.
    skipped = [n for n in names if not is_dump_file(n) and not n.startswith((".", "_"))]
    if skipped:
        warn(f"{directory}: skipping {len(skipped)} file(s) that are not dumps: "
             + ", ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else ""))
    if not picked:
        raise ReplayError(f"{directory}: no dump files (*{', *'.join(DUMP_SUFFIXES)})")
    return [directory.rstrip("/") + "/" + n for n in picked] if full else picked


# -------------------------------------------------------------------- engine


def build_engine(algorithm: str, queries: str, taxonomy: str | None = None):
    """The engine with every query of the file `queries` registered (driver side)."""
    from rtf.cli import load_queries, register_all
    from rtf.engine import Engine

    engine = Engine(algorithm, taxonomy=taxonomy)
    register_all(engine, load_queries(queries), str(queries))
    return engine


def build_group_engines(algorithm: str, queries: str, k: int, strategy: str,
                        taxonomy: str | None = None):
    """(groups, one `GroupMatcher` or None per group, the taxonomy): the queries
    of the file split into `k` groups by `strategy` (`rtf.partition`)."""
    from rtf.cli import load_queries, register_all
    from rtf.engine import Engine
    from rtf.partition import build_group_matchers, parse_records, partition_queries
    from rtf.taxonomy import Taxonomy

    tax = Taxonomy.from_file(taxonomy) if taxonomy else Taxonomy.empty()
    records = parse_records(load_queries(queries), str(queries))
    groups = partition_queries([(r["id"], r["query"]) for r in records], k, strategy)
    matchers = build_group_matchers(groups, records, lambda: Engine(algorithm, taxonomy=tax),
                                    register_all, str(queries))
    return groups, matchers, tax


def read_index(config: "ReplayConfig") -> tuple[bytes, dict]:
    """(the bytes of the saved index `config.index`, its stats), checked on the driver.

    The header, checksum and body are verified here (`rtf.store.decode_body`),
    so a bad file fails before any Spark work, and the options the index
    fixes are refused as ``rtf match --index`` refuses them. The engine
    itself is built only in the workers, from these bytes. A local path only:
    the driver reads it, Spark ships it.
    """
    from rtf.store import decode_body, read_index_bytes

    if config.queries is not None:
        raise ReplayError("--index and --queries exclude each other: the index holds the queries")
    if config.query_partitions is not None:
        raise ReplayError("--index cannot be used with --query-partitions yet: "
                          "give the queries with --queries to split them into groups")
    if config.taxonomy:
        raise ReplayError("--taxonomy cannot be used with --index: the index holds its taxonomy "
                          "(rebuild it with `rtf index build --taxonomy`)")
    if _has_scheme(config.index):
        raise ReplayError(f"--index {config.index}: the index must be a file on the driver's file system")
    data = read_index_bytes(_local(config.index))
    content = decode_body(data, config.index)
    algorithm = content.get("algorithm")
    if config.algorithm and config.algorithm != algorithm:
        raise ReplayError(f"--algorithm {config.algorithm} but the index {config.index} is {algorithm}: "
                          "leave --algorithm out, or rebuild the index")
    return data, {"algorithm": algorithm, "queries": len(content.get("queries") or ()),
                  "index_file": str(config.index)}


def serialize_engine(engine) -> bytes:
    """The engine as bytes to broadcast (pickle, highest protocol).

    The taxonomy pickles as its edges only; the per-literal text caches are
    module globals, not part of the engine, so nothing is shipped twice.
    """
    return pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)


def load_engine(blob: bytes):
    return pickle.loads(blob)


#: Engines unpickled in this Python worker, by broadcast token. A reused
#: worker (``spark.python.worker.reuse``, the default) keeps its engine for
#: every later partition of the job.
_ENGINES: dict[str, object] = {}
#: The query-group router of the running job (`rtf.partition.Router`), by broadcast token.
_ROUTERS: dict[str, object] = {}


def engine_memory(blob: bytes) -> int:
    """Bytes an engine takes once unpickled (tracemalloc: Python allocations, taxonomy included)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        engine = load_engine(blob)
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del engine
    return size


def worker_rss_mb() -> float | None:
    """Resident memory of this Python worker now, in MB (None where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def engine_for(token: str, blob_source: Callable[[], bytes],
               load: Callable[[bytes], object] = load_engine) -> tuple[object, float]:
    """The engine of broadcast `token`, and the seconds spent loading it now (0 if cached).

    `load` makes the engine from the broadcast bytes: `load_engine` (a
    pickle) or `rtf.store.load_engine_bytes` (an index file)."""
    engine = _ENGINES.get(token)
    if engine is not None:
        return engine, 0.0
    from rtf.engine import freeze_long_lived

    t = time.perf_counter()
    if _ENGINES:  # one engine at a time: let the previous one (frozen) go first
        import gc

        _ENGINES.clear()
        gc.unfreeze()
        gc.collect()
    engine = load(blob_source())
    _ENGINES[token] = engine
    freeze_long_lived()  # as `rtf match` does once the queries are in
    return engine, time.perf_counter() - t


# ----------------------------------------------------------------- executors


def subject_partition(subject: str) -> int:
    """Partition hash of a subject key: CRC-32, the same in every worker and run."""
    return zlib.crc32(subject.encode("utf-8"))


def _batches(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    chars = 0
    for line in lines:
        batch.append(line)
        chars += len(line) + 1
        if chars >= size:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def parse_lines(lines: Iterable[str], source: str, counters: dict,
                batch_chars: int = BATCH_CHARS) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """Subject runs ``(subject, [(p, o), ...])`` of N-Triples `lines`.

    Lines are parsed a batch at a time with `parse_ntriples_lines`; a run is
    a maximal sequence of consecutive triples with one subject inside a
    batch (runs cut by a batch boundary are merged by the grouping stage).
    `counters` receives ``lines``, ``bytes`` (UTF-8, newlines included),
    ``triples``, ``bad_lines``, ``replacement_char_lines`` (lines holding
    U+FFFD, which is what Hadoop makes of invalid UTF-8) and ``parse_s``, and
    ``bad_examples`` (up to `MAX_EXAMPLES` first bad lines).
    """
    from rtf.reader import parse_ntriples_lines

    first = itemgetter(0)
    start = 1
    for batch in _batches(lines, batch_chars):
        t = time.perf_counter()
        # Line numbers in the warning count from this batch's first line.
        triples, bad = parse_ntriples_lines(batch, f"{source} (batch at line {start} of the split)")
        start += len(batch)
        counters["parse_s"] = counters.get("parse_s", 0.0) + time.perf_counter() - t
        counters["lines"] = counters.get("lines", 0) + len(batch)
        text = "\n".join(batch)
        counters["bytes"] = counters.get("bytes", 0) + len(text.encode("utf-8")) + 1
        if "\ufffd" in text:
            # Hadoop decodes lines as UTF-8 and replaces invalid bytes with U+FFFD
            # (where `rtf match` would reject the line): count such lines.
            counters["replacement_char_lines"] = (counters.get("replacement_char_lines", 0)
                                                  + sum("\ufffd" in line for line in batch))
        counters["triples"] = counters.get("triples", 0) + len(triples)
        if bad:
            counters["bad_lines"] = counters.get("bad_lines", 0) + bad
            examples = counters.setdefault("bad_examples", [])
            if len(examples) < MAX_EXAMPLES:
                examples += _bad_examples(batch, MAX_EXAMPLES - len(examples))
        for subject, run in groupby(triples, first):
            yield subject, [(p, o) for _, p, o in run]


def _bad_examples(batch: list[str], n: int) -> list[str]:
    """Up to `n` of the lines of `batch` that do not parse alone (for the report)."""
    import pyoxigraph as ox

    out = []
    for line in batch:
        try:
            ox.parse(line, ox.RdfFormat.N_TRIPLES).__next__()
        except StopIteration:  # a blank or comment line
            continue
        except SyntaxError as e:
            text = line if len(line) <= 200 else line[:200] + "..."
            out.append(f"{text}  <- {e.msg.split(': ', 1)[-1]}")
            if len(out) == n:
                break
    return out


def publication_of(subject: str, pairs: list[tuple[str, str]]) -> Publication:
    """The publication of a grouped subject (id as in `rtf match`: the IRI without brackets)."""
    return Publication(display_iri(subject), [(subject, p, o) for p, o in pairs])


def filter_records(engine, records: Iterable[tuple[str, list[tuple[str, str]]]],
                   stats: dict) -> Iterator[str]:
    """Match each grouped subject against `engine`; yield `rtf match` output lines.

    `stats` receives ``publications``, ``triples``, ``matches`` and
    ``filter_s`` (time inside ``engine.match`` only).
    """
    from rtf.cli import match_line

    clock = time.perf_counter
    publications = triples = matches = 0
    filter_s = 0.0
    try:
        for subject, pairs in records:
            pub = publication_of(subject, pairs)
            t = clock()
            found = engine.match(pub)
            filter_s += clock() - t
            publications += 1
            triples += len(pub)
            matches += len(found)
            for m in found:
                yield match_line(pub.id, m)
    finally:
        stats["publications"] = stats.get("publications", 0) + publications
        stats["triples"] = stats.get("triples", 0) + triples
        stats["matches"] = stats.get("matches", 0) + matches
        stats["filter_s"] = stats.get("filter_s", 0.0) + filter_s


# ------------------------------------------------------------- accumulators


class ListParam:
    """Accumulator of lists: they concatenate (duck-typed AccumulatorParam)."""

    def zero(self, value):
        return []

    def addInPlace(self, a, b):
        a.extend(b)
        return a


def _extend(acc: list, more: list) -> list:
    acc.extend(more)
    return acc


def _same(value: list) -> list:
    return value


# --------------------------------------------------------------------- Spark


@dataclass
class ReplayConfig:
    """What `run_replay` needs; mirrors the options of ``spark/dbpedia_eval.py``."""

    dumps: list[str]
    queries: str | None  # the queries file, or None with `index`
    output: str
    algorithm: str | None = None  # None: rtfs with `queries`, the index's algorithm with `index`
    taxonomy: str | None = None
    index: str | None = None  # a saved index (`rtf index build`) instead of `queries`
    partitions: int | None = None  # publications' partitions (default: 2 x default parallelism)
    timed: bool = True
    overwrite: bool = False
    batch_chars: int = BATCH_CHARS
    query_partitions: int | None = None  # K groups of queries (None: one engine for all)
    query_partitioning: str = "hash"  # rtf.partition.STRATEGIES
    measure_memory: bool = False  # unpickle each group's engine on the driver under tracemalloc


def _round(x: float, n: int = 4) -> float:
    return round(x, n)


class _HadoopFS:
    """The few file operations the driver needs, on local paths or any Hadoop URI."""

    def __init__(self, sc):
        self.sc = sc

    def _fs(self, path: str):
        jvm = self.sc._jvm
        p = jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(self.sc._jsc.hadoopConfiguration()), p

    def list_dir(self, path: str) -> list[str] | None:
        """File names in directory `path`, or None if it is not a directory."""
        fs, p = self._fs(path)
        if not fs.exists(p):
            raise ReplayError(f"{path}: no such file or directory")
        if not fs.getFileStatus(p).isDirectory():
            return None
        return sorted(s.getPath().getName() for s in fs.listStatus(p) if s.isFile())

    def exists(self, path: str) -> bool:
        if not _has_scheme(path):
            return Path(_local(path)).exists()
        fs, p = self._fs(path)
        return fs.exists(p)

    def delete(self, path: str) -> None:
        if not _has_scheme(path):
            import shutil
            shutil.rmtree(_local(path))
            return
        fs, p = self._fs(path)
        fs.delete(p, True)

    def names(self, path: str) -> list[str]:
        if not _has_scheme(path):
            return sorted(os.listdir(_local(path)))
        fs, p = self._fs(path)
        return sorted(s.getPath().getName() for s in fs.listStatus(p))

    def write_text(self, path: str, text: str) -> None:
        if not _has_scheme(path):
            Path(_local(path)).write_text(text, encoding="utf-8")
            return
        fs, p = self._fs(path)
        out = fs.create(p, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()


def _is_previous_output(names: list[str]) -> bool:
    """A folder that only holds what this job writes (so --overwrite may delete it)."""
    return all(n.startswith(("part-", "_SUCCESS", ".part-", "._SUCCESS")) or n == "metrics.json"
               for n in names)


def _prepare_output(fs: _HadoopFS, output: str, overwrite: bool) -> None:
    if not fs.exists(output):
        return
    if not overwrite:
        raise ReplayError(f"{output} exists; choose a new --output folder or pass --overwrite")
    names = fs.names(output) if (_has_scheme(output) or Path(_local(output)).is_dir()) else None
    if names is None or not _is_previous_output(names):
        raise ReplayError(f"{output} exists and is not the output of an earlier run "
                          "(it holds other files); refusing to delete it")
    fs.delete(output)


def run_replay(spark, config: ReplayConfig, log: Callable[[str], None] = lambda s: None) -> dict:
    """Run the job on `spark` (a SparkSession); write the matches and metrics.json; return the metrics."""
    from pyspark import StorageLevel

    sc = spark.sparkContext
    fs = _HadoopFS(sc)
    t_start = time.perf_counter()
    files = dump_files(config.dumps, list_dir=fs.list_dir, warn=log)
    _prepare_output(fs, config.output, config.overwrite)
    if config.partitions is not None and config.partitions < 1:
        raise ReplayError("--partitions must be at least 1")
    partitions = config.partitions or 2 * sc.defaultParallelism

    if config.index is None:
        if config.queries is None:
            raise ReplayError("give the queries: --queries Q.jsonl or --index IDX")
        config = replace(config, algorithm=config.algorithm or "rtfs")

    # The engine (or one per query group), built once on the driver; or the
    # bytes of a saved index, checked on the driver and loaded by the workers.
    t = time.perf_counter()
    k = config.query_partitions
    index_blob = None
    if config.index is not None:
        index_blob, index_stats = read_index(config)
        config = replace(config, algorithm=index_stats["algorithm"])
        engine, n_queries = None, index_stats["queries"]
    elif k is not None:
        if k < 1:
            raise ReplayError("--query-partitions must be at least 1")
        groups, matchers, taxonomy = build_group_engines(
            config.algorithm, config.queries, k, config.query_partitioning, config.taxonomy)
        engine = None
        n_queries = sum(len(g.query_ids) for g in groups)
        index_stats = {"algorithm": config.algorithm, "queries": n_queries}
    else:
        engine = build_engine(config.algorithm, config.queries, config.taxonomy)
        n_queries = len(engine)
        index_stats = engine.stats()
    build_s = time.perf_counter() - t
    if index_blob is not None:
        log(f"read the {config.algorithm} index {config.index}: {n_queries} queries, "
            f"{len(index_blob):,} bytes in {build_s:.2f} s")
    else:
        log(f"built the {config.algorithm} engine{'s' if k else ''}: {n_queries} queries in {build_s:.2f} s"
            + (f", {k} groups by {config.query_partitioning}" if k else ""))

    # One record per task, tagged with what it read or filtered: the driver keeps
    # one per split and per partition, so that a task Spark runs again (a
    # retry, a lost cached block) is not counted twice.
    split_stats = sc.accumulator([], ListParam())
    partition_stats = sc.accumulator([], ListParam())
    batch_chars = config.batch_chars
    keep = StorageLevel.MEMORY_AND_DISK
    stages: dict[str, float] = {}
    t_spark = time.perf_counter()

    # 1. read+parse, in the executors.
    def parse_file(source: str):
        def run(split, lines):
            local: dict = {}
            yield from parse_lines(lines, f"{source} split {split}", local, batch_chars)
            local.update(source=source, split=split)
            split_stats.add([local])
        return run

    parsed = sc.union([sc.textFile(f).mapPartitionsWithIndex(parse_file(f)) for f in files])
    read_partitions = parsed.getNumPartitions()
    def materialize(rdd, stage: str, done: str, previous=None) -> None:
        """Timed runs: compute and persist `rdd` as a job of its own, timed as `stage`."""
        if not config.timed:
            return
        t = time.perf_counter()
        rdd.persist(keep).count()
        stages[stage] = time.perf_counter() - t
        if previous is not None:
            previous.unpersist()
        log(f"{done} in {stages[stage]:.2f} s")

    materialize(parsed, "read_parse_s", f"read and parsed {len(files)} file(s)")

    # 2. group by subject across all files.
    grouped = parsed.combineByKey(_same, _extend, _extend, numPartitions=partitions,
                                  partitionFunc=subject_partition)
    materialize(grouped, "group_s", f"grouped into {partitions} partitions", previous=parsed)

    if k is not None:
        matches, blob_bytes, serialize_s, broadcast_call_s, unpersist, grouping = _filter_groups(
            sc, config, grouped, partitions, groups, matchers, taxonomy, partition_stats,
            materialize, stages, log)
    else:
        matches, blob_bytes, serialize_s, broadcast_call_s, unpersist = _filter_all(
            sc, engine, grouped, partition_stats, materialize, stages, log, index_blob, config.index)
        grouping = None
    # 5. write the matches.
    t = time.perf_counter()
    matches.saveAsTextFile(config.output)
    stages["write_s" if config.timed else "pipeline_s"] = time.perf_counter() - t
    if config.timed:
        matches.unpersist()
    spark_s = time.perf_counter() - t_spark
    total_s = time.perf_counter() - t_start
    unpersist()

    parts = sorted({p["partition"]: p for p in partition_stats.value}.values(),
                   key=itemgetter("partition"))
    splits = sorted({(s["source"], s["split"]): s for s in split_stats.value}.items())
    count: dict = {}
    bad_by_file: dict[str, int] = {}
    bad_examples: list[str] = []
    for (source, _), s in splits:
        for key, value in s.items():
            if isinstance(value, (int, float)) and key != "split":
                count[key] = count.get(key, 0) + value
        if s.get("bad_lines"):
            bad_by_file[source] = bad_by_file.get(source, 0) + s["bad_lines"]
            bad_examples += s.get("bad_examples", [])
    query_groups = grouping(parts) if grouping is not None else None
    metrics = _metrics(config, files, sc, spark, partitions, read_partitions, build_s,
                       index_stats, blob_bytes, serialize_s, broadcast_call_s, stages,
                       spark_s, total_s, parts, count, bad_by_file, bad_examples, n_queries,
                       publications=query_groups["publications"] if query_groups else None)
    if query_groups is not None:
        metrics["query_partitions"] = query_groups
    fs.write_text(config.output.rstrip("/") + "/metrics.json", json.dumps(metrics, indent=2) + "\n")
    return metrics


def _filter_all(sc, engine, grouped, partition_stats, materialize, stages, log,
                index_blob: bytes | None = None, index_name: str | None = None):
    """Stages 3 and 4 with one engine: broadcast it; filter every partition against it.

    With `index_blob` (the bytes of the saved index `index_name`; `engine`
    is None) those bytes are broadcast as they are and every worker loads
    them with `rtf.store.load_engine_bytes`."""
    # 3. broadcast the serialized engine, or the index file's bytes.
    t = time.perf_counter()
    if index_blob is None:
        blob, load, how = serialize_engine(engine), load_engine, "pickle"
    else:
        from rtf.store import load_engine_bytes

        blob, how = index_blob, "index file"
        load = partial(load_engine_bytes, source=f"broadcast of {os.path.basename(index_name)}")
    serialize_s = time.perf_counter() - t
    t = time.perf_counter()
    engine_bc = sc.broadcast(blob)
    broadcast_call_s = time.perf_counter() - t
    stages["broadcast_s"] = serialize_s + broadcast_call_s
    token = uuid.uuid4().hex
    log(f"broadcast the engine: {len(blob):,} bytes ({how} {serialize_s:.3f} s, "
        f"broadcast {broadcast_call_s:.3f} s)")

    # 4. filter, in the executors: one engine per Python worker.
    def filter_partition(index, records):
        engine, load_s = engine_for(token, lambda: engine_bc.value, load)
        stats: dict = {}
        t0 = time.perf_counter()
        yield from filter_records(engine, records, stats)
        stats.update(partition=index, load_s=load_s, task_s=time.perf_counter() - t0,
                     worker=f"{platform.node()}:{os.getpid()}", rss_mb=worker_rss_mb())
        partition_stats.add([stats])

    matches = grouped.mapPartitionsWithIndex(filter_partition)
    materialize(matches, "filter_s", "filtered", previous=grouped)
    return matches, len(blob), serialize_s, broadcast_call_s, engine_bc.unpersist


def _filter_groups(sc, config, grouped, partitions, groups, matchers, taxonomy, partition_stats,
                   materialize, stages, log):
    """Stages 3 and 4 with K query groups (`rtf.partition`).

    Each group's engine is pickled and broadcast on its own. Every
    publication goes, keyed ``(group, subject)``, to each group its routing
    keys can touch (`Router`); a shuffle puts group g's publications in
    filter partitions ``g * partitions ... (g + 1) * partitions - 1``, so each
    filter task unpickles only its group's engine. Returns what
    `_filter_all` returns plus a function making the per-group metrics.
    """
    from rtf.partition import Router

    k = len(groups)
    t = time.perf_counter()
    blobs = [serialize_engine(m) if m is not None else None for m in matchers]
    router_blob = serialize_engine(Router(groups, taxonomy))
    serialize_s = time.perf_counter() - t
    t = time.perf_counter()
    group_bcs = [sc.broadcast(b) if b is not None else None for b in blobs]
    router_bc = sc.broadcast(router_blob)
    broadcast_call_s = time.perf_counter() - t
    stages["broadcast_s"] = serialize_s + broadcast_call_s
    tokens = [uuid.uuid4().hex for _ in groups]
    router_token = uuid.uuid4().hex
    blob_bytes = sum(len(b) for b in blobs if b is not None)
    log(f"broadcast {k} group engines: {blob_bytes:,} bytes in all, largest "
        f"{max((len(b) for b in blobs if b), default=0):,} (pickle {serialize_s:.3f} s)")
    memory = [engine_memory(b) if config.measure_memory and b is not None else None for b in blobs]
    route_stats = sc.accumulator([], ListParam())

    # Route: one record per (group, publication) pair the routing keeps.
    def route_partition(index, records):
        router = _ROUTERS.get(router_token)
        if router is None:
            _ROUTERS.clear()
            router = _ROUTERS[router_token] = load_engine(router_bc.value)
        publications = pairs = 0
        t0 = time.perf_counter()
        for subject, po in records:
            publications += 1
            targets = router.groups_for([(subject, p, o) for p, o in po])
            pairs += len(targets)
            for g in targets:
                yield (g, subject), po
        route_stats.add([{"partition": index, "publications": publications, "pairs": pairs,
                          "route_s": time.perf_counter() - t0}])

    def group_partition(key) -> int:
        g, subject = key
        return g * partitions + subject_partition(subject) % partitions

    routed = grouped.mapPartitionsWithIndex(route_partition).partitionBy(
        k * partitions, group_partition)
    materialize(routed, "route_s", f"routed to {k} query groups", previous=grouped)

    def filter_partition(index, records):
        g = index // partitions
        stats: dict = {"group": g}
        t0 = time.perf_counter()
        load_s = 0.0
        records = iter(records)
        first = next(records, None)
        if first is not None:  # a task with nothing routed to it loads no engine
            engine, load_s = engine_for(tokens[g], lambda: group_bcs[g].value)
            pubs = ((s, po) for (_, s), po in itertools.chain([first], records))
            yield from filter_records(engine, pubs, stats)
        stats.update(partition=index, load_s=load_s, task_s=time.perf_counter() - t0,
                     worker=f"{platform.node()}:{os.getpid()}", rss_mb=worker_rss_mb())
        for key in ("publications", "triples", "matches", "filter_s"):
            stats.setdefault(key, 0)
        partition_stats.add([stats])

    matches = routed.mapPartitionsWithIndex(filter_partition)
    materialize(matches, "filter_s", "filtered", previous=routed)

    def unpersist():
        for bc in [router_bc, *group_bcs]:
            if bc is not None:
                bc.unpersist()

    def grouping(parts: list[dict]) -> dict:
        routes = {r["partition"]: r for r in route_stats.value}.values()
        pairs = sum(r["pairs"] for r in routes)
        routed_publications = sum(r["publications"] for r in routes)
        per_group = []
        for g, m, blob, mem in zip(groups, matchers, blobs, memory):
            mine = [p for p in parts if p["partition"] // partitions == g.index]
            filter_s = sum(p["filter_s"] for p in mine)
            per_group.append({
                "group": g.index, "queries": len(g.query_ids), "contained_queries": len(g.contained),
                "anchors": len(g.anchors), "always": g.always,
                "index_bytes": len(blob) if blob is not None else 0,
                "index_memory_bytes": mem,
                "publications_routed": sum(p["publications"] for p in mine),
                "matches": sum(p["matches"] for p in mine),
                "filter_s": _round(filter_s),
                "engine_loads": sum(1 for p in mine if p["load_s"] > 0),
                "worker_rss_mb_max": _max_rss(p for p in mine if p["publications"]),
            })
        sizes = [len(b) for b in blobs if b is not None]
        return {
            "k": k, "strategy": config.query_partitioning, "publications": routed_publications,
            "router_bytes": len(router_blob),
            "contained_queries": sum(len(g.contained) for g in groups),
            "index_bytes_total": blob_bytes, "index_bytes_max": max(sizes, default=0),
            "index_memory_bytes_max": max((x for x in memory if x is not None), default=None),
            "pairs_considered": k * routed_publications, "pairs_routed": pairs,
            "pairs_skipped": k * routed_publications - pairs,
            "route_s": _round(sum(r["route_s"] for r in routes)),
            "publications_per_group_max": max((g["publications_routed"] for g in per_group), default=0),
            "groups": per_group,
        }

    return matches, blob_bytes, serialize_s, broadcast_call_s, unpersist, grouping


def _max_rss(parts) -> float | None:
    values = [p["rss_mb"] for p in parts if p.get("rss_mb") is not None]
    return round(max(values), 1) if values else None


def _metrics(config, files, sc, spark, partitions, read_partitions, build_s, index_stats,
             index_bytes, serialize_s, broadcast_call_s, stages, spark_s, total_s, parts,
             count, bad_by_file, bad_examples, queries, publications=None) -> dict:
    # With query groups a partition's publications are (group, publication) pairs.
    pubs = sum(p["publications"] for p in parts) if publications is None else publications
    matches = sum(p["matches"] for p in parts)
    filter_cpu = sum(p["filter_s"] for p in parts)
    loads = [p["load_s"] for p in parts if p["load_s"] > 0]
    filter_wall = stages.get("filter_s")
    per_partition = []
    for p in parts:
        per_partition.append({
            "partition": p["partition"], "publications": p["publications"],
            "triples": p["triples"], "matches": p["matches"],
            "filter_s": _round(p["filter_s"]), "task_s": _round(p["task_s"]),
            "engine_load_s": _round(p["load_s"]), "worker": p["worker"],
            "worker_rss_mb": _round(p["rss_mb"], 1) if p.get("rss_mb") is not None else None,
            "publications_per_s": round(p["publications"] / p["filter_s"], 1) if p["filter_s"] else None,
        })
    busy = [p["filter_s"] for p in parts if p["publications"]]
    return {
        "algorithm": config.algorithm,
        "queries": queries,
        "dumps": files,
        "output": config.output,
        "timed_stages": config.timed,
        "spark": {"version": spark.version, "master": sc.master,
                  "default_parallelism": sc.defaultParallelism,
                  "read_partitions": read_partitions, "partitions": partitions},
        "machine": machine_info(),
        "publications": pubs,
        "matches": matches,
        "lines": count.get("lines", 0),
        "triples": count.get("triples", 0),
        "bytes": count.get("bytes", 0),
        "bad_lines_skipped": count.get("bad_lines", 0),
        "bad_lines_by_file": bad_by_file,
        "bad_line_examples": bad_examples[:MAX_EXAMPLES],
        "lines_with_replacement_char": count.get("replacement_char_lines", 0),
        "index": {
            "bytes": index_bytes,
            "build_s": _round(build_s),
            "serialize_s": _round(serialize_s),
            "broadcast_call_s": _round(broadcast_call_s),
            "loads": len(loads),
            "load_s_total": _round(sum(loads)),
            "load_s_max": _round(max(loads, default=0.0)),
            "stats": index_stats,
        },
        "stages_s": {k: _round(v) for k, v in stages.items()},
        # Peak resident memory of a Python worker seen after a filter task: engine and all.
        "worker_rss_mb_max": _max_rss(parts),
        "executor_s": {"parse": _round(count.get("parse_s", 0.0)), "filter": _round(filter_cpu)},
        "spark_s": _round(spark_s),
        "total_s": _round(total_s),
        "throughput": {
            "publications_per_s": round(pubs / spark_s, 1) if spark_s else None,
            "filter_publications_per_s": round(pubs / filter_wall, 1) if filter_wall else None,
            "triples_per_s": round(count.get("triples", 0) / spark_s, 1) if spark_s else None,
            "mb_per_s": round(count.get("bytes", 0) / 2**20 / spark_s, 3) if spark_s else None,
            "per_core_filter_publications_per_s": round(pubs / filter_cpu, 1) if filter_cpu else None,
            "partition_filter_s_max_over_mean":
                round(max(busy) / (sum(busy) / len(busy)), 3) if busy and sum(busy) else None,
        },
        "partitions": per_partition,
    }


# ------------------------------------------------------------------ cluster


def package_zip(directory: str | os.PathLike) -> str:
    """Zip the installed ``rtf`` package (grammar included) for ``sc.addPyFile``.

    On a cluster the executors must import the same ``rtf`` as the driver; its
    compiled dependencies (pyoxigraph, marisa-trie) must be installed on the
    workers (see docs/spark.md).
    """
    import importlib.resources

    import rtf

    root = Path(rtf.__file__).resolve().parent
    target = Path(directory) / "rtf.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.is_file() and "__pycache__" not in rel.parts and rel.parts[0] != "grammar":
                z.write(path, f"rtf/{rel.as_posix()}")
        grammar = importlib.resources.files("rtf.grammar")
        for item in grammar.iterdir():
            if item.is_file() and item.name.endswith((".py", ".lark")):
                z.writestr(f"rtf/grammar/{item.name}", item.read_bytes())
    return str(target)
