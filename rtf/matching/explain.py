"""Why a query matched, and why a query can never match.

`explain_match` answers ``Match.explain()`` (``rtf match --explain``): for
each solution of a match, the branch of the query that matched (its number
as ``rtf check`` prints it; a ``UNION`` side or an ``||`` operand is a
branch of its own) and each satisfied ``ftcontains`` with its variable, the
literal and the character spans and words that satisfied it -- the
highlights Lucene Monitor gives, with SPARQL bindings on top.

Nothing of this is kept while matching: it is computed on demand from the
query, the publication and the solution's bindings, so explaining costs
nothing when it is not asked for. A branch is explained by a witness: the
first assignment of its tuple conjuncts to the publication's triples that
agrees with the solution's bindings and whose literals satisfy their
full-text expressions (residual filters are not re-evaluated: the engine
already checked them).

>>> from rtf.parser import parse_query
>>> from rtf.io.publication import Publication
>>> q = parse_query('SELECT ?a WHERE { ?a <http://ex/p> ?t FILTER ftcontains(?t, "rio*") }')
>>> pub = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"Games in Rio"')])
>>> explain_solution(q, pub, {"a": "<http://ex/a>"})["ftcontains"][0]["hits"]
[{'operator': 'prefix', 'query': '"rio*"', 'spans': [[9, 12]], 'words': ['Rio']}]

`never_match_reasons` is what ``rtf check`` warns about: a query whose
every branch tests with ``ftcontains`` a variable that no triple pattern
binds to a literal (unbound, or bound only as a subject or predicate).
`taxonomy_warnings` is what every registration warns about: an
``a/rdfs:subClassOf*`` where there is no taxonomy, or a class it lacks.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import fields, is_dataclass
from functools import lru_cache
from typing import NotRequired, TypedDict

from rtf.query.model import (And, FTAnd, FTExpr, FTNear, FTNot, FTOr, FTTerm, FtContains, Query,
                       TriplePattern, TupleConjunct)
from rtf.query.terms import IRI, BlankNode, Literal, TypePath, Variable, Wildcard, is_literal, lexical_form
from rtf.query.analysis import TextAnalysis, word_of, word_places
from rtf.query.fields import is_mark, literal_origins, readable, term_variants
from rtf.query.text import (FullTextError, TextIndex, analysed, current_analysis, literal_text_index,
                            parse_ft_string, publication_fields)

__all__ = ["explain_match", "explain_solution", "ft_hits", "never_match_reasons", "query_warnings",
           "taxonomy_warnings", "TaxonomyReport", "Explanation", "FtContainsExplanation", "Hit"]


class Hit(TypedDict):
    """What satisfied one term, phrase, prefix or ``ftnear`` of an ``ftcontains``."""

    operator: str  # "term", "phrase", "prefix" or "ftnear"
    query: str  # as the query wrote it (its words casefolded)
    #: the terms it was matched as, when the engine's text analysis (stemming, stop
    #: words, ...) made them other than `query`'s words
    analysed: NotRequired[str]
    spans: list[list[int]]  # [start, end) of each occurrence, in characters of the literal
    words: list[str]  # the literal's text at each span
    pairs: NotRequired[list[list[list[int]]]]  # ftnear: the spans of each pair within reach


class FtContainsExplanation(TypedDict):
    """One satisfied ``ftcontains``: its variable, the literal it held, and the hits."""

    variable: str | None
    literal: str  # the N-Triples term
    ftcontains: str  # the full-text expression, as the engine reads it
    hits: list[Hit]


class Explanation(TypedDict):
    """One solution of a match explained (`Match.explain` gives one per solution)."""

    bindings: dict[str, str]
    branch: int | None  # the branch that matched, numbered as ``rtf check`` prints them
    ftcontains: list[FtContainsExplanation]



# ------------------------------------------------------------------ explain


def explain_match(match, publication, source) -> list[Explanation]:
    """The explanation of `match` (one entry per solution, in `Match.bindings` order).

    `source` is the `Engine` that made the match (its query and taxonomy are
    used), a `RegisteredQuery` or a `Query`.
    """
    query, virtual = _query_and_virtual(match.query_id, publication, source)
    # (a version-3 query is explained by its presearch branches: the ftcontains of its
    # required patterns; an ASK or CONSTRUCT match has no rows, so one entry)
    solutions = [{}] if match.is_ask or match.triples is not None else match.bindings
    with analysed(getattr(source, "text_analysis", None)), publication_fields(publication.triples):
        return [explain_solution(query, publication, bindings, virtual) for bindings in solutions]


def _query_and_virtual(query_id: str, publication, source) -> tuple[Query, list]:
    # Told apart by what they offer, not by class: the engine is a later stage.
    if hasattr(source, "taxonomy") and hasattr(source, "get"):  # an Engine
        virtual = source.taxonomy.expand(publication.triples)
        return source.get(query_id).query, virtual
    if isinstance(getattr(source, "query", None), Query):  # a RegisteredQuery
        source = source.query
    if not isinstance(source, Query):
        raise TypeError(f"explain needs the Engine, RegisteredQuery or Query, not {type(source).__name__}")
    return source, []


def explain_solution(query: Query, publication, bindings: dict[str, str],
                     virtual: Iterable = ()) -> Explanation:
    """One solution explained: {"bindings", "branch", "ftcontains": [...]}.

    `branch` is the 1-based number of the first branch with a witness (None
    if none was found, which the engine's answer rules out unless a
    taxonomy was needed and not given).
    """
    triples = list(publication.triples)
    virtual = list(virtual)
    analysis = current_analysis()
    written = _written_terms(query.text, analysis) if analysis is not None and query.text else {}
    for number, branch in enumerate(query.branches, 1):
        witness = _witness(branch.tuples, triples, virtual, dict(bindings))
        if witness is not None:
            return {"bindings": dict(bindings), "branch": number,
                    "ftcontains": [_ft_entry(t, o, written) for t, o in witness if t.fulltext is not None]}
    return {"bindings": dict(bindings), "branch": None, "ftcontains": []}


def _ft_entry(conjunct: TupleConjunct, literal: str, written: dict[FTTerm, FTTerm]) -> FtContainsExplanation:
    variable = conjunct.object
    assert conjunct.fulltext is not None
    return {"variable": str(variable) if isinstance(variable, Variable) else None,
            "literal": literal, "ftcontains": readable(str(conjunct.fulltext)),
            "hits": ft_hits(conjunct.fulltext, lexical_form(literal), written, literal)}


#: A string literal of a query: '...', "...", '''...''' or """...""" (escapes kept).
_STRING = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\''
                     r'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f"}


@lru_cache(maxsize=256)
def _written_terms(text: str, analysis: TextAnalysis) -> dict[FTTerm, FTTerm]:
    """Each full-text term of query `text` as `analysis` reads it -> as the query wrote it
    (its words casefolded, not analysed), found among the query's string literals; the first
    literal of a term wins when two read the same."""
    out: dict[FTTerm, FTTerm] = {}
    for found in _STRING.finditer(text):
        literal = found.group()
        quote = 3 if literal[:3] in ('"""', "'''") else 1
        value = _ESCAPE.sub(_unescaped, literal[quote:-quote])
        try:
            with analysed(analysis):
                term = parse_ft_string(value)
            with analysed(None):
                plain = parse_ft_string(value)
            out.setdefault(term, plain)
            with analysed(analysis):  # per field: each analysis's reading of it (`rtf.query.fields`)
                for variant in term_variants(term):
                    out.setdefault(variant, plain)
        except FullTextError:  # (not a full-text string: a plain literal of the query)
            continue
    return out


