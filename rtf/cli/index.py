"""``rtf index``: build a query index once, inspect it, update it in place.

    rtf index build --queries Q.jsonl [--algorithm rtfs] [--taxonomy ONTO] --output IDX
    rtf index info IDX
    rtf index add IDX --queries MORE.jsonl
    rtf index remove IDX --ids q1 q2 ...
    rtf match --index IDX --publications F ...

The file format is described in docs/index-format.md (`rtf.io.store`). Every
update is atomic: the new index is written beside the old one and renamed
over it, so a failed or killed run leaves the previous index intact; and
updates run one at a time (the index's folder is locked from reading the
index to replacing it), so concurrent ones all take effect.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rtf.cli.arguments import UsageError, add_text_analysis_options, positive_int, text_analysis_of
from rtf.errors import RtfError
from rtf.io.files import STDIO, OutputIsInputError, folder_locked, same_file
from rtf.io.queries import QueryFileError, iter_queries, load_queries, register_all

EPILOG = """\
examples:
  rtf index build --queries examples/dbpedia_queries.jsonl --algorithm rtfs \\
                  --taxonomy ../shared/data/dbpedia/ontology/dbpedia_2015-10.nt.gz --output q.idx
  rtf index build --queries many.jsonl --output many.idx --workers 2   (parsed in 2 more processes)
  rtf index info q.idx
  rtf index add q.idx --queries more.jsonl
  rtf index remove q.idx --ids q3 q7
  rtf match --index q.idx --publications ../shared/data/dbpedia/nordlys_dbpedia-2015-10_sample.nt.gz

