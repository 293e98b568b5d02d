"""A dump's lines as a DataFrame of triples: read by Spark, parsed in the Python workers.

Each dump file is read by Spark's ``text`` source (Hadoop decompresses
``.gz``, which is one partition, and ``.bz2``, which splits), tagged with
its name, and every partition's lines go through ``mapInArrow`` to
`rtf.spark.workers.parse_lines` (pyoxigraph, about 1 MiB of lines a call).
The result has one row per triple -- ``subject``, ``predicate``,
``object`` as N-Triples terms -- which is what
`rtf.spark.dataframe.match_publications` groups by subject. Bad lines are
skipped and counted per (file, split) in an accumulator, so a task that
Spark runs again is counted once.
"""

from __future__ import annotations

from rtf.spark.workers import parse_lines

TRIPLES_SCHEMA = "subject string, predicate string, object string"

#: Triples per Arrow batch handed back to Spark.
ROWS = 16384


def read_triples(spark, files: list[str], split_stats, batch_chars: int):
    """The triples of the dump `files` (a DataFrame of `TRIPLES_SCHEMA`).

    `split_stats` (an accumulator of lists) receives one dict per partition
    read: ``source``, ``split`` and the counters of `parse_lines`."""
    from functools import reduce

    from pyspark.sql import functions as F

    frames = [spark.read.text(f).withColumn("source", F.lit(f)) for f in files]
    lines = reduce(lambda a, b: a.union(b), frames)
    return lines.mapInArrow(_parser(split_stats, batch_chars), TRIPLES_SCHEMA)


def _parser(split_stats, batch_chars: int):
    def run(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        split = ctx.partitionId() if ctx else 0
        counters: dict = {}
        first = {}

        def lines():
            for batch in batches:
                if "source" not in first and batch.num_rows:
                    first["source"] = batch.column(1)[0].as_py()
                yield from batch.column(0).to_pylist()

        subjects: list[str] = []
        predicates: list[str] = []
        objects: list[str] = []
        for subject, pairs in parse_lines(lines(), _Label(first, split), counters, batch_chars):
            for p, o in pairs:
                subjects.append(subject)
                predicates.append(p)
                objects.append(o)
            if len(subjects) >= ROWS:
                yield _batch(pa, subjects, predicates, objects)
                subjects, predicates, objects = [], [], []
        if subjects:
            yield _batch(pa, subjects, predicates, objects)
        counters.update(source=first.get("source", "<dump>"), split=split)
        split_stats.add([counters])

    return run


class _Label:
    """The name parse_lines gives a split in its warnings, known once the first line is read."""

    def __init__(self, first: dict, split: int):
        self.first = first
        self.split = split

    def __str__(self) -> str:
        return f"{self.first.get('source', '<dump>')} split {self.split}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _batch(pa, subjects, predicates, objects):
    return pa.RecordBatch.from_arrays([pa.array(subjects, pa.string()), pa.array(predicates, pa.string()),
                                       pa.array(objects, pa.string())], ["subject", "predicate", "object"])
