"""The W3C SPARQL query-evaluation tests: the suite read from its manifests, run against an engine.

The suite (every ``mf:QueryEvaluationTest`` of the W3C SPARQL 1.0 and 1.1
test suites, with their files) stays outside the repository, in
``../shared/w3c-sparql-tests`` beside the checkout; ``RTF_W3C_TESTS``
overrides it. Its README says how a test maps onto rtf: the data graph is
one publication, the query one registered query, the match its answer.

This module reads the manifests (`load_tests`: each test with its query,
data, expected result, ``mf:requires`` and approval, and its *category*:
in the contract, needing an optional W3C feature, or outside the contract
because it needs named graphs, SERVICE, DESCRIBE or an entailment regime),
reads the expected results as rtf writes terms (canonical N-Triples
strings, made by pyoxigraph, as every publication's are), and compares
them with what an engine answers (`compare`). Running a test is
`rtf.bench.w3c_run.run`; ``benchmarks/w3c_report.py`` prints the table and
``tests/test_w3c.py`` keeps it from going backwards.

Relative IRIs resolve as the W3C harnesses (Oxigraph's, Jena's) resolve
them: the query against its own file's IRI under the suite's base
(``BASE <...>`` put in front of a query that has no BASE), each data file
against its own IRI.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pyoxigraph as ox

ENV_VAR = "RTF_W3C_TESTS"

#: The base IRI of each suite's folders (the README's "Provenance").
SUITES = {"sparql10": "http://www.w3.org/2001/sw/DataAccess/tests/data-r2/",
          "sparql11": "http://www.w3.org/2009/sparql/docs/tests/data-sparql11/"}

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
QT = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#"
DAWGT = "http://www.w3.org/2001/sw/DataAccess/tests/test-dawg#"
RS = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

IN_CONTRACT = "in contract"
REQUIRES = "requires"
OUT_OF_CONTRACT = "out of contract"

#: A solution: its (variable, term) pairs sorted by variable, unbound variables left out.
Row = tuple[tuple[str, str], ...]
Triple = tuple[str, str, str]
#: An answer: ASK's boolean, SELECT's rows, or CONSTRUCT's triples.
Answer = bool | Sequence[Row] | frozenset[Triple]


def tests_dir() -> Path:
    """The suite's folder: $RTF_W3C_TESTS, else ../shared/w3c-sparql-tests from the checkout or cwd."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    candidates = [Path(__file__).resolve().parents[3] / "shared" / "w3c-sparql-tests",
                  Path.cwd().parent / "shared" / "w3c-sparql-tests"]
    return next((c.resolve() for c in candidates if c.is_dir()), candidates[0])


def available(root: Path | None = None) -> bool:
    root = root or tests_dir()
    return any((root / suite).is_dir() for suite in SUITES)


def missing_message() -> str:
    """What to tell a user (or a skipped test) when the suite is absent."""
    return f"W3C SPARQL tests not found under {tests_dir()} (set {ENV_VAR})"


# --- the query text, read without parsing it -------------------------------------------------

# Comments, strings and IRIs, blanked out before looking for keywords.
_OPAQUE = re.compile(r'#[^\n]*|"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\''
                     r'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|<[^<>"{}|^`\\\x00-\x20]*>')
# A keyword: not part of a prefixed name (``:graph``, ``graph:x``) nor of a variable (``?graph``).
_KEYWORD = re.compile(r"(?<![\w:?$])(SELECT|ASK|CONSTRUCT|DESCRIBE|FROM|GRAPH|SERVICE|BASE|ORDER(?=\s+BY)"
                      r"|[{}])(?![\w:])", re.IGNORECASE)
_FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")


@dataclass(frozen=True)
class QueryShape:
    """What the harness needs to know of a query before running it."""

    form: str                  #: SELECT, ASK, CONSTRUCT or DESCRIBE
    keywords: frozenset[str]   #: which of FROM, GRAPH, SERVICE, BASE it uses
    ordered: bool              #: an ORDER BY of the whole query (not of a sub-query)


def query_shape(text: str) -> QueryShape:
    """The form of the query `text`, the dataset keywords it uses, and whether its result is ordered."""
    form, keywords, ordered, depth = None, set(), False, 0
    for match in _KEYWORD.finditer(_OPAQUE.sub(" ", text)):
        word = match.group(1).upper()
        if word in "{}":
            depth += 1 if word == "{" else -1
        elif word in _FORMS:
            form = form or word
        elif word == "ORDER":
            ordered = ordered or depth == 0
        else:
            keywords.add(word)
    return QueryShape(form or "SELECT", frozenset(keywords), ordered)


# --- the manifests ----------------------------------------------------------------------------

