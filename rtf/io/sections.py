"""The container of a saved index (format 4): a table of named numpy arrays, mapped back.

docs/index-format.md gives the layout byte by byte. In short: a 128-byte
header (magic ``RTFINDEX``, version, number of sections, file length,
SHA-256 of everything after the header, and a signature), a table of
sections of 64 bytes each (name, numpy dtype, offset, rows, columns), then
the sections themselves, each starting on a 64-byte boundary so that
``np.frombuffer`` over the file's bytes (or over a memory map of the file)
gives each array in place, with no copy and no parsing.

Reading checks what a reader could trip on before anything is used: the
magic, the version, the header's length against the bytes there are, the
SHA-256, and for every section a known dtype, a 64-byte aligned offset
after the previous section's end, and an end inside the file. A damaged,
truncated or foreign file is an `IndexFileError`, never an exception of
numpy's.

The signature is what lets a loader trust the arrays derived from the
queries (the query table, shapes, pivots: `rtf.matching.table_snapshot`)
instead of deriving them again: HMAC-SHA256, under a key of this
installation (`installation_key`), of the header's first 56 bytes, which
hold the SHA-256 of the rest. Anyone can write a file with a valid SHA-256;
only a holder of the key a valid signature. A file without one (another
machine's, a hand-made one, `rtf index build`'s streamed file) is loaded the
checked way: every model decoded, checked and registered again.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import struct
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rtf.errors import IndexFileError

MAGIC = b"RTFINDEX"
#: magic and version: the start of every version's header.
PREAMBLE = struct.Struct("<8sI")
#: magic, version, number of sections, file length, SHA-256 of bytes [128, length), signature.
HEADER = struct.Struct("<8sIIQ32s32s")
HEADER_SIZE = 128
#: The bytes the signature covers: the header up to the signature.
SIGNED = 56
#: name, dtype, offset, rows, columns (1 for a one-dimensional array), dimensions (1 or 2).
ENTRY = struct.Struct("<24s8sQQQQ")
ALIGN = 64
#: The dtypes a section may have (what this writer writes).
DTYPES = {"|u1": np.uint8, "|b1": np.bool_, "<i4": np.int32, "<i8": np.int64}
MAX_SECTIONS = 256
#: Environment variables naming the installation key, or the file that holds it.
KEY_VARIABLE = "RTF_INDEX_KEY"
KEY_FILE_VARIABLE = "RTF_INDEX_KEY_FILE"


def key_path() -> Path:
    """Where the installation key is kept: ``$RTF_INDEX_KEY_FILE``, else
    ``$XDG_CONFIG_HOME/rtf/index.key`` (``~/.config/rtf/index.key``)."""
    named = os.environ.get(KEY_FILE_VARIABLE)
    if named:
        return Path(named)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "rtf" / "index.key"


def installation_key(create: bool = False) -> bytes | None:
    """The key this installation signs its index files with (`create`: made, 32 random
    bytes in a file only its owner reads, if there is none yet); None when there is none
    and it cannot be made (a read-only home: the files are then written unsigned)."""
    named = os.environ.get(KEY_VARIABLE)
    if named:
        return named.encode("utf-8")
    path = key_path()
    try:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    except OSError:
        pass
    if not create:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole under a name of its own, then linked to its place: a process that
        # reads the key never sees it half-written, and of two processes making one at
        # the same time, the first link wins and both use its key.
        fd, made = tempfile.mkstemp(dir=path.parent, prefix=".index.key.")  # (mode 0600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
            os.link(made, path)
        finally:
            os.unlink(made)
        return path.read_bytes()
    except FileExistsError:  # made by another process meanwhile
        return installation_key(False)
    except OSError:
        return None


def _signature(key: bytes | None, signed: bytes) -> bytes:
    return hmac.new(key, signed, hashlib.sha256).digest() if key else bytes(32)


def pack(version: int, sections: Mapping[str, np.ndarray], sign: bool = True) -> bytes:
    """The file of `sections` (name -> a 1-D or 2-D array of one of `DTYPES`), in order."""
    return b"".join(packed(version, sections, sign))


def packed(version: int, sections: Mapping[str, np.ndarray], sign: bool = True) -> list:
    """`pack`'s file as its parts one after the other (bytes and the arrays' own memory, not
    copied: a build writes them to its file as they are)."""
    table, parts, at = [], [], HEADER_SIZE + ALIGN * ((ENTRY.size * len(sections) + ALIGN - 1) // ALIGN)
    for name, array in sections.items():
        array = np.ascontiguousarray(array)
        dtype = array.dtype.str
        if dtype not in DTYPES or array.ndim not in (1, 2):
            raise ValueError(f"section {name}: a {array.ndim}-D array of {dtype} cannot be saved")
        raw = memoryview(array.reshape(-1).view(np.uint8)) if array.size else b""
        table.append(ENTRY.pack(name.encode("ascii"), dtype.encode("ascii"), at, array.shape[0],
                                array.shape[1] if array.ndim == 2 else 1, array.ndim))
        pad = -len(raw) % ALIGN
        parts += [raw, bytes(pad)]
        at += len(raw) + pad
    head = b"".join(table)
    head += bytes(-len(head) % ALIGN)
    digest = hashlib.sha256(head)
    for part in parts:
        digest.update(part)
    front = struct.pack("<8sIIQ32s", MAGIC, version, len(sections), at, digest.digest())
    key = installation_key(create=True) if sign else None
    return [(front + _signature(key, front)).ljust(HEADER_SIZE, b"\0"), head, *parts]


#: A file at least this long has its SHA-256 checked in a thread of its own when the
#: caller asks for it (`unpack`'s `overlap`).
OVERLAP_BYTES = 1 << 22


class _Checksum(threading.Thread):
    """The SHA-256 of `view` computed in a thread: hashlib lets go of the GIL while it
    hashes, so on a second core it costs a load no time (1M queries: ~0.25 s of 2.7 s)."""

    def __init__(self, view: memoryview):
        super().__init__(name="rtf-index-checksum", daemon=True)
        self.view, self.digest = view, b""

    def run(self) -> None:
        self.digest = hashlib.sha256(self.view).digest()
        self.view = None


@dataclass
class Sections:
    """A file's arrays by name (views of its bytes) and whether this installation signed it.

    With `unpack`'s `overlap`, the file's checksum may still be being computed: `verify`
    waits for it and raises the checksum's `IndexFileError` if it is wrong; the reader
    calls it before it hands anything made from the file back, and before it reports any
    other problem with the file (a corrupt file is reported as corrupt)."""

    arrays: dict[str, np.ndarray]
    signed: bool
    checksum: _Checksum | None = None
    expected: bytes = b""
    source: str = "<bytes>"

    def verify(self) -> None:
        """Wait for the checksum being computed, if any; IndexFileError if it is wrong."""
        pending = self.checksum
        if pending is not None:
            pending.join()
            if pending.digest != self.expected:
                raise IndexFileError(f"{self.source}: the index is corrupt (checksum mismatch)")
            self.checksum = None

    @contextmanager
    def verified(self) -> Iterator[None]:
        """`verify` when the block ends, however it ends: a problem the block raises is
        reported as the checksum's if the checksum is wrong (a corrupt file, not a malformed one)."""
        try:
            yield
        except BaseException:
            self.verify()
            raise
        self.verify()


