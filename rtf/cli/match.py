"""``rtf match`` (register queries, stream publications, write matches) and ``rtf demo``."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import time

from rtf.cli import summary
from rtf.cli.arguments import (
    UsageError,
    add_text_analysis_options,
    positive_float,
    positive_int,
    refuse_outputs_among_inputs,
    text_analysis_of,
)
from rtf.cli.logs import log, write_stats
from rtf.cli.streams import binary_stdout
from rtf.io.output import match_bytes, match_ids_bytes, match_line, sparql_json_line

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

output formats (--output-format; the same matches, in the same order, in each):
  jsonl        the lines above (default); --with-metadata and --explain add to them
  sparql-json  one SPARQL 1.1 Query Results JSON document per line, plus
               "publication", "query" and "subscriber"
  ids          one line per publication that matched, its id and the ids of the
               queries it matched, as Lucene Monitor answers:
               {"publication": "http://dbpedia.org/resource/X", "queries": ["q1", "q7"]}
  arrow        an Arrow IPC stream (stdout or a file; a pipe reads it as it comes):
               one record batch per group of publications (64K matches or so; each
               publication at once with --publications - or --follow), columns
               publication, query, subscriber (strings), bindings
               (list<map<string,string>>: the bindings above), triples (a CONSTRUCT's
               [subject, predicate, object] lists, else null): the schema of the
               Parquet the Spark jobs write (rtf.io.arrow_matches.arrow_match_schema)
  parquet      the same rows in a Parquet file: needs --output FILE (refused on stdout)
  --with-metadata and --explain are for jsonl and sparql-json (refused with the
  others); --workers N writes every format (the workers make the Arrow batches).

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
  like `tail -F` (until Ctrl-C, or --follow-timeout seconds without new data):
  FILE may not exist yet, and a rotated (renamed and recreated) or truncated
  FILE is followed, read again from its start. --flush-after S matches the
  publication under way after S seconds without new data, so a quiet feed's
  last publication is not kept waiting for the next subject.

--stats:
  one JSON object on stderr at the end, whatever -q says: register_s and
  register_queries_per_s (the registration, the parser's one-off build or
  load included), parser_build_s (that build, or the load of its tables from
  the cache) and register_queries_per_s_without_parser_build (what each
  further query costs), filter_s, publications_per_s, index_rss_mb, ...

several cores:
  --workers N first parses the queries in N processes while this one indexes
  them (rtf.io.parse_ahead: the same index), then forks N processes once the
  queries are registered (each has the
  engine without reloading it) and sends them batches of publications; the
  output is the one-process output, in the same order. Live feeds are best
  served by one process (a batch waits for its publications). In --stats,
  filter_s then sums the workers' times.

query files with bad queries:
  --skip-invalid also skips a bad query or a duplicate id, reporting each on
  stderr as "rtf: skipped query: Q:LINE: query 'id': reason"; `rtf check -f Q`
  lists them all without matching anything.

examples (from a checkout; the bundled example files):
  rtf match --queries examples/news_queries.jsonl \\
            --publications examples/news.nt \\
            --taxonomy examples/news_ontology.nt --stats
  tail -f feed.nt | rtf match --queries examples/news_queries.jsonl --publications - --explain
  rtf match --queries examples/news_queries.jsonl --publications examples/news.nt \\
            --output-format sparql-json --with-metadata --workers 2
  rtf match --queries examples/news_queries.jsonl --publications examples/news.nt \\
            --output-format arrow | python -c 'import sys, pyarrow as pa; \\
            print(pa.ipc.open_stream(sys.stdin.buffer).read_all())'
  rtf match --index q.idx --publications feed.nt.gz --output-format parquet --output m.parquet
"""



