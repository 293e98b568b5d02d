"""The command line's messages: every one through `logging`, on stderr, as many as asked for.

Every command takes ``-q`` (warnings and errors only; ``-qq``: errors only),
``-v`` (debug lines too) and ``--log-level LEVEL``. The messages keep the
words they have always had (``rtf: error: ...``, ``rtf index: ...``): the
handler writes a record's message alone, to the standard error the command
has when it writes (a test's captured stream too). What a command was asked
to write there as data -- the JSON object of ``rtf match --stats`` -- is
output, not a message: `write_stats` writes it whatever the level.

``rtf serve`` keeps its own logging (`rtf.server.command`, uvicorn's too):
it is only told the level asked for, in ``args.log_level``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator

#: The logger of the command line's messages; the package's other loggers (``rtf.*``)
#: share its handler while a command runs.
log = logging.getLogger("rtf.cli")

LEVELS = ("critical", "error", "warning", "info", "debug")
#: What a command shows when no option says otherwise: what it did, and every warning.
DEFAULT_LEVEL = "info"


def add_logging_options(p: argparse.ArgumentParser, default: str = DEFAULT_LEVEL) -> None:
    """``-q``, ``-v`` and ``--log-level`` for command parser `p`, whose messages default to `default`."""
    g = p.add_argument_group("messages", "what the command tells on stderr (its output is unchanged)")
    g.add_argument("-q", "--quiet", action="count", default=0,
                   help="fewer messages: -q warnings and errors only, -qq errors only")
    g.add_argument("-v", "--verbose", action="count", default=0, help="more messages: debug lines too")
    g.add_argument("--log-level", choices=LEVELS, default=None,
                   help=f"the least severe message shown (default {default}); -q and -v step from it")
    p.set_defaults(default_log_level=default)


def level_of(args: argparse.Namespace) -> str:
    """The level name `args` asks for: --log-level (or the command's default), stepped by -q and -v."""
    name = getattr(args, "log_level", None) or getattr(args, "default_log_level", DEFAULT_LEVEL)
    step = getattr(args, "quiet", 0) - getattr(args, "verbose", 0)
    return LEVELS[max(0, min(len(LEVELS) - 1, LEVELS.index(name) - step))]


class _StderrHandler(logging.StreamHandler):
    """Writes to `sys.stderr` as it is when a record comes (not as it was when made)."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # (StreamHandler.setStream; never used here)
        pass


@contextlib.contextmanager
def configured_logging(args: argparse.Namespace) -> Iterator[None]:
    """While the command of `args` runs: the ``rtf`` loggers write to stderr at its level.

    ``args.log_level`` is set to that level's name; a command with its own logging
    (``own_logging``: ``rtf serve``) is left to set it up, its ``log_level`` set only when
    the command line chose one (-q, -v, --log-level).
    """
    if getattr(args, "own_logging", False):
        # (its level may come from elsewhere, rtf serve's environment or file: set here only
        # when the command line says it)
        if getattr(args, "log_level", None) is not None or getattr(args, "quiet", 0) \
                or getattr(args, "verbose", 0):
            args.log_level = level_of(args)
        # (the command line's own lines, "rtf: error: ...", stay plain lines: not in the
        # command's format)
        with _plain(logging.getLogger("rtf.cli"), (getattr(args, "log_level", None) or "info").upper()):
            yield
        return
    args.log_level = level_of(args)
    with _plain(logging.getLogger("rtf"), args.log_level.upper()):
        yield


@contextlib.contextmanager
def _plain(package: logging.Logger, level: str) -> Iterator[None]:
    """`package`'s records written to stderr as plain lines at `level`, for a while."""
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    saved = package.level, package.propagate
    package.addHandler(handler)
    package.setLevel(level)
    package.propagate = False  # (an application that runs main() keeps its own handlers' output)
    try:
        yield
    finally:
        handler.flush()
        package.removeHandler(handler)
        package.setLevel(saved[0])
        package.propagate = saved[1]


def write_stats(figures: dict) -> None:
    """``--stats``: `figures` as one JSON line on stderr, at any level (data asked for)."""
    sys.stderr.write(json.dumps(figures) + "\n")
    sys.stderr.flush()
