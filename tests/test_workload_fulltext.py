"""The full-text-only workload (`rtf gen-queries --mix fulltext`, issue 22 target 3)."""

from __future__ import annotations

from rtf import ALGORITHMS, Engine
from rtf.bench.workload import FULLTEXT_WORD_SHARE, Mix, Vocabulary, generate_queries
from rtf.parser import parse_query


def test_fulltext_queries_are_one_tuple_with_full_text_deterministic_and_answered_alike(dbpedia_slice):
    abstracts = [p for p in dbpedia_slice if "abstract" in p.triples[0][1]]
    vocab = Vocabulary(abstracts)
    queries = generate_queries(vocab, 300, seed=3, mix=Mix.fulltext())
    assert queries == generate_queries(Vocabulary(abstracts), 300, seed=3, mix=Mix.fulltext())
    kinds = {"ftor": 0, "ftnear": 0, "*": 0, "phrase": 0}
    limit = FULLTEXT_WORD_SHARE * len(abstracts)
    for q in queries:
        parsed = parse_query(q["query"])
        (branch,) = parsed.branches
        (t,) = branch.tuples
        assert t.fulltext is not None and not branch.residual
        text = q["query"]
        kinds["ftor"] += " ftor " in text
        kinds["ftnear"] += " ftnear(" in text
        kinds["*"] += '*"' in text
        kinds["phrase"] += any(" " in s for s in text.split('"')[1::2])
    assert all(kinds.values()), kinds  # every operator of the mix occurs
    # no drawn word is common (phrases come from a real text and may hold any word)
    words = {w for q in queries for w in q["query"].split('"')[1::2] if " " not in w and "*" not in w}
    assert all(vocab.word_publications[w] <= limit for w in words)
    engines = {a: Engine(a) for a in ALGORITHMS}
    for e in engines.values():
        for q in queries:
            e.register(q["query"], q["id"])
    total = 0
    for pub in abstracts[:60]:
        expected = engines["naive"].match(pub)
        total += len(expected)
        for name, e in engines.items():
            assert e.match(pub) == expected, name
    assert 0 < total < 60 * 300 * 0.2  # selective: a few percent of the queries match