def add_command(sub) -> None:
    from rtf.engine import ALGORITHMS, DEFAULT_ALGORITHM

    p = sub.add_parser("match", help=summary("match"),
                       description="Register the queries, then stream the publications through the "
                                   "engine and write one JSON line per (publication, matching query).",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG_MATCH)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--queries", metavar="Q", help="JSON Lines of queries, or a .rq file")
    source.add_argument("--index", metavar="IDX",
                        help="a saved index (rtf index build): its queries, algorithm and taxonomy")
    inputs = p.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--publications", nargs="+", metavar="F",
                        help="N-Triples, Turtle or N-Quads files, plain, .gz or .bz2 ('-' for stdin; "
                             "gzip and bzip2 are also told by their first bytes)")
    inputs.add_argument("--follow", metavar="FILE",
                        help="read FILE as it grows, like `tail -F` (a live feed; FILE may appear "
                             "later, and may be rotated or truncated)")
    p.add_argument("--follow-timeout", type=positive_float, metavar="S",
                   help="with --follow: stop after S seconds without new data (default: never)")
    p.add_argument("--flush-after", type=positive_float, metavar="S",
                   help="with --publications - or --follow: match the publication read so far after "
                        "S seconds without new data, without waiting for the next subject (one whose "
                        "triples come on later is then another publication of the same id)")
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
                   help="jsonl (default, as below); sparql-json: one SPARQL 1.1 Query Results "
                        "JSON document per line, plus publication, query and subscriber; ids: one "
                        "line per matched publication, its id and the matching query ids; arrow: an "
                        "Arrow IPC stream (for pipes); parquet: a Parquet file (needs --output FILE). "
                        "See 'output formats' below")
    p.add_argument("--with-metadata", action="store_true",
                   help='add "metadata": the extra fields of the query\'s JSON line')
    p.add_argument("--explain", action="store_true",
                   help='add "explain": per solution, the branch that matched and each '
                        "ftcontains with the literal, the character spans and words that satisfied it")
    p.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="parse the queries, then match, in N processes (the same output, in the same order)")
    add_text_analysis_options(p)
    p.set_defaults(func=cmd_match)

    p = sub.add_parser("demo", help=summary("demo"),
                       description="Run the example queries (examples/) over the DBpedia sample in\n"
                                   "$RTF_DATA_DIR/dbpedia (default ../shared/data/dbpedia), or over a\n"
                                   "small bundled example when the sample is absent. It is\n"
                                   "`rtf match --stats` with the example files: the matches on\n"
                                   "stdout, the figures on stderr.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n"
                              "  rtf demo                              the default engine\n"
                              "  rtf demo --algorithm naive            the brute-force reference: "
                              "the same matches, slower\n"
                              "  rtf demo --algorithm rtfm --output m.jsonl\n"
                              "  RTF_DATA_DIR=path/to/data rtf demo    the sample in path/to/data/dbpedia")
    p.add_argument("--algorithm", default=DEFAULT_ALGORITHM, choices=ALGORITHMS,
                   help=f"the engine (default {DEFAULT_ALGORITHM}); all four give the same "
                        "matches, and --stats' filter_s compares their speed")
    p.add_argument("--output", metavar="FILE", help="write matches here (default: stdout)")
    p.set_defaults(func=cmd_demo)



OUTPUT_FORMATS = ("jsonl", "sparql-json", "ids", "arrow", "parquet")
#: The formats written by `rtf.io.arrow_matches.MatchBatchWriter` (binary, column by column).
ARROW_FORMATS = ("arrow", "parquet")


def refuse_output_options(args) -> None:
    """One line for an option the output format cannot carry (exit 2)."""
    output_format = getattr(args, "output_format", "jsonl")
    extras = [f"--{name.replace('_', '-')}" for name in ("with_metadata", "explain")
              if getattr(args, name, False)]
    if extras and output_format not in ("jsonl", "sparql-json"):
        raise UsageError(f"{' and '.join(extras)} {'are' if len(extras) > 1 else 'is'} for the JSON "
                         f"lines of jsonl and sparql-json output, not --output-format {output_format}")
    if output_format == "parquet" and args.output in (None, "-"):
        raise UsageError("--output-format parquet needs --output FILE (a Parquet file is read "
                         "from its end, not from a pipe); --output-format arrow streams to stdout")


def make_renderer(args, engine):
    """The function that turns one publication's matches into its output lines, UTF-8.

    The default (JSON Lines, no extras) is `match_bytes` alone; the extras
    (--with-metadata, --explain, sparql-json) are other functions chosen
    here once, so that they cost nothing when not asked for.
    """
    with_metadata = getattr(args, "with_metadata", False)
    explain = getattr(args, "explain", False)
    output_format = getattr(args, "output_format", "jsonl")
    if output_format in ARROW_FORMATS:
        return _gathered
    if output_format == "ids":
        return _render_ids
    if output_format == "sparql-json":
        def line(pub, m) -> str:
            return sparql_json_line(pub.id, m, engine.get(m.query_id))
    elif with_metadata or explain:
        def line(pub, m) -> str:
            return match_line(pub.id, m)
    else:
        return _render_plain

    def render(pub, found) -> bytes:
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
        return "".join(out).encode()
    return render


def _gathered(pub, found) -> tuple:
    """The Arrow formats' piece: the publication's matches as they are, for `MatchBatchWriter`
    (gathered column by column, here or, with --workers, in the worker: `_match_batch`)."""
    return pub.id, found


