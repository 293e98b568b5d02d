"""Query files: JSON Lines records or one ``.rq`` query, read with file:line errors, registered all-or-nothing.

A JSON line is ``{"id": "...", "query": "...", "subscriber": "..."}``; its
metadata is its ``"metadata"`` object, if it has one, and its other fields
(so the lines of ``GET /queries`` and of ``rtf match --with-metadata`` read
back with the same metadata, not nested in a second ``"metadata"``).
``rtf match``, ``rtf index``, the Spark replay and ``rtf check -f`` all read
queries here.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path

from rtf.errors import QueryError, RtfError
from rtf.io.parse_ahead import CHUNK, IN_FLIGHT
from rtf.io.progress import progress


#: A UTF-8 byte order mark, which some editors put at the start of a file: ignored.
BOM = "\ufeff"


def read_text(path: str | Path | None, what: str) -> str:
    """The UTF-8 text of file `path` (None: stdin), without a byte order mark at
    its start; an error names the line of a bad byte."""
    if path is None:
        data = sys.stdin.buffer.read()
        path = "<stdin>"
    else:
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise QueryFileError(f"cannot read {what} {path}: {e.strerror}") from None
    return decode_text(data, path)


def decode_text(data: bytes, path) -> str:
    """`data` as UTF-8 text without a byte order mark at its start; an error names
    the line of a bad byte (in `path`, a file or another source)."""
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise _not_utf8(path, line, column, data[e.start]) from None


def _not_utf8(path, line: int, column: int, byte: int) -> QueryFileError:
    return QueryFileError(f"{path}:{line}: not UTF-8 text (byte 0x{byte:02x} at column {column})")


class QueryFileError(RtfError):
    """A query file that cannot be read, or a bad record or query in it (named by file and line)."""


#: The fields of a JSON Lines query record that are not metadata.
RECORD_FIELDS = ("id", "query", "subscriber")


def unknown_field(name: str, fields: Iterable[str] = (*RECORD_FIELDS, "metadata")) -> str:
    """What to say of a field `name` that a strict reader (the HTTP API of ``rtf serve``)
    does not take: which it takes, the nearest one, and where fields of one's own go."""
    import difflib

    fields = list(fields)
    quoted = [json.dumps(f) for f in fields]  # as JSON writes them (ASCII: any name prints)
    near = difflib.get_close_matches(name, fields, n=1)
    guess = f" (did you mean {json.dumps(near[0])}?)" if near else ""
    return (f"unknown field {json.dumps(name)}{guess}: a query has "
            f"{', '.join(quoted[:-1])} and {quoted[-1]}; fields of your own go under "
            '"metadata"')


def load_queries(path: str | Path, problems: list[str] | None = None) -> list[dict]:
    """Query records {"id", "query", "subscriber", "metadata", "line"} from a JSON Lines or .rq file.

    A JSON line's metadata is its "metadata" object and its fields other than
    id, query and subscriber (a key in both is an error). A bad line raises `QueryFileError` naming the file and line;
    with a `problems` list it is reported there instead, and skipped.
    """
    return list(iter_queries(path, problems))


def iter_queries(path: str | Path, problems: list[str] | None = None) -> Iterator[dict]:
    """`load_queries`' records one at a time, the file read a line at a time: memory stays
    flat whatever the file's size (a million queries read whole took ~1 GB before one was
    registered). A byte that is not UTF-8 raises `QueryFileError` when its line is reached."""
    if str(path) == "-":  # stdin: JSON Lines (a .rq query is told by its file's name)
        yield from _records(_decoded_lines(sys.stdin.buffer, "<stdin>"), "<stdin>", problems)
        return
    path = Path(path)
    if path.suffix == ".rq":
        yield {"id": path.stem, "query": read_text(path, "queries file"), "subscriber": None,
               "metadata": {}, "line": 1, "whole_file": True}
        return
    try:
        file = open(path, "rb")
    except OSError as e:
        raise QueryFileError(f"cannot read queries file {path}: {e.strerror}") from None
    with file:
        yield from _records(_decoded_lines(file, path), path, problems)


