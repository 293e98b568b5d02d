"""The queries log: an append-only, numbered list of register and unregister operations.

A running stream (``rtf spark stream --queries-log DIR``) follows it: each
micro-batch is pinned to the number of operations the log held when the
batch began, and matches with the index plus exactly those operations, so
that a query registered at operation n matches the publications of every
batch pinned at n or later, and a replayed batch gives the same answers.

Layout of the folder (JSON Lines, readable with any tool)::

    DIR/log.json                         {"log": "<uuid>", "format": 1}
    DIR/00000000000000000001.jsonl       operations 1, 2, ... (one append)
    DIR/00000000000000000004.jsonl       operations 4, ... (the next append)

A segment is named by the number of its first operation and holds one
operation a line, numbered from there (``"n"``)::

    {"n": 4, "op": "register", "id": "q9", "query": "SELECT ...", "subscriber": "ann", "time": "..."}
    {"n": 5, "op": "unregister", "id": "q2", "time": "..."}

Segments are never changed once they exist. An append writes its segment
beside the log under a hidden name, flushes it to disk, then links it to
its final name, which fails if another append took that name first (the
append then tries the next one): the operations never change number, and a
reader sees a segment whole or not at all. Appends on one machine also
take a lock on ``DIR/.lock``.

An append is checked before it is written: the operation's shape, the
query (parsed and indexed by a scratch engine, as `Engine.register` would),
and the ids against the log's own history (a register of an id the log
holds registered, an unregister of one it removed). An id of the stream's
starting index is not known here: a register that clashes with one, or an
unregister of an id nobody has, is skipped by every worker alike (it fails
the same way everywhere) and reported in the batch's metrics.

>>> import tempfile
>>> log = QueriesLog(tempfile.mkdtemp(), create=True)
>>> log.register('SELECT ?s WHERE { ?s ?p ?o }', "q1"), log.unregister("q1"), log.size()
(1, 2, 2)
>>> [(n, op["op"]) for n, op in log.read(after=1)]
[(2, 'unregister')]
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path

from rtf.errors import RtfError
from rtf.spark.durable import FileLock, publish_new

FORMAT = 1
_SEGMENT = re.compile(r"^(\d{20})\.jsonl$")
KINDS = ("register", "unregister")


class QueriesLogError(RtfError):
    """A queries log that cannot be read or appended to, or an operation it refuses (one line)."""


class QueriesLog:
    """The queries log in folder `path` (`create`: make the folder and its log.json if missing)."""

    def __init__(self, path: str | os.PathLike, create: bool = False):
        self.path = Path(path)
        self._segments: dict[str, list[dict]] = {}  # file name -> its operations (immutable)
        marker = self.path / "log.json"
        if create and not marker.exists():
            self.path.mkdir(parents=True, exist_ok=True)
            _publish(self.path, "log.json", json.dumps({"log": uuid.uuid4().hex, "format": FORMAT}) + "\n")
        try:
            head = json.loads(marker.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise QueriesLogError(f"{self.path}: not a queries log (no log.json); create it with "
                                  "`rtf spark queries-log DIR register ...`") from None
        except (OSError, ValueError) as e:
            raise QueriesLogError(f"{marker}: cannot be read: {e}") from None
        if not isinstance(head, dict) or head.get("format") != FORMAT or not head.get("log"):
            raise QueriesLogError(f"{marker}: not a queries log of format {FORMAT}")
        self.id: str = head["log"]

    # ---------------------------------------------------------------- reading

    def _names(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.path) if _SEGMENT.match(n))
        except OSError as e:
            raise QueriesLogError(f"{self.path}: cannot list the queries log: {e.strerror}") from None

    def _segment(self, name: str) -> list[dict]:
        ops = self._segments.get(name)
        if ops is None:
            first = int(name[:20])
            try:
                text = (self.path / name).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise QueriesLogError(f"{self.path / name}: cannot be read: {e}") from None
            ops = [_read_line(line, first + i, f"{self.path / name}:{i + 1}")
                   for i, line in enumerate(text.splitlines())]
            self._segments[name] = ops
        return ops

    def _layout(self) -> list[tuple[int, str]]:
        """(first operation, name) of every segment, checked to follow one another."""
        out, expected = [], 1
        for name in self._names():
            first = int(name[:20])
            if first != expected:
                raise QueriesLogError(f"{self.path / name}: starts at operation {first}, but the "
                                      f"segments before it end at {expected - 1} (a segment was "
                                      "removed or renamed: the log is append-only)")
            out.append((first, name))
            expected = first + len(self._segment(name))
        return out

    def size(self) -> int:
        """The number of operations in the log (the number of the last one)."""
        layout = self._layout()
        if not layout:
            return 0
        first, name = layout[-1]
        return first + len(self._segment(name)) - 1

    def read(self, after: int = 0, upto: int | None = None) -> list[tuple[int, dict]]:
        """The operations numbered ``after < n <= upto`` (all after `after` if None), in order."""
        out = []
        for first, name in self._layout():
            ops = self._segment(name)
            if first + len(ops) - 1 <= after or (upto is not None and first > upto):
                continue
            out += [(first + i, op) for i, op in enumerate(ops)
                    if first + i > after and (upto is None or first + i <= upto)]
        if upto is not None and (out[-1][0] if out else after) < upto:
            raise QueriesLogError(f"{self.path}: operation {upto} is not in the log "
                                  f"(it holds {self.size()}): was the log replaced?")
        return out

    def registered(self, upto: int | None = None) -> dict[str, int]:
        """The ids the log's operations leave registered, with the operation that registered each."""
        ids: dict[str, int] = {}
        for n, op in self.read(upto=upto):
            if op.get("op") == "register":
                ids.setdefault(op["id"], n)
            elif op.get("op") == "unregister":
                ids.pop(op.get("id"), None)
        return ids

    # -------------------------------------------------------------- appending

    def register(self, query: str, query_id: str, subscriber: str | None = None,
                 metadata: Mapping | None = None) -> int:
        """Append the registration of `query` as `query_id`; return its operation number."""
        op = {"op": "register", "id": query_id, "query": query, "subscriber": subscriber}
        if metadata:
            op["metadata"] = dict(metadata)
        return self.append([op])[0]

    def unregister(self, query_id: str) -> int:
        """Append the removal of `query_id`; return its operation number."""
        return self.append([{"op": "unregister", "id": query_id}])[0]

    def append(self, operations: Iterable[Mapping]) -> tuple[int, int]:
        """Append `operations` together (all or none); return the first and last numbers.

        Each is checked first (`QueriesLogError` naming the bad one; nothing
        is written then)."""
        ops = [check_operation(op, i) for i, op in enumerate(operations, 1)]
        if not ops:
            raise QueriesLogError("nothing to append")
        with FileLock(self.path / ".lock"):
            while True:
                size = self.size()
                _check_ids(ops, self.registered(), size)
                stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
                text = "".join(json.dumps({"n": size + i, **op, "time": stamp}, ensure_ascii=False) + "\n"
                               for i, op in enumerate(ops, 1))
                if _publish(self.path, f"{size + 1:020d}.jsonl", text):
                    return size + 1, size + len(ops)
                # Another machine appended first: number after it.


