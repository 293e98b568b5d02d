"""``rtf check``: parse a query and show its decomposition, or check every query of a file."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from rtf.cli import summary
from rtf.cli.arguments import EXIT_INPUT
from rtf.cli.logs import log


def add_command(sub) -> None:
    p = sub.add_parser("check", help=summary("check"),
                       description="Parse a query and print its decomposition into branches and tuple "
                                   "conjuncts; exit 1 with line and column if it is invalid.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog='examples:\n  rtf check \'ASK { ?a <http://ex/p> ?t FILTER ftcontains(?t, "rio") }\'\n'
                              '  rtf check -f examples/news_queries.jsonl\n'
                              '  rtf check -f examples/news_queries.jsonl --taxonomy examples/news_ontology.nt\n\n'
                              'A query that can never match (ftcontains on a variable no triple '
                              'pattern binds to a literal) gets a warning on stderr, and so does an '
                              'a/rdfs:subClassOf* without --taxonomy, or on a class the taxonomy lacks.')
    p.add_argument("query", nargs="?", help="the query text (default: read -f FILE or stdin)")
    p.add_argument("-f", "--file", help="read the query from a .rq file, or check every query of a "
                                        "JSON Lines file (each bad one reported with line, id, reason)")
    p.add_argument("--taxonomy", metavar="ONTO", help="the ontology the queries will be registered with "
                                                      "(their a/rdfs:subClassOf*; default: none)")
    p.set_defaults(func=cmd_check)



def cmd_check(args) -> int:
    """Check one query (argument, .rq file or stdin), or every query of a JSON Lines file."""
    from rtf.errors import QueryError
    from rtf.matching.explain import query_warnings, taxonomy_warnings
    from rtf.parser import parse_query

    taxonomy = _taxonomy(args)
    if args.file and Path(args.file).suffix != ".rq":
        return check_query_file(args.file, taxonomy)
    if args.query is not None and not args.file:
        text = args.query  # (the query files' reader and its worker pools not imported: ~20 ms)
    else:
        from rtf.io.queries import read_text
        text = read_text(args.file, "query file") if args.file else read_text(None, "query")
    try:
        q = parse_query(text)
    except QueryError as e:
        message = f"invalid query: {e}"
        if e.line is not None:
            lines = text.splitlines()
            if 0 < e.line <= len(lines):  # the line, and a caret under the column
                message += "\n  " + lines[e.line - 1] + "\n  " + " " * max((e.column or 1) - 1, 0) + "^"
        log.error(message)
        return 1
    print(q.describe())
    for reason in query_warnings(q) + taxonomy_warnings(q, taxonomy):
        log.warning(f"warning: {reason}")
    return 0


def _taxonomy(args):
    """The taxonomy of ``--taxonomy`` (None without it)."""
    from rtf.io.taxonomy import Taxonomy

    return Taxonomy.from_file(args.taxonomy) if getattr(args, "taxonomy", None) else None


def check_query_file(path: str, taxonomy=None) -> int:
    """Check every query of a JSON Lines file: each bad one (bad JSON, invalid
    query, duplicate id) is reported with its line, id and reason on stderr,
    each query that can never match gets a warning, all in line order; exit 1
    if any was bad."""
    from rtf.engine import Engine
    from rtf.io.queries import load_queries, register_all
    from rtf.matching.explain import query_warnings, taxonomy_warnings

    problems: list[str] = []
    records = load_queries(path, problems)
    # The cheapest index (registering runs every check); every model is read for its warnings: kept.
    engine = Engine("naive", taxonomy=taxonomy, keep_models=True)
    register_all(engine, records, path, problems)
    # (line, report): the problems of both passes and the warnings, merged into line order.
    reports = [(_line_of(problem, path), logging.ERROR, problem) for problem in problems]
    warnings = 0
    claimed: set[str] = set()  # ids whose registered record was found: a later duplicate is not it
    for rec in records:
        if rec["id"] is None or rec["id"] not in engine or rec["id"] in claimed \
                or engine.get(rec["id"]).query.text != rec["query"]:
            continue
        claimed.add(rec["id"])
        query = engine.get(rec["id"]).query
        for reason in query_warnings(query) + taxonomy_warnings(query, engine.taxonomy):
            reports.append((rec["line"], logging.WARNING,
                            f"{path}:{rec['line']}: query {rec['id']!r}: warning: {reason}"))
            warnings += 1
    for _, level, report in sorted(reports, key=lambda r: r[0]):  # stable: a line's reports keep their order
        log.log(level, report)
    print(f"{path}: {len(engine)} valid queries, {len(problems)} invalid, {warnings} warning(s)")
    return EXIT_INPUT if problems else 0


def _line_of(problem: str, path: str) -> int:
    """The file line a problem of `rtf.io.queries` names (``PATH:LINE: ...``); 0 if none."""
    line, _, _ = problem[len(path) + 1:].partition(":") if problem.startswith(path + ":") else ("", "", "")
    return int(line) if line.isdigit() else 0