@dataclass(frozen=True)
class W3CTest:
    """One ``mf:QueryEvaluationTest``, as its manifest describes it."""

    id: str                        #: "sparql10/basic/base-prefix-1": suite, folder, name
    iri: str                       #: the test's IRI in its manifest
    query_file: Path
    query_iri: str                 #: the query file's IRI: the base of its relative IRIs
    data_files: tuple[Path, ...]   #: qt:data (the default graph; several are merged)
    graph_data: tuple[Path, ...]   #: qt:graphData (named graphs: outside the contract)
    result_file: Path
    requires: tuple[str, ...]      #: mf:requires, by local name ("XsdDateOperations")
    approval: str | None           #: dawgt:approval, by local name ("Approved", "Proposed")
    shape: QueryShape
    out_of_contract: str | None    #: why the test is outside the contract, or None

    @property
    def folder(self) -> str:
        return self.id.rpartition("/")[0]

    @property
    def form(self) -> str:
        return self.shape.form

    @property
    def refused_constructs(self) -> frozenset[str]:
        """The constructs of this query that spec section 5 refuses (FROM, GRAPH, SERVICE, DESCRIBE)."""
        found = self.shape.keywords & {"FROM", "GRAPH", "SERVICE"}
        return found | {"DESCRIBE"} if self.form == "DESCRIBE" else found

    @property
    def check(self) -> str | None:
        """How an rtf engine is held to this test: its "answer", its "refusal" of the query
        (naming a refused construct), or None (outside the contract, yet nothing to refuse:
        named graphs given as data only, or an entailment regime)."""
        if not self.out_of_contract:
            return "answer"
        return "refusal" if self.refused_constructs else None

    @property
    def category(self) -> str:
        if self.out_of_contract:
            return OUT_OF_CONTRACT
        return REQUIRES if self.requires else IN_CONTRACT

    def file_iri(self, path: Path) -> str:
        """The IRI of one of this test's files under its suite's base."""
        return f"{SUITES[self.id.split('/')[0]]}{path.parent.name}/{path.name}"

    def query_text(self) -> str:
        """The query as it is registered: the file, after ``BASE <its IRI>`` unless it has a BASE."""
        text = self.query_file.read_text(encoding="utf-8")
        return text if "BASE" in self.shape.keywords else f"BASE <{self.query_iri}>\n{text}"


def out_of_contract_reason(folder: str, shape: QueryShape, graph_data: bool, service_data: bool) -> str | None:
    """Why a test is outside the contract (spec section 5: the default graph only), or None."""
    if folder.endswith("/entailment"):
        return "entailment regime"
    if shape.form == "DESCRIBE":
        return "DESCRIBE"
    for keyword, reason in (("SERVICE", "SERVICE"), ("FROM", "FROM / FROM NAMED"), ("GRAPH", "GRAPH")):
        if keyword in shape.keywords:
            return reason
    if service_data:
        return "SERVICE"
    if graph_data:
        return "qt:graphData (named graphs)"
    return None


class _Graph:
    """A parsed Turtle or RDF/XML file, looked up by subject and predicate (IRIs as plain strings)."""

    def __init__(self, quads: Iterable[ox.Quad]):
        self.edges: dict[object, dict[str, list]] = {}
        for q in quads:
            self.edges.setdefault(q.subject, {}).setdefault(q.predicate.value, []).append(q.object)

    def objects(self, subject, predicate: str) -> list:
        return self.edges.get(subject, {}).get(predicate, [])

    def value(self, subject, predicate: str):
        found = self.objects(subject, predicate)
        return found[0] if found else None

    def items(self, head) -> Iterable:
        """The members of the RDF list `head`."""
        while head is not None and head != ox.NamedNode(RDF + "nil"):
            yield self.value(head, RDF + "first")
            head = self.value(head, RDF + "rest")


def _manifest_tests(manifest: Path, suite: str) -> Iterable[W3CTest]:
    folder = manifest.parent.name
    base = f"{SUITES[suite]}{folder}/"
    graph = _Graph(ox.parse(path=manifest, format=ox.RdfFormat.TURTLE, base_iri=base + "manifest.ttl"))

    def local(node) -> Path:  # a file's IRI under the suite's base -> the file here
        return manifest.parent.parent / node.value.removeprefix(SUITES[suite])

    entries = [e for edges in graph.edges.values() for lst in edges.get(MF + "entries", ())
               for e in graph.items(lst)]
    for entry in entries:
        if ox.NamedNode(MF + "QueryEvaluationTest") not in graph.objects(entry, RDF + "type"):
            continue
        action = graph.value(entry, MF + "action")
        query_file = local(graph.value(action, QT + "query"))
        shape = query_shape(query_file.read_text(encoding="utf-8"))
        graph_data = tuple(local(g) for g in graph.objects(action, QT + "graphData"))
        approval = graph.value(entry, DAWGT + "approval")
        yield W3CTest(
            id=f"{suite}/{folder}/{entry.value.rpartition('#')[2]}",
            iri=entry.value,
            query_file=query_file,
            query_iri=graph.value(action, QT + "query").value,
            data_files=tuple(local(d) for d in graph.objects(action, QT + "data")),
            graph_data=graph_data,
            result_file=local(graph.value(entry, MF + "result")),
            requires=tuple(sorted(r.value.rpartition("#")[2] for r in graph.objects(entry, MF + "requires"))),
            approval=approval.value.rpartition("#")[2] if approval is not None else None,
            shape=shape,
            out_of_contract=out_of_contract_reason(f"{suite}/{folder}", shape, bool(graph_data),
                                                   bool(graph.objects(action, QT + "serviceData"))))


