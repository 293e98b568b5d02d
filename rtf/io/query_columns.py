"""The registered queries' ids, subscribers, ASK flags and metadata as sections of a saved index.

What a loaded engine needs of every query before any model is decoded: its
id (`Engine.__contains__`, the matches' ids), its subscriber (the matches'),
whether it is an ASK query (the match records'), and its metadata
(`Engine.get`). Ids are UTF-8 strings with offsets (`rtf.io.sections.strings`);
subscribers, which repeat, are numbered (``-1``: none) and stored once each;
metadata is a JSON object per query, empty for none. The queries' texts (what
`rtf serve` compares its snapshot with) are compressed (zlib), and read only
when asked for (`read_texts`).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from itertools import islice

import numpy as np

from rtf.io import sections
from rtf.io.metadata import frozen

PREFIX = "q_"


def query_sections(records: list[tuple]) -> dict[str, np.ndarray]:
    """The sections of `records`, ``(id, subscriber, is_ask, metadata, text or None)`` in
    registration order."""
    writer = QueryColumnsWriter()
    writer.add(records)
    return writer.sections()


class QueryColumnsWriter:
    """`query_sections` a batch of records at a time (`add`), for a build that hands its
    queries over a chunk at a time (`rtf.io.builder`): each batch's columns made, its
    texts compressed onward in one stream."""

    def __init__(self):
        self.names: dict[str, int] = {}
        self.parts: dict[str, list] = {name: [] for name in ("ids", "id_lengths", "subscriber", "ask",
                                                             "metadata", "metadata_lengths", "has_text",
                                                             "text_lengths", "texts")}
        self._deflate = zlib.compressobj(1)

    def add(self, records: list[tuple]) -> None:
        names, parts = self.names, self.parts
        for name, values in (("id", [r[0] for r in records]), ("metadata", [
                json.dumps(r[3], ensure_ascii=False, separators=(",", ":")) if r[3] else "" for r in records])):
            offsets, data = sections.strings(values)
            parts[name + "_lengths"].append(np.diff(offsets))
            parts[name + "s" if name == "id" else name].append(data.tobytes())
        parts["subscriber"].append(np.array([-1 if r[1] is None else names.setdefault(r[1], len(names))
                                             for r in records], dtype=np.int32))
        parts["ask"].append(np.array([bool(r[2]) for r in records], dtype=bool))
        text_offsets, texts = sections.strings([r[4] or "" for r in records])
        parts["text_lengths"].append(np.diff(text_offsets))
        parts["has_text"].append(np.array([r[4] is not None for r in records], dtype=bool))
        parts["texts"].append(self._deflate.compress(texts.tobytes()))

    def sections(self) -> dict[str, np.ndarray]:
        """The sections of the records added (no more may be added after)."""
        p = self.parts
        lengths = {name: np.concatenate([np.zeros(0, dtype=np.int64), *p[name + "_lengths"]])
                   for name in ("id", "metadata", "text")}
        out = {}
        out["id_offsets"], out["ids"] = sections.offsets(lengths["id"]), _bytes(p["ids"])
        out["subscriber_offsets"], out["subscribers"] = sections.strings(list(self.names))
        out["subscriber"] = np.concatenate([np.zeros(0, dtype=np.int32), *p["subscriber"]])
        out["ask"] = np.concatenate([np.zeros(0, dtype=bool), *p["ask"]])
        out["metadata_offsets"], out["metadata"] = sections.offsets(lengths["metadata"]), _bytes(p["metadata"])
        out["text_offsets"] = sections.offsets(lengths["text"])
        out["has_text"] = np.concatenate([np.zeros(0, dtype=bool), *p["has_text"]])
        out["texts"] = _bytes(p["texts"] + [self._deflate.flush()])
        return {PREFIX + name: array for name, array in out.items()}


def _bytes(parts: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def inflated_texts(compressed, size: int) -> np.ndarray:
    """The texts' bytes of a `query_sections` ``texts`` section (`compressed`), which are
    `size` bytes (its ``text_offsets``' last): ValueError unless it is one whole zlib
    stream of exactly that many."""
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(compressed, size)
    except zlib.error as e:
        raise ValueError(f"the saved query texts cannot be decoded: {e}") from None
    if not inflate.eof or inflate.unused_data or len(raw) != size:
        raise ValueError("the saved query texts are not one per query")
    return np.frombuffer(raw, dtype=np.uint8)


def read_texts(arrays: dict[str, np.ndarray]) -> list[str | None]:
    """The queries' texts `query_sections` wrote (ValueError if malformed)."""
    offsets, has_text = arrays[PREFIX + "text_offsets"], arrays[PREFIX + "has_text"]
    raw = inflated_texts(arrays[PREFIX + "texts"].tobytes(), int(offsets[-1]) if len(offsets) else 0)
    if len(has_text) != len(offsets) - 1:
        raise ValueError("the saved query texts are not one per query")
    texts = sections.read_strings(offsets, raw, "the query texts")
    return [text if held else None for text, held in zip(texts, has_text.tolist())]


@dataclass
class QueryColumns:
    ids: list[str]
    subscribers: np.ndarray  # (objects: str, or None for none)
    asks: np.ndarray
    metadata: dict[int, object]  # query number -> its metadata (`rtf.io.metadata.frozen`), when it has some
    order: np.ndarray  # the query numbers in id order (the ids compared as `str`s)
    subscribed: np.ndarray  # (bool) the query has a subscriber


def read_query_sections(arrays: dict[str, np.ndarray]) -> QueryColumns:
    """The columns `query_sections` wrote (ValueError, KeyError or TypeError if malformed)."""
    a = {name[len(PREFIX):]: array for name, array in arrays.items() if name.startswith(PREFIX)}
    ids = sections.read_strings(a["id_offsets"], a["ids"], "the query ids")
    names = sections.read_strings(a["subscriber_offsets"], a["subscribers"], "the subscribers")
    codes, asks = a["subscriber"], a["ask"]
    if len(codes) != len(ids) or len(asks) != len(ids) or (
            len(codes) and not -1 <= int(codes.min()) <= int(codes.max()) < len(names)):
        raise ValueError("the saved subscribers are not one per query")
    order = sorted(range(len(ids)), key=ids.__getitem__)
    ascending = list(map(ids.__getitem__, order))
    # (distinct: no two neighbours equal in id order; ~3x cheaper than a set of 10M ids, and
    # the order is the ids' ranks a load makes anyway: `rtf.matching.id_order`)
    if not all(ids) or any(map(str.__eq__, ascending, islice(ascending, 1, None))):
        raise ValueError("the saved query ids are not distinct non-empty strings")
    offsets = a["metadata_offsets"]
    if len(offsets) != len(ids) + 1:
        raise ValueError("the saved metadata is not one per query")
    metadata = {}
    for k in np.flatnonzero(np.diff(offsets)).tolist():
        value = json.loads(a["metadata"][offsets[k]:offsets[k + 1]].tobytes())
        if type(value) is not dict:
            raise ValueError("a query's saved metadata is not an object")
        metadata[k] = frozen(value)
    subscribers = np.array([None, *names], dtype=object)[codes.astype(np.int64) + 1]
    return QueryColumns(ids, subscribers, asks.astype(bool), metadata, np.array(order, dtype=np.int64),
                        codes >= 0)
