"""What a query model read from a file must be before an engine takes it.

A saved index (`rtf.io.store`) is decoded into the frozen model classes of
`rtf.query.model` without the parser, so nothing the parser checks has been
checked: a file is data, and its checksum is no signature. Each value is
checked here as it is built -- every field of the type and range the
parser gives it (``FTNear.min`` a whole number no larger than ``max``, an
IRI one pyoxigraph accepts, a function with its arity) -- so that a hostile
or damaged file is refused at load with `ValueError`, never answered with a
TypeError at match time. A query's branches are not read from the file at
all: they are decomposed again from its patterns and filters
(`rtf.query.decompose`), so every engine answers the same query. Its
full-text words are not judged here, by a rule of this module's own: a
query's are checked against its text, by the functions that made them
(`rtf.io.term_checks`).
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import pyoxigraph as ox

from rtf.errors import IndexFileError
from rtf.io.taxonomy import Taxonomy
from rtf.query import model, terms
from rtf.query.analysis import FieldAnalysis, TextAnalysis, TextAnalysisError, analysis_from_dict
from rtf.query.decompose import decompose, decompose_group
from rtf.query.functions import FUNCTION_ARITY, XSD_CASTS

_NONE = type(None)
_TERMS = (terms.IRI, terms.Literal, terms.Variable, terms.BlankNode)
_EXPRESSIONS = (model.Compare, model.FtContains, model.Regex, model.Contains, model.LangMatches,
                model.EffectiveBoolean, model.In, model.And, model.Or, model.Not)
#: What a FILTER may use as a value: terms, lang(), calls, arithmetic, and booleans.
_OPERANDS = (terms.Variable, terms.BlankNode, terms.IRI, terms.Literal, model.Lang, model.Call,
             model.Arithmetic) + _EXPRESSIONS
_FULLTEXT = (model.FTTerm, model.FTAnd, model.FTOr, model.FTNot, model.FTNear)
_COMPARE_OPS = frozenset(("=", "!=", "<", "<=", ">", ">="))
_ARITHMETIC_OPS = frozenset("+-*/")


def _of(*classes):
    return lambda v: type(v) in classes


def _tuple_of(check, at_least: int = 0):
    return lambda v: type(v) is tuple and len(v) >= at_least and all(map(check, v))


def _name(v) -> bool:
    return type(v) is str and v != ""


def _count(v) -> bool:
    return type(v) is int and 0 <= v <= sys.maxsize


_checked_iris: set[str] = set()


def _iri(v) -> bool:
    if type(v) is not str:
        return False
    if v not in _checked_iris:
        try:
            ox.NamedNode(v)
        except (ValueError, TypeError):
            return False
        if len(_checked_iris) > 65536:
            _checked_iris.clear()
        _checked_iris.add(v)
    return True


_is_ft = _of(*_FULLTEXT)
_is_expr = _of(*_EXPRESSIONS)
_is_operand = _of(*_OPERANDS)
_optional_operand = _of(*_OPERANDS, _NONE)
_is_group = _of(model.GroupPattern)

#: class -> a check of each field, in the order of the dataclass's fields. A Query
#: has no `branches` here: they are computed (`query_with_branches`).
FIELD_CHECKS: dict[type, tuple] = {
    terms.IRI: (_iri,),
    terms.Literal: (_of(str), lambda v: v is None or _iri(v), _of(str, _NONE)),
    terms.Variable: (_name,),
    terms.BlankNode: (_name,),
    terms.Wildcard: (),
    terms.TypePath: (),
    model.FTWord: (_of(str), _of(bool)),  # which strings: `rtf.io.term_checks`
    model.FTTerm: (_tuple_of(_of(model.FTWord), 1),),
    model.FTAnd: (_tuple_of(_is_ft, 1),),
    model.FTOr: (_tuple_of(_is_ft, 1),),
    model.FTNot: (_is_ft,),
    model.FTNear: (_of(model.FTTerm), _of(model.FTTerm), _count, _count, _of(bool)),
    model.Lang: (_is_operand,),
    model.Call: (lambda v: v in FUNCTION_ARITY or v in XSD_CASTS or v in ("-", "+"),
                 _tuple_of(_is_operand)),
    model.Arithmetic: (lambda v: v in _ARITHMETIC_OPS, _is_operand, _is_operand),
    model.Compare: (lambda v: v in _COMPARE_OPS, _is_operand, _is_operand),
    model.FtContains: (_of(terms.Variable, terms.BlankNode), _is_ft),
    model.Regex: (_is_operand, _is_operand, _optional_operand),
    model.Contains: (_is_operand, _is_operand),
    model.LangMatches: (_is_operand, _is_operand),
    model.EffectiveBoolean: (_is_operand,),
    model.In: (_is_operand, _tuple_of(_is_operand), _of(bool)),
    model.And: (_tuple_of(_is_expr, 1),),
    model.Or: (_tuple_of(_is_expr, 1),),
    model.Not: (_is_expr,),
    model.GroupPattern: (_tuple_of(_of(model.TriplePattern)), _tuple_of(_is_expr),
                         _tuple_of(_tuple_of(_is_group, 1)), _tuple_of(_is_group)),
    model.TriplePattern: (_of(terms.IRI, terms.Variable, terms.BlankNode, terms.Wildcard),
                          _of(terms.IRI, terms.Variable, terms.Wildcard, terms.TypePath),
                          _of(*_TERMS, terms.Wildcard)),
    model.Query: (lambda v: v in ("SELECT", "ASK", "CONSTRUCT"), _tuple_of(_name), _of(bool),
                  _tuple_of(_of(model.TriplePattern)), _tuple_of(_is_expr), _of(str),
                  _of(model.GroupPattern, _NONE)),
}


def check_fields(cls: type, fields: list) -> None:
    """ValueError unless `fields` are what the parser could give a `cls`."""
    checks = FIELD_CHECKS.get(cls)
    if checks is None:
        raise ValueError(f"{cls.__name__} values are not stored in an index")
    if len(fields) != len(checks):
        raise ValueError(f"{cls.__name__} has {len(checks)} fields, not {len(fields)}")
    for check, value in zip(checks, fields):
        if not check(value):
            raise ValueError(f"a {cls.__name__} field is wrong: {_short(value)}")


def check_value(value) -> None:
    """ValueError for what the field checks cannot see: relations between fields."""
    cls = type(value)
    if cls is model.FTNear and value.min > value.max:
        raise ValueError(f"ftnear({value.min}, {value.max}): the minimum exceeds the maximum")
    if cls is model.Call:
        arity = 1 if value.name in XSD_CASTS or value.name in ("-", "+") else FUNCTION_ARITY[value.name]
        if len(value.args) != arity:
            raise ValueError(f"{value.name}() takes {arity} arguments, not {len(value.args)}")
    if cls is terms.Literal:
        if value.lang is not None and value.datatype is not None:
            raise ValueError("a literal with both a language tag and a datatype")
        if value.datatype == terms.RDF_LANGSTRING:
            raise ValueError("an rdf:langString literal without a language tag")
        key = value.key  # pyoxigraph's checks (language tags); ValueError if it refuses it
        if value.lang is not None and not key.endswith("@" + value.lang):
            raise ValueError(f"language tag {value.lang!r} is not in canonical (lower) case")


def query_with_branches(fields: list, memo: dict | None = None) -> model.Query:
    """The `Query` of the checked fields (all but `branches`), its branches
    decomposed again; ValueError when its parts disagree.

    `memo` (one per file) remembers the branches of each (patterns, filters,
    group) by identity: a file stores equal values once, so queries that
    differ only in their projection or text share them.
    """
    form, projection, distinct, patterns, filters, text, group = fields
    if form != "SELECT" and (projection or distinct):
        raise ValueError(f"an {form} query projects nothing")
    if not patterns and group is None:
        # A version-3 query: its text alone is stored; the engine parses it again
        # (`Engine.register_parsed`), under its text analysis.
        if not text:
            raise ValueError("a version-3 query without its text")
        return model.Query(form, projection, distinct, (), (), (), text, None)
    if form == "CONSTRUCT":
        raise ValueError("a CONSTRUCT query is a version-3 query: stored as its text")
    key = (id(patterns), id(filters), id(group))
    found = memo.get(key) if memo is not None else None
    if found is not None and found[0] is patterns and found[1] is filters and found[2] is group:
        branches = found[3]
    else:
        if group is None:
            branches = decompose(patterns, filters)
        else:
            flat_patterns, flat_filters = flattened(group)
            if (flat_patterns, flat_filters) != (patterns, filters):
                raise ValueError("the query's patterns and filters are not those of its group")
            branches = decompose_group(group)
        if memo is not None:  # the entry holds the values: their ids stay theirs
            memo[key] = (patterns, filters, group, branches)
    return model.Query(form, projection, distinct, patterns, filters, branches, text, group)


def flattened(group: model.GroupPattern) -> tuple[tuple, tuple]:
    """Every pattern and filter of `group`, required ones first (as the parser lists them)."""
    patterns, filters = list(group.patterns), list(group.filters)
    for part in [side for union in group.unions for side in union] + list(group.optionals):
        p, f = flattened(part)
        patterns += p
        filters += f
    return tuple(patterns), tuple(filters)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ------------------------------------------------------------------ a file's head and query records


class Head(NamedTuple):
    """The checked head of a saved index: what the engine is, and the model's class names."""

    algorithm: str
    max_solutions: int
    next_id: int
    taxonomy: Taxonomy
    classes: list
    #: The text analysis options as stored (a dict), or None, and as `TextAnalysis`.
    text_analysis: dict | None
    analysis: TextAnalysis | FieldAnalysis | None