@cache
def load_tests(root: Path | None = None) -> tuple[W3CTest, ...]:
    """Every evaluation test listed in the ``mf:entries`` of a manifest under `root`, by id.

    A test a manifest describes but does not list (SPARQL 1.0's withdrawn
    ``dawg-optional-filter-005-simplified``) is not part of the suite.
    """
    root = root or tests_dir()
    tests = [t for suite in SUITES for manifest in sorted((root / suite).glob("*/manifest.ttl"))
             for t in _manifest_tests(manifest, suite)]
    return tuple(sorted(tests, key=lambda t: t.id))


# --- data and expected results ------------------------------------------------------------------

_RDF_FORMATS = {".ttl": ox.RdfFormat.TURTLE, ".nt": ox.RdfFormat.N_TRIPLES, ".rdf": ox.RdfFormat.RDF_XML}


def _parse_file(path: Path, iri: str, rename_blank_nodes: bool = False) -> list[ox.Quad]:
    return list(ox.parse(path=path, format=_RDF_FORMATS[path.suffix], base_iri=iri,
                         rename_blank_nodes=rename_blank_nodes))


@cache
def data_quads(test: W3CTest) -> tuple[ox.Quad, ...]:
    """The default graph: every qt:data file, each against its own IRI (blank nodes kept apart)."""
    several = len(test.data_files) > 1
    return tuple(q for f in test.data_files for q in _parse_file(f, test.file_iri(f), several))


def as_row(pairs: Iterable[tuple[str, str]]) -> Row:
    """A solution's (variable, term) pairs as a `Row`."""
    return tuple(sorted(pairs))


def results_answer(results: ox.QueryBoolean | ox.QuerySolutions | ox.QueryTriples) -> Answer:
    """The answer pyoxigraph's results hold, whether a file's (SPARQL XML, JSON, TSV) or a query's."""
    if isinstance(results, ox.QueryBoolean):
        return bool(results)
    if isinstance(results, ox.QuerySolutions):
        names = [v.value for v in results.variables]
        return tuple(as_row((name, str(term)) for name, term in zip(names, solution) if term is not None)
                     for solution in results)
    return frozenset((str(t.subject), str(t.predicate), str(t.object)) for t in results)


@cache
def expected_answer(test: W3CTest) -> Answer:
    """The expected result as rtf writes it: a bool, the rows (a tuple, in the file's order; by
    rs:index for a result set written as RDF), or the triples."""
    path = test.result_file
    if path.suffix in (".srx", ".srj", ".tsv"):
        return results_answer(ox.parse_query_results(
            path=path, format=ox.QueryResultsFormat.from_extension(path.suffix[1:])))
    graph = _Graph(_parse_file(path, test.file_iri(path)))
    result_set = next((s for s, edges in graph.edges.items()
                       if ox.NamedNode(RS + "ResultSet") in edges.get(RDF + "type", ())), None)
    if result_set is None:
        return frozenset((str(s), f"<{p}>", str(o)) for s, edges in graph.edges.items()
                         for p, objects in edges.items() for o in objects)
    boolean = graph.value(result_set, RS + "boolean")
    if boolean is not None:
        return boolean.value == "true"
    solutions = []
    for solution in graph.objects(result_set, RS + "solution"):
        index = graph.value(solution, RS + "index")
        row = as_row((graph.value(b, RS + "variable").value, str(graph.value(b, RS + "value")))
                   for b in graph.objects(solution, RS + "binding"))
        solutions.append((int(index.value) if index is not None else 0, row))
    return tuple(row for _, row in sorted(solutions, key=lambda s: s[0]))


# --- comparing answers -------------------------------------------------------------------------

def distinct(rows: Iterable[Row]) -> list[Row]:
    """The distinct rows, in the order of their first occurrence (as rtf reports them)."""
    return list(dict.fromkeys(rows))