def unpack(data, version: int, source: str = "<bytes>", overlap: bool = False) -> Sections:
    """The sections of the file bytes `data` (bytes, a memory map...), after every check of
    the module doc (`IndexFileError`); a file of another version is refused, naming both.

    `overlap`: a large file's SHA-256 is computed in a thread while the caller goes on,
    and checked by `Sections.verify`, which the caller must call before it uses what it
    made of the sections (they are checked for bounds here all the same: reading them
    before the checksum is known is safe, as reading a hostile file with a valid checksum is).
    """
    view = memoryview(data)
    if len(view) < PREAMBLE.size or bytes(view[:8]) != MAGIC:
        raise IndexFileError(f"{source}: not an rtf index file (no {MAGIC.decode()} header)")
    _, found = PREAMBLE.unpack_from(view)
    if found != version:
        raise IndexFileError(f"{source}: index format version {found}, but this rtf reads "
                             f"version {version}; rebuild it with `rtf index build`")
    if len(view) < HEADER_SIZE:
        raise IndexFileError(f"{source}: the index is truncated (its header is cut short)")
    _, _, count, length, digest, signature = HEADER.unpack_from(view)
    if length != len(view):
        raise IndexFileError(f"{source}: the index is truncated or has trailing bytes "
                             f"({len(view)} bytes, the header says {length})")
    checksum = None
    if overlap and length >= OVERLAP_BYTES:
        checksum = _Checksum(view[HEADER_SIZE:])
        checksum.start()
    elif hashlib.sha256(view[HEADER_SIZE:]).digest() != digest:
        raise IndexFileError(f"{source}: the index is corrupt (checksum mismatch)")
    found = Sections({}, False, checksum, digest, source)
    try:
        _read_table(view, data, found, count, length, signature, source)
    except IndexFileError:
        found.verify()  # (a corrupt file is reported as corrupt)
        raise
    return found