def _decoded_lines(file, path) -> Iterator[str]:
    """The lines of binary `file` as text, a line at a time; the first without a byte order
    mark. A byte that is not UTF-8 raises `QueryFileError` naming its line and column."""
    for n, raw in enumerate(file, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _not_utf8(path, n, e.start + 1, raw[e.start]) from None
        yield line.removeprefix(BOM) if n == 1 else line


def query_records(text: str, source, problems: list[str] | None = None,
                  extra_fields: bool = True) -> list[dict]:
    """The query records of JSON Lines `text` (as `load_queries`; errors name `source`).
    Without `extra_fields`, a field other than id, query, subscriber and metadata is an
    error (`unknown_field`) instead of metadata."""
    return list(_records(text.split("\n"), source, problems, extra_fields))


def _records(lines: Iterable[str], source, problems: list[str] | None,
             extra_fields: bool = True) -> Iterator[dict]:
    """The query records of JSON Lines `lines` (numbered from 1; blank ones skipped)."""
    # JSON Lines end at "\n" (or "\r\n") only: U+2028 and the other ends that
    # str.splitlines knows may stand unescaped inside a JSON string.
    for n, line in enumerate(lines, 1):
        line = line.removesuffix("\n").removesuffix("\r")
        if not line.strip():
            continue
        try:
            yield _query_record(line, f"{source}:{n}", n, extra_fields)
        except QueryFileError as e:
            if problems is None:
                raise
            problems.append(str(e))


def _query_record(line: str, where: str, n: int, extra_fields: bool = True) -> dict:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise QueryFileError(f"{where}: not a JSON object ({e.msg})") from None
    except RecursionError:
        raise QueryFileError(f"{where}: JSON nested too deeply") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("query"), str):
        raise QueryFileError(f'{where}: expected {{"id": ..., "query": "..."}}')
    for name in RECORD_FIELDS:
        value = rec.get(name)
        if isinstance(value, str) and not is_unicode(value):
            raise QueryFileError(f'{where}: "{name}" is not valid Unicode '
                                 "(a lone surrogate \\ud800-\\udfff)")
    metadata = _metadata(rec, where, extra_fields)
    problem = json_problem(metadata)
    if problem:
        raise QueryFileError(f"{where}: metadata: {problem}")
    return {"id": str(rec["id"]) if rec.get("id") is not None else None,
            "query": rec["query"], "subscriber": rec.get("subscriber"), "line": n,
            "metadata": metadata}


def _metadata(rec: dict, where: str, extra_fields: bool = True) -> dict:
    """A record's metadata: its "metadata" object and its other extra fields (a key in both
    is an error; any extra field is one without `extra_fields`)."""
    extra = {k: v for k, v in rec.items() if k not in RECORD_FIELDS and k != "metadata"}
    if extra and not extra_fields:
        raise QueryFileError(f"{where}: {unknown_field(next(iter(extra)))}")
    nested = rec.get("metadata", {})
    if not isinstance(nested, dict):
        raise QueryFileError(f'{where}: "metadata" must be a JSON object, not {type(nested).__name__}')
    both = sorted(extra.keys() & nested.keys())
    if both:
        raise QueryFileError(f'{where}: {both[0]!r} is both a field and a key of "metadata": keep one')
    return {**extra, **nested}


def is_unicode(text: str) -> bool:
    """False for a string holding a lone surrogate (JSON allows "\\ud800"), which no file can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_problem(value) -> str | None:
    """Why decoded JSON `value` could not be written back as JSON to a UTF-8 file, or
    None: a key or string holding a lone surrogate, or a number that is not finite
    (Python's json reads NaN, Infinity and 1e400). Walked without recursion: it may
    nest deeply."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if not all(is_unicode(k) for k in item if isinstance(k, str)):
                return "a key holds a lone surrogate (\\ud800-\\udfff)"
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and not is_unicode(item):
            return "a string holds a lone surrogate (\\ud800-\\udfff)"
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{item} is not a JSON number (NaN and infinities are not JSON)"
    return None


def register_all(engine, records, source: str, problems: list[str] | None = None,
                 workers: int = 1, replace: bool = False) -> None:
    """Register every record, or none: the first bad query is an error naming it.

    With a `problems` list, a bad query or a duplicate id is reported there
    (file, line, id and reason) and skipped; the others are registered.
    The records go to the engine as one batch (`Engine.register_many`, which
    parses ahead in `workers` processes), read as they come (an iterator such
    as `iter_queries` is never held whole). With `replace`, a record whose id
    is registered replaces that query (a second record of one id is an error).
    """
    # The records read and not yet registered, by position: with workers, reading runs
    # ahead of registering by at most what the parsers hold (rtf.io.parse_ahead).
    recent: deque = deque(maxlen=workers * IN_FLIGHT * CHUNK + 1)

    def refused(position: int, _record: tuple, e: Exception) -> None:
        while recent[0][0] < position:  # (those before it were registered)
            recent.popleft()
        rec = recent[0][1]
        if isinstance(e, QueryError):
            if rec.get("whole_file") and e.line is not None:  # a .rq file: the query's position is the file's
                error = QueryFileError(f"{source}:{e.line}:{e.column}: query {rec['id']!r}: {e.message}")
            else:
                error = QueryFileError(f"{source}:{rec['line']}: query {rec['id']!r}: {e}")
        else:  # a duplicate id, a subscriber that is not a string
            error = QueryFileError(f"{source}:{rec['line']}: {e}")
        if problems is None:
            raise error from None
        problems.append(str(error))

    def batch() -> Iterator[tuple]:
        seen: dict[str, int] = {}
        for position, rec in enumerate(progress(records, "registering", unit="q")):
            if replace and rec["id"] is not None and seen.setdefault(rec["id"], rec["line"]) != rec["line"]:
                raise QueryFileError(f"{source}:{rec['line']}: query {rec['id']!r}: the id of line "
                                     f"{seen[rec['id']]} again: one record per id to replace")
            recent.append((position, rec))
            yield rec["query"], rec["id"], rec["subscriber"], rec.get("metadata")

    engine.register_many(batch(), refused, workers=workers, **({"replace": True} if replace else {}))


def report_skipped_queries(problems: list[str]) -> None:
    """Tell (a warning on the ``rtf.cli`` logger) each query that --skip-invalid left out, and why."""
    log = logging.getLogger("rtf.cli")
    for problem in problems:
        log.warning(f"rtf: skipped query: {problem}")
