"""`rtf bench --db` reads sizes with K and M suffixes (the growth curve to a million)."""

from __future__ import annotations

import argparse

import pytest

from rtf.cli.bench import _db_list


def test_db_sizes_take_k_and_m_suffixes():
    assert _db_list("10K,100k,1M") == [10_000, 100_000, 1_000_000]
    assert _db_list("2000, 4_000,2K") == [2_000, 4_000]


@pytest.mark.parametrize("text", ["1.5M", "K", "10X", "0", ""])
def test_bad_db_sizes_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        _db_list(text)