def _unescaped(escape: re.Match) -> str:
    code = escape.group(1)
    if code[0] in "uU" and len(code) > 1:
        return chr(int(code[1:], 16))
    return _ESCAPES.get(code, code)


def _name(term) -> str | None:
    if isinstance(term, Variable):
        return term.name
    if isinstance(term, BlankNode):
        return "_:" + term.name  # cannot clash with a variable's name
    return None


def _witness(tuples, triples, virtual, assignment) -> list | None:
    """The first [(conjunct, object key)] assigning every conjunct a triple (backtracking)."""
    if not tuples:
        return []
    first, rest = tuples[0], tuples[1:]
    source = virtual if isinstance(first.predicate, TypePath) else triples
    for triple in source:
        added = _unify(first, triple, assignment)
        if added is None:
            continue
        if first.fulltext is None or (
                is_literal(triple[2]) and literal_text_index(triple[2]).matches(first.fulltext)):
            tail = _witness(rest, triples, virtual, assignment)
            if tail is not None:
                return [(first, triple[2])] + tail
        for name in added:
            del assignment[name]
    return None


def _unify(conjunct: TupleConjunct, triple, assignment: dict) -> list[str] | None:
    """Bind the conjunct's variables to `triple` (names added), or None if it disagrees."""
    added = []
    for term, key in zip(conjunct.terms, triple):
        if isinstance(term, (Wildcard, TypePath)):
            continue
        name = _name(term)
        if name is None:
            ok = term.key == key
        elif name in assignment:
            ok = assignment[name] == key
        else:
            assignment[name] = key
            added.append(name)
            ok = True
        if not ok:
            for n in added:
                del assignment[n]
            return None
    return added