def check_operation(op: Mapping, position: int = 1) -> dict:
    """`op` as it is logged (register: id, query, subscriber, metadata; unregister: id),
    or `QueriesLogError` saying what is wrong with it."""
    where = f"operation {position}"
    if not isinstance(op, Mapping):
        raise QueriesLogError(f"{where}: expected an object, not {type(op).__name__}")
    kind = op.get("op")
    if kind not in KINDS:
        raise QueriesLogError(f'{where}: "op" must be "register" or "unregister", not {kind!r}')
    query_id = op.get("id")
    if not isinstance(query_id, str) or not query_id:
        raise QueriesLogError(f'{where}: "id" must be a non-empty string')
    if kind == "unregister":
        return {"op": kind, "id": query_id}
    query, subscriber, metadata = op.get("query"), op.get("subscriber"), op.get("metadata")
    if not isinstance(query, str):
        raise QueriesLogError(f'{where}: "query" must be the query text')
    if subscriber is not None and not isinstance(subscriber, str):
        raise QueriesLogError(f'{where}: "subscriber" must be a string or null')
    if metadata is not None and not isinstance(metadata, Mapping):
        raise QueriesLogError(f'{where}: "metadata" must be an object')
    from rtf.engine import Engine
    from rtf.errors import QueryError

    try:
        Engine().register(query, query_id)  # parsed, checked and indexed as a worker will
    except QueryError as e:
        raise QueriesLogError(f"{where}: query {query_id!r}: {e}") from None
    out = {"op": kind, "id": query_id, "query": query, "subscriber": subscriber}
    if metadata:
        out["metadata"] = dict(metadata)
    return out


def _check_ids(ops: list[dict], registered: dict[str, int], size: int) -> None:
    registered = dict(registered)
    for i, op in enumerate(ops, 1):
        if op["op"] == "register":
            if op["id"] in registered:
                where = (f"operation {registered[op['id']]}" if registered[op["id"]] <= size
                         else "this append")
                raise QueriesLogError(f"operation {i}: query {op['id']!r} is already registered "
                                      f"({where}); unregister it first")
            registered[op["id"]] = size + i
        else:
            registered.pop(op["id"], None)


def _read_line(line: str, n: int, where: str) -> dict:
    """A logged operation; a line that is not one becomes an operation every worker skips."""
    try:
        op = json.loads(line)
        if not isinstance(op, dict) or op.get("n") != n:
            raise ValueError(f"expected the object of operation {n}")
        return check_shape(op)
    except (ValueError, QueriesLogError) as e:
        return {"op": "invalid", "reason": f"{where}: {e}"}


def check_shape(op: dict) -> dict:
    """The fields of logged operation `op` that workers apply (no query parsing here)."""
    kind, query_id = op.get("op"), op.get("id")
    if kind not in KINDS or not isinstance(query_id, str) or not query_id:
        raise QueriesLogError(f"not an operation: {json.dumps(op)[:200]}")
    if kind == "unregister":
        return {"op": kind, "id": query_id}
    if not isinstance(op.get("query"), str):
        raise QueriesLogError(f"register {query_id!r} without query text")
    out = {"op": kind, "id": query_id, "query": op["query"], "subscriber": op.get("subscriber")}
    if op.get("metadata"):
        out["metadata"] = op["metadata"]
    return out


def apply_operation(engine, op: dict) -> str | None:
    """Apply logged operation `op` to `engine`; None, or why it was not applied (the
    engine is then unchanged: `Engine.register` is atomic)."""
    from rtf.errors import QueryError

    kind = op.get("op")
    try:
        if kind == "register":
            engine.register(op["query"], op["id"], op.get("subscriber"), op.get("metadata") or None)
        elif kind == "unregister":
            engine.unregister(op["id"])
        else:
            return op.get("reason", f"not an operation: {kind!r}")
    except KeyError:
        return f"unregister {op['id']!r}: no such query"
    except (QueryError, ValueError, TypeError) as e:
        return f"{kind} {op.get('id')!r}: {e}"
    return None


# ------------------------------------------------------------------ files


def _publish(folder: Path, name: str, text: str) -> bool:
    try:
        return publish_new(folder, name, text)
    except OSError as e:
        raise QueriesLogError(f"{folder}: cannot append to the queries log: {e.strerror or e}") from None
