"""The ``rtf`` command line.

    rtf check "ASK { ?s ?p ?o }"            show how a query decomposes
    rtf match --queries Q.jsonl --publications dump.nt.gz [...]
    rtf demo                                the example queries on the DBpedia sample
    rtf index build|info|add|remove         save queries once; rtf match --index IDX reuses them
    rtf gen-queries / rtf bench             workloads and the RTF paper's evaluation

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

from rtf.arguments import OutputIsInputError, atomic_output, refuse_outputs_among_inputs
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

example:
  rtf match --queries examples/queries.jsonl \\
            --publications ../shared/data/dbpedia/nordlys_dbpedia-2015-10_sample.nt.gz \\
            --taxonomy ../shared/data/dbpedia/ontology/dbpedia_2015-10.nt.gz --stats
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


def load_queries(path: str | Path) -> list[dict]:
    """Query records {"id", "query", "subscriber"} from a JSON Lines or .rq file."""
    path = Path(path)
    text = read_text(path, "queries file")
    if path.suffix == ".rq":
        return [{"id": path.stem, "query": text, "subscriber": None, "line": 1}]
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise QueryFileError(f"{path}:{n}: not a JSON object ({e.msg})") from None
        except RecursionError:
            raise QueryFileError(f"{path}:{n}: JSON nested too deeply") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("query"), str):
            raise QueryFileError(f'{path}:{n}: expected {{"id": ..., "query": "..."}}')
        for name in ("id", "query", "subscriber"):
            if not _is_unicode(rec.get(name)):
                raise QueryFileError(f'{path}:{n}: "{name}" is not valid Unicode '
                                     "(a lone surrogate \\ud800-\\udfff)")
        records.append({"id": str(rec["id"]) if rec.get("id") is not None else None,
                        "query": rec["query"], "subscriber": rec.get("subscriber"), "line": n})
    return records


def _is_unicode(value) -> bool:
    """False for a string holding a lone surrogate (JSON allows "\\ud800"), which no file can hold."""
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def register_all(engine, records, source: str) -> None:
    """Register every record, or none: the first bad query is an error naming it."""
    for rec in progress(records, "registering", unit="q"):
        try:
            engine.register(rec["query"], rec["id"], rec["subscriber"])
        except QueryError as e:
            where = f"{source}:{rec['line']}"
            raise QueryFileError(f"{where}: query {rec['id']!r}: {e}") from None
        except (ValueError, TypeError) as e:  # a duplicate id, a subscriber that is not a string
            raise QueryFileError(f"{source}:{rec['line']}: {e}") from None


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
    from rtf.parser import parse_query

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
    return 0


def cmd_match(args) -> int:
    from rtf.engine import Engine, freeze_long_lived
    from rtf.reader import ReadStats, read_publications

    t0 = time.perf_counter()
    if getattr(args, "index", None):  # a saved index: loaded, no query parsed
        from rtf.index_cli import load_index_engine
        rss_before = current_rss_mb()
        engine = load_index_engine(args.index, args)
        index_rss_mb = current_rss_mb() - rss_before
        args.algorithm = engine.algorithm
    else:
        args.algorithm = args.algorithm or "naive"
        engine = Engine(args.algorithm, taxonomy=args.taxonomy)
        records = load_queries(args.queries)
        rss_before = current_rss_mb()
        register_all(engine, records, args.queries)
        index_rss_mb = current_rss_mb() - rss_before
        del records
    register_s = time.perf_counter() - t0
    freeze_long_lived()  # the index is long-lived: out of the collector's sight

    to_stdout = args.output in (None, "-")
    read_stats = ReadStats()
    publications = matches = 0
    filter_s = 0.0
    with contextlib.nullcontext(sys.stdout) if to_stdout else atomic_output(args.output) as out:
        pubs = read_publications(args.publications, group_by=args.group_by,
                                 skip_invalid=args.skip_invalid, stats=read_stats)
        for pub in progress(pubs, "matching", unit="pub"):
            t = time.perf_counter()
            found = engine.match(pub)
            filter_s += time.perf_counter() - t
            publications += 1
            if found:
                out.write("".join([match_line(pub.id, m) + "\n" for m in found]))
            matches += len(found)
        out.flush()
    report_lost_input(read_stats)
    if args.stats:
        stats = {"algorithm": args.algorithm, "queries": len(engine), "publications": publications,
                 "triples": read_stats.triples, "skipped_lines": read_stats.skipped_lines,
                 "breaks": [b.as_dict() for b in read_stats.breaks],
                 "register_s": round(register_s, 4),
                 "register_queries_per_s": round(len(engine) / register_s) if register_s else None,
                 "index_rss_mb": round(index_rss_mb, 1), "filter_s": round(filter_s, 4),
                 "publications_per_s": round(publications / filter_s, 1) if filter_s else None,
                 "filter_ms_per_publication": round(1000 * filter_s / publications, 4) if publications else None,
                 "matches": matches, "peak_rss_mb": round(peak_rss_mb(), 1)}
        print(json.dumps(stats), file=sys.stderr)
    return 0


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
                            stats=True, skip_invalid=False)
    refuse_outputs_among_inputs(ns)
    return cmd_match(ns)


def build_parser() -> argparse.ArgumentParser:
    from rtf.engine import ALGORITHMS

    parser = argparse.ArgumentParser(
        prog="rtf", description="Continuous full-text SPARQL queries over RDF publications.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:4:2]))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check", help="parse a query and print its decomposition",
                       description="Parse a query and print its decomposition into branches and tuple "
                                   "conjuncts; exit 1 with line and column if it is invalid.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog='example:\n  rtf check \'ASK { ?a <http://ex/p> ?t FILTER ftcontains(?t, "rio") }\'')
    p.add_argument("query", nargs="?", help="the query text (default: read -f FILE or stdin)")
    p.add_argument("-f", "--file", help="read the query from a .rq file")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("match", help="match publications against registered queries",
                       description="Register the queries, then stream the publications through the "
                                   "engine and write one JSON line per (publication, matching query).",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG_MATCH)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--queries", metavar="Q", help="JSON Lines of queries, or a .rq file")
    source.add_argument("--index", metavar="IDX",
                        help="a saved index (rtf index build): its queries, algorithm and taxonomy")
    p.add_argument("--publications", required=True, nargs="+", metavar="F",
                   help="N-Triples, Turtle or N-Quads files, plain, .gz or .bz2 ('-' for stdin)")
    p.add_argument("--taxonomy", metavar="ONTO", help="ontology whose rdfs:subClassOf answers a/rdfs:subClassOf*")
    p.add_argument("--algorithm", choices=ALGORITHMS, help="engine (default: naive, or the index's)")
    p.add_argument("--group-by", default="subject", choices=("subject", "graph"),
                   help="a publication is a run of triples with one subject (default) or one named graph")
    p.add_argument("--output", metavar="FILE", help="write matches here (default or '-': stdout)")
    p.add_argument("--stats", action="store_true", help="print a JSON object of figures on stderr at the end")
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip malformed lines, and read a truncated or corrupt file up to where it "
                        "breaks, instead of failing; report both on stderr (and in --stats)")
    p.set_defaults(func=cmd_match)

    p = sub.add_parser("demo", help="run the example queries on the DBpedia sample",
                       description="Run the example queries (rtf/examples/) over the DBpedia sample in "
                                   "$RTF_DATA_DIR/dbpedia (default ../shared/data/dbpedia), or over a "
                                   "small bundled example when the sample is absent.")
    p.add_argument("--algorithm", default="rtfs", choices=ALGORITHMS)
    p.add_argument("--output", metavar="FILE", help="write matches here (default: stdout)")
    p.set_defaults(func=cmd_demo)

    for name in ("workload", "bench", "index_cli"):
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
