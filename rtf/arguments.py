"""The command line's options: value types with one-line errors, and safe outputs.

>>> positive_int("3"), between(0, 1, "a probability")("0.25")
(3, 0.25)

Every command that writes a file refuses an output that is one of its inputs
(`refuse_outputs_among_inputs`, checked by ``rtf.cli.main`` for all
commands) and should write through `atomic_output`, so that a failed run
never leaves a half-written or emptied file.
"""

from __future__ import annotations

import argparse
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import IO

from rtf.errors import RtfError


def positive_int(text: str) -> int:
    """An integer of at least 1 (counts, sizes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A number above 0 (seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def between(low: float, high: float, what: str) -> Callable[[str], float]:
    """A type for a number from `low` to `high`, named `what` in its errors."""
    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} is from {low:g} to {high:g}, got {text!r}")
        return value
    number.__name__ = what.split()[-1]  # argparse names the type in its own errors
    return number


# ------------------------------------------------------------------ output files

#: The options that name files a command reads, and those it writes.
INPUT_OPTIONS = ("publications", "follow", "queries", "index", "taxonomy", "file")
OUTPUT_OPTIONS = ("output", "json")

STDIO = "-"


class OutputIsInputError(RtfError):
    """An output file that is also one of the command's inputs: writing it would destroy it."""


def _paths(value) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether `a` and `b` are one file: through links and relative paths when both exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_outputs_among_inputs(args) -> None:
    """Raise `OutputIsInputError` if an output option of `args` names one of its input files.

    Checked before any output is opened: opening it for writing would empty
    the input before it is read.
    """
    for out_option in OUTPUT_OPTIONS:
        for out in _paths(getattr(args, out_option, None)):
            if out == STDIO:
                continue
            for in_option in INPUT_OPTIONS:
                for source in _paths(getattr(args, in_option, None)):
                    if source != STDIO and same_file(out, source):
                        raise OutputIsInputError(
                            f"--{out_option} {out} is the --{in_option} file {source}: refusing "
                            f"to overwrite an input; write the output to another file")


@contextmanager
def atomic_output(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text file to write `path` through, replacing `path` only if the block succeeds.

    The text goes to a hidden temporary file beside `path` (links are
    followed, so the link stays a link), renamed over `path` at the end: a
    failed or interrupted run leaves `path` as it was, never half-written or
    emptied. Something that is not a regular file (``/dev/null``, a pipe) is
    written in place, as is a file whose folder does not let us create one.
    """
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        with open(target, "w", encoding=encoding) as f:
            yield f
        return
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        f = open(temporary, "x", encoding=encoding)
    except PermissionError:
        with open(target, "w", encoding=encoding) as f:
            yield f
        return
    try:
        with f:
            yield f
        if os.path.exists(target):  # keep the permissions the output had
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
