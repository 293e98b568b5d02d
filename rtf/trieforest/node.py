"""Trie nodes: content, children, and the tuple shapes (hence tuple ids) stored there."""

from __future__ import annotations

import sys


class TrieNode:
    """A node of the structural trie forest (subject -> predicate -> object).

    `shapes` holds the tuple shapes without words whose path ends here; their
    branch slots are the paper's tIDs(N). `worded` holds, at an object node,
    those that also need words: RTFs keeps them as a set, intersected with
    a literal's word-index hits from the smaller side instead of testing
    each; RTFm keeps the node's own word index (`rtf.trieforest.words`).
    """

    __slots__ = ("content", "children", "shapes", "worded")

    def __init__(self, content: str):
        self.content = content
        self.children: dict[str, TrieNode] | None = None
        self.shapes: list | None = None
        self.worded = None

    def child(self, content: str) -> "TrieNode":
        """The child of `content`, created if absent."""
        table = self.children
        if table is None:
            table = self.children = {}
        node = table.get(content)
        if node is None:
            node = table[content] = TrieNode(content)
        return node

    def is_empty(self) -> bool:
        return not (self.children or self.shapes or self.worded)

    def drop(self, content: str) -> None:
        table = self.children
        del table[content]
        if not table:
            self.children = None

    def walk(self):
        """This node and all below it."""
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            if n.children:
                stack.extend(n.children.values())

    def size_bytes(self) -> int:
        """Shallow size of the node and its own tables (an estimate, not deep; a word
        index in `worded` counts its own, `WordIndex.size_bytes`)."""
        size = sys.getsizeof(self)
        for table in (self.children, self.shapes, self.worded):
            if table is not None:
                size += sys.getsizeof(table)
        return size
