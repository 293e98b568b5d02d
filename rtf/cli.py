"""The ``rtf`` command line.

    rtf check "ASK { ?s ?p ?o }"            show how a query decomposes
    rtf match --queries Q.jsonl --publications dump.nt.gz [...]
    rtf demo                                the example queries on the DBpedia sample
    rtf index build|info|add|remove         save queries once; rtf match --index IDX reuses them
    rtf gen-queries / rtf bench             workloads and the RTF paper's evaluation
    rtf serve --data DIR                    a broker over HTTP: durable queries, pushed matches

Every command prints errors as one readable line (with line and column for
queries) and exits non-zero; never a traceback.

exit status:
  0   done (with --skip-invalid: also when lines were skipped or a file broke off)
  1   bad input: an invalid query or RDF line, an unreadable, truncated or
      corrupt file, not UTF-8, nested too deeply, out of memory
  2   bad command line, or an output file that is also an input (refused)
  70  internal error (a bug: please report it; RTF_DEBUG=1 shows the traceback)
  130 interrupted (Ctrl-C)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import traceback
import zlib
from pathlib import Path

from rtf.arguments import (OutputIsInputError, atomic_output, positive_float, positive_int,
                           refuse_outputs_among_inputs)
from rtf.errors import QueryError, RtfError

#: Exit statuses (documented in `rtf --help`).
EXIT_INPUT, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 2, 70, 130

#: Set to 1 to see the traceback of an internal error.
DEBUG_ENV = "RTF_DEBUG"

EPILOG_MATCH = """\
queries file:
  JSON Lines, one {"id": "...", "query": "...", "subscriber": "..."} per line
  (subscriber optional), or a .rq file holding one query (its id is the file name).

output (JSON Lines, one line per publication and matching query):
  {"publication": "http://dbpedia.org/resource/X", "query": "q1", "subscriber": null,
   "bindings": [{"x": "<http://...>"}]}
  bindings are the distinct projected solutions as N-Triples terms ([] for ASK);
  publications come in input order, then query ids in order.
  --output FILE is replaced only when the run succeeds (a failed run leaves it
  as it was), and must not be one of the input files (refused, exit 2).

bad input:
  a malformed line        exit 1 with "rtf: error: F:LINE: reason", after the matches
                          of the publications before it; --skip-invalid skips it
                          (each bad line alone: the lines around it are kept) and
                          reports "rtf: skipped N invalid line(s); first: F:LINE: ..."
  a truncated or corrupt  (.gz, .bz2, a failing disk) exit 1 with "rtf: error:
  file                    F:LINE: the file breaks off here, after B bytes (L whole
                          lines): ..." after the matches of the publications read
                          whole before the break; --skip-invalid matches every
                          publication read before the break (the last one maybe
                          cut short), warns "rtf: warning: F:LINE: the file breaks
                          off here ..." and lists the break under "breaks" in --stats
  a bad Turtle statement  --skip-invalid skips that statement alone and counts the
                          line where it starts
  a UTF-8 byte order mark at the start of a file is ignored

live input:
  --publications - reads stdin as it comes (N-Triples unless --format says
  otherwise; gzip or bzip2 recognised by their first bytes) and writes, and
  flushes, each publication's matches as soon as it is complete: when the
  next subject starts, or the input ends. --follow FILE reads a growing file
  like `tail -f` (until Ctrl-C, or --follow-timeout seconds without new data).

several cores:
  --workers N forks N processes once the queries are registered (each has the
  engine without reloading it) and sends them batches of publications; the
  output is the one-process output, in the same order. Live feeds are best
  served by one process (a batch waits for its publications). In --stats,
  filter_s then sums the workers' times.

query files with bad queries:
  --skip-invalid also skips a bad query or a duplicate id, reporting each on
  stderr as "rtf: skipped query: Q:LINE: query 'id': reason"; `rtf check -f Q`
  lists them all without matching anything.

examples (from a checkout; the bundled example files):
  rtf match --queries rtf/examples/news_queries.jsonl \\
            --publications rtf/examples/news.nt \\
            --taxonomy rtf/examples/news_ontology.nt --stats
  tail -f feed.nt | rtf match --queries rtf/examples/news_queries.jsonl --publications - --explain
  rtf match --queries rtf/examples/news_queries.jsonl --publications rtf/examples/news.nt \\
            --output-format sparql-json --with-metadata --workers 2