def _render_ids(pub, found) -> bytes:
    return match_ids_bytes(pub.id, found)


def _render_plain(pub, found) -> bytes:
    if hasattr(found, "query_ids"):  # Engine.match's Matches: rendered from its lists
        return match_bytes(pub.id, found)
    return "".join([match_line(pub.id, m) + "\n" for m in found]).encode()


def cmd_match(args) -> int:
    """Register the queries, then write the matches of each publication."""
    from rtf.bench.memory import current_rss_mb, peak_rss_mb
    from rtf.engine import DEFAULT_ALGORITHM, Engine
    from rtf.io.files import atomic_output
    from rtf.io.progress import read_progress
    from rtf.io.reader import ReadStats, read_publications
    from rtf.io.sources import UnknownFormatError

    follow = getattr(args, "follow", None)
    flush_after = getattr(args, "flush_after", None)
    workers = getattr(args, "workers", 1) or 1  # (rtf demo has no --workers)
    if flush_after and not (follow or "-" in args.publications):
        raise UsageError("--flush-after is for a live feed: --publications - or --follow FILE")
    if flush_after and workers > 1:
        raise UsageError("--flush-after needs --workers 1: the workers match publications in batches")
    refuse_output_options(args)
    t0 = time.perf_counter()
    parser_build_s = 0.0  # (the query parser is not even imported with --index: ~0.05 s)
    problems: list[str] | None = None  # the queries --skip-invalid left out (none from an index)
    if getattr(args, "index", None):  # a saved index: loaded, no query parsed
        from rtf.cli.index import load_index_engine
        rss_before = current_rss_mb()
        engine = load_index_engine(args.index, args)
        index_rss_mb = current_rss_mb() - rss_before
        args.algorithm = engine.algorithm
    else:
        from rtf.io.queries import load_queries, register_all, report_skipped_queries
        from rtf.parser.grammar import lark_parser, parser_builds
        built_before = parser_builds.seconds
        args.algorithm = args.algorithm or DEFAULT_ALGORITHM
        # sparql-json and --explain read a query's model for each of its matches: kept, not
        # parsed again from its text each time (`rtf.matching.registered.TextRecord`).
        keep = getattr(args, "output_format", None) == "sparql-json" or bool(getattr(args, "explain", False))
        engine = Engine(args.algorithm, taxonomy=args.taxonomy, text_analysis=text_analysis_of(args),
                        keep_models=keep)
        problems = [] if args.skip_invalid else None
        # Read whole before registering: records read one by one between the index's
        # objects left ~25 MB of holes in the index's memory at 100K queries (rtf index
        # build, which exits after saving, reads them one by one for a lower peak).
        records = load_queries(args.queries, problems)
        lark_parser(positions=False)  # the one-off build (or load) of the parser, before the workers fork
        rss_before = current_rss_mb()
        register_all(engine, records, args.queries, problems, workers=workers)
        index_rss_mb = current_rss_mb() - rss_before
        if problems:
            report_skipped_queries(problems)
        del records
        parser_build_s = parser_builds.seconds - built_before
    register_s = time.perf_counter() - t0
    if not getattr(args, "index", None):  # (an index was warned of when it was built)
        _warn_of_the_taxonomy(engine)
    # The index is long-lived: out of the collector's sight (`freeze_long_lived`, but
    # its collection is the one current_rss_mb has just made: what was freed since,
    # the query records, held no cycle, and a second full collection found nothing
    # in 1.6 s at 100K queries, counted in run_s).
    gc.freeze()

    if follow and not os.path.exists(follow):
        log.info(f"rtf: {follow} does not exist yet: waiting for it (--follow)")
    sources = [follow] if follow else args.publications
    live = bool(follow) or "-" in sources  # a feed: each publication's matches at once
    render = make_renderer(args, engine)
    to_stdout = args.output in (None, "-")
    read_stats = ReadStats()
    publications = matches = 0
    filter_s = 0.0
    # Bytes, written to the binary file under the text layer: no encoding of the whole text.
    with contextlib.nullcontext(binary_stdout()) if to_stdout else atomic_output(args.output, encoding=None) as out, \
            _writer(args, out, live) as sink:
        try:
            pubs = read_publications(sources, group_by=args.group_by, skip_invalid=args.skip_invalid,
                                     stats=read_stats, format=getattr(args, "format", None),
                                     follow=bool(follow), idle_timeout=getattr(args, "follow_timeout", None),
                                     flush_after=flush_after)
        except UnknownFormatError as e:  # worded for the command line
            raise UnknownFormatError(e.syntax, e.source, "--format nt|nq|ttl|trig|owl") from None
        if workers > 1:
            results = match_in_processes(engine, render, pubs, workers)
        else:
            results = _match_here(engine, render, read_progress(pubs, read_stats, None if live else sources, "matching"))
        for text, n_matches, seconds in results:
            filter_s += seconds
            publications += 1
            if text:
                sink.write(text)
                if live:
                    out.flush()
            matches += n_matches
    run_s = time.perf_counter() - t0 - register_s  # reading, matching, writing
    report_lost_input(read_stats)
    if args.stats:
        stats = {"algorithm": args.algorithm, "queries": len(engine), "publications": publications,
                 "triples": read_stats.triples, "skipped_lines": read_stats.skipped_lines,
                 "skipped_queries": len(problems or ()),
                 "breaks": [b.as_dict() for b in read_stats.breaks],
                 "register_s": round(register_s, 4),
                 "register_queries_per_s": round(len(engine) / register_s) if register_s else None,
                 # the one-off build (or load from its cache) of the query parser, and the
                 # registration's speed without it: what each further query costs
                 "parser_build_s": round(parser_build_s, 4),
                 "register_queries_per_s_without_parser_build": (
                     round(len(engine) / (register_s - parser_build_s))
                     if register_s > parser_build_s else None),
                 "index_rss_mb": round(index_rss_mb, 1), "filter_s": round(filter_s, 4),
                 "publications_per_s": round(publications / filter_s, 1) if filter_s else None,
                 "run_s": round(run_s, 4),
                 "run_publications_per_s": round(publications / run_s, 1) if run_s else None,
                 "filter_ms_per_publication": round(1000 * filter_s / publications, 4) if publications else None,
                 "matches": matches, "peak_rss_mb": round(peak_rss_mb(), 1), "workers": workers,
                 "output_format": getattr(args, "output_format", "jsonl")}
        # Indexed value tests, and the residual predicate evaluations made and saved by
        # sharing (counted in this process: with --workers, in the workers, so not here).
        engine_stats = engine.stats()
        stats.update({k: engine_stats[k] for k in ("value_tests", "filter_evaluations",
                                                     "filter_evaluations_shared") if k in engine_stats})
        write_stats(stats)
    return 0


