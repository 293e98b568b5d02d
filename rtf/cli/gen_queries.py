"""``rtf gen-queries``: a query workload generated from publications (`rtf.bench.workload`)."""

from __future__ import annotations

import json
from dataclasses import asdict

from rtf.bench.workload import (
    COMMON_WORD_SHARE,
    FULLTEXT_WORD_SHARE,
    MIXES,
    Mix,
    iter_queries,
    named_mix,
    write_jsonl,
)
from rtf.bench.shapes import FAMILIES as SHAPES
from rtf.cli import summary
from rtf.cli.arguments import between, positive_int
from rtf.cli.logs import log
from rtf.errors import RtfError

_MIX_HELP = {
    "max_tuples": "most tuples in one query",
    "max_terms": "most conjunctive terms in one full-text constraint",
    "constant": "an IRI object is kept as a constant",
    "phrase": "a term is a two-word phrase from a real text",
    "near": "two terms are joined by ftnear",
    "ftor": "two terms are joined by ftor",
    "ftnot": "a term is negated (ftand ftnot)",
    "prefix": "a term becomes a prefix term (word*)",
    "wildcard": "a predicate or object becomes *",
    "value_filter": "a typed or tagged literal gets a value filter",
    "taxonomy": "a type tuple becomes a/rdfs:subClassOf* on a superclass (needs --taxonomy)",
    "local_words": "a term is drawn from the modelled publication's own text",
    "distinct_predicates": "a query's tuples have distinct properties (rdf:type aside)",
    "project_all": "a query projects all its variables (otherwise only ?s)",
    "rare_class": "a query asks ?s a C for the most specific class of a typed publication",
    "informative_words": "a term is a word of the tuple's own text found in at most "
                         f"{COMMON_WORD_SHARE:.0%}% of the publications",  # %%: argparse formats help
    "fulltext_only": "a query is full text alone: ?s p ?o FILTER ftcontains(?o, ...)",
    "max_word_share": "no word found in more than this share of the publications is drawn",
    "v3_share": "a query becomes a SPARQL 1.1 (version 3) query around its star: aggregates, "
                "paths, MINUS, EXISTS, BIND, VALUES, sub-queries, CONSTRUCT... (0: the base "
                "mix's queries themselves)",
}
assert set(_MIX_HELP) == set(Mix.field_names()) - {"ft_pr"}


_percent = between(0, 100, "a percentage")
_COUNTS = ("max_tuples", "max_terms")  # the other mix fields are probabilities
_probability = between(0, 1, "a probability")