"""


def _fail(message: str, code: int = EXIT_INPUT) -> int:
    print(f"rtf: error: {message}", file=sys.stderr)
    return code


def read_text(path: str | Path | None, what: str) -> str:
    """The UTF-8 text of file `path` (None: stdin); an error names the line of a bad byte."""
    if path is None:
        data = sys.stdin.buffer.read()
        path = "<stdin>"
    else:
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise QueryFileError(f"cannot read {what} {path}: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise QueryFileError(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} "
                             f"at column {column})") from None


def progress(iterable, desc: str, total: int | None = None, unit: str = "it"):
    """A tqdm progress bar on stderr when stderr is a terminal; the iterable otherwise."""
    if not sys.stderr.isatty():
        return iterable
    from tqdm import tqdm
    return tqdm(iterable, desc=desc, total=total, unit=unit, file=sys.stderr, leave=False)


def peak_rss_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def current_rss_mb() -> float:
    """Resident memory now (after a collection), for the index's RSS growth."""
    import gc

    import psutil
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


# ----------------------------------------------------------------- loading


class QueryFileError(RtfError):
    pass


#: The fields of a JSON Lines query record that are not metadata.
RECORD_FIELDS = ("id", "query", "subscriber")


def load_queries(path: str | Path, problems: list[str] | None = None) -> list[dict]:
    """Query records {"id", "query", "subscriber", "metadata", "line"} from a JSON Lines or .rq file.

    The fields of a JSON line other than id, query and subscriber are its
    metadata. A bad line raises `QueryFileError` naming the file and line;
    with a `problems` list it is reported there instead, and skipped.
    """
    path = Path(path)
    text = read_text(path, "queries file")
    if path.suffix == ".rq":
        return [{"id": path.stem, "query": text, "subscriber": None, "metadata": {}, "line": 1}]
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(_query_record(line, f"{path}:{n}", n))
        except QueryFileError as e:
            if problems is None:
                raise
            problems.append(str(e))
    return records


def _query_record(line: str, where: str, n: int) -> dict:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise QueryFileError(f"{where}: not a JSON object ({e.msg})") from None
    except RecursionError:
        raise QueryFileError(f"{where}: JSON nested too deeply") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("query"), str):
        raise QueryFileError(f'{where}: expected {{"id": ..., "query": "..."}}')
    for name in RECORD_FIELDS:
        if not _is_unicode(rec.get(name)):
            raise QueryFileError(f'{where}: "{name}" is not valid Unicode '
                                 "(a lone surrogate \\ud800-\\udfff)")
    return {"id": str(rec["id"]) if rec.get("id") is not None else None,
            "query": rec["query"], "subscriber": rec.get("subscriber"), "line": n,
            "metadata": {k: v for k, v in rec.items() if k not in RECORD_FIELDS}}


def _is_unicode(value) -> bool:
    """False for a string holding a lone surrogate (JSON allows "\\ud800"), which no file can hold."""
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def register_all(engine, records, source: str, problems: list[str] | None = None) -> None:
    """Register every record, or none: the first bad query is an error naming it.

    With a `problems` list, a bad query or a duplicate id is reported there
    (file, line, id and reason) and skipped; the others are registered.
    """
    for rec in progress(records, "registering", unit="q"):
        try:
            engine.register(rec["query"], rec["id"], rec["subscriber"], rec.get("metadata"))
        except QueryError as e:
            error = QueryFileError(f"{source}:{rec['line']}: query {rec['id']!r}: {e}")
        except (ValueError, TypeError) as e:  # a duplicate id, a subscriber that is not a string
            error = QueryFileError(f"{source}:{rec['line']}: {e}")
        else:
            continue
        if problems is None:
            raise error from None
        problems.append(str(error))


def report_skipped_queries(problems: list[str]) -> None:
    """Tell on stderr each query that --skip-invalid left out, and why."""
    for problem in problems:
        print(f"rtf: skipped query: {problem}", file=sys.stderr)