#: Publications sent to a worker process at a time, at most (amortises the pickling) ...
WORKER_BATCH = 32
#: ... and the output bytes a batch aims at: a batch whose publications make large outputs
#: (JSON Lines of thousands of matches each, ~1.4 MB a publication at 100K paper queries) is
#: made smaller, down to one publication, so that the batches in flight (sent ahead, or
#: done and waiting for their turn) hold a few MB each, not ~45 (`match_in_processes`).
WORKER_BATCH_BYTES = 1 << 20
#: Batches sent ahead per worker (the input is read as far as that, no further).
WORKER_AHEAD = 4

_WORKER: dict = {}  # a worker process's engine and renderer, inherited through fork


@contextlib.contextmanager
def _writer(args, out, live: bool):
    """What the output pieces are written to: `out` itself for the formats of lines,
    an Arrow stream or Parquet file on it (`MatchBatchWriter`) for the others. The
    matches gathered are written, and the stream ended, also when the run stops on a
    bad input (as the lines before it are), but not after the output failed."""
    output_format = getattr(args, "output_format", "jsonl")
    if output_format not in ARROW_FORMATS:
        yield out
        out.flush()
        return
    from rtf.io.arrow_matches import MatchBatchWriter

    if not hasattr(out, "fileno"):  # a stand-in stdout that takes text alone (a StringIO)
        raise UsageError(f"--output-format {output_format} writes bytes: the standard output takes text only")
    sink = MatchBatchWriter(out, output_format, live=live)
    try:
        yield sink
    except BaseException:
        with contextlib.suppress(Exception):  # (the error that stopped the run is the one told)
            sink.close()
            out.flush()
        raise
    sink.close()
    out.flush()


def _warn_of_the_taxonomy(engine) -> None:
    """The queries' a/rdfs:subClassOf* without a taxonomy, or on classes it lacks
    (`rtf.matching.explain.TaxonomyReport`: one line per kind, on stderr)."""
    from rtf.matching.explain import TaxonomyReport

    warnings = TaxonomyReport(engine.taxonomy)
    for registered in engine.queries():
        warnings.add(registered.id, registered.query)
    for line in warnings.lines():
        log.warning(f"rtf: warning: {line}")


