"""Query text to query model: ``parse_query(text) -> rtf.model.Query``.

>>> q = parse_query('''PREFIX dbo: <http://dbpedia.org/ontology/>
...     SELECT ?a WHERE { ?a dbo:abstract ?t FILTER ftcontains(?t, "rio" ftand "games") }''')
>>> q.projection, len(q.branches), str(q.branches[0].tuples[0].fulltext)
(('a',), 1, '("rio" ftand "games")')

Errors are `rtf.errors.QuerySyntaxError` (the text is not in the language:
line, column, what was found and what was expected) or
`rtf.errors.UnsupportedQueryError` (valid SPARQL outside the spec, named),
both `QueryError` s with ``line`` and ``column``; nothing else escapes.

>>> parse_query("SELECT * { ?s ?p ?o OPTIONAL { ?s ?q ?v } }")
Traceback (most recent call last):
  ...
rtf.errors.UnsupportedQueryError: line 1, column 21: unsupported construct: OPTIONAL
"""

from __future__ import annotations

from functools import lru_cache

from lark.exceptions import UnexpectedInput, VisitError

from rtf.errors import QueryError, QuerySyntaxError
from rtf.model import Query
from rtf.parser.build import BUILTIN_PREFIXES, QueryBuilder
from rtf.parser.diagnose import diagnose
from rtf.parser.grammar import grammar_text, lark_parser

__all__ = ["parse_query", "grammar_text", "BUILTIN_PREFIXES"]


def parse_query(text: str) -> Query:
    """Parse a continuous query (spec sections 1 and 2) into the query model.

    Results are cached by text: registering the same query twice parses it
    once, and `Query` is immutable.
    """
    if not isinstance(text, str):
        raise TypeError(f"a query is a string, not {type(text).__name__}")
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse(text: str) -> Query:
    parser = lark_parser()
    try:
        tree = parser.parse(text)
    except UnexpectedInput as e:
        raise diagnose(text, e, parser) from None
    except RecursionError:
        raise QuerySyntaxError("the query is nested too deeply", 1, 1) from None
    try:
        return QueryBuilder(text).build(tree)
    except QueryError:
        raise
    except VisitError as e:  # pragma: no cover - the builder does not use visitors
        raise e.orig_exc from None
    except RecursionError:
        raise QuerySyntaxError("the query is nested too deeply", 1, 1) from None
