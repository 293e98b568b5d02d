"""The ``rtf`` command line.

    rtf check "ASK { ?s ?p ?o }"            show how a query decomposes
    rtf match --queries Q.jsonl --publications dump.nt.gz [...]
    rtf demo                                the example queries on the DBpedia sample
    rtf index build|info|add|remove         save queries once; rtf match --index IDX reuses them
    rtf gen-queries / rtf bench             workloads and the RTF paper's evaluation
    rtf serve --data DIR                    a broker over HTTP: durable queries, pushed matches
    rtf spark stream|replay|queries-log     rtf on Spark (pip install 'rtf[spark]')

Every command prints errors as one readable line (with line and column for
queries) and exits non-zero; never a traceback.

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
import os
import signal
import sys
import threading
import traceback
import zlib

from rtf.query.analysis import TextAnalysisError
from rtf.cli.streams import ClosedStreamError, guard_closed_streams
from rtf.cli.arguments import (
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    UsageError,
    refuse_outputs_among_inputs,
    refuse_stdin_twice,
)
from rtf.errors import RtfError
from rtf.io.files import OutputIsInputError

#: Set to 1 to see the traceback of an internal error.
DEBUG_ENV = "RTF_DEBUG"


def _fail(message: str, code: int = EXIT_INPUT) -> int:
    print(f"rtf: error: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    """The `rtf` parser: each command family's module adds its subcommands, in this order."""
    from rtf import __version__
    from rtf.cli import bench, check, gen_queries, index, match, serve, spark

    parser = argparse.ArgumentParser(
        prog="rtf", description="Continuous full-text SPARQL queries over RDF publications.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:4:2]))
    parser.add_argument("--version", action="version", version=f"rtf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (check, match, gen_queries, bench, index, serve, spark):
        command.add_command(sub)
    return parser


class Terminated(BaseException):
    """SIGTERM: the command stops as on Ctrl-C, its cleanups run (an output's
    temporary file is removed, the old output left as it was)."""


def _terminate(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv`; return the exit status (see `rtf --help`)."""
    closed = guard_closed_streams()  # started with stdin, stdout or stderr closed
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return _refused(closed, EXIT_USAGE)
        with _on_sigterm(_terminate):
            return _refused(closed, _run(args))
    except SystemExit as e:  # argparse: --help and --version exit 0, swallowing a failed write
        if e.code in (0, None) and any(s.refused for s in closed):
            return _refused(closed, 0)
        raise


def _refused(closed: list, code: int) -> int:
    """`code`, or a failure if it is 0 but a closed stdin or stdout refused a read or write
    that something swallowed (argparse prints help and version so)."""
    refused = next((s for s in closed if s.refused), None)
    if code == 0 and refused is not None:
        return _fail(str(ClosedStreamError(*refused.what)))
    return code


def _run(args) -> int:
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
        return _fail(str(e))
    except (EOFError, zlib.error) as e:  # an archive read outside rtf.io.reader's guard
        return _fail(f"cannot read a compressed file: {e or type(e).__name__}")
    except UnicodeError as e:
        return _fail(f"not valid UTF-8 text: {e}")
    except RecursionError:
        return _fail("the input is nested too deeply")
    except MemoryError:
        return _fail("out of memory: the input is too large for this machine")
    except Exception as e:  # a bug: one line, the traceback on request
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
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
