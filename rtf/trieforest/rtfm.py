"""RTFm: word constraints expand each structural path (RTF paper, 3.1, Fig. 2).

A tuple shape's words hang below its object node, so the words of tuples
with the same structure are clustered together: each object node with
worded shapes keeps its own word index (`rtf.trieforest.words.WordIndex`,
in the node's `worded`), and filtering a literal triple asks the index of
each object node the triple reaches for the shapes whose words the
literal holds.
"""

from __future__ import annotations


from rtf.filter import Hits, ShapeIndex, Triple
from rtf.matching.query_table import TupleShape
from rtf.query.text import literal_text_index
from rtf.trieforest.forest import StructuralForest, add_shape, prune_path, remove_shape_and_prune
from rtf.trieforest.words import WordIndex

#: Text words whose prefix keys each node's index remembers: a node's index is one of many
_NODE_KNOWN_WORDS = 1 << 10


class RTFmIndex(ShapeIndex):
    def __init__(self):
        self.forest = StructuralForest()
        self.word_nodes = 0  # the distinct keys of every object node's word index, summed

    def add(self, shape: TupleShape) -> None:
        node = self.forest.insert(shape)
        if shape.has_words:
            if node.worded is None:
                node.worded = WordIndex(known_words=_NODE_KNOWN_WORDS)
            before = len(node.worded)
            node.worded.add(shape)
            self.word_nodes += len(node.worded) - before
        else:
            add_shape(node, shape)

    def remove(self, shape: TupleShape) -> None:
        steps = self.forest.path(shape)
        if shape.has_words:
            parent, content = steps[-1]
            node = parent.children[content]
            before = len(node.worded)
            node.worded.remove(shape)
            self.word_nodes -= before - len(node.worded)
            if node.worded.is_empty():
                node.worded = None
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
                    if node.shapes:
                        hits.add(node.shapes, t)
                    if literal and node.worded is not None:  # by id: no object per shape
                        hits.add_chunk(node.worded.matched_ids(literal_text_index(o)), t)

    def stats(self) -> dict:
        nodes = list(self.forest.root.walk())
        return {"trie_nodes": self.forest.nodes, "word_nodes": self.word_nodes,
                "index_bytes_estimate": sum(n.size_bytes() for n in nodes)
                + sum(n.worded.size_bytes() for n in nodes if n.worded is not None)}
