"""Trie nodes: content, children, and the tuple shapes (hence tuple ids) stored there."""

from __future__ import annotations

import sys


class TrieNode:
    """A node of a trie in the forest.

    `children` are structural (subject -> predicate -> object); `words` and
    `prefixes` are word-constraint children, kept apart because a prefix
    child is answered by a key range, not by one lookup. `shapes` holds the
    tuple shapes whose path ends here; their branch slots are the paper's
    tIDs(N). RTFs keeps, at an object node, the shapes that also need words
    apart in `worded` (a set), so that a literal's word-forest hits are
    intersected with them from the smaller side instead of testing each.
    """

    __slots__ = ("content", "children", "words", "prefixes", "shapes", "worded")

    def __init__(self, content: str):
        self.content = content
        self.children: dict[str, TrieNode] | None = None
        self.words: dict[str, TrieNode] | None = None
        self.prefixes: dict[str, TrieNode] | None = None
        self.shapes: list | None = None
        self.worded: set | None = None

    def child(self, kind: str, content: str) -> "TrieNode":
        """The child of `kind` ('children', 'words' or 'prefixes'), created if absent."""
        table = getattr(self, kind)
        if table is None:
            table = {}
            setattr(self, kind, table)
        node = table.get(content)
        if node is None:
            node = table[content] = TrieNode(content)
        return node

    def is_empty(self) -> bool:
        return not (self.children or self.words or self.prefixes or self.shapes or self.worded)

    def drop(self, kind: str, content: str) -> None:
        table = getattr(self, kind)
        del table[content]
        if not table:
            setattr(self, kind, None)

    def walk(self):
        """This node and all below it."""
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            for table in (n.children, n.words, n.prefixes):
                if table:
                    stack.extend(table.values())

    def size_bytes(self) -> int:
        """Shallow size of the node and its own tables (an estimate, not deep)."""
        size = sys.getsizeof(self)
        for table in (self.children, self.words, self.prefixes, self.shapes, self.worded):
            if table is not None:
                size += sys.getsizeof(table)
        return size
