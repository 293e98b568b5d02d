"""RTFs: one separate word forest for all word constraints (RTF paper, 3.1, Fig. 3).

Structural paths end in object nodes that hold every shape with that
structure; the words of all shapes, whatever their structure, are
clustered in a single word forest whose end nodes hold the same shapes. A
shape with words is satisfied by a triple when the triple reaches its
object node *and* the triple's literal reaches its word node; the word
forest is traversed once per distinct literal, and only for literals whose
structural traversal met a shape with words.
"""

from __future__ import annotations

from collections.abc import Iterator

from rtf.filter import ShapeIndex, Triple
from rtf.query_table import TupleShape
from rtf.terms import is_literal, lexical_form
from rtf.text import text_index
from rtf.trieforest.forest import (StructuralForest, add_shape, descend_words, insert_words,
                                   remove_shape_and_prune, word_path)
from rtf.trieforest.node import TrieNode


class RTFsIndex(ShapeIndex):
    def __init__(self):
        self.forest = StructuralForest()
        self.word_forest = TrieNode("")  # its word/prefix children are the word-trie roots
        self.word_nodes = 0

    def add(self, shape: TupleShape) -> None:
        add_shape(self.forest.insert(shape), shape)
        if shape.words or shape.prefixes:
            node, created = insert_words(self.word_forest, shape)
            self.word_nodes += created
            add_shape(node, shape)

    def remove(self, shape: TupleShape) -> None:
        steps = [(parent, "children", c) for parent, c in self.forest.path(shape)]
        self.forest.nodes -= remove_shape_and_prune(steps, shape)
        if shape.words or shape.prefixes:
            steps, node = [], self.word_forest
            for kind, content in word_path(shape):
                steps.append((node, kind, content))
                node = getattr(node, kind)[content]
            self.word_nodes -= remove_shape_and_prune(steps, shape)

    def _word_matches(self, literal: str) -> set[int]:
        found: list = []
        descend_words(self.word_forest, text_index(lexical_form(literal)), found)
        return {shape.id for shape in found}

    def candidates(self, triples: list[Triple], virtual: list[Triple]) -> Iterator[tuple[TupleShape, Triple]]:
        object_nodes = self.forest.object_nodes
        by_literal: dict[str, set[int]] = {}
        for group, is_virtual in ((triples, False), (virtual, True)):
            for t in group:
                s, p, o = t
                for node in object_nodes(s, p, o, is_virtual):
                    for shape in node.shapes or ():
                        if shape.words or shape.prefixes:
                            if not is_literal(o):
                                continue
                            ids = by_literal.get(o)
                            if ids is None:
                                ids = by_literal[o] = self._word_matches(o)
                            if shape.id not in ids:
                                continue
                        yield shape, t

    def stats(self) -> dict:
        nodes = list(self.forest.root.walk()) + list(self.word_forest.walk())
        return {"trie_nodes": self.forest.nodes, "word_nodes": self.word_nodes,
                "index_bytes_estimate": sum(n.size_bytes() for n in nodes)}
