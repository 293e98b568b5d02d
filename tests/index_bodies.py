"""Index file bodies taken apart and put together again, for the tests of hostile files.

`body(data)` reads a saved index's body (format 3: JSON lines) into one
dict -- the head line's fields, ``values`` (every value line's entries) and
``queries`` -- which a test damages; `with_body(content)` writes such a dict
back as a body of lines (the head, one line of values, one of queries) in a
file with a correct checksum, so that the damage reaches the decoder.
"""

from __future__ import annotations

import hashlib
import json
import zlib

from rtf.io import store


def body(data: bytes) -> dict:
    lines = [json.loads(line) for line in zlib.decompress(data[store.HEADER.size:]).split(b"\n") if line]
    content = dict(lines[0])
    content["values"] = [entry for line in lines[1:] for entry in line.get("values", ())]
    content["queries"] = [entry for line in lines[1:] for entry in line.get("queries", ())]
    return content


def raw_body(content) -> bytes:
    if not isinstance(content, dict):
        return json.dumps(content).encode() + b"\n"
    head = {k: v for k, v in content.items() if k not in ("values", "queries")}
    lines = [head] + [{k: content[k]} for k in ("values", "queries") if k in content]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def wrap(packed: bytes, raw_length: int, version: int = store.FORMAT_VERSION) -> bytes:
    """A file around a stored body, with a correct checksum."""
    return store.HEADER.pack(store.MAGIC, version, store.FLAG_ZLIB, len(packed), raw_length,
                             hashlib.sha256(packed).digest()) + packed


def with_raw(raw: bytes, version: int = store.FORMAT_VERSION) -> bytes:
    return wrap(zlib.compress(raw), len(raw), version)


def with_body(content, version: int = store.FORMAT_VERSION) -> bytes:
    return with_raw(raw_body(content), version)