def add_command(sub) -> None:
    import argparse

    p = sub.add_parser(
        "gen-queries", help=summary("gen-queries"),
        description="Generate continuous queries from the classes, properties and words of the "
                    "given publications (RTF paper, section 4), as JSON Lines for rtf match.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz "
               "-n 10000 --ft-pr 50 --seed 0 -o queries.jsonl\n"
               "  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz "
               "-n 100000 --selective -o selective.jsonl\n"
               "  rtf gen-queries --publications data.nt -n 100 --all-operators -o q.jsonl\n\n"
               "--selective: star queries with ?s a C on the publication's most specific class,\n"
               "1-3 other distinct properties, IRI objects constant half of the time, and 1-3\n"
               "conjunctive words of the tuple's own text found in at most "
               f"{COMMON_WORD_SHARE:.0%} of the publications;\n"
               "about 2 % of the queries match each DBpedia publication (the default mix: 11 %).\n\n"
               "--mix fulltext: ?s p ?o FILTER ftcontains(?o, ...) with 1-3 terms (ftand mostly,\n"
               "some ftor and ftnear, two-word phrases, prefixes), words drawn from the\n"
               "publications' word multiset (a Zipf law) leaving out those found in more than\n"
               f"{FULLTEXT_WORD_SHARE:.0%} of the publications; about 1.5 % of the queries match each abstract:\n"
               "  rtf gen-queries --publications ../shared/data/dbpedia/*abstracts.nt.gz "
               "-n 100000 --mix fulltext -o fulltext.jsonl\n\n"
               "--mix sparql11: the selective queries, --v3-share of them (default 0.2) rewritten\n"
               "around the same star into SPARQL 1.1 queries beyond the version-2 fragment\n"
               "(GROUP BY with aggregates and HAVING, MINUS, [NOT] EXISTS, ^p and p+ paths, BIND,\n"
               "VALUES, sub-SELECTs, CONSTRUCT, ORDER BY/LIMIT, nested OPTIONAL, projection\n"
               "expressions); --v3-share 0 gives the same base queries, all version 2:\n"
               "  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz "
               "-n 100000 --mix sparql11 -o sparql11.jsonl\n"
               "  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz "
               "-n 100000 --mix sparql11 --v3-share 0 -o v2only.jsonl\n\n"
               "--mix values: DBpedia-style typed publications of ten classes (integers, decimals,\n"
               "doubles, dates, dateTimes, tagged labels; a few ill-typed, NaN or INF on purpose)\n"
               "and queries ?s a C ; p ?v FILTER(...) with comparisons, ranges, IN, year(),\n"
               "month(), lang(), datatype(): about 10 % of the queries hold structurally for a\n"
               "publication and 4 % pass their FILTERs:\n"
               "  rtf gen-queries --mix values -n 100000 --write-publications values.nt -o values.jsonl\n\n"
               "shape families (rtf.bench.shapes; the shape matrix of docs/benchmarks.md):\n"
               f"  {', '.join(SHAPES)}.\n"
               "Each models its queries on the publications of its kind and draws their predicates,\n"
               "classes, values and words with their real frequencies; --write-publications writes\n"
               "the publications it is matched against as N-Quads, one graph per publication (the\n"
               "chains' publications hold several subjects; read them with rtf match --group-by graph);\n"
               "--ft-pr is paper-dbpedia's FT_pr:\n"
               "  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz -n 100000 "
               "--mix value-star --write-publications value-star.nq -o value-star.jsonl")
    p.add_argument("--publications", nargs="+", metavar="F",
                   help="RDF files whose classes, properties and words the queries are made of "
                        "(N-Triples, Turtle, N-Quads; plain, .gz or .bz2), read whole into memory; "
                        "match the queries against the same files or others like them")
    p.add_argument("-n", "--count", type=positive_int, default=1000, help="number of queries (default 1000)")
    p.add_argument("--ft-pr", type=_percent, default=50,
                   help="percent of literal-valued tuples with ftcontains: FT_pr (default 50)")
    p.add_argument("--seed", type=int, default=0, help="the same seed gives the same queries (default 0)")
    p.add_argument("--taxonomy", metavar="ONTO", help="ontology for a/rdfs:subClassOf* tuples")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--all-operators", action="store_true",
                      help="mix in phrases, ftnear, ftor, ftnot, prefixes, wildcards, value filters, "
                           "taxonomy")
    kind.add_argument("--selective", action="store_true",
                      help="the selective workload (Mix.selective): few queries match each "
                           "publication, as with real subscriptions; see below")
    kind.add_argument("--mix", choices=sorted([*MIXES, "values", *SHAPES]), dest="mix_name",
                      help="a named workload: paper (the default), selective (as --selective), "
                           "fulltext (full-text-only queries, as a search engine stores them; see below), "
                           "sparql11 (selective, a share of them SPARQL 1.1 queries; see below) "
                           "or values (typed publications it generates itself, with --write-publications, "
                           "and queries whose selectivity lies in FILTER comparisons; see below) "
                           "or a shape family (value-star, chain, ...: see below)")
    p.add_argument("--write-publications", metavar="FILE",
                   help="with --mix values: write the generated publications here (N-Triples); "
                        "with a shape family: the publications it is matched against (N-Quads)")
    p.add_argument("--publication-count", type=positive_int, default=2000, metavar="N",
                   help="with --mix values: how many publications to generate (default 2000)")
    mix = p.add_argument_group(
        "operator mix", "probabilities from 0 to 1 (counts for max-*) that override the defaults; "
                        "the defaults are the paper's workload (rtf bench's): conjunctive terms only, "
                        "distinct properties per query")
    for name, help_ in _MIX_HELP.items():
        # "taxonomy" is also the ontology option: its probability is --taxonomy-pr.
        option = "--taxonomy-pr" if name == "taxonomy" else "--" + name.replace("_", "-")
        mix.add_argument(option, type=positive_int if name in _COUNTS else _probability, default=None,
                         metavar="N" if name in _COUNTS else "P", dest="mix_" + name,
                         help=f"{help_} (default {getattr(Mix.paper(), name)}"
                              # (--all-operators also asks distinct properties: see _cmd)
                              + "".join(f", --{flag} {getattr(other, name)}"
                                        for flag, other, base in (
                                            ("all-operators", Mix.all_operators(), Mix()),
                                            ("selective", Mix.selective(), Mix.paper()),
                                            ("mix sparql11", Mix.sparql11(), Mix.selective()))
                                        if getattr(other, name) != getattr(base, name))
                              + ")")
    p.add_argument("-o", "--output", required=True, help="JSON Lines file to write")
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from rtf.io.reader import read_publications
    from rtf.io.taxonomy import Taxonomy

    if args.mix_name == "values":
        return _values(args)
    if not args.publications:
        raise UsageError("--publications is required (the queries are made of their classes, "
                         "properties and words); only --mix values makes its own")

    ft_pr = args.ft_pr / 100
    if args.mix_name in SHAPES:
        return _shapes(args, ft_pr)
    if args.all_operators:
        mix = Mix.all_operators(ft_pr)
    else:
        mix = named_mix(args.mix_name or ("selective" if args.selective else "paper"), ft_pr)
    mix.distinct_predicates = 1.0
    for name in Mix.field_names():
        value = getattr(args, "mix_" + name, None)
        if name != "ft_pr" and value is not None:
            setattr(mix, name, value)
    taxonomy = Taxonomy.from_file(args.taxonomy) if args.taxonomy else None
    pubs = list(read_publications(args.publications))
    n = write_jsonl(iter_queries(pubs, args.count, args.seed, mix, taxonomy), args.output)
    log.info(f"rtf: wrote {n} queries to {args.output} ({json.dumps(asdict(mix))})")
    return 0


