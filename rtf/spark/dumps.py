"""Finding the dump files a Spark job reads: local folders or any Hadoop URI, by name and syntax."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from rtf.errors import RtfError

#: Line-based RDF that `parse_ntriples_lines` reads: N-Triples, and DBpedia's
#: ``.ttl`` dumps, which are N-Triples lines (full IRIs, one triple a line).
LINE_SYNTAXES = (".nt", ".ttl")
COMPRESSIONS = ("", ".gz", ".bz2")
DUMP_SUFFIXES = tuple(s + c for s in LINE_SYNTAXES for c in COMPRESSIONS)


class ReplayError(RtfError):
    """A problem with the job's arguments or inputs (one readable line)."""




#: A URI's scheme (RFC 3986, 3.1): a letter, then letters, digits, "+", "-", "." -- ``s3``, ``s3a``
#: have a digit (taken for local paths before, their data written into a folder ``./s3a:``).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+")


def has_scheme(path: str) -> bool:
    """True for ``hdfs://...``, ``s3://...``, ``s3a://...``; False for local paths and ``file:``."""
    head, sep, _ = path.partition("://")
    return bool(sep) and _SCHEME.fullmatch(head) is not None and head.lower() != "file"


def local_path(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def is_dump_file(name: str) -> bool:
    return name.lower().endswith(DUMP_SUFFIXES)


def dump_files(paths: Iterable[str], list_dir: Callable[[str], list[str]] | None = None,
               warn: Callable[[str], None] = lambda message: None) -> list[str]:
    """The dump files named by `paths`: files as given, directories as their dump files.

    A directory contributes its files ending in one of `DUMP_SUFFIXES`
    (sorted; other files are reported through `warn`); a file named
    explicitly must have one of those suffixes. Local paths are checked
    here; a URI with a scheme (``hdfs://``) is listed with `list_dir` (a
    Hadoop file system listing) when given, else passed on as it is.
    """
    out: list[str] = []
    for raw in paths:
        path = str(raw)
        if has_scheme(path):
            if list_dir is not None and not is_dump_file(path):
                names = list_dir(path)
                if names is not None:  # a directory
                    out += _pick(path, names, warn)
                    continue
            if not is_dump_file(path):
                raise ReplayError(f"{path}: not a dump file (expected one of {', '.join(DUMP_SUFFIXES)})")
            out.append(path)
            continue
        local = Path(local_path(path))
        if local.is_dir():
            names = sorted(p.name for p in local.iterdir() if p.is_file())
            out += [str(local / n) for n in _pick(str(local), names, warn, full=False)]
        elif local.is_file():
            if not is_dump_file(local.name):
                lower = local.name.lower()
                hint = (" (N-Quads: convert to N-Triples first)" if ".nq" in lower or ".tql" in lower
                        else "")
                raise ReplayError(f"{path}: not a line-based dump file{hint}; expected a name "
                                  f"ending in one of {', '.join(DUMP_SUFFIXES)}")
            out.append(str(local))
        else:
            raise ReplayError(f"{path}: no such file or directory")
    if not out:
        raise ReplayError("no dump files found in " + ", ".join(map(str, paths)))
    return out


def _pick(directory: str, names: list[str], warn, full: bool = True) -> list[str]:
    picked = [n for n in names if is_dump_file(n)]
    # Hidden and bookkeeping files (.crc, _SUCCESS) are skipped silently.
    skipped = [n for n in names if not is_dump_file(n) and not n.startswith((".", "_"))]
    if skipped:
        warn(f"{directory}: skipping {len(skipped)} file(s) that are not dumps: "
             + ", ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else ""))
    if not picked:
        raise ReplayError(f"{directory}: no dump files (*{', *'.join(DUMP_SUFFIXES)})")
    return [directory.rstrip("/") + "/" + n for n in picked] if full else picked