# --------------------------------------------------------------- highlights


def ft_hits(expr: FTExpr, text: str, written: dict[FTTerm, FTTerm] | None = None,
            literal: str | None = None) -> list[Hit]:
    """What satisfied `expr` in `text`: one entry per satisfied term, phrase,
    prefix or ``ftnear``, with the character spans [start, end) in `text` and
    the words there. A negation contributes nothing (an absence has no span).
    `written` maps a term as analysed to the query's own words (`_written_terms`); `literal`:
    the key whose text `text` is (per field, its fields' analyses)."""
    places = word_places(text)  # in the text as written (its words are read in NFC)
    analysis = current_analysis()
    origins = literal_origins(literal, [word_of(text[s:e]) for s, e in places])
    if origins is not None:  # per field
        places = [places[i] if places else (0, 0) for i in origins]
    elif isinstance(analysis, TextAnalysis):  # a term's span is the span of the word it comes from
        places = [places[i] for i in analysis.origins([word_of(text[s:e]) for s, e in places])]
    index = TextIndex.of(text) if literal is None else literal_text_index(literal)
    return list(_hits(expr, index, places, text, written or {}))


def _hits(expr: FTExpr, index: TextIndex, places, text, written: dict[FTTerm, FTTerm]) -> Iterator[Hit]:
    if isinstance(expr, FTTerm):
        starts = index.occurrences(expr)
        if starts and not is_mark(expr):
            yield _entry(_kind(expr), expr, [(p, p + len(expr.words) - 1) for p in starts],
                         places, text, written)
    elif isinstance(expr, (FTAnd, FTOr)):
        for operand in expr.operands:
            if index.matches(operand):
                yield from _hits(operand, index, places, text, written)
    elif isinstance(expr, FTNear):
        pairs = _near_pairs(expr, index)
        if pairs:
            entry = _entry("ftnear", expr, [w for pair in pairs for w in pair], places, text, written)
            entry["pairs"] = [[entry["spans"][2 * i], entry["spans"][2 * i + 1]]
                              for i in range(len(pairs))]
            yield entry
    elif not isinstance(expr, FTNot):
        raise TypeError(f"not a full-text expression: {expr!r}")


def _kind(term: FTTerm) -> str:
    if term.is_phrase:
        return "phrase"
    return "prefix" if term.words[0].prefix else "term"


def _entry(kind: str, expr: FTTerm | FTNear, word_ranges, places, text, written: dict[FTTerm, FTTerm]) -> Hit:
    """`word_ranges`: (first word, last word) positions; shown as character spans. The
    query's words are shown (``query``), and the terms matched too when they differ."""
    spans = [[places[a][0], places[b][1]] for a, b in word_ranges]
    if isinstance(expr, FTNear):
        as_written: FTTerm | FTNear = dataclasses.replace(
            expr, left=written.get(expr.left, expr.left), right=written.get(expr.right, expr.right))
    else:
        as_written = written.get(expr, expr)
    words = [text[s:e] for s, e in spans]
    if as_written == expr:
        return {"operator": kind, "query": str(expr), "spans": spans, "words": words}
    return {"operator": kind, "query": str(as_written), "analysed": readable(str(expr)), "spans": spans,
            "words": words}


