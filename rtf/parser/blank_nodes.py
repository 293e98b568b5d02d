"""Blank node labels stay inside one basic graph pattern, as SPARQL 1.1 requires.

SPARQL 1.1 (section 4.1.4): "The same blank node label cannot be used in two
different basic graph patterns in the same query." A basic graph pattern is
a run of triple patterns in one group; a nested group ``{ }``, a UNION and
an OPTIONAL end it, a FILTER does not. So ``_:a ?p ?v . { _:a ?q 1 }`` is a
syntax error (the W3C tests syn-bad-34 to 38, syn-blabel-cross-union-bad,
syn-blabel-cross-optional-bad), while ``_:a ?p ?v . FILTER(true) . [] ?q _:a``
is one pattern and is fine (syn-11, syn-blabel-cross-filter).

`check_blank_node_scopes` runs once per parse, on Lark's tree, before the
query model is built.
"""

from __future__ import annotations

from lark import Token, Tree

from rtf.errors import QuerySyntaxError

#: Children of a group that end its current basic graph pattern.
_BREAKS = frozenset({"group_or_union", "optional_pattern", "minus_pattern", "bind", "inline_data",
                     "graph_pattern", "service_pattern"})
#: The nodes on the way from the tree's root to its groups.
_CONTAINERS = frozenset({"select_query", "ask_query", "construct_query", "construct_where",
                         "describe_query", "where_clause", "group", "sub_select_group", "sub_select",
                         "exists_call", "not_exists_call", "filter"}) | _BREAKS


def check_blank_node_scopes(tree: Tree, text: str) -> None:
    """Raise `QuerySyntaxError` where a blank node label is used in a second basic graph pattern.

    `text` is the query's text: one without ``_:`` has no label, and its tree is not walked.
    """
    if "_:" not in text:
        return
    uses: list[tuple[Token, int]] = []  # each label token, with the number of its pattern
    patterns = 0
    stack = [tree]  # iterative: deep nesting costs no recursion; FILTERs are never entered
    while stack:
        node = stack.pop()
        if node.data != "group":
            stack.extend(child for child in node.children
                         if isinstance(child, Tree) and child.data in _CONTAINERS)
            continue
        patterns += 1
        for child in node.children:
            if not isinstance(child, Tree):
                continue
            if child.data in _BREAKS:
                patterns += 1  # the triples after it start another pattern
                stack.append(child)
            elif child.data == "triples_block":
                uses.extend((label, patterns) for label in _labels(child))
    first: dict[str, tuple[Token, int]] = {}
    for label, pattern in sorted(uses, key=lambda use: use[0].start_pos or 0):  # in text order
        earlier = first.setdefault(str(label), (label, pattern))
        if earlier[1] != pattern:
            raise _reused(label, earlier[0])


def _labels(block: Tree) -> list[Token]:
    """The ``_:x`` tokens of a triples block (it holds no group), in text order."""
    return [token for node in block.iter_subtrees_topdown() if node.data == "blank_node"
            for token in node.children if isinstance(token, Token) and token.type == "BLANK_NODE_LABEL"]


def _reused(label: Token, earlier: Token) -> QuerySyntaxError:
    name = str(label)[2:]
    return QuerySyntaxError(
        f"blank node {label} is used in two groups (first at line {earlier.line}, column "
        f"{earlier.column}); SPARQL 1.1 keeps a blank node label inside one basic graph pattern "
        f"(a UNION, OPTIONAL or {{ }} group starts another): join the groups with a variable, "
        f"?{name}", label.line, label.column, str(label))
