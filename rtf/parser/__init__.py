"""Query text to query model: ``parse_query(text) -> rtf.query.model.Query``.

>>> q = parse_query('''PREFIX dbo: <http://dbpedia.org/ontology/>
...     SELECT ?a WHERE { ?a dbo:abstract ?t FILTER ftcontains(?t, "rio" ftand "games") }''')
>>> q.projection, len(q.branches), str(q.branches[0].tuples[0].fulltext)
(('a',), 1, '("rio" ftand "games")')

A query inside the fragment of spec sections 1-4 (version 2) is built as
branches the indexes answer by themselves (`rtf.parser.build`); any other
SPARQL 1.1 query (version 3: spec section 5) is built as its algebra, which
answers it, and branches that only find it (`rtf.parser.algebra`):

>>> q = parse_query("SELECT ?s (COUNT(?o) AS ?n) { ?s ?p ?o } GROUP BY ?s")
>>> q.algebra is not None, len(q.branches)
(True, 1)

Errors are `rtf.errors.QuerySyntaxError` (the text is not in the language:
line, column, what was found and what was expected) or
`rtf.errors.UnsupportedQueryError` (valid SPARQL the contract refuses, named),
both `QueryError` s with ``line`` and ``column``; nothing else escapes.

>>> parse_query("SELECT * { ?s ?p ?o SERVICE <http://x/> { ?s ?q ?v } }")
Traceback (most recent call last):
  ...
rtf.errors.UnsupportedQueryError: line 1, column 21: unsupported construct: SERVICE (federated queries are not evaluated)
"""

from __future__ import annotations

from lark.exceptions import UnexpectedInput

from rtf.errors import QueryTooComplexError
from rtf.parser.blank_nodes import check_blank_node_scopes
from rtf.parser.algebra import AlgebraBuilder
from rtf.parser.build import BUILTIN_PREFIXES, OutsideFragment, QueryBuilder
from rtf.parser.cache import ParseCache
from rtf.parser.diagnose import diagnose
from rtf.parser.grammar import grammar_text, lark_parser
from rtf.parser.templates import TemplateCache
from rtf.parser.limits import (
    MAX_NESTING_DEPTH,
    MAX_QUERY_BYTES,
    MAX_QUERY_TOKENS,
    check_nesting,
    check_text,
    too_many_tokens,
)
from rtf.query.model import Query
from rtf.query.text import current_analysis

__all__ = ["parse_query", "grammar_text", "BUILTIN_PREFIXES", "MAX_QUERY_BYTES",
           "MAX_QUERY_TOKENS", "MAX_NESTING_DEPTH", "MAX_CACHED_QUERY_BYTES", "PARSE_CACHE"]

#: Largest query text (UTF-8 bytes) the parse cache keeps; larger ones are parsed each time.
MAX_CACHED_QUERY_BYTES = 64 << 10

#: Parsed queries by text: at most 4,096 of them and 8 MiB of text in all.
PARSE_CACHE = ParseCache(max_bytes=8 << 20, max_entries=4096,
                         max_entry_bytes=MAX_CACHED_QUERY_BYTES)


def parse_query(text: str) -> Query:
    """Parse a continuous query (spec sections 1 and 2) into the query model.

    Results are cached by text (see `PARSE_CACHE`): registering the same
    query twice parses it once, and `Query` is immutable. A text over
    `MAX_QUERY_BYTES` raises `QueryTooLargeError` before it is parsed.
    """
    if not isinstance(text, str):
        raise TypeError(f"a query is a string, not {type(text).__name__}")
    key = cache_key(text, current_analysis())
    query = PARSE_CACHE.get(key)
    if query is None:
        size = check_text(text)
        query = _parse(text)
        PARSE_CACHE.put(key, query, size)
    return query


def cache_key(text: str, analysis) -> str:
    """`text`'s key in `PARSE_CACHE` under text analysis `analysis` (None: the default):
    full-text words are analysed by the engine's text analysis, so such parses are cached apart."""
    return text if analysis is None else f"{analysis!r}\0{text}"


def _parse(text: str) -> Query:
    if len(text) <= MAX_QUERY_TOKENS:
        # A token is at least one character: the text cannot pass the token limit.
        # The tree is built without positions (faster), from a template when the
        # text has the shape of one parsed before (`rtf.parser.templates`); a query
        # that fails is parsed again with positions, so its error is reported
        # exactly as before.
        try:
            return _templates().build(text, lambda tree, reused: _build(text, tree, reused),
                                      _parse_without_positions)
        except Exception:  # any error (a positioned one reads the tree's positions)
            pass
    return _parse_with_positions(text)


def _parse_without_positions(text: str) -> Query:
    return _build(text, lark_parser(positions=False).parse(text))


_TEMPLATES: list[TemplateCache] = []


def _templates() -> TemplateCache:
    """The parse trees kept by token types (`rtf.parser.templates`), made on first use."""
    if not _TEMPLATES:
        _TEMPLATES.append(TemplateCache(lark_parser(positions=False)))
    return _TEMPLATES[0]


def _parse_with_positions(text: str) -> Query:
    parser = lark_parser()
    # Token by token, so that a query over MAX_QUERY_TOKENS stops there, before
    # Lark has built a tree of it (about 1 KB per token).
    interactive = parser.parse_interactive(text)
    try:
        for count, token in enumerate(interactive.iter_parse(), 1):
            if count > MAX_QUERY_TOKENS:
                raise too_many_tokens(token)
        tree = interactive.resume_parse()
    except UnexpectedInput as e:
        if getattr(e, "interactive_parser", None) is None:  # as Lark's parse() would set it
            e.interactive_parser = interactive
        raise diagnose(text, e, parser) from None
    return _build(text, tree)


def _build(text: str, tree, reused: bool = False) -> Query:
    if not reused:  # a reused template's shape passed it when it was first built
        check_nesting(tree)
    check_blank_node_scopes(tree, text)
    try:
        try:
            return QueryBuilder(text).build(tree)
        except OutsideFragment:  # valid, beyond version 2: its algebra answers (version 3)
            return AlgebraBuilder(text).build(tree)
    except RecursionError:  # pragma: no cover - check_nesting keeps every recursion shallow
        raise QueryTooComplexError("the query is nested too deeply", 1, 1) from None


def parse_as_algebra(text: str) -> Query:
    """`text` built as a version-3 query (its algebra), even one the version-2 fragment
    holds: what the tests compare the two evaluations by. Not cached."""
    check_text(text)
    tree = lark_parser().parse(text)
    check_nesting(tree)
    check_blank_node_scopes(tree, text)
    return AlgebraBuilder(text).build(tree)


def _clear_caches() -> None:
    PARSE_CACHE.clear()
    if _TEMPLATES:
        _TEMPLATES[0].clear()


# The benchmarks clear the caches by this name, as when `_parse` was an lru_cache.
_parse.cache_clear = _clear_caches
