"""rtf on Spark: a DataFrame API, a streaming job, the replay of a dump, query partitions.

`match_publications` (in `dataframe`, its rows built by `arrow_matches`)
matches any DataFrame of publications and returns the matches as a
DataFrame; `stream` runs continuous queries on Structured Streaming with
exactly-once output (`batch_output`), its own state beside Spark's
checkpoint (`stream_state`) and a queries log it follows (`oplog`; files
written whole by `durable`); `engines` keeps one engine per Python worker,
built from a saved index; `session` starts Spark and words its failures;
`replay` replays a dump (`dump_triples`, `dumps`, `workers`, `hadoopfs`),
and `partition` and `query_groups` split the queries into groups. The
commands ``rtf spark stream|replay|queries-log`` (also ``python -m
rtf.spark``) are `commands` and the ``*_command`` modules; a checkout's
``spark/stream.py``, ``spark/queries_log.py`` and ``spark/dbpedia_eval.py``
run the same code (docs/spark.md).

Importing this package imports no pyspark: the workers import only what they use.
"""

__all__ = ["match_publications", "QueriesLog"]


def __getattr__(name: str):
    if name == "match_publications":
        from rtf.spark.dataframe import match_publications
        return match_publications
    if name == "QueriesLog":
        from rtf.spark.oplog import QueriesLog
        return QueriesLog
    raise AttributeError(f"module 'rtf.spark' has no attribute {name!r}")
