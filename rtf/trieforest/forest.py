"""The structural trie forest, shared by RTFm and RTFs.

Each tuple shape's structure is a path subject -> predicate -> object
(section 3.1, step 3): a hash table of roots keyed by subject content,
then children by predicate, then by object. Contents are constant keys,
positional variables ``?1, ?2, ...`` and the wildcard ``*``, so that
``(?x, p, ?y)`` of one query and ``(?a, p, ?b)`` of another share nodes.

Filtering a triple (section 3.2) visits, at each level, the child whose
content is the triple's term, the child of each variable already bound to
that same term (a repeated variable), the child of the next new variable,
and the wildcard child: at most 3 x 4 x 5 dictionary lookups per triple,
whatever the number of queries.

Word constraints are kept in word indexes (`rtf.trieforest.words`): one
per object node in RTFm, one for the whole forest in RTFs.
"""

from __future__ import annotations

from collections.abc import Iterator

from rtf.matching.query_table import WILDCARD_CONTENT, TupleShape, var_content
from rtf.trieforest.node import TrieNode

_VARS = [var_content(k) for k in range(1, 4)]


class StructuralForest:
    """Roots by subject content; paths S -> P -> O."""

    def __init__(self):
        self.root = TrieNode("")  # its children are the hash table of trie roots
        self.nodes = 0

    def insert(self, shape: TupleShape) -> TrieNode:
        node = self.root
        for content in shape.structure:
            before = node.children is not None and content in node.children
            node = node.child(content)
            self.nodes += not before
        return node

    def path(self, shape: TupleShape) -> list[tuple[TrieNode, str]]:
        """(parent, content) pairs from the root down to the object node."""
        out, node = [], self.root
        for content in shape.structure:
            out.append((node, content))
            node = node.children[content]
        return out

    def object_nodes(self, s: str, p: str, o: str, virtual: bool) -> Iterator[TrieNode]:
        """Object-level nodes whose path the triple (s, p, o) satisfies.

        A virtual triple ``(s, a/rdfs:subClassOf*, c)`` follows only the
        constant path predicate: a variable or wildcard predicate matches
        real triples only.
        """
        roots = self.root.children
        if not roots:
            return
        for sn, svals in ((roots.get(s), ()), (roots.get(_VARS[0]), (s,)),
                          (roots.get(WILDCARD_CONTENT), ())):
            if sn is None or sn.children is None:
                continue
            pch = sn.children
            pcands = [(pch.get(p), svals)]
            if not virtual:
                if svals and svals[0] == p:
                    pcands.append((pch.get(_VARS[0]), svals))
                pcands.append((pch.get(_VARS[len(svals)]), svals + (p,)))
                pcands.append((pch.get(WILDCARD_CONTENT), svals))
            for pn, pvals in pcands:
                if pn is None or pn.children is None:
                    continue
                och = pn.children
                on = och.get(o)
                if on is not None:
                    yield on
                for i, v in enumerate(pvals):
                    if v == o:
                        on = och.get(_VARS[i])
                        if on is not None:
                            yield on
                on = och.get(_VARS[len(pvals)])
                if on is not None:
                    yield on
                on = och.get(WILDCARD_CONTENT)
                if on is not None:
                    yield on


def add_shape(node: TrieNode, shape: TupleShape) -> None:
    if node.shapes is None:
        node.shapes = []
    node.shapes.append(shape)


def remove_shape_and_prune(steps: list[tuple[TrieNode, str]], shape: TupleShape) -> int:
    """Remove `shape` from the last node of `steps` and prune emptied nodes.

    `steps` are (parent, content) from the root (`StructuralForest.path`); returns
    nodes removed.
    """
    parent, content = steps[-1]
    end = parent.children[content]
    end.shapes.remove(shape)
    if not end.shapes:
        end.shapes = None
    return prune_path(steps)


def prune_path(steps: list[tuple[TrieNode, str]]) -> int:
    """Drop the emptied nodes at the end of a path of (parent, content) steps."""
    removed = 0
    for parent, content in reversed(steps):
        if not parent.children[content].is_empty():
            break
        parent.drop(content)
        removed += 1
    return removed