def compare(expected: Answer, actual: Answer, ordered: bool = False) -> str | None:
    """None when `actual` is the answer `expected`, else a short description of the difference.

    Rows compare as sets of distinct rows (as lists when `ordered`),
    triples as sets; both up to a renaming of blank nodes, one renaming
    for the whole answer.
    """
    if isinstance(expected, bool) or isinstance(actual, bool):
        if expected is actual:
            return None
        return f"expected {_kind(expected)}, got {_kind(actual)}"
    if isinstance(expected, frozenset) != isinstance(actual, frozenset):
        return f"expected {_kind(expected)}, got {_kind(actual)}"
    if isinstance(expected, frozenset):
        if expected == actual or _isomorphic(_graph_lines(expected), _graph_lines(actual)):
            return None
        return _set_diff([_triple_text(t) for t in expected], [_triple_text(t) for t in actual], "triples")
    want, got = distinct(expected), distinct(actual)
    if (want == got) if ordered else (set(want) == set(got)):
        return None
    if _has_blank(want) and _has_blank(got) and _isomorphic(_row_lines(want, ordered), _row_lines(got, ordered)):
        return None
    if ordered and set(want) == set(got):
        return ("the same rows in another order: expected " + " ".join(map(_row_text, want[:6]))
                + " ..., got " + " ".join(map(_row_text, got[:6])) + " ...")
    return _set_diff([_row_text(r) for r in want], [_row_text(r) for r in got], "rows")


_NUMBERS = ("integer", "decimal", "float", "double")


def by_value(answer: Answer) -> Answer:
    """`answer` with each number written in one form per value and datatype.

    The W3C results write some numbers in another lexical form than an
    engine's (``"1050"^^xsd:double`` for 1.05E3, ``"6"^^xsd:decimal`` beside
    ``"2.0"^^xsd:decimal``): no one form passes them all. Jena's and Oxigraph's
    harnesses compare such literals by value; so does ours, after comparing by term.
    """
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, frozenset):
        return frozenset(tuple(map(_number_form, t)) for t in answer)
    return tuple(tuple((v, _number_form(t)) for v, t in row) for row in answer)


def _number_form(term: str) -> str:
    if not term.startswith('"') or not term.endswith(">"):
        return term
    lexical, _, datatype = term[1:].rpartition('"^^<')
    if datatype[:-1].rpartition("#")[2] not in _NUMBERS:
        return term
    try:
        value = Decimal(lexical.strip())
    except InvalidOperation:
        return term
    return f'"{value.normalize()}"^^<{datatype}'


def _kind(answer: Answer) -> str:
    if isinstance(answer, bool):
        return str(answer).lower()
    return f"{len(answer)} {'triples' if isinstance(answer, frozenset) else 'rows'}"


def _has_blank(rows: list[Row]) -> bool:
    return any(term.startswith("_:") for row in rows for _, term in row)


def _shown(term: str) -> str:
    return "_:*" if term.startswith("_:") else term  # a label means nothing across two answers


def _row_text(row: Row) -> str:
    return "{" + " ".join(f"?{v}={_shown(t)}" for v, t in row) + "}"


def _triple_text(triple: Triple) -> str:
    return " ".join(map(_shown, triple)) + " ."


def _set_diff(want: list[str], got: list[str], what: str, shown: int = 4) -> str:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    parts = [f"expected {len(want)} {what}, got {len(got)}"]
    for label, lines in (("missing", missing), ("unexpected", extra)):
        if lines:
            more = f" (+{len(lines) - shown} more)" if len(lines) > shown else ""
            parts.append(f"{label}: " + " ".join(lines[:shown]) + more)
    if not missing and not extra:
        parts.append("the same up to blank node labels, but no one renaming of them maps one onto the other")
    return "; ".join(parts)


# An answer as N-Triples, for pyoxigraph's canonicalisation (blank nodes renamed by the graph's shape).
_ROW = "<urn:rtf:w3c:row>"
_INDEX = "<urn:rtf:w3c:index>"


def _value(term: str) -> str:
    return "_:v" + term[2:] if term.startswith("_:") else term  # apart from the rows' own blank nodes


def _row_lines(rows: list[Row], ordered: bool) -> list[str]:
    lines = []
    for i, row in enumerate(rows):
        lines.append(f'_:r{i} {_ROW} "" .')
        if ordered:
            lines.append(f'_:r{i} {_INDEX} "{i}" .')
        lines.extend(f"_:r{i} <urn:rtf:w3c:var:{v}> {_value(t)} ." for v, t in row)
    return lines


def _graph_lines(triples: frozenset[Triple]) -> list[str]:
    return [" ".join(t) + " ." for t in triples]


def _isomorphic(a: list[str], b: list[str]) -> bool:
    if len(a) != len(b):
        return False
    datasets = []
    for lines in (a, b):
        dataset = ox.Dataset(ox.parse("\n".join(lines), ox.RdfFormat.N_TRIPLES))
        dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
        datasets.append(dataset)
    return datasets[0] == datasets[1]