def match_in_processes(engine, render, pubs, workers: int):
    """`_match_here`, spread over `workers` forked processes, results in input order.

    The processes are forked after the queries are registered, so each has the
    engine (loaded once, shared copy-on-write) without pickling it; this
    process reads the input and sends batches of publications, a few ahead
    of the results it writes. `rtf.errors.WorkerLostError` if a worker ends
    abruptly (the lines written so far are those of the publications before).
    What each worker would make for itself when first needed and never change
    (the columns of ids its renderer reads: `Engine.before_fork`) is made once, before.
    """
    from itertools import islice

    from rtf.io.processes import forked_pool

    _WORKER.update(engine=engine, render=render)
    engine.before_fork({_render_ids: "ids", _render_plain: "jsonl", _gathered: "arrow"}.get(render))
    gc.freeze()  # (what it made: out of the collector's sight, as the index)
    size = 1  # publications a batch: fitted to the output bytes of the batches before it

    def batches():
        while batch := [(p.id, p.triples) for p in islice(pubs, size)]:
            yield batch

    with forked_pool(workers) as pool:
        for batch, results in pool.ordered_map(_match_batch, batches(), WORKER_AHEAD * workers):
            made = sum(_output_bytes(piece) for piece, _, _ in results)
            size = max(1, min(WORKER_BATCH, WORKER_BATCH_BYTES * len(batch) // max(made, 1)))
            yield from results


def _output_bytes(piece) -> int:
    """The size of a worker's output piece: lines (bytes) or an Arrow record batch."""
    return len(piece) if isinstance(piece, (bytes, str)) else getattr(piece, "nbytes", 0)


def _match_batch(batch: list) -> list:
    from rtf.io.publication import Publication

    engine, render = _WORKER["engine"], _WORKER["render"]
    results = []
    for pub_id, triples in batch:
        pub = Publication.__new__(Publication)  # checked when it was read
        pub.id, pub.triples = pub_id, triples
        results.extend(_match_here(engine, render, [pub]))
    if render is _gathered and results:
        # The batch's matches as one record batch, made here (sent back as Arrow buffers,
        # not as matches), with the first publication; the others' pieces are empty.
        from rtf.io.arrow_matches import batch_of

        pieces = [piece for piece, _, _ in results if piece]
        results = [(b"", n, seconds) for _, n, seconds in results]
        if pieces:
            results[0] = (batch_of(pieces), *results[0][1:])
    return results


def _match_here(engine, render, pubs):
    """(output lines in UTF-8, matches, filter seconds) of each publication, in this process."""
    for pub in pubs:
        t = time.perf_counter()
        found = engine.match(pub)
        seconds = time.perf_counter() - t
        yield (render(pub, found) if found else b""), len(found), seconds


def report_lost_input(read_stats) -> None:
    """Tell on stderr what --skip-invalid skipped: how many lines, the first, each break."""
    if read_stats.skipped_lines:
        first = f"; first: {read_stats.errors[0]}" if read_stats.errors else ""
        log.warning(f"rtf: skipped {read_stats.skipped_lines} invalid line(s){first}")
    for brk in read_stats.breaks:
        log.warning(f"rtf: warning: {brk.error()}")


def cmd_demo(args) -> int:
    """Run the example queries over the DBpedia sample, or the bundled example."""
    from rtf.io.datasets import (
        ENV_VAR,
        data_dir,
        dbpedia_files,
        dbpedia_ontology,
        examples_dir,
    )

    examples = examples_dir()
    files = dbpedia_files()
    if files:
        queries = examples / "dbpedia_queries.jsonl"
        pubs = [str(f) for f in files]
        taxonomy = str(dbpedia_ontology())
        log.info(f"rtf demo: {len(files)} DBpedia sample files from {data_dir()}/dbpedia")
    else:
        queries = examples / "news_queries.jsonl"
        pubs = [str(examples / "news.nt")]
        taxonomy = str(examples / "news_ontology.nt")
        log.warning(f"rtf demo: the DBpedia sample was not found at {data_dir()}/dbpedia "
                    f"(set {ENV_VAR} to the folder that holds dbpedia/); "
                    f"running the bundled example {pubs[0]} instead")
    ns = argparse.Namespace(queries=str(queries), publications=pubs, taxonomy=taxonomy,
                            algorithm=args.algorithm, group_by="subject", output=args.output,
                            stats=True, skip_invalid=False, follow=None, format=None)
    refuse_outputs_among_inputs(ns)
    return cmd_match(ns)
