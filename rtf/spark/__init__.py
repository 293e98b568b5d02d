"""rtf on Spark: a DataFrame API, a streaming job, the replay of a dump, query partitions.

`match_publications` (in `dataframe`) matches any DataFrame of publications
and returns the matches as a DataFrame; `stream` runs continuous queries on
Structured Streaming with exactly-once output (`batch_output`), following a
queries log (`oplog`); `engines` keeps one engine per Python worker, built
from a saved index; `replay` replays a dump (`dumps`, `workers`,
`hadoopfs`), and `partition` splits the queries into groups. The drivers
are `spark/stream.py` and `spark/dbpedia_eval.py` (docs/spark.md).

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
