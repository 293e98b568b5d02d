"""Matches as Arrow record batches: the rows `match_publications` hands back to Spark.

A worker makes thousands of matches per publication at 100,000 queries,
and most of them share their publication and their bindings (a star query
answers ``{?s: subject}`` for every query that matched). So the columns are
built by index: the distinct publications and the distinct bindings of a
batch are converted to Arrow once each and spread to the rows with
``take``; query ids and subscribers are gathered with ``map`` in C. Building
the rows one Python object at a time had cost as much as matching
(docs/spark.md).

>>> from rtf.engine import Match
>>> rows = MatchRows()
>>> rows.add("http://ex/a", [Match("q1", None, frozenset({(("s", "<http://ex/a>"),)})),
...                          Match("q2", "ann", frozenset({()}), is_ask=True)])
>>> rows.flush().to_pylist()[1]
{'publication': 'http://ex/a', 'query': 'q2', 'subscriber': 'ann', 'bindings': [], 'triples': None}
"""

from __future__ import annotations

import json
from itertools import repeat
from operator import itemgetter

from rtf.algebra.results import OrderedRows, Triples

_QUERY = itemgetter(0)
_SUBSCRIBER = itemgetter(1)
_SOLUTIONS = itemgetter(2)


def arrow_match_schema():
    """The pyarrow schema of the matches (`rtf.spark.dataframe.MATCH_SCHEMA`)."""
    import pyarrow as pa

    return pa.schema([("publication", pa.string()), ("query", pa.string()),
                      ("subscriber", pa.string()),
                      ("bindings", pa.list_(pa.map_(pa.string(), pa.string()))),
                      # a CONSTRUCT match's triples, [subject, predicate, object] each (null otherwise)
                      ("triples", pa.list_(pa.list_(pa.string())))])


def row_line(row: dict) -> str:
    """A match row (as pyarrow reads one: bindings as (variable, term) pairs in projection
    order) as the line `rtf match` writes for it, byte for byte."""
    doc = {"publication": row["publication"], "query": row["query"], "subscriber": row["subscriber"]}
    if row.get("triples") is not None:
        doc["triples"] = [list(t) for t in row["triples"]]
    else:
        doc["bindings"] = [dict(solution) for solution in row["bindings"]]
    return json.dumps(doc, ensure_ascii=False)


class MatchRows:
    """Matches gathered column by column, flushed as one Arrow record batch at a time.

    ``lines=True`` gathers the lines of ``rtf match`` instead (one ``value`` column)."""

    def __init__(self, lines: bool = False):
        self.lines = lines
        self._start()

    def _start(self) -> None:
        self.texts: list[str] = []  # lines=True
        self.publications: list[str] = []  # distinct, in order
        self.publication_of: list[int] = []  # per row
        self.queries: list[str] = []
        self.subscribers: list[str | None] = []
        self.values: list[list] = []  # distinct bindings values
        self.triples: list[list | None] = []  # distinct triples values (None: not a CONSTRUCT)
        self.value_of: list[int] = []  # per row
        self.slots: dict = {}  # solutions -> index into values

    def __len__(self) -> int:
        return len(self.texts) if self.lines else len(self.queries)

    def add(self, pub_id: str, found) -> None:
        """The matches `found` of publication `pub_id` (a list of `rtf.engine.Match`)."""
        if not found:
            return
        if self.lines:
            from rtf.io.output import match_line

            self.texts.extend(match_line(pub_id, m) for m in found)
            return
        self.publication_of.extend(repeat(len(self.publications), len(found)))
        self.publications.append(pub_id)
        self.queries.extend(map(_QUERY, found))
        self.subscribers.extend(map(_SUBSCRIBER, found))
        keys = list(map(_SOLUTIONS, found))
        new = set(keys).difference(self.slots)  # in C: frozensets keep their hash
        if new:
            example = dict(zip(keys, found))
            for key in new:  # an ASK's solutions are {()}, never a SELECT's: one key space
                self.slots[key] = len(self.values)
                if isinstance(key, Triples):
                    self.values.append([])
                    self.triples.append([list(t) for t in sorted(key)])
                    continue
                self.triples.append(None)
                rows = key if isinstance(key, OrderedRows) else sorted(key)  # (ORDER BY: in order)
                self.values.append([] if example[key][3] else [list(s) for s in rows])
        self.value_of.extend(map(self.slots.__getitem__, keys))

    def flush(self):
        """The gathered rows as a record batch; the gathering starts again."""
        import pyarrow as pa

        if self.lines:
            batch = pa.RecordBatch.from_arrays([pa.array(self.texts, pa.string())], ["value"])
        else:
            schema = arrow_match_schema()
            batch = pa.RecordBatch.from_arrays([
                pa.array(self.publications, pa.string()).take(pa.array(self.publication_of, pa.int32())),
                pa.array(self.queries, pa.string()),
                pa.array(self.subscribers, pa.string()),
                pa.array(self.values, schema.field("bindings").type).take(pa.array(self.value_of, pa.int32())),
                pa.array(self.triples, schema.field("triples").type).take(pa.array(self.value_of, pa.int32())),
            ], schema=schema)
        self._start()
        return batch