#: The text rule of the stored words (head's "text_rule": spec section 5's); older files: refused.
TEXT_RULE = 3


def check_head(head, source: str) -> Head:
    """The `Head` of a file's head line (decoded JSON); `IndexFileError` for a field that is wrong."""
    def bad(what: str) -> IndexFileError:
        return IndexFileError(f"{source}: {what}")

    if type(head) is not dict:
        raise bad("the index's first line is not an object")
    algorithm = head.get("algorithm")
    if not isinstance(algorithm, str):
        raise bad(f"unknown algorithm {algorithm!r}")
    max_solutions = head.get("max_solutions")
    if type(max_solutions) is not int or not 1 <= max_solutions <= sys.maxsize:
        raise bad("max_solutions is not a positive integer (at most 2**63 - 1)")
    next_id = head.get("next_id")
    if type(next_id) is not int or not 1 <= next_id <= sys.maxsize:
        raise bad("next_id is not a positive integer (at most 2**63 - 1)")
    edges = head.get("taxonomy")
    if type(edges) is not dict or not all(
            type(ps) is list and all(type(p) is str for p in ps) for ps in edges.values()):
        raise bad("the taxonomy is not an object of class -> list of classes")
    classes = head.get("classes")
    if type(classes) is not list:
        raise bad("classes is not a list")
    text_analysis = head.get("text_analysis")
    try:  # checked as Engine will take it
        analysis = None if text_analysis is None else analysis_from_dict(text_analysis)
    except (TextAnalysisError, TypeError) as e:
        raise bad(f"text_analysis: {e}") from None
    if head.get("text_rule") != TEXT_RULE:
        raise bad("the index was written by an rtf whose words split at combining marks "
                  "(before language version 3); rebuild it with `rtf index build`")
    return Head(algorithm, max_solutions, next_id, Taxonomy(edges), classes, text_analysis, analysis)


def check_query_record(entry, values: list, bad) -> tuple:
    """``(query, id, subscriber, metadata)`` of a file's query entry ``[id, subscriber,
    reference to its Query in `values`(, metadata)]``; ``bad(what)`` makes the error."""
    if type(entry) is not list or len(entry) not in (3, 4):
        raise bad(f"a query entry is not [id, subscriber, query(, metadata)]: {str(entry)[:60]}")
    qid, subscriber, ref, *extra = entry
    if type(qid) is not str or not qid:
        raise bad(f"a query id is not a non-empty string: {qid!r}")
    if subscriber is not None and type(subscriber) is not str:
        raise bad(f"query {qid!r}: the subscriber is not a string or null")
    query = values[ref] if type(ref) is int and 0 <= ref < len(values) else None
    if not isinstance(query, model.Query):
        raise bad(f"query {qid!r} does not refer to a query")
    metadata = extra[0] if extra else None
    if metadata is not None and type(metadata) is not dict:
        raise bad(f"query {qid!r}: metadata is not a JSON object")
    return (query, qid, subscriber, metadata)