def _near_pairs(e: FTNear, index: TextIndex) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Each (left occurrence, right occurrence) within the allowed distance, as word ranges."""
    left, right = index.occurrences(e.left), index.occurrences(e.right)
    nl, nr = len(e.left.words), len(e.right.words)
    pairs = []
    for first, n_first, second, n_second, swap in ((left, nl, right, nr, False),
                                                  (right, nr, left, nl, True)):
        if swap and e.ordered:
            break
        for a in first:
            j = bisect_left(second, a + n_first + e.min)
            while j < len(second) and second[j] <= a + n_first + e.max:
                pair = ((a, a + n_first - 1), (second[j], second[j] + n_second - 1))
                pairs.append(pair[::-1] if swap else pair)
                j += 1
    return sorted(set(pairs))


# --------------------------------------------------------------- never match


def query_warnings(query: Query) -> list[str]:
    """What ``rtf check`` and the server say of a query beyond its errors: why it can never
    match (`never_match_reasons`), or that it is evaluated for every publication (a
    version-3 query that requires no triple: spec section 5)."""
    if query.algebra is not None:
        if query.branches:
            return []
        return ["evaluated for every publication: its result can be non-empty without any "
                "triple (an aggregate without GROUP BY, VALUES or an empty group, a pattern "
                "only OPTIONAL, MINUS or NOT EXISTS, a zero-length path), so no index can "
                "skip it"]
    return never_match_reasons(query)


def never_match_reasons(query: Query) -> list[str]:
    """Why `query` can never match ([] if nothing is known against it).

    A branch is dead when one of its tuple conjuncts tests with
    ``ftcontains`` a variable that no triple pattern of the query binds to an
    object (an unbound variable, or one bound only as a subject or
    predicate, which are never literals); the query can never match when all
    its branches are dead.
    """
    if query.algebra is not None:
        return []  # (its algebra decides; the presearch joins full text only where it is bound)
    objects = {_name(p.object) for p in query.patterns} - {None}
    bound = {_name(t) for p in query.patterns for t in p.terms} - {None}
    reasons: dict[str, None] = {}
    for branch in query.branches:
        tests = [(t.object, t.fulltext) for t in branch.tuples if t.fulltext is not None]
        tests += [(f.var, f.ft) for f in _conjuncts(branch.residual) if isinstance(f, FtContains)]
        dead = []
        for variable, ft in tests:
            name = _name(variable)
            if name is None or name in objects:
                continue
            why = "no triple pattern binds it" if name not in bound else \
                "it is bound only as a subject or predicate, never to a literal"
            dead.append(f"ftcontains({variable}, {ft}) is never true: {why}")
        if not dead:
            return []
        reasons.update(dict.fromkeys(dead))
    return [r + "; the query can never match" for r in reasons]


def _conjuncts(exprs) -> Iterator:
    """The filters that must all hold: `exprs`, with each ``&&`` taken apart."""
    for e in exprs:
        if isinstance(e, And):
            yield from _conjuncts(e.operands)
        else:
            yield e


# ------------------------------------------------------------------ taxonomy


#: The warning of an ``a/rdfs:subClassOf*`` registered where there is no taxonomy.
NO_TAXONOMY = ("a/rdfs:subClassOf* without a taxonomy: `?x a/rdfs:subClassOf* C` holds only for "
               "resources typed C itself, not for those of C's subclasses; give the ontology that "
               "defines the classes (--taxonomy ONTO, Engine(taxonomy=...))")


def taxonomy_warnings(query: Query, taxonomy=None) -> list[str]:
    """What to warn about when `query` is registered on an engine with `taxonomy` (a
    `rtf.io.taxonomy.Taxonomy`; None or an empty one: no taxonomy) -- the one place that
    decides it, for ``rtf check``, ``rtf index build``/``add``, ``rtf match`` and the server.

    ``?x a/rdfs:subClassOf* C`` follows the taxonomy's ``rdfs:subClassOf``; without one
    it holds only where ``?x a C`` does, and a query written for subclasses silently
    matches less. With a taxonomy, a constant class it does not hold (a misspelt IRI, a
    class of another ontology) is the same trap.

    >>> from rtf.parser import parse_query
    >>> from rtf.io.taxonomy import Taxonomy
    >>> q = parse_query("ASK { ?x a/rdfs:subClassOf* <http://ex/Report> }")
    >>> print(*taxonomy_warnings(q))  # doctest: +ELLIPSIS
    a/rdfs:subClassOf* without a taxonomy: `?x a/rdfs:subClassOf* C` holds only for resources typed C ...
    >>> tax = Taxonomy.from_edges([("<http://ex/MatchReport>", "<http://ex/Report>")])
    >>> taxonomy_warnings(q, tax)
    []
    >>> taxonomy_warnings(parse_query("ASK { ?x a/rdfs:subClassOf* <http://ex/Reprot> }"), tax)
    ... # doctest: +ELLIPSIS
    ['<http://ex/Reprot> is not a class of the taxonomy: ...']
    """
    classes = type_path_classes(query)
    if not classes:
        return []
    if taxonomy is None or not len(taxonomy):
        return [NO_TAXONOMY]
    unknown = dict.fromkeys(c for c in classes if not isinstance(c, (Variable, BlankNode))
                            and str(c) not in taxonomy)
    return [f"{c} is not a class of the taxonomy: `a/rdfs:subClassOf* {c}` holds only for "
            "resources typed with it itself (a misspelt class, or one of another ontology?)"
            for c in unknown]


#: What holds no pattern: the walk below does not look inside.
_LEAVES = (str, int, float, bool, type(None), IRI, Literal, Variable, BlankNode, Wildcard, TypePath)


def type_path_classes(query: Query) -> list:
    """The objects of the query's ``a/rdfs:subClassOf*`` patterns, anywhere in it."""
    if query.algebra is None:  # (its patterns are every pattern of the WHERE clause)
        return [p.object for p in query.patterns if isinstance(p.predicate, TypePath)]
    found: list = []
    stack: list = [query.algebra]
    seen: set[int] = set()
    while stack:  # the algebra's dataclasses, their tuples, EXISTS patterns in expressions
        node = stack.pop()
        if isinstance(node, _LEAVES) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (tuple, list)):
            stack.extend(reversed(node))  # (popped in the order written)
        elif isinstance(node, TriplePattern):
            if isinstance(node.predicate, TypePath):
                found.append(node.object)
        else:
            names = _FIELDS.get(type(node))
            if names is None:
                kind = type(node)
                names = _FIELDS[kind] = tuple(f.name for f in reversed(fields(kind))) \
                    if is_dataclass(kind) else ()
            stack.extend(getattr(node, name) for name in names)
    return found


