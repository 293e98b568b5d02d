"""The ``rtf`` command line.

    rtf check "ASK { ?s ?p ?o }"            show how a query decomposes
    rtf match --queries Q.jsonl --publications dump.nt.gz [...]
    rtf demo                                the example queries on the DBpedia sample
    rtf index build|info|list|export|add|remove
                                            save queries once; rtf match --index IDX reuses them
    rtf gen-queries / rtf bench             workloads and the RTF paper's evaluation
    rtf serve --data DIR                    a broker over HTTP: durable queries, pushed matches
    rtf spark stream|replay|queries-log     rtf on Spark (pip install 'rtf[spark]')

Every command prints errors as one readable line (with line and column for
queries) and exits non-zero; never a traceback. Every message goes through
`logging` (`rtf.cli.logs`): -q, -v and --log-level on every command.

exit status:
  0   done (with --skip-invalid: also when lines were skipped or a file broke off)
  1   bad input: an invalid query or RDF line, an unreadable, truncated or
      corrupt file, not UTF-8, nested too deeply, out of memory
  2   bad command line, or an output file that is also an input (refused)
  3   rtf bench: the engines disagree on some match (a bug in an engine; the
      report names the publication and a query that reproduces it)
  70  internal error (a bug: please report it; RTF_DEBUG=1 shows the traceback)
  130 interrupted (Ctrl-C)
  143 terminated (SIGTERM; rtf serve exits 0: a clean stop)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterable

from rtf.cli.logs import add_logging_options, configured_logging, log
from rtf.cli.streams import ClosedStreamError, guard_closed_streams

#: Set to 1 to see the traceback of an internal error.
DEBUG_ENV = "RTF_DEBUG"

#: Every command: the module that adds its parser (`add_command`) and runs it, and the line
#: `rtf --help` shows. A module is imported only for its own command: ``rtf --version``,
#: ``rtf --help`` and ``rtf check`` do not import what ``rtf match`` or ``rtf bench`` need.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("rtf.cli.check", "parse a query and print its decomposition"),
    "match": ("rtf.cli.match", "match publications against registered queries"),
    "demo": ("rtf.cli.match", "run the example queries on the DBpedia sample"),
    "gen-queries": ("rtf.cli.gen_queries", "generate a query workload from publications"),
    "bench": ("rtf.cli.bench", "the RTF paper's evaluation: filter time, throughput, memory, insertion"),
    "index": ("rtf.cli.index", "build, inspect, list, export and update a saved query index"),
    "serve": ("rtf.cli.serve", "run a continuous-query broker over HTTP"),
    "spark": ("rtf.cli.spark", "rtf on Spark: stream, replay, queries-log (pip install 'rtf[spark]')"),
}


def summary(command: str) -> str:
    """The line `rtf --help` shows for `command`."""
    return COMMANDS[command][1]


def _fail(message: str, code: int) -> int:
    log.error(f"rtf: error: {message}")
    return code


def build_parser(names: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The `rtf` parser: every command listed, the options of `names` (default: all) added by
    their modules, imported now; the others' only when asked for."""
    from rtf import __version__

    parser = argparse.ArgumentParser(
        prog="rtf", description="Continuous full-text SPARQL queries over RDF publications.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:4:2]))
    parser.add_argument("--version", action="version", version=f"rtf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = {COMMANDS[name][0] for name in (COMMANDS if names is None else names)}  # their modules
    added: set[str] = set()
    for name, (module, help_line) in COMMANDS.items():
        if name in added:
            continue
        if module in wanted:
            before = set(sub.choices)
            importlib.import_module(module).add_command(sub)
            for new in set(sub.choices) - before:
                _with_logging_options(sub.choices[new])
                added.add(new)
        else:  # listed; its options are added when it is the command run
            sub.add_parser(name, help=help_line, add_help=False)
    return parser


def _with_logging_options(parser: argparse.ArgumentParser) -> None:
    """-q, -v and --log-level on `parser` and each of its subcommands (`rtf.cli.logs`), unless
    it has its own (``rtf serve``'s default level is another)."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subcommands:
        for child in action.choices.values():
            _with_logging_options(child)
    if not subcommands and "--log-level" not in parser._option_string_actions:
        add_logging_options(parser)


def _command_in(argv: list[str]) -> list[str]:
    """The command `argv` runs (its first word that is not an option), as a list: [] for none."""
    for word in argv:
        if not word.startswith("-"):
            return [word] if word in COMMANDS else []
        if word == "--":
            break
    return []


class Terminated(BaseException):
    """SIGTERM: the command stops as on Ctrl-C, its cleanups run (an output's
    temporary file is removed, the old output left as it was)."""


def _terminate(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv`; return the exit status (see `rtf --help`)."""
    closed = guard_closed_streams()  # started with stdin, stdout or stderr closed
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(_command_in(argv))
        args = parser.parse_args(argv)
        with configured_logging(args):
            if not getattr(args, "func", None):
                from rtf.cli.arguments import EXIT_USAGE
                parser.print_help()
                return _refused(closed, EXIT_USAGE)
            with _on_sigterm(_terminate):
                return _refused(closed, _run(args))
    except SystemExit as e:  # argparse: --help and --version exit 0, swallowing a failed write
        if e.code in (0, None) and any(s.refused for s in closed):
            with configured_logging(argparse.Namespace()):
                return _refused(closed, 0)
        raise


def _refused(closed: list, code: int) -> int:
    """`code`, or a failure if it is 0 but a closed stdin or stdout refused a read or write
    that something swallowed (argparse prints help and version so)."""
    refused = next((s for s in closed if s.refused), None)
    if code == 0 and refused is not None:
        from rtf.cli.arguments import EXIT_INPUT
        return _fail(str(ClosedStreamError(*refused.what)), EXIT_INPUT)
    return code


def _run(args) -> int:
    import zlib

    from rtf.cli.arguments import (EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED,
                                   EXIT_USAGE, UsageError, refuse_outputs_among_inputs,
                                   refuse_stdin_twice)
    from rtf.errors import RtfError
    from rtf.io.files import OutputIsInputError
    from rtf.query.analysis import TextAnalysisError

    try:
        refuse_outputs_among_inputs(args)
        refuse_stdin_twice(args)
        return args.func(args)
    except BrokenPipeError:  # `rtf match ... | head`: the reader has all it wanted
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Terminated:
        return EXIT_TERMINATED
    except (OutputIsInputError, TextAnalysisError, UsageError) as e:
        return _fail(str(e), EXIT_USAGE)
    except (RtfError, OSError) as e:
        return _fail(str(e), EXIT_INPUT)
    except (EOFError, zlib.error) as e:  # an archive read outside rtf.io.reader's guard
        return _fail(f"cannot read a compressed file: {e or type(e).__name__}", EXIT_INPUT)
    except UnicodeError as e:
        return _fail(f"not valid UTF-8 text: {e}", EXIT_INPUT)
    except RecursionError:
        return _fail("the input is nested too deeply", EXIT_INPUT)
    except MemoryError:
        return _fail("out of memory: the input is too large for this machine", EXIT_INPUT)
    except Exception as e:  # a bug: one line, the traceback on request
        if os.environ.get(DEBUG_ENV):
            import traceback
            log.error(traceback.format_exc().rstrip())
        return _fail(f"internal error: {type(e).__name__}: {e}; please report it "
                     f"(set {DEBUG_ENV}=1 to see the traceback)", EXIT_INTERNAL)


@contextlib.contextmanager
def _on_sigterm(handler):
    """`handler` for SIGTERM while the command runs (from the main thread only: a
    command run in another thread keeps the process's handler)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's exit-time flush raises nothing."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
