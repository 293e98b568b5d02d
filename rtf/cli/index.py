"""``rtf index``: build a query index once, inspect it, update it in place.

    rtf index build --queries Q.jsonl [--algorithm rtfs] [--taxonomy ONTO] --output IDX
    rtf index info IDX
    rtf index list IDX [--json] [--subscriber NAME]
    rtf index export IDX > Q.jsonl
    rtf index add IDX --queries MORE.jsonl [--replace]
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
import contextlib
import json
import os

from rtf.cli import summary
from rtf.cli.arguments import UsageError, add_text_analysis_options, positive_int, text_analysis_of
from rtf.cli.logs import log
from rtf.errors import RtfError
from rtf.io.files import STDIO, OutputIsInputError, folder_locked, same_file

EPILOG = """\
examples:
  rtf index build --queries examples/dbpedia_queries.jsonl --algorithm rtfs \\
                  --taxonomy ../shared/data/dbpedia/ontology/dbpedia_2015-10.nt.gz --output q.idx
  rtf index build --queries many.jsonl --output many.idx --workers 2   (parsed in 2 more processes)
  rtf index info q.idx
  rtf index list q.idx --subscriber alice
  rtf index export q.idx > q.jsonl          (rtf index build --queries q.jsonl: the same index)
  rtf index add q.idx --queries more.jsonl
  rtf index add q.idx --queries changed.jsonl --replace
  rtf index remove q.idx --ids q3 q7
  rtf match --index q.idx --publications ../shared/data/dbpedia/nordlys_dbpedia-2015-10_sample.nt.gz

The index holds the queries (text and parsed form), the algorithm, the
solution cap, the taxonomy and the text analysis options; `rtf match --index`
answers exactly as `rtf match --queries` with the same queries, algorithm,
taxonomy and options, without parsing a query. A truncated, corrupt or other-version file is refused
(exit 1) and left as it is. Updates (build, add, remove) run one at a time:
one started while another changes a file in the same folder waits for it.

