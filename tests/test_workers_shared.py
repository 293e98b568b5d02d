"""`rtf match --workers`: what the workers would each make is made once before they are
forked (`Engine.before_fork`), and the batches of publications are fitted to the output
they make (`rtf.cli.match.match_in_processes`), so that the processes together hold
little more than one."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from rtf import Engine, Publication
from rtf.cli import match as match_cli

EX = "http://ex.org/"


@pytest.fixture
def engine() -> Engine:
    engine = Engine()
    for i, word in enumerate(["rio", "games", "rio", "gold"]):
        engine.register(f'SELECT ?s WHERE {{ ?s <{EX}title> ?t FILTER ftcontains(?t, "{word}") }}',
                        f"q{i}", "alice" if i % 2 else None)
    return engine


def pubs(n: int, text: str = "rio games") -> list[Publication]:
    return [Publication(f"{EX}p{i}", [(f"<{EX}p{i}>", f"<{EX}title>", f'"{text}"')]) for i in range(n)]


@pytest.mark.parametrize("output, made", [("ids", "_quoted"), ("jsonl", "_lines"), ("arrow", "_ids")])
def test_the_columns_a_writer_reads_are_made_before_the_fork(engine, output, made):
    table = engine._index.table
    assert table.id_column.built is None  # (made lazily, by each worker, without before_fork)
    engine.before_fork(output)
    built = table.id_column.built
    assert getattr(built, made) is not None
    assert [name for name in ("_quoted", "_lines", "_ids") if getattr(built, name) is not None] == [made]
    found = engine.match(pubs(1)[0])
    assert found.id_columns() is built  # what a worker reads: the one made here
    assert built.ids_text(np.asarray(found.slots)) == b"".join(f'{q}", "'.encode() for q in found.query_ids)


class InlinePool:
    """`forked_pool` run in this process, `ahead` batches read before the first result is
    handed back (as the pool sends them), noting the size of each batch."""

    sizes: list[int] = []

    def __init__(self, workers: int):
        InlinePool.sizes = []

    def ordered_map(self, fn, items, ahead: int):
        pending = []
        for item in items:
            InlinePool.sizes.append(len(item))
            pending.append(item)
            if len(pending) == ahead:
                first = pending.pop(0)
                yield first, fn(first)
        for item in pending:
            yield item, fn(item)


@pytest.mark.parametrize("per_pub, sizes", [(10_000, [1] * 40), (0, [1] * 8 + [32])])
def test_batches_are_fitted_to_their_output(engine, monkeypatch, per_pub, sizes):
    monkeypatch.setattr("rtf.io.processes.forked_pool",
                        lambda workers: contextlib.nullcontext(InlinePool(workers)))
    monkeypatch.setattr(match_cli, "WORKER_BATCH_BYTES", 5_000)
    render = (lambda pub, found: b"x" * per_pub) if per_pub else (lambda pub, found: b"")
    results = list(match_cli.match_in_processes(engine, render, iter(pubs(40)), 2))
    assert [piece for piece, _, _ in results] == [render(p, None) or b"" for p in pubs(40)]
    assert InlinePool.sizes == sizes
