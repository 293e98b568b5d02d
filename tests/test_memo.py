"""The caches bounded by the characters they keep (`rtf.query.memo`)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.query.memo import ENTRY_CHARS, bounded_by_chars
from rtf.query.text import TEXT_CACHE_BYTES, TextIndex, text_index


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.text(max_size=300), max_size=60), budget=st.integers(1, 4000),
       weight=st.integers(1, 5))
def test_a_bounded_cache_answers_as_the_function_and_stays_within_its_budget(keys, budget, weight):
    calls = []

    @bounded_by_chars(budget, weight)
    def f(key, extra=0):
        calls.append(key)
        return None if len(key) % 3 == 0 else (key[::-1], extra)

    for k in keys:
        assert f(k) == (None if len(k) % 3 == 0 else (k[::-1], 0))
        assert f(k, 1) == (None if len(k) % 3 == 0 else (k[::-1], 1))
        assert f.cache_chars() <= budget
    # a key that fits is computed once while nothing else came in between (None included)
    small = [k for k in keys if (len(k) + ENTRY_CHARS) * weight * 2 <= budget]
    for k in small:
        f.cache_clear()
        before = len(calls)
        f(k), f(k)
        assert len(calls) == before + 1


def test_text_indexes_of_a_long_stream_of_texts_stay_within_the_byte_budget():
    text_index.cache_clear()
    for i in range(3000):
        text = f"text number {i} " + "lorem ipsum dolor sit amet " * 40
        assert text_index(text).positions == TextIndex.of(text).positions
        assert text_index.cache_chars() <= TEXT_CACHE_BYTES
    assert text_index.cache_chars() > 0
