"""The limits a query must stay within, checked before anything is built from it.

* `MAX_QUERY_BYTES`: the query text, in UTF-8, is checked before Lark sees it.
  Parsing costs memory in proportion to the text, so a bound on the text is
  a bound on the cost of registering one query.
* `MAX_QUERY_TOKENS`: Lark's tree and the query model take about 1 KB per
  token, so a query dense in tokens (``FILTER(?o && ?o && ...)``) is bounded
  by its tokens too: 1 MiB of them would take over 600 MB.
* `MAX_NESTING_DEPTH`: how deep operators, function calls, ``[ ]`` and path
  groups nest. Lark parses iteratively, but building the query model, the
  disjunctive normal form, ``describe()`` and both evaluators recurse once
  (or a few times) per level; 64 levels keep all of them far below Python's
  recursion limit (1000), and no realistic query comes near 64.
"""

from __future__ import annotations

from lark import Tree

from rtf.errors import (
    QuerySyntaxError,
    QueryTooComplexError,
    QueryTooLargeError,
    position,
)

#: Longest query text accepted, in bytes of UTF-8 (1 MiB).
MAX_QUERY_BYTES = 1 << 20

#: Most tokens (words, names, literals, punctuation; not spaces or comments) in a query.
MAX_QUERY_TOKENS = 50_000

#: Deepest nesting accepted: each ``!``, ``&&``/``||`` group, comparison, function
#: call (``ftcontains``, ``regex``, ``lang`` ...), ``ftnot``, ``ftand``/``ftor``
#: group, ``ftnear``, ``[ ]`` blank node and property-path operator is one level.
MAX_NESTING_DEPTH = 64

# Parse-tree rules that are one level of nesting; the others (terms, the
# plumbing of property lists) add nothing and never recurse on their own.
_NESTING_RULES = frozenset({
    "or_expr", "and_expr", "negation", "compare", "in_expr", "not_in_expr",
    "arithmetic", "signed_arithmetic", "unary_arithmetic", "builtin_function", "function_call",
    "ftcontains_call", "regex_call", "langmatches_call",
    "ft_or", "ft_and", "ft_not", "ft_near",
    "blank_node_property_list",
    "path_alternative", "path_sequence", "path_inverse", "path_elt", "path_group",
    "path_negated_set", "path_negated",
    # a group nested in another (the WHERE group itself is not a level)
    "group_or_union", "optional_pattern", "minus_pattern", "sub_select_group", "exists_call",
    "not_exists_call", "aggregate", "collection", "select_expression", "group_expression", "bind",
})


def check_text(text: str) -> int:
    """The UTF-8 size of `text`; raises when it is over the limit or not encodable.

    A string holding a lone surrogate (possible in Python, never in UTF-8 or
    RDF) is a `QuerySyntaxError` at that character.
    """
    if len(text) > MAX_QUERY_BYTES:  # at least one byte per character: no need to encode
        raise _too_large(f"at least {len(text)}")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as e:
        line, column = position(text, e.start)
        raise QuerySyntaxError(f"lone surrogate U+{ord(text[e.start]):04X} is not a character",
                               line, column, text[e.start]) from None
    if size > MAX_QUERY_BYTES:
        raise _too_large(str(size))
    return size


def _too_large(size: str) -> QueryTooLargeError:
    return QueryTooLargeError(f"the query is {size} bytes, the limit is {MAX_QUERY_BYTES} bytes "
                              "(rtf.parser.MAX_QUERY_BYTES)", 1, 1)


def too_many_tokens(token) -> QueryTooLargeError:
    """The error for a query whose token `token` is one past `MAX_QUERY_TOKENS`."""
    return QueryTooLargeError(f"the query has more than {MAX_QUERY_TOKENS} tokens; the limit is "
                              f"{MAX_QUERY_TOKENS} (rtf.parser.MAX_QUERY_TOKENS)",
                              token.line, token.column)


def check_nesting(tree: Tree) -> None:
    """Raise `QueryTooComplexError` at the first construct nested past the limit.

    Iterative, so that a query nested 10,000 deep gets this error rather
    than a RecursionError.
    """
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.data in _NESTING_RULES:
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                line, column = (None, None) if node.meta.empty else (node.meta.line,
                                                                     node.meta.column)
                raise QueryTooComplexError(
                    f"the query is nested more than {MAX_NESTING_DEPTH} levels deep; the limit "
                    f"is {MAX_NESTING_DEPTH} (rtf.parser.MAX_NESTING_DEPTH)", line, column)
        # Reversed, so that the first construct in the text is reported first.
        stack.extend((c, depth) for c in reversed(node.children) if isinstance(c, Tree))


__all__ = ["MAX_QUERY_BYTES", "MAX_NESTING_DEPTH", "check_text", "check_nesting"]
