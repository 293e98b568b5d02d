"""Loading `grammar/ftsparql.lark` into one LALR(1) parser per process, its tables kept on disk.

The grammar is the whole SPARQL 1.1 query language: building its LALR
tables takes Lark about 0.15 s, a tenth of a second more than loading them
(`Lark.save` / `Lark.load`). So a built parser is saved in a cache folder
and the next process loads it (`rtf check` in about half the time):

- the file's name is a digest of everything the tables depend on: the
  grammar's text, Lark's and Python's versions and the parser's options.
  A changed grammar or another Lark never loads old tables: it has another
  name (the 16 most recent files are kept, older ones removed);
- the folder is ``$RTF_CACHE_DIR``, else ``$XDG_CACHE_HOME/rtf``, else
  ``~/.cache/rtf`` (made private, mode 700, when it is created);
  ``RTF_CACHE_DIR=`` (empty) turns the cache off;
- a file is a pickle, and is loaded only if this user owns it and no one
  else may write to it, opened without following a link: a file another
  user put in a shared folder is never loaded (the parser is built);
- a file is written whole under a temporary name, then renamed: a reader
  never sees half of one. A folder that is read-only, full or missing, or
  a file that does not load, costs the build and nothing else (a debug line
  on the ``rtf.parser.grammar`` logger says why).

`parser_builds` tells how long this process spent building or loading
parsers (``rtf match --stats``: ``parser_build_s``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
import tempfile
import time
from functools import lru_cache
from importlib import resources
from pathlib import Path

import lark
from lark import Lark

log = logging.getLogger(__name__)

#: The environment variable naming the cache folder (empty: no cache).
CACHE_ENV = "RTF_CACHE_DIR"
#: Parser files kept in the cache folder (the most recently written).
KEEP_FILES = 16
_PREFIX, _SUFFIX = "ftsparql-", ".lark-tables"


def grammar_text() -> str:
    """The text of the grammar as installed (``rtf.grammar/ftsparql.lark``)."""
    return resources.files("rtf.grammar").joinpath("ftsparql.lark").read_text(encoding="utf-8")


class ParserBuilds:
    """What building the parsers cost this process: `seconds` in all (built or loaded), and
    how many were `built` from the grammar and `loaded` from the cache."""

    def __init__(self) -> None:
        self.seconds, self.built, self.loaded = 0.0, 0, 0

    def as_dict(self) -> dict[str, float | int]:
        return {"seconds": self.seconds, "built": self.built, "loaded": self.loaded}


#: This process's parser builds.
parser_builds = ParserBuilds()


@lru_cache(maxsize=2)
def lark_parser(positions: bool = True) -> Lark:
    """The LALR parser with the contextual lexer (about 20x faster than Earley here).

    With `positions` (``propagate_positions``) every subtree has the line and
    column of its first token, which the errors about unsupported constructs
    report; without, the tree costs about a fifth less to build. `rtf.parser`
    parses without positions, and again with them only when the query has
    an error to report. Loaded from the cache folder when it holds these
    tables, else built (and saved there).
    """
    start = time.perf_counter()
    options = {"parser": "lalr", "lexer": "contextual", "propagate_positions": positions,
               "maybe_placeholders": False}
    text = grammar_text()
    path = _cache_path(text, options)
    parser = _load(path) if path is not None else None
    if parser is None:
        parser = Lark(text, **options)
        parser_builds.built += 1
        if path is not None:
            _save(parser, path)
    else:
        parser_builds.loaded += 1
    parser_builds.seconds += time.perf_counter() - start
    return parser


def cache_folder() -> Path | None:
    """Where parsers are kept (see the module's doc), or None when the cache is off."""
    named = os.environ.get(CACHE_ENV)
    if named is not None:
        return Path(named) if named.strip() else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rtf" if os.path.isabs(base) else None


def _cache_path(text: str, options: dict) -> Path | None:
    folder = cache_folder()
    if folder is None:
        return None
    key = "\0".join([text, lark.__version__, sys.version, repr(sorted(options.items()))])
    return folder / f"{_PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:32]}{_SUFFIX}"


def _load(path: Path) -> Lark | None:
    """The parser saved at `path`, if this user's file holds one; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:  # none yet (or a link, or unreadable)
        return None
    with open(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
            log.debug("not loading %s: another user's file, or one others may write", path)
            return None
        try:
            return Lark.load(f)
        except Exception as e:  # a torn or foreign file: built again, and replaced
            log.debug("not loading %s: %s: %s", path, type(e).__name__, e)
            return None


def _save(parser: Lark, path: Path) -> None:
    """Save `parser` at `path` (atomically), and keep the `KEEP_FILES` most recent files."""
    folder = path.parent
    temporary = None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=folder)  # mode 600
        with open(fd, "wb") as f:
            parser.save(f)
        os.replace(temporary, path)
        temporary = None
        _prune(folder)
    except OSError as e:  # read-only, full, another user's folder: built each time, as without a cache
        log.debug("cannot keep the parser in %s: %s", folder, e)
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _prune(folder: Path) -> None:
    """Remove all but the `KEEP_FILES` most recently written parser files of `folder`."""
    dated = []
    for path in folder.glob(f"{_PREFIX}*{_SUFFIX}"):
        with contextlib.suppress(OSError):  # (another process may remove it first)
            dated.append((path.stat().st_mtime, path))
    for _, old in sorted(dated, reverse=True)[KEEP_FILES:]:
        with contextlib.suppress(OSError):
            old.unlink()


def builtin_names() -> tuple[str, ...]:
    """The names of the functions the grammar's BUILTIN_NAME terminal accepts, lower case."""
    import re
    found = re.search(r"^BUILTIN_NAME: /\(\?i:([^)]*)\)", grammar_text(), re.MULTILINE)
    return tuple(found.group(1).split("|")) if found else ()
