"""The Spark commands: ``rtf spark stream|replay|queries-log``, also ``python -m rtf.spark ...``.

Each command is a module of its own with a ``main(argv, prog=...)`` that
parses its arguments and returns an exit status (`stream_command`,
`replay_command`, `queries_log_command`); `run` hands it the rest of the
command line. Nothing here imports PySpark: ``rtf spark --help`` and
``rtf spark queries-log`` (which needs no Spark) start fast, and a command
that needs Spark says in one line what is missing when PySpark or Java is.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys

#: name -> (module, needs Spark, what it does).
COMMANDS = {
    "stream": ("rtf.spark.stream_command", True,
               "watch a folder for RDF files; write their matches (Parquet, Delta), exactly once"),
    "replay": ("rtf.spark.replay_command", True,
               "match RDF dumps (grouped by subject across files): Parquet or rtf match's lines"),
    "queries-log": ("rtf.spark.queries_log_command", False,
                    "register and unregister the queries of a running stream (no Spark needed)"),
    "cluster": ("rtf.spark.cluster_command", True,
                "start a Spark standalone cluster on this machine (a master and workers) for a trial"),
}

DESCRIPTION = "Run rtf's Spark jobs (pip install 'rtf[spark]', and Java 17 for Spark)."

EPILOG = """\
commands:
{commands}

examples (docs/spark.md: the quick start, every option, figures):
  rtf index build --queries examples/news_queries.jsonl --taxonomy examples/news_ontology.nt --output q.idx
  rtf spark stream --input drops/ --output matches/ --checkpoint ckpt/ --index q.idx --stop-when-idle 30
  rtf spark queries-log qlog/ register --id rio --query 'ASK {{ ?s ?p ?o FILTER ftcontains(?o, "rio") }}'
  rtf spark replay --dump dumps/ --index q.idx --output out/
  rtf spark cluster --workers 2 &    # then --master spark://127.0.0.1:7077

`rtf spark COMMAND --help` explains each; the exit status is the command's
(0 done, 1 an error, said in one line, 2 a bad command line, 130 interrupted).
"""


def epilog() -> str:
    width = max(map(len, COMMANDS))
    return EPILOG.format(commands="\n".join(f"  {name:<{width}}  {what}"
                                            for name, (_, _, what) in COMMANDS.items()))


def missing_requirement() -> str | None:
    """What Spark lacks here, as a sentence saying what to do (None: PySpark and Java are there)."""
    if importlib.util.find_spec("pyspark") is None:
        return "PySpark is not installed: pip install 'rtf[spark]'"
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else None
    if not shutil.which("java") and not (java and os.path.isfile(java)):
        return "Spark needs Java 17, and there is no java on the PATH: install it, or set JAVA_HOME"
    return None


def run(name: str, argv: list[str], prog: str) -> int:
    """Run the command `name` on its arguments `argv`; its exit status."""
    module, needs_spark, _ = COMMANDS[name]
    wants_help = any(a in ("-h", "--help") for a in argv)
    if needs_spark and not wants_help:
        missing = missing_requirement()
        if missing:
            print(f"{prog}: error: {missing}", file=sys.stderr)
            return 1
    return importlib.import_module(module).main(argv, prog=prog)


def main(argv: list[str] | None = None, prog: str = "python -m rtf.spark") -> int:
    """``python -m rtf.spark COMMAND ...``: the same commands as ``rtf spark``."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=COMMANDS, metavar="COMMAND", help=", ".join(COMMANDS))
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the command's own (COMMAND --help)")
    args = parser.parse_args(argv)
    return run(args.command, args.arguments, f"{prog} {args.command}")
