"""RTFs: one separate word forest for all word constraints (RTF paper, 3.1, Fig. 3).

Structural paths end in object nodes that hold every shape with that
structure; the words of all shapes, whatever their structure, are
clustered in a single word forest whose end nodes hold the same shapes. A
shape with words is satisfied by a triple when the triple reaches its
object node *and* the triple's literal reaches its word node.

Set-at-a-time: an object node keeps its shapes without words (`shapes`)
apart from those with words (`worded`, a set). The word index is asked
once per distinct literal of the publication, giving the ids of the shapes
whose words the literal holds; at each object node the literal reaches,
the node's own are picked by the node's number (`node_of`), or all of them
when the node holds every worded shape (a full-text workload), and they
go into the hits as one chunk of ids (`rtf.matching.hits`) -- so the cost
follows the shapes that match, not the shapes stored at the node, with
no Python object per matched shape.

The word "forest" is kept flat (`rtf.trieforest.words.WordIndex`): each
key's postings, counted per literal with numpy, instead of a trie of
Python nodes descended one word at a time -- the same shapes found, with
a tenth of the memory and no Python step per word node.
"""

from __future__ import annotations

import numpy as np

from rtf.filter import Hits, ShapeIndex, Triple
from rtf.matching.query_table import TupleShape
from rtf.matching.structures import shrunk
from rtf.matching.structures import grown
from rtf.query.text import literal_text_index
from rtf.trieforest.forest import StructuralForest, add_shape, prune_path, remove_shape_and_prune
from rtf.trieforest import words
from rtf.trieforest.words import WordIndex


class _Path:
    """A structure, as `StructuralForest.insert` reads a shape's."""

    __slots__ = ("structure",)

    def __init__(self, structure: tuple[str, str, str]):
        self.structure = structure


class RTFsIndex(ShapeIndex):
    def __init__(self):
        self.forest = StructuralForest()
        self.words = WordIndex()
        self.worded_shapes = 0  # the shapes with words, all in `words`
        #: shape id -> the number of the object node holding it (worded shapes only)
        self.node_of = np.full(16, -1, dtype=np.int32)
        #: object node with worded shapes -> its number
        self.numbers: dict = {}
        self._next_number = 0

    def add(self, shape: TupleShape) -> None:
        node = self.forest.insert(shape)
        if shape.has_words:
            if node.worded is None:
                node.worded = set()
                self.numbers[node] = self._next_number
                self._next_number += 1
            node.worded.add(shape.id)
            if shape.id >= len(self.node_of):
                self.node_of = grown(self.node_of, shape.id + 1, -1)
            self.node_of[shape.id] = self.numbers[node]
            self.words.add(shape)
            self.worded_shapes += 1
        else:
            add_shape(node, shape)

    def saved(self) -> dict[str, np.ndarray]:
        """What a saved index holds of this one besides its shapes: the word index's postings
        (`rtf.trieforest.words.snapshot`), so that a load need not index every key again."""
        return words.snapshot(self.words)

    def restore_saved(self, arrays: dict[str, np.ndarray], structures: list[tuple[str, str, str]],
                      structure_of: np.ndarray, alternatives: np.ndarray, shapes_of) -> bool:
        """Index the shapes restored from a saved index into this empty index: shape id k of
        structure ``structures[structure_of[k]]`` (-1: a free id) with ``alternatives[k]``
        ``ftor`` alternatives (0: no words), with the word index `saved` wrote (`arrays`,
        checked against the shapes: ValueError); False, nothing done, if the file has none.
        Each structure's path is made once, its shapes put at its object node at once: those
        with words by id (no shape made), those without as the shapes (`shapes_of(ids)`)."""
        if not all(name in arrays for name in words.SAVED):
            return False
        shape_count = len(structure_of)
        index = words.restore(arrays, alternatives)
        node_of = np.full(max(16, shape_count), -1, dtype=np.int32)
        numbers = self.numbers
        live = np.flatnonzero(structure_of >= 0)
        order = live[np.argsort(structure_of[live], kind="stable")]  # (by structure, then id)
        cuts = np.flatnonzero(np.diff(structure_of[order])) + 1
        for members in np.split(order, cuts) if len(order) else ():
            node = self.forest.insert(_Path(structures[int(structure_of[members[0]])]))
            has_words = alternatives[members] > 0
            with_words = members[has_words]
            if len(with_words):
                node.worded = set(with_words.tolist())
                numbers[node] = number = len(numbers)
                node_of[with_words] = number
                self.worded_shapes += len(with_words)
            if len(with_words) < len(members):
                node.shapes = shapes_of(members[~has_words])
        self._next_number = len(numbers)
        self.node_of = node_of
        self.words = index
        return True

    def remove(self, shape: TupleShape) -> None:
        steps = self.forest.path(shape)
        if shape.has_words:
            parent, content = steps[-1]
            node = parent.children[content]
            node.worded.discard(shape.id)
            if not node.worded:
                node.worded = None
                del self.numbers[node]
                self.numbers = shrunk(self.numbers)
            self.node_of[shape.id] = -1
            self.forest.nodes -= prune_path(steps)
            self.words.remove(shape)
            self.worded_shapes -= 1
        else:
            self.forest.nodes -= remove_shape_and_prune(steps, shape)

    def word_matches(self, literal: str) -> np.ndarray:
        """The ids of every shape all of whose words and prefixes of some key occur in the
        literal (a shape with several ``ftor`` keys is found by any of them, once)."""
        return self.words.matched_ids(literal_text_index(literal))

    def collect(self, triples: list[Triple], virtual: list[Triple], hits: Hits) -> None:
        object_nodes = self.forest.object_nodes
        by_literal: dict[str, np.ndarray] = {}
        for group, is_virtual in ((triples, False), (virtual, True)):
            for t in group:
                s, p, o = t
                for node in object_nodes(s, p, o, is_virtual):
                    if node.shapes:
                        hits.add(node.shapes, t)
                    worded = node.worded
                    if worded and o[0] == '"':
                        matched = by_literal.get(o)
                        if matched is None:
                            matched = by_literal[o] = self.word_matches(o)
                        if len(matched):
                            # A node holding every shape with words (one structure, as
                            # in a full-text workload) holds all that the literal matched;
                            # else the matched shapes of this node are picked by number.
                            if len(worded) != self.worded_shapes:
                                matched = matched[self.node_of[matched] == self.numbers[node]]
                            hits.add_chunk(matched, t)  # by id: no object per shape

    def stats(self) -> dict:
        nodes = self.forest.root.walk()
        # word_nodes: the distinct keys (each a word trie's node, shared by every path through it)
        return {"trie_nodes": self.forest.nodes, "word_nodes": len(self.words),
                "index_bytes_estimate": sum(n.size_bytes() for n in nodes) + self.words.size_bytes()}