def match_line(pub_id: str, m) -> str:
    """One output line: exactly ``json.dumps({"publication", "query", "subscriber",
    "bindings"}, ensure_ascii=False)``, written by hand (5x faster: a publication
    makes thousands of matches, and most of them share their bindings)."""
    subscriber = "null" if m.subscriber is None else _json_string(m.subscriber)
    return (f'{{"publication": {_json_string(pub_id)}, "query": {_json_string(m.query_id)}, '
            f'"subscriber": {subscriber}, "bindings": {_json_bindings(m)}}}')


_json_string = json.encoder.encode_basestring  # what json.dumps uses with ensure_ascii=False
_BINDINGS: dict = {}  # solutions -> their JSON array; star queries share their solutions


def _json_bindings(m) -> str:
    if m.is_ask:
        return "[]"
    key = m.solutions
    found = _BINDINGS.get(key)
    if found is None:
        if len(_BINDINGS) >= 4096:
            _BINDINGS.clear()
        found = _BINDINGS[key] = "[" + ", ".join(
            "{" + ", ".join(f"{_json_string(v)}: {_json_string(t)}" for v, t in sol) + "}"
            for sol in sorted(key)) + "]"
    return found


# ---------------------------------------------------------------- commands


def cmd_check(args) -> int:
    """Check one query (argument, .rq file or stdin), or every query of a JSON Lines file."""
    from rtf.explain import never_match_reasons
    from rtf.parser import parse_query

    if args.file and Path(args.file).suffix != ".rq":
        return check_query_file(args.file)
    if args.file:
        text = read_text(args.file, "query file")
    elif args.query is not None:
        text = args.query
    else:
        text = read_text(None, "query")
    try:
        q = parse_query(text)
    except QueryError as e:
        print(f"invalid query: {e}", file=sys.stderr)
        if e.line is not None:
            lines = text.splitlines()
            if 0 < e.line <= len(lines):
                print("  " + lines[e.line - 1], file=sys.stderr)
                print("  " + " " * max((e.column or 1) - 1, 0) + "^", file=sys.stderr)
        return 1
    print(q.describe())
    for reason in never_match_reasons(q):
        print(f"warning: {reason}", file=sys.stderr)
    return 0


def check_query_file(path: str) -> int:
    """Check every query of a JSON Lines file: each bad one (bad JSON, invalid
    query, duplicate id) is reported with its line, id and reason on stderr,
    each query that can never match gets a warning; exit 1 if any was bad."""
    from rtf.engine import Engine
    from rtf.explain import never_match_reasons

    problems: list[str] = []
    records = load_queries(path, problems)
    engine = Engine("naive")  # the cheapest index; registering runs every check
    register_all(engine, records, path, problems)
    warnings = 0
    for rec in records:
        if rec["id"] is None or rec["id"] not in engine:
            continue
        for reason in never_match_reasons(engine.get(rec["id"]).query):
            print(f"{path}:{rec['line']}: query {rec['id']!r}: warning: {reason}", file=sys.stderr)
            warnings += 1
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{path}: {len(engine)} valid queries, {len(problems)} invalid, {warnings} warning(s)")
    return EXIT_INPUT if problems else 0


# ------------------------------------------------------------------ output

OUTPUT_FORMATS = ("jsonl", "sparql-json")


def make_renderer(args, engine):
    """The function that turns one publication's matches into output text.

    The default (JSON Lines, no extras) is `match_line` alone; the extras
    (--with-metadata, --explain, sparql-json) are other functions chosen
    here once, so that they cost nothing when not asked for.
    """
    with_metadata = getattr(args, "with_metadata", False)
    explain = getattr(args, "explain", False)
    if getattr(args, "output_format", "jsonl") == "sparql-json":
        def line(pub, m) -> str:
            return sparql_json_line(pub.id, m, engine.get(m.query_id))
    elif with_metadata or explain:
        def line(pub, m) -> str:
            return match_line(pub.id, m)
    else:
        return _render_plain

    def render(pub, found) -> str:
        out = []
        for m in found:
            text = line(pub, m)
            if with_metadata or explain:
                extra = {}
                if with_metadata:
                    extra["metadata"] = dict(engine.get(m.query_id).metadata)
                if explain:
                    extra["explain"] = m.explain(pub, engine)
                text = text[:-1] + ", " + json.dumps(extra, ensure_ascii=False)[1:]
            out.append(text + "\n")
        return "".join(out)
    return render


def _render_plain(pub, found) -> str:
    return "".join([match_line(pub.id, m) + "\n" for m in found])