class UsageError(RtfError):
    """A combination of options that cannot work (exit 2 would be argparse's; this is one line, exit 1)."""


def _values(args) -> int:
    """``--mix values``: typed publications and value-predicate queries (`rtf.bench.values_workload`)."""
    from rtf.bench.values_workload import values_publications, values_queries
    from rtf.io.files import atomic_output

    if args.publications:
        raise UsageError("--mix values generates its publications: leave --publications out "
                         "(and name where to write them with --write-publications)")
    if not args.write_publications:
        raise UsageError("--mix values needs --write-publications FILE: the queries are made for "
                         "the publications it generates")
    pubs = values_publications(args.publication_count, args.seed)
    with atomic_output(args.write_publications) as f:
        for pub in pubs:
            f.writelines(f"{s} {p} {o} .\n" for s, p, o in pub.triples)
    n = write_jsonl(values_queries(args.count, args.seed), args.output)
    log.info(f"rtf: wrote {n} queries to {args.output} and {len(pubs)} publications to "
             f"{args.write_publications} (the values workload, seed {args.seed})")
    return 0


def _shapes(args, ft_pr: float) -> int:
    """A shape family's queries (`rtf.bench.shapes`) and, with --write-publications, its stream."""
    from rtf.bench.shape_sources import ShapeSources
    from rtf.bench.shapes import shape_queries, shape_stream, write_nquads
    from rtf.io.reader import read_publications

    sources = ShapeSources(read_publications(args.publications))
    n = write_jsonl(shape_queries(sources, args.mix_name, args.count, args.seed, ft_pr), args.output)
    written = ""
    if args.write_publications:
        pubs = write_nquads(shape_stream(sources, args.mix_name), args.write_publications)
        written = f" and {pubs} publications to {args.write_publications} (N-Quads: --group-by graph)"
    log.info(f"rtf: wrote {n} {args.mix_name} queries to {args.output}{written}")
    return 0