The index holds the queries (text and parsed form), the algorithm, the
solution cap, the taxonomy and the text analysis options; `rtf match --index`
answers exactly as `rtf match --queries` with the same queries, algorithm,
taxonomy and options, without parsing a query. A truncated, corrupt or other-version file is refused
(exit 1) and left as it is. Updates (build, add, remove) run one at a time:
one started while another changes a file in the same folder waits for it.
"""


class IndexOptionError(RtfError):
    """An option of ``rtf match`` that contradicts the index it loads."""


def _locked(index: str):
    """Hold the lock of the index's folder while the block reads and replaces the index:
    two ``rtf index add`` at once each add their queries (one waits for the other)
    instead of the last writer's file replacing the other's changes."""
    def waiting() -> None:
        print(f"rtf index: another rtf index is changing a file beside {index}: waiting for it",
              file=sys.stderr, flush=True)
    return folder_locked(index, on_wait=waiting)


class NotRewritableError(UsageError):
    """An index given to ``rtf index add`` or ``remove`` that is not a file they can replace."""


def _rewritable(index: str, command: str) -> None:
    """`NotRewritableError` unless `index` is a regular file (or none yet): add and remove
    replace it, which a pipe, stdin or a device cannot be."""
    if index == STDIO or os.path.exists(index) and not os.path.isfile(index):
        raise NotRewritableError(f"rtf index {command} rewrites the index in place, and {index} is "
                                 "not a file (a pipe, stdin or a device): give the index file itself")


def cmd_build(args) -> int:
    from rtf.engine import Engine
    from rtf.io.builder import IndexBuilder
    from rtf.matching.explain import TaxonomyReport

    # A chunk of queries indexed at a time, then written out: the memory of a few queries.
    engine = Engine(args.algorithm, taxonomy=args.taxonomy, text_analysis=text_analysis_of(args))
    warnings = TaxonomyReport(engine.taxonomy)
    builder = IndexBuilder(engine, on_registered=lambda rq: warnings.add(rq.id, rq.query))
    register_all(builder, iter_queries(args.queries), args.queries, workers=args.workers)
    with _locked(args.output):
        size = builder.save(args.output)
    _report(warnings)
    print(f"rtf index: {args.output}: {len(builder)} queries, {args.algorithm}, {size} bytes",
          file=sys.stderr)
    return 0


def _report(warnings) -> None:
    """The taxonomy warnings of the queries registered (`rtf.matching.explain.TaxonomyReport`)."""
    for line in warnings.lines():
        print(f"rtf index: warning: {line}", file=sys.stderr)


def cmd_info(args) -> int:
    from rtf.engine import Engine
    from rtf.io.store import file_info, read_index_bytes

    data = read_index_bytes(args.index)  # once: a pipe or stdin cannot be read again
    info = file_info(args.index, data)
    engine = Engine.from_bytes(data, args.index)
    stats = engine.stats()
    info.update({k: v for k, v in stats.items()
                 if k not in info and k not in ("truncated_matches", "evaluation_errors")})
    print(json.dumps(info, indent=2))
    return 0


def cmd_add(args) -> int:
    from rtf.engine import Engine
    from rtf.matching.explain import TaxonomyReport

    _rewritable(args.index, "add")
    records = load_queries(args.queries)
    with _locked(args.index):
        engine = Engine.load(args.index)
        before = len(engine)
        register_all(engine, records, args.queries, workers=args.workers)
        size = engine.save(args.index)
    warnings = TaxonomyReport(engine.taxonomy)
    for query in engine.queries()[before:]:  # (in registration order: the ones just added)
        warnings.add(query.id, query.query)
    _report(warnings)
    print(f"rtf index: {args.index}: added {len(engine) - before} queries, "
          f"{len(engine)} in all, {size} bytes", file=sys.stderr)
    return 0


def cmd_remove(args) -> int:
    from rtf.engine import Engine

    _rewritable(args.index, "remove")
    with _locked(args.index):
        engine = Engine.load(args.index)
        missing = [qid for qid in args.ids if qid not in engine]
        if missing:  # checked first: nothing is removed when one id is wrong
            raise QueryFileError(f"{args.index}: no query with id {', '.join(map(repr, missing))}")
        for qid in dict.fromkeys(args.ids):
            engine.unregister(qid)
        size = engine.save(args.index)
    print(f"rtf index: {args.index}: removed {len(set(args.ids))} queries, "
          f"{len(engine)} left, {size} bytes", file=sys.stderr)
    return 0


def add_command(sub) -> None:
    """Add ``rtf index`` and its subcommands to the `rtf` parser's subparsers `sub`."""
    from rtf.engine import ALGORITHMS

    p = sub.add_parser("index", help="build, inspect and update a saved query index",
                       description="Build a query index once and reuse it: `rtf match --index IDX` "
                                   "loads it without parsing a query.",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    commands = p.add_subparsers(dest="index_command", metavar="SUBCOMMAND", required=True)

    q = commands.add_parser("build", help="register queries and save them as an index",
                            formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    q.add_argument("--queries", required=True, metavar="Q", help="JSON Lines of queries, or a .rq file")
    q.add_argument("--algorithm", default="rtfs", choices=ALGORITHMS, help="engine (default: rtfs)")
    q.add_argument("--taxonomy", metavar="ONTO", help="ontology saved with the index for a/rdfs:subClassOf*")
    q.add_argument("--output", required=True, metavar="IDX", help="the index file to write (replaced atomically)")
    _workers_option(q)
    add_text_analysis_options(q)
    q.set_defaults(func=cmd_build)

    q = _subcommand(commands, "info", "print an index's algorithm, version, sizes, taxonomy (JSON)",
                    "Print what a saved index holds, as one JSON object on stdout: its format\n"
                    "version, algorithm, solution cap, number of queries, taxonomy size and the\n"
                    "engine's statistics (tuples, trie nodes, ...). The file is only read.",
                    "rtf index info q.idx")
    q.add_argument("index", metavar="IDX", help="the index file (rtf index build --output IDX)")
    q.set_defaults(func=cmd_info)

    q = _subcommand(commands, "add", "register more queries in an index, in place (atomic)",
                    "Register the queries of a file in a saved index and save it again, in place.\n"
                    "All or nothing: a bad query or an id already in the index is an error naming\n"
                    "its line, and the index is left as it was.",
                    "rtf index add q.idx --queries more.jsonl",
                    "rtf index add q.idx --queries alert.rq       (its id: alert)")
    q.add_argument("index", metavar="IDX", help="the index file to update")
    q.add_argument("--queries", required=True, metavar="MORE", help="JSON Lines of queries, or a .rq file")
    _workers_option(q)
    q.set_defaults(func=cmd_add)

    q = _subcommand(commands, "remove", "unregister queries from an index, in place (atomic)",
                    "Unregister queries from a saved index by id and save it again, in place.\n"
                    "An id that is not in the index is an error, and then nothing is removed.",
                    "rtf index remove q.idx --ids q3 q7")
    q.add_argument("index", metavar="IDX", help="the index file to update")
    q.add_argument("--ids", required=True, nargs="+", metavar="ID", help="ids of the queries to remove")
    q.set_defaults(func=cmd_remove)


def _workers_option(q: argparse.ArgumentParser) -> None:
    q.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="with N > 1, N processes parse the queries while this one indexes them "
                        "(the same index, in about the indexing's time when a core is free; default 1)")


def _subcommand(commands, name: str, help: str, description: str, *examples: str) -> argparse.ArgumentParser:
    """An ``rtf index`` subcommand with its description (lines kept as written) and examples."""
    return commands.add_parser(name, help=help, description=description,
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog="example:\n" + "".join(f"  {e}\n" for e in examples))


def load_index_engine(path: str | os.PathLike, args) -> "object":
    """The engine of ``rtf match --index``; refuses options the index already fixes,
    and an --output that is the index itself."""
    from rtf.engine import Engine

    output = getattr(args, "output", None)
    if output not in (None, STDIO) and same_file(output, path):
        raise OutputIsInputError(f"--output {output} is the --index file {path}: refusing to "
                                 "overwrite an input; write the output to another file")
    if getattr(args, "taxonomy", None):
        raise IndexOptionError("--taxonomy cannot be used with --index: the index holds its taxonomy "
                               "(rebuild it with `rtf index build --taxonomy`)")
    asked = text_analysis_of(args)
    engine = Engine.load(path)
    if asked is not None and asked != engine.text_analysis:
        raise IndexOptionError(f"text analysis options {asked.as_dict()} but the index {path} was built with "
                               f"{engine.text_analysis and engine.text_analysis.as_dict()}: leave them out "
                               "(the index holds its own), or rebuild the index")
    algorithm = getattr(args, "algorithm", None)
    if algorithm and algorithm != engine.algorithm:
        raise IndexOptionError(f"--algorithm {algorithm} but the index {path} is {engine.algorithm}: "
                               "leave --algorithm out, or rebuild the index")
    return engine