def sparql_term(key: str) -> dict:
    """An N-Triples term as a SPARQL 1.1 Query Results JSON RDF term."""
    from rtf.terms import XSD_STRING, literal_parts
    if key.startswith("<"):
        return {"type": "uri", "value": key[1:-1]}
    if key.startswith("_:"):
        return {"type": "bnode", "value": key[2:]}
    parts = literal_parts(key)
    term = {"type": "literal", "value": parts.lexical}
    if parts.lang is not None:
        term["xml:lang"] = parts.lang
    elif parts.datatype != XSD_STRING:
        term["datatype"] = parts.datatype
    return term


def sparql_json(m, registered) -> dict:
    """A match as a SPARQL 1.1 Query Results JSON document (ASK: a boolean)."""
    if m.is_ask:
        return {"head": {}, "boolean": True}
    return {"head": {"vars": list(registered.query.projection)},
            "results": {"bindings": [{v: sparql_term(t) for v, t in sol}
                                     for sol in sorted(m.solutions)]}}


def sparql_json_line(pub_id: str, m, registered) -> str:
    """One output line of --output-format sparql-json: the results document
    plus "publication", "query" and "subscriber"."""
    doc = {"publication": pub_id, "query": m.query_id, "subscriber": m.subscriber}
    doc.update(sparql_json(m, registered))
    return json.dumps(doc, ensure_ascii=False)


# ------------------------------------------------------------------ matching


def cmd_match(args) -> int:
    """Register the queries, then write the matches of each publication."""
    from rtf.engine import DEFAULT_ALGORITHM, Engine, freeze_long_lived
    from rtf.reader import ReadStats, UnknownFormatError, read_publications

    t0 = time.perf_counter()
    if getattr(args, "index", None):  # a saved index: loaded, no query parsed
        from rtf.index_cli import load_index_engine
        rss_before = current_rss_mb()
        engine = load_index_engine(args.index, args)
        index_rss_mb = current_rss_mb() - rss_before
        args.algorithm = engine.algorithm
    else:
        args.algorithm = args.algorithm or DEFAULT_ALGORITHM
        engine = Engine(args.algorithm, taxonomy=args.taxonomy)
        problems: list[str] | None = [] if args.skip_invalid else None
        records = load_queries(args.queries, problems)
        rss_before = current_rss_mb()
        register_all(engine, records, args.queries, problems)
        index_rss_mb = current_rss_mb() - rss_before
        if problems:
            report_skipped_queries(problems)
        del records
    register_s = time.perf_counter() - t0
    freeze_long_lived()  # the index is long-lived: out of the collector's sight

    follow = getattr(args, "follow", None)
    sources = [follow] if follow else args.publications
    live = bool(follow) or "-" in sources  # a feed: each publication's matches at once
    render = make_renderer(args, engine)
    to_stdout = args.output in (None, "-")
    read_stats = ReadStats()
    publications = matches = 0
    filter_s = 0.0
    workers = getattr(args, "workers", 1) or 1
    with contextlib.nullcontext(sys.stdout) if to_stdout else atomic_output(args.output) as out:
        try:
            pubs = read_publications(sources, group_by=args.group_by, skip_invalid=args.skip_invalid,
                                     stats=read_stats, format=getattr(args, "format", None),
                                     follow=bool(follow), idle_timeout=getattr(args, "follow_timeout", None))
        except UnknownFormatError as e:  # worded for the command line
            raise UnknownFormatError(e.syntax, e.source, "--format nt|nq|ttl|trig|owl") from None
        if workers > 1:
            results = match_in_processes(engine, render, pubs, workers)
        else:
            results = _match_here(engine, render, progress(pubs, "matching", unit="pub"))
        for text, n_matches, seconds in results:
            filter_s += seconds
            publications += 1
            if text:
                out.write(text)
                if live:
                    out.flush()
            matches += n_matches
        out.flush()
    report_lost_input(read_stats)
    if args.stats:
        stats = {"algorithm": args.algorithm, "queries": len(engine), "publications": publications,
                 "triples": read_stats.triples, "skipped_lines": read_stats.skipped_lines,
                 "skipped_queries": len(problems or ()),
                 "breaks": [b.as_dict() for b in read_stats.breaks],
                 "register_s": round(register_s, 4),
                 "register_queries_per_s": round(len(engine) / register_s) if register_s else None,
                 "index_rss_mb": round(index_rss_mb, 1), "filter_s": round(filter_s, 4),
                 "publications_per_s": round(publications / filter_s, 1) if filter_s else None,
                 "filter_ms_per_publication": round(1000 * filter_s / publications, 4) if publications else None,
                 "matches": matches, "peak_rss_mb": round(peak_rss_mb(), 1), "workers": workers}
        print(json.dumps(stats), file=sys.stderr)
    return 0


