"""The trie forests themselves: sharing, stats, pruning on removal, memory."""

from __future__ import annotations

import gc
import random
import tracemalloc

import pytest

from rtf import Engine, Publication

EX = "http://ex.org/"
P = f"PREFIX ex: <{EX}> "
WORDS = ["olympic", "games", "rio", "gold", "medal", "swim", "track", "final", "heat", "record"]


def q(body: str, select: str = "?s") -> str:
    return f"{P}SELECT {select} WHERE {{ {body} }}"


@pytest.fixture(params=["rtfm", "rtfs"])
def algorithm(request):
    return request.param


def test_equal_structures_share_nodes_whatever_the_variable_names(algorithm):
    e = Engine(algorithm)
    e.register(q("?s ex:p ?o . ?s ex:q ex:c"), "a")
    before = e.stats()
    e.register(q("?x ex:p ?y . ?x ex:q ex:c", "?x"), "b")
    after = e.stats()
    assert after["trie_nodes"] == before["trie_nodes"]
    assert after["tuples"] == before["tuples"] + 2
    assert after["queries"] == 2


def test_stats_report_the_documented_sizes(algorithm):
    e = Engine(algorithm)
    e.register(q('?s ex:p ?o FILTER ftcontains(?o, "rio" ftand "games")'))
    s = e.stats()
    for key in ("queries", "tuples", "trie_nodes", "word_nodes", "index_bytes_estimate"):
        assert key in s, key
    assert s["trie_nodes"] == 3 and s["word_nodes"] == 2
    assert s["index_bytes_estimate"] > 0


def test_rtfm_repeats_words_under_each_structure_rtfs_clusters_them():
    text_a = q('?s ex:p ?o FILTER ftcontains(?o, "rio" ftand "games")')
    text_b = q('?s ex:q ?o FILTER ftcontains(?o, "rio" ftand "games")')
    sizes = {}
    for algorithm in ("rtfm", "rtfs"):
        e = Engine(algorithm)
        e.register(text_a)
        e.register(text_b)
        sizes[algorithm] = e.stats()["word_nodes"]
    assert sizes == {"rtfm": 4, "rtfs": 2}


def test_unregister_prunes_every_node(algorithm):
    e = Engine(algorithm)
    e.register(q('?s ex:p ?o FILTER ftcontains(?o, "olymp*" ftand "rio")'), "keep")
    baseline = e.stats()
    e.register(q('?s ex:p ?o . ?s a ex:C FILTER ftcontains(?o, "gold" ftand "rio")'), "x")
    e.register(q('* ex:r ?o FILTER ftcontains(?o, "swim*")'), "y")
    e.unregister("x")
    e.unregister("y")
    after = e.stats()
    for key in ("tuples", "trie_nodes", "word_nodes"):
        assert after[key] == baseline[key], key
    e.unregister("keep")
    assert (e.stats()["trie_nodes"], e.stats()["word_nodes"]) == (0, 0)


def test_prefix_terms_match_by_prefix_only(algorithm):
    e = Engine(algorithm)
    e.register(q('?s ex:p ?o FILTER ftcontains(?o, "olymp*")'), "pre")
    pub = lambda text: Publication(EX + "a", [(f"<{EX}a>", f"<{EX}p>", f'"{text}"')])
    assert [m.query_id for m in e.match(pub("Olympics in Rio"))] == ["pre"]
    assert [m.query_id for m in e.match(pub("olymp"))] == ["pre"]
    assert e.match(pub("the lympics, polymp")) == []


def _random_queries(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        tuples = []
        for k in range(rng.randint(1, 3)):
            pred = f"ex:p{rng.randrange(40)}"
            obj = rng.choice([f"?o{k}", f"ex:c{rng.randrange(200)}", "*"])
            tuples.append(f"?s {pred} {obj}")
        filt = ""
        if rng.random() < 0.6 and tuples[0].endswith("?o0"):
            words = rng.sample(WORDS, rng.randint(1, 3))
            terms = " ftand ".join(f'"{w}{"*" if rng.random() < 0.2 else ""}"' for w in words)
            filt = f" FILTER ftcontains(?o0, {terms})"
        out.append(q(" . ".join(tuples) + filt))
    return out


@pytest.fixture(scope="module")
def parsed_10000():
    from rtf.parser import PARSE_CACHE, parse_query
    from rtf.query import terms
    # The table of shared query values (`rtf.query.terms.shared`) is a bounded cache that
    # starts again when full: emptied first, so that these queries' values are all in it
    # when the test starts measuring, whatever the tests before it interned.
    for table in (terms._SHARED, terms._IRIS, terms._VARIABLES):
        table.clear()
    PARSE_CACHE.clear()
    # So are the bounded caches of compiled and canonical expressions: filled to their
    # bound by earlier tests, they would be emptied and refilled while this test measures.
    from rtf.matching import shared_predicates
    from rtf.query import expressions
    shared_predicates.canonical.cache_clear()
    expressions.compile_filter.cache_clear()
    for table in (expressions._BY_ID, expressions._FILTERS, expressions._OPERANDS):
        table.clear()
    return [parse_query(text) for text in _random_queries(10_000)]


@pytest.mark.slow
def test_memory_returns_near_its_level_after_registering_and_removing_10000_queries(
        algorithm, parsed_10000):
    queries = parsed_10000  # parsed beforehand: the parser's cache is not the index
    e = Engine(algorithm)
    for i, text in enumerate(queries[:500]):  # a resident population that stays
        e.register(text, f"r{i}")
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        levels = []
        for round_ in range(2):
            ids = [e.register(query, f"t{i}") for i, query in enumerate(queries)]
            gc.collect()
            grown, _ = tracemalloc.get_traced_memory()
            for qid in ids:
                e.unregister(qid)
            del ids
            gc.collect()
            levels.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    growth = grown - base
    assert growth > 1_000_000, "registering 10,000 queries should cost real memory"
    # Near the earlier level: what stays is spare capacity of hash tables
    # (Python's dicts and sets do not shrink) and of the arrays indexed by slot and
    # by shape id (sized for the 10,500 queries, ~1.8 MB here), which the next round
    # reuses: the second round must leave nothing more (below). A quarter of the
    # growth: the growth itself fell when each shape's slot list became a row of
    # one array (rtf.matching.shape_slots), while that capacity did not.
    assert levels[0] - base < 0.25 * growth, (base, grown, levels)
    assert levels[1] - levels[0] < 0.02 * growth, (base, grown, levels)
    assert len(e) == 500
    assert e.stats()["tuples"] == sum(len(b.tuples) for query in queries[:500]
                                      for b in query.branches)