An rtfs or rtfm index is signed with this installation's key (RTF_INDEX_KEY, else
~/.config/rtf/index.key, made on the first save): such a file is mapped back without
registering its queries again (100K queries: about a second); any other file (another
machine's, --no-table, naive, ibroker) loads the checked way, every query registered again.
"""


class IndexOptionError(RtfError):
    """An option of ``rtf match`` that contradicts the index it loads."""


def _locked(index: str):
    """Hold the lock of the index's folder while the block reads and replaces the index:
    two ``rtf index add`` at once each add their queries (one waits for the other)
    instead of the last writer's file replacing the other's changes."""
    def waiting() -> None:
        log.info(f"rtf index: another rtf index is changing a file beside {index}: waiting for it")
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
    from rtf.io.queries import iter_queries, register_all
    from rtf.matching.explain import TaxonomyReport

    # (every model is read for the warnings and the file: kept)
    engine = Engine(args.algorithm, taxonomy=args.taxonomy, text_analysis=text_analysis_of(args), keep_models=True)
    warnings = TaxonomyReport(engine.taxonomy)
    # A chunk of queries is indexed at a time, then written out: the memory of a few queries.
    # With the query table (format 4), each chunk's table is merged into the file's, which
    # then loads by mapping the table back, not by registering every query again.
    target = IndexBuilder(engine, on_registered=lambda rq: warnings.add(rq.id, rq.query), table=args.table)
    register_all(target, iter_queries(args.queries), args.queries, workers=args.workers)
    with _locked(args.output):
        size = target.save(args.output)
    _report(warnings)
    log.info(f"rtf index: {args.output}: {n_queries(len(target))}, {args.algorithm}, {size} bytes")
    return 0


def _report(warnings) -> None:
    """The taxonomy warnings of the queries registered (`rtf.matching.explain.TaxonomyReport`)."""
    for line in warnings.lines():
        log.warning(f"rtf index: warning: {line}")


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


def cmd_list(args) -> int:
    """One line per query of the index: its id and subscriber (or JSON Lines with --json)."""
    from rtf.engine import Engine

    for rq in Engine.load(args.index).queries():
        if args.subscriber is not None and rq.subscriber != args.subscriber:
            continue
        if args.as_json:
            print(json.dumps({"id": rq.id, "subscriber": rq.subscriber}, ensure_ascii=False))
        else:  # tab-separated; an id or name with a tab or a line end is written as JSON writes it
            print(f"{_one_line(rq.id)}\t{'' if rq.subscriber is None else _one_line(rq.subscriber)}")
    return 0


def _one_line(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1] if any(c in text for c in "\t\n\r\\") else text


def cmd_export(args) -> int:
    """The index's queries as a query file (JSON Lines), and with --taxonomy-output its taxonomy:
    what `rtf index build` makes the same index of."""
    from rtf.cli.streams import binary_stdout
    from rtf.engine import Engine
    from rtf.io.files import atomic_output
    from rtf.io.output import query_record_line, taxonomy_lines
    from rtf.query.analysis import FieldAnalysis

    engine = Engine.load(args.index)
    missing = [rq.id for rq in engine.queries() if not rq.query.text]
    if missing:
        raise RtfError(f"{args.index}: query {missing[0]!r} was registered without its text: "
                       "it cannot be exported")
    to_stdout = args.output in (None, STDIO)
    with contextlib.nullcontext(binary_stdout()) if to_stdout else atomic_output(args.output, encoding=None) as out:
        for rq in engine.queries():
            out.write(query_record_line(rq.id, rq.query.text, rq.subscriber, rq.metadata).encode())
        out.flush()
    classes = len(engine.taxonomy.parent_table())
    if args.taxonomy_output:
        with atomic_output(args.taxonomy_output) as f:
            f.writelines(taxonomy_lines(engine.taxonomy))
    options = [f"--algorithm {engine.algorithm}"]
    per_field = isinstance(engine.text_analysis, FieldAnalysis)
    if per_field:
        options.append("--text-analysis ANALYSIS.json")
    elif engine.text_analysis is not None:
        options += _analysis_options(engine.text_analysis.as_dict())
    if classes:
        options.append(f"--taxonomy {args.taxonomy_output or 'ONTO'}")
    log.info(f"rtf index: {args.index}: exported {n_queries(len(engine))}; `rtf index build --queries "
             f"{args.output if not to_stdout else 'FILE'} {' '.join(options)}` makes the same index"
             + (f" (ONTO: its taxonomy, {classes} classes: --taxonomy-output writes it)"
                if classes and not args.taxonomy_output else "")
             + (" (WORDS: its stop words, one a line, as `rtf index info` lists them)"
                if isinstance(getattr(engine.text_analysis, "stop_words", None), tuple) else "")
             + (" (ANALYSIS.json: its text analysis per field, the `text_analysis` that `rtf index info` "
                "prints)" if per_field else ""))
    return 0


def _analysis_options(options: dict) -> list[str]:
    """The `rtf index build` options of a text analysis (`TextAnalysis.as_dict`)."""
    out = []
    for name, value in options.items():
        if value is True:
            out.append(f"--{name.replace('_', '-')}")
        elif isinstance(value, str):
            out.append(f"--{name.replace('_', '-')} {value}")
        elif value:  # a list of stop words
            out.append("--stop-words-file WORDS")
    return out


def cmd_add(args) -> int:
    from rtf.engine import Engine
    from rtf.io.queries import load_queries, register_all
    from rtf.matching.explain import TaxonomyReport

    _rewritable(args.index, "add")
    records = load_queries(args.queries)
    with _locked(args.index):
        engine = Engine.load(args.index)
        before = {rq.id for rq in engine.queries()}
        register_all(engine, records, args.queries, workers=args.workers, replace=args.replace)
        size = engine.save(args.index)
    warnings = TaxonomyReport(engine.taxonomy)
    given = {rec["id"] for rec in records}
    for query in engine.queries():  # the ones just added or replaced
        if query.id in given:
            warnings.add(query.id, query.query)
    _report(warnings)
    replaced = len(before & {rec["id"] for rec in records}) if args.replace else 0
    added = len(engine) - len(before)
    log.info(f"rtf index: {args.index}: added {n_queries(added)}"
             + (f", replaced {n_queries(replaced)}" if args.replace else "")
             + f", {len(engine)} in all, {size} bytes")
    return 0


def cmd_remove(args) -> int:
    from rtf.engine import Engine
    from rtf.io.queries import QueryFileError

    _rewritable(args.index, "remove")
    with _locked(args.index):
        engine = Engine.load(args.index)
        missing = [qid for qid in args.ids if qid not in engine]
        if missing:  # checked first: nothing is removed when one id is wrong
            raise QueryFileError(f"{args.index}: no query with id {', '.join(map(repr, missing))}")
        for qid in dict.fromkeys(args.ids):
            engine.unregister(qid)
        size = engine.save(args.index)
    log.info(f"rtf index: {args.index}: removed {n_queries(len(set(args.ids)))}, "
             f"{len(engine)} left, {size} bytes")
    return 0


def n_queries(n: int) -> str:
    """``1 query``, ``2 queries``."""
    return f"{n} query" if n == 1 else f"{n} queries"


def add_command(sub) -> None:
    """Add ``rtf index`` and its subcommands to the `rtf` parser's subparsers `sub`."""
    from rtf.engine import ALGORITHMS

    p = sub.add_parser("index", help=summary("index"),
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
    q.add_argument("--no-table", action="store_false", dest="table",
                   help="without the query table (the queries are indexed a chunk at a time either way): "
                        "the file then loads by registering every query again")
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

    q = _subcommand(commands, "list", "list an index's queries: id and subscriber, one a line",
                    "List the queries of a saved index, one line each in registration order: its id,\n"
                    "a tab and its subscriber (empty for none); with --json, one JSON object a line.\n"
                    "The file is only read.",
                    "rtf index list q.idx",
                    "rtf index list q.idx --json --subscriber alice")
    q.add_argument("index", metavar="IDX", help="the index file")
    q.add_argument("--json", action="store_true", dest="as_json",
                   help='JSON Lines: {"id": ..., "subscriber": ...}')
    q.add_argument("--subscriber", metavar="NAME", help="only the queries of subscriber NAME")
    q.set_defaults(func=cmd_list)

    q = _subcommand(commands, "export", "write an index's queries as a query file (JSON Lines)",
                    "Write the queries of a saved index as a query file: one JSON line per query,\n"
                    '{"id", "query", "subscriber", "metadata"}, in registration order. `rtf index\n'
                    "build --queries FILE` with the index's algorithm, taxonomy and text analysis\n"
                    "(the command says which) makes the same index of it. The file is only read.",
                    "rtf index export q.idx > q.jsonl",
                    "rtf index export q.idx --output q.jsonl")
    q.add_argument("index", metavar="IDX", help="the index file")
    q.add_argument("--output", metavar="FILE", help="write the queries here (default or '-': stdout; "
                                                    "replaced only when the export succeeds)")
    q.add_argument("--taxonomy-output", metavar="ONTO",
                   help="also write the index's taxonomy here, as N-Triples (for rtf index build --taxonomy)")
    q.set_defaults(func=cmd_export)

    q = _subcommand(commands, "add", "register more queries in an index, in place (atomic)",
                    "Register the queries of a file in a saved index and save it again, in place.\n"
                    "All or nothing: a bad query, or an id already in the index (without --replace),\n"
                    "is an error naming its line, and the index is left as it was.",
                    "rtf index add q.idx --queries more.jsonl",
                    "rtf index add q.idx --queries alert.rq       (its id: alert)",
                    "rtf index add q.idx --queries changed.jsonl --replace")
    q.add_argument("index", metavar="IDX", help="the index file to update")
    q.add_argument("--queries", required=True, metavar="MORE", help="JSON Lines of queries, or a .rq file")
    q.add_argument("--replace", action="store_true",
                   help="a query whose id is in the index replaces it (its text, subscriber and "
                        "metadata), as the server's PUT does; without, that id is an error")
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