#: The fields of each dataclass of the algebra, last first (the walk pops them in order).
_FIELDS: dict[type, tuple[str, ...]] = {}


class TaxonomyReport:
    """`taxonomy_warnings` of many queries, one line per distinct warning with how many
    queries have it and the first `shown` ids (``rtf index build``, ``rtf match``): `add`
    each registered query, then read `lines`. It keeps no query, so a build of any size
    can feed it.

    >>> from rtf.parser import parse_query
    >>> q = parse_query("ASK { ?x a/rdfs:subClassOf* <http://ex/Report> }")
    >>> report = TaxonomyReport(None)
    >>> for query_id, query in [("a", q), ("b", q), ("c", parse_query("ASK { ?x a ?c }"))]:
    ...     report.add(query_id, query)
    >>> report.lines()  # doctest: +ELLIPSIS
    ["2 queries ('a', 'b'): a/rdfs:subClassOf* without a taxonomy: ..."]
    """

    def __init__(self, taxonomy=None, shown: int = 3):
        self.taxonomy, self.shown = taxonomy, shown
        self._seen: dict[str, tuple[list[int], list[str]]] = {}  # warning -> ([count], first ids)

    def add(self, query_id: str, query: Query) -> None:
        for warning in taxonomy_warnings(query, self.taxonomy):
            count, first = self._seen.setdefault(warning, ([0], []))
            count[0] += 1
            if len(first) < self.shown:
                first.append(query_id)

    def lines(self) -> list[str]:
        out = []
        for warning, ([count], first) in self._seen.items():
            named = ", ".join(map(repr, first)) + (f" and {count - len(first)} more"
                                                   if count > len(first) else "")
            out.append(f"{count} quer{'y' if count == 1 else 'ies'} ({named}): {warning}")
        return out
