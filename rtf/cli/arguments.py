"""The command line's options: value types with one-line errors, and outputs that are not inputs.

>>> positive_int("3"), between(0, 1, "a probability")("0.25")
(3, 0.25)

Every command that writes a file refuses an output that is one of its inputs
(`refuse_outputs_among_inputs`, checked by ``rtf.cli.main`` for all
commands) and writes through `rtf.io.files.atomic_output`, so that a failed
run never leaves a half-written or emptied file.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable

from rtf.errors import RtfError
from rtf.io.files import STDIO, OutputIsInputError, same_file

#: Exit statuses (documented in `rtf --help`).
EXIT_INPUT, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 70, 130, 143


class UsageError(RtfError):
    """A command line that cannot be carried out as given (exit status 2, `EXIT_USAGE`)."""


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
INPUT_OPTIONS = ("publications", "follow", "queries", "index", "taxonomy", "file", "stop_words_file")
OUTPUT_OPTIONS = ("output", "json", "taxonomy_output")


def _paths(value) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


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


def refuse_stdin_twice(args) -> None:
    """Raise `UsageError` if two inputs of `args` are ``-``: standard input can be read once
    (the second would find it at its end, and read nothing, silently)."""
    named = [f"--{option.replace('_', '-')}" for option in INPUT_OPTIONS
             for source in _paths(getattr(args, option, None)) if source == STDIO]
    if len(named) > 1:
        raise UsageError(f"standard input can be read once, and {' and '.join(f'{n} -' for n in named)} "
                         "both read it: give all but one as files")


def add_text_analysis_options(p: argparse.ArgumentParser) -> None:
    """The text analysis options (`rtf.query.analysis.TextAnalysis`) of a command that registers queries."""
    g = p.add_argument_group("text analysis", "off by default; for queries and publications alike "
                                              "(docs/language.md, 'Text analysis')")
    g.add_argument("--fold-accents", action="store_true", help="remove diacritics: cafe = café")
    g.add_argument("--stem", metavar="LANG", help="reduce words to their Snowball stem in LANG "
                                                  "(english, french, german, ...)")
    stop = g.add_mutually_exclusive_group()
    stop.add_argument("--stop-words", metavar="LANG", help="drop LANG's stop words (the stop-words package)")
    stop.add_argument("--stop-words-file", metavar="F", help="drop the words of F (one per line; '-': stdin)")
    g.add_argument("--cjk-bigrams", action="store_true",
                   help="cut Chinese, Japanese and Korean text into overlapping character pairs")
    g.add_argument("--text-analysis", metavar="FILE",
                   help="the options from a JSON or TOML file (or a JSON object), per field too: "
                        '{"default": {...}, "fields": [{"predicate": IRI, "lang": TAG, "stem": ...}]} '
                        "(docs/language.md, 'Text analysis per field'); not with the options above")


def text_analysis_of(args):
    """The `TextAnalysis` (or per field, `FieldAnalysis`) the options of `add_text_analysis_options`
    ask for, or None (none asked).

    An unknown language or a bad stop word is a `rtf.query.analysis.TextAnalysisError`
    (a usage error); an unreadable stop-word file an OSError.
    """
    from rtf.query.analysis import TextAnalysis

    config = getattr(args, "text_analysis", None)
    if config is not None:
        single = [f"--{n.replace('_', '-')}" for n in ("fold_accents", "stem", "stop_words", "stop_words_file",
                                                      "cjk_bigrams") if getattr(args, n, None)]
        if single:
            raise UsageError(f"--text-analysis and {', '.join(single)}: give the options in one place "
                             "(the file's 'default' holds the options of every other field)")
        from rtf.io.analysis_file import read_text_analysis
        return read_text_analysis(config)
    stop = getattr(args, "stop_words", None)
    stop_file = getattr(args, "stop_words_file", None)
    if stop_file:
        with contextlib.nullcontext(sys.stdin) if stop_file == STDIO else open(stop_file, encoding="utf-8") as f:
            stop = tuple(line.strip() for line in f if line.strip() and not line.startswith("#"))
    analysis = TextAnalysis(fold_accents=bool(getattr(args, "fold_accents", False)),
                            stem=getattr(args, "stem", None), stop_words=stop,
                            cjk_bigrams=bool(getattr(args, "cjk_bigrams", False)))
    return None if analysis.is_default else analysis