#: Publications sent to a worker process at a time (amortises the pickling).
WORKER_BATCH = 32

_WORKER: dict = {}  # a worker process's engine and renderer, inherited through fork


def match_in_processes(engine, render, pubs, workers: int):
    """`_match_here`, spread over `workers` forked processes, results in input order.

    The processes are forked after the queries are registered, so each has the
    engine (loaded once, shared copy-on-write) without pickling it; this
    process reads the input and sends batches of publications.
    """
    import multiprocessing
    from itertools import islice

    _WORKER.update(engine=engine, render=render)
    context = multiprocessing.get_context("fork")
    batches = iter(lambda: [(p.id, p.triples) for p in islice(pubs, WORKER_BATCH)], [])
    with context.Pool(workers) as pool:
        for results in pool.imap(_match_batch, batches):
            yield from results


def _match_batch(batch: list) -> list:
    from rtf.publication import Publication

    engine, render = _WORKER["engine"], _WORKER["render"]
    results = []
    for pub_id, triples in batch:
        pub = Publication.__new__(Publication)  # checked when it was read
        pub.id, pub.triples = pub_id, triples
        results.extend(_match_here(engine, render, [pub]))
    return results


def _match_here(engine, render, pubs):
    """(output text, matches, filter seconds) of each publication, in this process."""
    for pub in pubs:
        t = time.perf_counter()
        found = engine.match(pub)
        seconds = time.perf_counter() - t
        yield (render(pub, found) if found else ""), len(found), seconds


def report_lost_input(read_stats) -> None:
    """Tell on stderr what --skip-invalid skipped: how many lines, the first, each break."""
    if read_stats.skipped_lines:
        first = f"; first: {read_stats.errors[0]}" if read_stats.errors else ""
        print(f"rtf: skipped {read_stats.skipped_lines} invalid line(s){first}", file=sys.stderr)
    for brk in read_stats.breaks:
        print(f"rtf: warning: {brk.error()}", file=sys.stderr)


def cmd_demo(args) -> int:
    """Run the example queries over the DBpedia sample, or the bundled example."""
    from rtf.datasets import ENV_VAR, dbpedia_files, dbpedia_ontology, data_dir

    examples = Path(__file__).resolve().parent / "examples"
    files = dbpedia_files()
    if files:
        queries = examples / "dbpedia_queries.jsonl"
        pubs = [str(f) for f in files]
        taxonomy = str(dbpedia_ontology())
        print(f"rtf demo: {len(files)} DBpedia sample files from {data_dir()}/dbpedia", file=sys.stderr)
    else:
        queries = examples / "news_queries.jsonl"
        pubs = [str(examples / "news.nt")]
        taxonomy = str(examples / "news_ontology.nt")
        print(f"rtf demo: the DBpedia sample was not found at {data_dir()}/dbpedia "
              f"(set {ENV_VAR} to the folder that holds dbpedia/); "
              f"running the bundled example {pubs[0]} instead", file=sys.stderr)
    ns = argparse.Namespace(queries=str(queries), publications=pubs, taxonomy=taxonomy,
                            algorithm=args.algorithm, group_by="subject", output=args.output,
                            stats=True, skip_invalid=False, follow=None, format=None)
    refuse_outputs_among_inputs(ns)
    return cmd_match(ns)


