"""``rtf spark queries-log``: append to (or list) the queries log that a running stream follows.

Each command appends operations to the log in DIR (created if missing) and
prints their numbers; a running ``rtf spark stream --queries-log DIR`` applies
them from its next micro-batch on. The query is checked first (parsed and
indexed as the stream's workers will); a bad one is refused and nothing is
appended. See docs/spark.md.

Needs no Spark. Also ``python -m rtf.spark queries-log`` and, in a checkout,
``spark/queries_log.py``; the library behind it is `rtf.spark.oplog`.
"""

from __future__ import annotations

import argparse
import json
import sys

EPILOG = """\
examples:
  rtf spark queries-log qlog/ register --id rio \\
      --query 'SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "rio") }' --subscriber ann
  rtf spark queries-log qlog/ register --queries more.jsonl   # every query of a file, together
  rtf spark queries-log qlog/ unregister --id rio
  rtf spark queries-log qlog/ list                             # one JSON line per operation
  rtf spark queries-log qlog/ size                             # the number of the last operation
"""


#: The command's name in its messages.
PROG = "rtf spark queries-log"
DESCRIPTION = """\
Append to (or list) the queries log that a running stream follows: each
command appends operations to the log in DIR (created if missing) and prints
their numbers; the stream applies them from its next micro-batch on. A query
is checked first (parsed and indexed as the stream's workers will); a bad one
is refused and nothing is appended."""


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("log", metavar="DIR", help="the queries log folder")
    commands = p.add_subparsers(dest="command", required=True)
    reg = commands.add_parser("register", help="append registrations")
    what = reg.add_mutually_exclusive_group(required=True)
    what.add_argument("--query", help="the query text (with --id)")
    what.add_argument("--queries", metavar="Q.jsonl",
                      help='JSON Lines of {"id", "query", "subscriber"} (or a .rq file), appended together')
    reg.add_argument("--id", help="the query's id (with --query)")
    reg.add_argument("--subscriber", help="the query's subscriber (with --query)")
    unreg = commands.add_parser("unregister", help="append removals")
    unreg.add_argument("--id", required=True, action="append", help="a query id (repeatable)")
    commands.add_parser("list", help="print every operation, one JSON line each")
    commands.add_parser("size", help="print the number of operations")
    return p


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    from rtf.errors import RtfError
    from rtf.spark.oplog import QueriesLog

    try:
        log = QueriesLog(args.log, create=args.command in ("register", "unregister"))
        if args.command == "register":
            if args.query is not None:
                if not args.id:
                    parser.error("--query needs --id")
                ops = [{"op": "register", "id": args.id, "query": args.query, "subscriber": args.subscriber}]
            else:
                from rtf.io.queries import load_queries

                ops = [{"op": "register", "id": r["id"], "query": r["query"], "subscriber": r["subscriber"],
                        "metadata": r["metadata"]} for r in load_queries(args.queries)]
            first, last = log.append(ops)
        elif args.command == "unregister":
            first, last = log.append([{"op": "unregister", "id": i} for i in args.id])
        elif args.command == "list":
            for n, op in log.read():
                print(json.dumps({"n": n, **op}, ensure_ascii=False))
            return 0
        else:
            print(log.size())
            return 0
    except (RtfError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    print(f"operations {first}..{last}" if last > first else f"operation {first}")
    return 0
