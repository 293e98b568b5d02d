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

import numpy as np

from rtf.io import sections
from rtf.io.metadata import frozen

PREFIX = "q_"


def query_sections(records: list[tuple]) -> dict[str, np.ndarray]:
    """The sections of `records`, ``(id, subscriber, is_ask, metadata, text or None)`` in
    registration order."""
    names: dict[str, int] = {}
    codes = [-1 if r[1] is None else names.setdefault(r[1], len(names)) for r in records]
    out = {}
    out["id_offsets"], out["ids"] = sections.strings([r[0] for r in records])
    out["subscriber_offsets"], out["subscribers"] = sections.strings(list(names))
    out["subscriber"] = np.array(codes, dtype=np.int32)
    out["ask"] = np.array([bool(r[2]) for r in records], dtype=bool)
    out["metadata_offsets"], out["metadata"] = sections.strings(
        [json.dumps(r[3], ensure_ascii=False, separators=(",", ":")) if r[3] else "" for r in records])
    text_offsets, texts = sections.strings([r[4] or "" for r in records])
    out["text_offsets"], out["has_text"] = text_offsets, np.array([r[4] is not None for r in records], dtype=bool)
    out["texts"] = np.frombuffer(zlib.compress(texts.tobytes(), 1), dtype=np.uint8)
    return {PREFIX + name: array for name, array in out.items()}


def read_texts(arrays: dict[str, np.ndarray]) -> list[str | None]:
    """The queries' texts `query_sections` wrote (ValueError if malformed)."""
    offsets, has_text = arrays[PREFIX + "text_offsets"], arrays[PREFIX + "has_text"]
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(arrays[PREFIX + "texts"].tobytes(), int(offsets[-1]) if len(offsets) else 0)
    except zlib.error as e:
        raise ValueError(f"the saved query texts cannot be decoded: {e}") from None
    if not inflate.eof or inflate.unused_data or len(has_text) != len(offsets) - 1:
        raise ValueError("the saved query texts are not one per query")
    texts = sections.read_strings(offsets, np.frombuffer(raw, dtype=np.uint8), "the query texts")
    return [text if held else None for text, held in zip(texts, has_text.tolist())]


@dataclass
class QueryColumns:
    ids: list[str]
    subscribers: list[str | None]
    asks: np.ndarray
    metadata: dict[int, object]  # query number -> its metadata (`rtf.io.metadata.frozen`), when it has some


def read_query_sections(arrays: dict[str, np.ndarray]) -> QueryColumns:
    """The columns `query_sections` wrote (ValueError, KeyError or TypeError if malformed)."""
    a = {name[len(PREFIX):]: array for name, array in arrays.items() if name.startswith(PREFIX)}
    ids = sections.read_strings(a["id_offsets"], a["ids"], "the query ids")
    names = sections.read_strings(a["subscriber_offsets"], a["subscribers"], "the subscribers")
    codes, asks = a["subscriber"], a["ask"]
    if len(codes) != len(ids) or len(asks) != len(ids) or (
            len(codes) and not -1 <= int(codes.min()) <= int(codes.max()) < len(names)):
        raise ValueError("the saved subscribers are not one per query")
    if not all(ids) or len(set(ids)) != len(ids):
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
    subscribers = np.array([None, *names], dtype=object)[codes.astype(np.int64) + 1].tolist() if len(ids) else []
    return QueryColumns(ids, subscribers, asks.astype(bool), metadata)