def build_parser() -> argparse.ArgumentParser:
    from rtf import __version__
    from rtf.engine import ALGORITHMS, DEFAULT_ALGORITHM

    parser = argparse.ArgumentParser(
        prog="rtf", description="Continuous full-text SPARQL queries over RDF publications.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:4:2]))
    parser.add_argument("--version", action="version", version=f"rtf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check", help="parse a query and print its decomposition",
                       description="Parse a query and print its decomposition into branches and tuple "
                                   "conjuncts; exit 1 with line and column if it is invalid.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog='examples:\n  rtf check \'ASK { ?a <http://ex/p> ?t FILTER ftcontains(?t, "rio") }\'\n'
                              '  rtf check -f rtf/examples/news_queries.jsonl\n\n'
                              'A query that can never match (ftcontains on a variable no triple '
                              'pattern binds to a literal) gets a warning on stderr.')
    p.add_argument("query", nargs="?", help="the query text (default: read -f FILE or stdin)")
    p.add_argument("-f", "--file", help="read the query from a .rq file, or check every query of a "
                                        "JSON Lines file (each bad one reported with line, id, reason)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("match", help="match publications against registered queries",
                       description="Register the queries, then stream the publications through the "
                                   "engine and write one JSON line per (publication, matching query).",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG_MATCH)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--queries", metavar="Q", help="JSON Lines of queries, or a .rq file")
    source.add_argument("--index", metavar="IDX",
                        help="a saved index (rtf index build): its queries, algorithm and taxonomy")
    inputs = p.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--publications", nargs="+", metavar="F",
                        help="N-Triples, Turtle or N-Quads files, plain, .gz or .bz2 ('-' for stdin)")
    inputs.add_argument("--follow", metavar="FILE",
                        help="read FILE as it grows, like `tail -f` (a live feed)")
    p.add_argument("--follow-timeout", type=positive_float, metavar="S",
                   help="with --follow: stop after S seconds without new data (default: never)")
    p.add_argument("--format", choices=("nt", "nq", "ttl", "trig", "owl"),
                   help="the RDF syntax of the input (default: from the file name; nt for stdin)")
    p.add_argument("--taxonomy", metavar="ONTO", help="ontology whose rdfs:subClassOf answers a/rdfs:subClassOf*")
    p.add_argument("--algorithm", choices=ALGORITHMS,
                   help=f"engine (default: {DEFAULT_ALGORITHM}, or the index's; naive is the slow reference)")
    p.add_argument("--group-by", default="subject", choices=("subject", "graph"),
                   help="a publication is a run of triples with one subject (default) or one named graph")
    p.add_argument("--output", metavar="FILE", help="write matches here (default or '-': stdout)")
    p.add_argument("--stats", action="store_true", help="print a JSON object of figures on stderr at the end")
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip malformed lines, and read a truncated or corrupt file up to where it "
                        "breaks, and skip bad queries and duplicate query ids, instead of "
                        "failing; report each on stderr (and in --stats)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS, default="jsonl",
                   help="jsonl (default, as below) or sparql-json: one SPARQL 1.1 Query Results "
                        "JSON document per line, plus publication, query and subscriber")
    p.add_argument("--with-metadata", action="store_true",
                   help='add "metadata": the extra fields of the query\'s JSON line')
    p.add_argument("--explain", action="store_true",
                   help='add "explain": per solution, the branch that matched and each '
                        "ftcontains with the literal, the character spans and words that satisfied it")
    p.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="match in N processes (the same output, in the same order)")
    p.set_defaults(func=cmd_match)

    p = sub.add_parser("demo", help="run the example queries on the DBpedia sample",
                       description="Run the example queries (rtf/examples/) over the DBpedia sample in "
                                   "$RTF_DATA_DIR/dbpedia (default ../shared/data/dbpedia), or over a "
                                   "small bundled example when the sample is absent.")
    p.add_argument("--algorithm", default=DEFAULT_ALGORITHM, choices=ALGORITHMS)
    p.add_argument("--output", metavar="FILE", help="write matches here (default: stdout)")
    p.set_defaults(func=cmd_demo)

    for name in ("workload", "bench", "index_cli", "server.command"):
        try:
            module = __import__(f"rtf.{name}", fromlist=["add_command"])
        except ImportError:
            continue
        if hasattr(module, "add_command"):
            module.add_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv`; return the exit status (see `rtf --help`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        refuse_outputs_among_inputs(args)
        return args.func(args)
    except BrokenPipeError:  # `rtf match ... | head`: the reader has all it wanted
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except OutputIsInputError as e:
        return _fail(str(e), EXIT_USAGE)
    except (RtfError, OSError) as e:
        return _fail(str(e))
    except (EOFError, zlib.error) as e:  # an archive read outside rtf.reader's guard
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


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's exit-time flush raises nothing."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
