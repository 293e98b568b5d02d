"""RTFm: word constraints expand each structural path (RTF paper, 3.1, Fig. 2).

A tuple shape's words hang below its object node, so the words of tuples
with the same structure are clustered together; filtering a literal triple
descends from each matched object node into the words that occur in the
literal.
"""

from __future__ import annotations


from rtf.filter import Hits, ShapeIndex, Triple
from rtf.matching.query_table import TupleShape
from rtf.query.terms import lexical_form
from rtf.query.text import text_index
from rtf.trieforest.forest import (StructuralForest, add_shape, descend_words, insert_words,
                                   prune_path, remove_shape_and_prune, remove_words)


class RTFmIndex(ShapeIndex):
    def __init__(self):
        self.forest = StructuralForest()
        self.word_nodes = 0
        #: shapes stored under several word paths (``ftor``): a literal may reach
        #: one of them by more than one path, so the hits are deduplicated
        self.multi_path_shapes = 0

    def add(self, shape: TupleShape) -> None:
        node = self.forest.insert(shape)
        if shape.has_words:
            self.word_nodes += insert_words(node, shape)
            self.multi_path_shapes += len(shape.alternatives) > 1
        else:
            add_shape(node, shape)

    def remove(self, shape: TupleShape) -> None:
        steps = [(parent, "children", c) for parent, c in self.forest.path(shape)]
        if shape.has_words:
            parent, _, content = steps[-1]
            self.word_nodes -= remove_words(parent.children[content], shape)
            self.multi_path_shapes -= len(shape.alternatives) > 1
            self.forest.nodes -= prune_path(steps)
        else:
            self.forest.nodes -= remove_shape_and_prune(steps, shape)

    def collect(self, triples: list[Triple], virtual: list[Triple], hits: Hits) -> None:
        object_nodes = self.forest.object_nodes
        for group, is_virtual in ((triples, False), (virtual, True)):
            for t in group:
                s, p, o = t
                literal = o[0] == '"'
                for node in object_nodes(s, p, o, is_virtual):
                    shapes = node.shapes
                    if literal and (node.words or node.prefixes):
                        shapes = list(shapes or ())
                        descend_words(node, text_index(lexical_form(o)), shapes)
                        if self.multi_path_shapes and len(shapes) > 1:
                            shapes = list(dict.fromkeys(shapes))
                    if shapes:
                        for shape in shapes:
                            found = hits.get(shape)
                            if found is None:
                                hits[shape] = [t]
                            else:
                                found.append(t)

    def stats(self) -> dict:
        nodes = list(self.forest.root.walk())
        return {"trie_nodes": self.forest.nodes, "word_nodes": self.word_nodes,
                "index_bytes_estimate": sum(n.size_bytes() for n in nodes)}
