"""``rtf spark stream|replay|queries-log|cluster``: rtf's Spark jobs, installed with the package.

The commands themselves live in `rtf.spark` (`rtf.spark.commands`: the same
code as ``python -m rtf.spark`` and a checkout's ``spark/*.py``); each parses
the rest of the command line itself and returns its exit status.
"""

from __future__ import annotations

import argparse


def add_command(sub) -> None:
    """Add ``rtf spark`` to the `rtf` parser's subparsers `sub` (no Spark imported)."""
    from rtf.spark.commands import COMMANDS, DESCRIPTION, epilog

    p = sub.add_parser("spark", help="rtf on Spark: a stream, a dump replay, the queries log",
                       description=DESCRIPTION, epilog=epilog(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spark_command", choices=COMMANDS, metavar="COMMAND", help=", ".join(COMMANDS))
    p.add_argument("spark_arguments", nargs=argparse.REMAINDER, metavar="...",
                   help="the command's own arguments (rtf spark COMMAND --help)")
    p.set_defaults(func=cmd_spark)


def cmd_spark(args) -> int:
    from rtf.spark.commands import run

    return run(args.spark_command, args.spark_arguments, f"rtf spark {args.spark_command}")