def _read_table(view: memoryview, data, found: Sections, count: int, length: int, signature: bytes,
                source: str) -> None:
    """`unpack`'s checks of the table of sections, and the arrays, into `found`."""
    if count > MAX_SECTIONS or HEADER_SIZE + count * ENTRY.size > length:
        raise IndexFileError(f"{source}: the index's table of sections is malformed")
    key = installation_key() if any(signature) else None
    found.signed = key is not None and hmac.compare_digest(_signature(key, bytes(view[:SIGNED])), signature)
    arrays = found.arrays
    end = HEADER_SIZE + count * ENTRY.size
    for k in range(count):
        raw_name, raw_dtype, offset, rows, columns, ndim = ENTRY.unpack_from(view, HEADER_SIZE + k * ENTRY.size)
        try:
            name, dtype = raw_name.rstrip(b"\0").decode("ascii"), raw_dtype.rstrip(b"\0").decode("ascii")
        except UnicodeDecodeError:
            name = dtype = ""
        kind = DTYPES.get(dtype)
        items = rows * columns
        size = items * np.dtype(kind).itemsize if kind is not None else 0
        if (kind is None or not name.isidentifier() or name in arrays or offset % ALIGN or offset < end
                or rows >= 1 << 40 or columns >= 1 << 20 or ndim not in (1, 2) or (ndim == 1 and columns != 1)
                or offset + size > length):
            raise IndexFileError(f"{source}: the index's section {k} ({name or '?'}) is malformed")
        array = np.frombuffer(data, dtype=kind, count=items, offset=offset)
        arrays[name] = array.reshape(rows, columns) if ndim == 2 else array
        end = offset + size


def offsets(counts) -> np.ndarray:
    """The offsets (int64, from 0) of consecutive runs of `counts` items: run k is
    ``[offsets[k], offsets[k + 1])``."""
    found = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=found[1:])
    return found


def ascending(found: np.ndarray, end: int) -> bool:
    """Whether `found` are offsets as `offsets` makes them, of runs that end at `end`."""
    return (len(found) > 0 and found[0] == 0 and found[-1] == end
            and bool((np.diff(found) >= 0).all()))


def within(values: np.ndarray, end: int, start: int = 0) -> bool:
    """Whether every one of `values` (ids read from a file) is in [start, end)."""
    return not values.size or (int(values.min()) >= start and int(values.max()) < end)


def strings(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, UTF-8 bytes) of `values`: value k is ``bytes[offsets[k]:offsets[k + 1]]``."""
    encoded = [v.encode("utf-8") for v in values]
    return offsets([len(e) for e in encoded]), np.frombuffer(b"".join(encoded), dtype=np.uint8)


_NEWLINE = ord("\n")


def read_strings(offsets: np.ndarray, data: np.ndarray, what: str) -> list[str]:
    """The strings `strings` made (`ValueError` naming `what` if the offsets are not
    ascending from 0 to the data's end, or a string is not UTF-8)."""
    if not ascending(offsets, len(data)):
        raise ValueError(f"the offsets of {what} are not ascending within its bytes")
    if len(offsets) > 2 and data.dtype == np.uint8 and not (data == _NEWLINE).any():
        # One string split at newlines put between them: ~2x faster than slicing 10M strings
        # (a string cut inside a character holds a newline there, and so does not decode).
        joined = np.empty(len(data) + len(offsets) - 2, dtype=np.uint8)
        between = offsets[1:-1] + np.arange(len(offsets) - 2)  # (np.insert: ~8x slower)
        kept = np.ones(len(joined), dtype=bool)
        kept[between] = False
        joined[between], joined[kept] = _NEWLINE, data
        found = joined.tobytes().decode("utf-8").split("\n")
        if len(found) == len(offsets) - 1:
            return found
    raw = data.tobytes()
    text = raw.decode("utf-8")
    bounds = offsets.tolist()
    if len(text) == len(raw):  # ASCII: the byte offsets are character offsets
        return [text[a:b] for a, b in zip(bounds, bounds[1:])]
    return [raw[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:])]


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices ``starts[k], starts[k] + 1, ... starts[k] + counts[k] - 1`` for every k, in order."""
    ends = np.cumsum(counts)
    return np.repeat(starts - (ends - counts), counts) + np.arange(int(ends[-1]) if len(ends) else 0)
