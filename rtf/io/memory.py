"""RDF held in memory as a source of publications: bytes, a string of RDF, an open stream.

`read_publications` reads files by path; given one of these instead, it
reads it as it reads stdin (`rtf.io.sources.open_binary`): N-Triples unless
``format=`` says otherwise, gzip or bzip2 recognised by their first bytes.

A ``str`` is a path, as for `open`, unless it is plainly RDF text: it holds a
line break, or starts (after spaces) with ``<``, ``_:``, ``@prefix``,
``@base``, ``PREFIX`` or ``BASE`` -- and names no existing file.

>>> source = in_memory('<http://ex/a> <http://ex/p> "x" .')
>>> source.label, source.stream.read()
('<string>', b'<http://ex/a> <http://ex/p> "x" .')
>>> in_memory("data/dump.nt") is None
True
"""

from __future__ import annotations

import io
import os
import re
from typing import IO, Any, NamedTuple

# The first token of an RDF document, never the start of a file name in practice.
_RDF_START = re.compile(r"\s*(?:<|_:|@prefix\b|@base\b|prefix\s|base\s)", re.IGNORECASE)


class MemorySource(NamedTuple):
    """RDF bytes to read, and the name errors give them (``<bytes>``, ``<string>``, a stream's name)."""

    stream: IO[bytes]
    label: str


def is_rdf_text(value: str) -> bool:
    """Whether the str `value` is RDF text rather than a path (see the module's rule)."""
    return bool("\n" in value or "\r" in value or _RDF_START.match(value)) and not os.path.exists(value)


def in_memory(value: Any) -> MemorySource | None:
    """`value` as a binary stream of RDF if it is held in memory (bytes, RDF text, an
    open binary or text stream), else None (a path)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return MemorySource(io.BytesIO(bytes(value)), "<bytes>")
    if isinstance(value, str):
        return MemorySource(io.BytesIO(value.encode("utf-8")), "<string>") if is_rdf_text(value) else None
    if hasattr(value, "read"):
        label = f"<{getattr(value, 'name', None) or type(value).__name__}>"
        if isinstance(value, io.TextIOBase) or isinstance(value.read(0), str):
            return MemorySource(io.BufferedReader(_EncodedText(value)), label)
        return MemorySource(value, label)
    return None


class _EncodedText(io.RawIOBase):
    """A text stream read as UTF-8 bytes, a block at a time."""

    def __init__(self, text: IO[str]):
        self._text = text
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            chunk = self._text.read(1 << 16)
            if not chunk:
                return 0
            self._pending = chunk.encode("utf-8")
        n = min(len(buffer), len(self._pending))
        buffer[:n], self._pending = self._pending[:n], self._pending[n:]
        return n
