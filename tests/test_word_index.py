"""RTFs's word index (`rtf.trieforest.words.WordIndex`) against a brute-force reading of
its contract: a shape is found when every key of one of its alternatives occurs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.query.text import TextIndex, bigram
from rtf.trieforest.words import WordIndex

VOCAB = ["a", "ab", "abc", "b", "ba", "rio", "rig", "games", "gam", "olympic"]


class FakeShape:
    """What the index reads of a shape: its id and alternatives ((words, prefixes) tuples)."""

    made = 0

    def __init__(self, alternatives):
        self.alternatives = alternatives
        self.id = FakeShape.made
        FakeShape.made += 1

    def __repr__(self) -> str:
        return f"FakeShape({self.alternatives})"


words = st.sampled_from(VOCAB)
keys = st.one_of(words, st.tuples(words, words).map(lambda p: bigram(*p)))
prefixes = st.sampled_from(VOCAB).map(lambda w: w[: max(1, len(w) - 1)]) | words
alternative = st.tuples(st.frozensets(keys, max_size=3), st.frozensets(prefixes, max_size=2)).filter(
    lambda a: a[0] or a[1]).map(lambda a: (tuple(sorted(a[0])), tuple(sorted(a[1]))))
shape_alternatives = st.lists(alternative, min_size=1, max_size=3, unique=True).map(tuple)
texts = st.lists(st.sampled_from(VOCAB + ["x", "olympics", "abcd"]), max_size=8)


def expected(shapes, tokens) -> list[int]:
    """The ids of the shapes one of whose alternatives has all its keys in `tokens`, ascending."""
    ti = TextIndex(list(tokens))
    return sorted(s.id for s in shapes
                  if any(all(w in ti.keys for w in ws) and all(any(t.startswith(p) for t in tokens) for p in ps)
                         for ws, ps in s.alternatives))


def found(index, tokens) -> list[int]:
    """What the index finds (`matched_ids`), which must give each id once; its two ways
    of counting the postings (sorted, or counted per alternative) must agree."""
    text = TextIndex(list(tokens))
    assert index._bigram_keys == sum(" " in key for key in index.words)  # (0: bigrams not looked up)
    if index._next:
        postings = np.frombuffer(index.postings(text), dtype=np.int32)
        assert index._counted(postings).tolist() == index._sorted(postings).tolist()
    ids = index.matched_ids(text).tolist()
    assert len(set(ids)) == len(ids), ids
    return sorted(ids)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(shape_alternatives, max_size=12), st.lists(texts, min_size=1, max_size=4), st.data())
def test_matches_are_the_shapes_with_one_alternative_all_present(alternatives, text_list, data):
    index = WordIndex()
    shapes = [FakeShape(a) for a in alternatives]
    for s in shapes:
        index.add(s)
    for tokens in text_list:
        assert found(index, tokens) == expected(shapes, tokens), tokens
    # Removing some shapes (their ids reused by new ones) leaves exactly the others.
    gone = data.draw(st.sets(st.sampled_from(range(len(shapes))))) if shapes else set()
    for i in sorted(gone):
        index.remove(shapes[i])
    kept = [s for i, s in enumerate(shapes) if i not in gone]
    again = [FakeShape(a) for a in data.draw(st.lists(shape_alternatives, max_size=4))]
    for s in again:
        index.add(s)
    kept += again
    for tokens in text_list:
        assert found(index, tokens) == expected(kept, tokens), tokens
    for s in kept:
        index.remove(s)
    assert index.is_empty() and len(index) == 0
    assert not found(index, ["a", "ab", "abc", "rio"])


def test_a_shape_with_two_satisfied_alternatives_is_found_once_and_keys_are_counted_once():
    index = WordIndex()
    both = FakeShape(((("rio",), ()), (("games",), ("oly",))))
    pair = FakeShape(((("games", "rio"), ()),))
    index.add(both)
    index.add(pair)
    assert len(index) == 3  # rio, games, oly*
    assert found(index, ["rio", "games", "olympic"]) == [both.id, pair.id]
    assert found(index, ["games", "games", "olympic"]) == [both.id]  # a repeated word counts once
    assert found(index, ["games"]) == []
    index.remove(both)
    assert found(index, ["rio", "games", "olympic"]) == [pair.id]
    assert len(index) == 2


def test_prefix_lengths_follow_additions_and_removals():
    index = WordIndex()
    long_ = FakeShape(((((), ("olymp",))),))
    short = FakeShape(((((), ("ol",))),))
    index.add(long_)
    index.add(short)
    assert found(index, ["olympics"]) == [long_.id, short.id]
    index.remove(long_)
    assert found(index, ["olympics"]) == [short.id]
    assert found(index, ["o"]) == []
