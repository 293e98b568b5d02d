"""Match.explain / rtf match --explain: spans checked against the text, for every operator."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication
from rtf.cli import main
from rtf.matching.explain import explain_solution, ft_hits
from rtf.parser import parse_query
from rtf.query.text import words

EX = "http://ex.org/"


def ft(expr: str):
    """The full-text expression of ``ftcontains(?t, expr)``."""
    q = parse_query(f'ASK {{ ?s <{EX}p> ?t FILTER ftcontains(?t, {expr}) }}')
    return q.filters[0].ft


def spans_are_the_words(hit: dict, text: str) -> None:
    for (start, end), word in zip(hit["spans"], hit["words"]):
        assert text[start:end] == word


TEXT = "The Olympic Games in Rio de Janeiro: Rio's games, olympic records."


@pytest.mark.parametrize("expr, operator, words_found", [
    ('"rio"', "term", ["Rio", "Rio"]),
    ('"olymp*"', "prefix", ["Olympic", "olympic"]),
    ('"\\"rio de janeiro\\""', "phrase", ["Rio de Janeiro"]),
    ('"\\"olympic gam*\\""', "phrase", ["Olympic Games"]),
])
def test_terms_prefixes_and_phrases(expr, operator, words_found):
    [hit] = ft_hits(ft(expr), TEXT)
    assert hit["operator"] == operator and hit["words"] == words_found
    spans_are_the_words(hit, TEXT)


def test_ftnear_gives_each_pair_within_the_distance():
    [hit] = ft_hits(ft('"games" ftnear(0, 1) "rio"'), TEXT)
    # "Games in Rio": one word between; "Rio's games" is the wrong order (ordered).
    assert hit["operator"] == "ftnear" and hit["pairs"] == [[[12, 17], [21, 24]]]
    assert [TEXT[s:e] for s, e in hit["pairs"][0]] == ["Games", "Rio"]
    [hit] = ft_hits(ft('"games" ftnear(0, 1, unordered) "rio"'), TEXT)
    # Each pair is [left operand's span, right operand's span], in either text order.
    assert [[TEXT[s:e] for s, e in pair] for pair in hit["pairs"]] == [["Games", "Rio"], ["games", "Rio"]]


def test_and_or_not():
    hits = ft_hits(ft('"rio" ftand ("tokyo" ftor "olympic") ftand ftnot "paris"'), TEXT)
    assert [(h["operator"], h["query"]) for h in hits] == [("term", '"rio"'), ("term", '"olympic"')]
    for h in hits:
        spans_are_the_words(h, TEXT)


def test_explain_names_the_branch_variable_and_literal():
    engine = Engine()
    engine.register(f'SELECT ?s WHERE {{ ?s <{EX}p> ?t . ?s <{EX}q> ?u '
                    f'FILTER (ftcontains(?t, "tokyo") || ftcontains(?u, "\\"big games\\"")) }}', "q")
    pub = Publication(f"{EX}a", [(f"<{EX}a>", f"<{EX}p>", '"Rio"'),
                                 (f"<{EX}a>", f"<{EX}q>", '"The big games"@en')])
    [m] = engine.match(pub)
    [solution] = m.explain(pub, engine)
    assert solution["bindings"] == {"s": f"<{EX}a>"} and solution["branch"] == 2
    [entry] = solution["ftcontains"]
    assert entry["variable"] == "?u" and entry["literal"] == '"The big games"@en'
    assert entry["hits"] == [{"operator": "phrase", "query": '"big games"', "spans": [[4, 13]],
                              "words": ["big games"]}]
    assert m.explain(pub, engine.get("q")) == m.explain(pub, engine.get("q").query) == [solution]


def test_rtf_match_explain(capsys, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": f'SELECT ?s WHERE {{ ?s <{EX}p> ?t FILTER ftcontains(?t, "rio") }}'}))
    pubs = tmp_path / "p.nt"
    pubs.write_text(f'<{EX}a> <{EX}p> "Games in Rio" .\n')
    assert main(["match", "--queries", str(queries), "--publications", str(pubs), "--explain"]) == 0
    line = json.loads(capsys.readouterr().out)
    [solution] = line["explain"]
    assert solution["ftcontains"][0]["hits"][0]["spans"] == [[9, 12]]
    assert {k: v for k, v in line.items() if k != "explain"} == {
        "publication": f"{EX}a", "query": "q", "subscriber": None, "bindings": [{"s": f"<{EX}a>"}]}


# Random texts and expressions: whenever the engine matches, the explanation has
# a witness whose spans are exactly the words the query names.
_VOCAB = ["rio", "games", "olympic", "big", "city"]
_text = st.lists(st.sampled_from(_VOCAB + ["Rio", "GAMES", "x"]), min_size=1, max_size=12).map(" ".join)
_word = st.sampled_from(_VOCAB)
_expr = st.recursive(
    st.one_of(_word.map(lambda w: f'"{w}"'), _word.map(lambda w: f'"{w[:3]}*"'),
              st.tuples(_word, _word).map(lambda p: f'"\\"{p[0]} {p[1]}\\""')),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: f"({p[0]} ftand {p[1]})"),
        st.tuples(inner, inner).map(lambda p: f"({p[0]} ftor {p[1]})"),
        st.tuples(_word, _word, st.integers(0, 3)).map(lambda p: f'("{p[0]}" ftnear(0, {p[2]}) "{p[1]}")')),
    max_leaves=4)


@settings(max_examples=150, deadline=None)
@given(text=_text, expr=_expr)
def test_every_hit_spans_words_the_query_names(text, expr):
    q = parse_query(f'SELECT ?s WHERE {{ ?s <{EX}p> ?t FILTER ftcontains(?t, {expr}) }}')
    engine = Engine("naive")
    engine.register(q, "q")
    pub = Publication(f"{EX}a", [(f"<{EX}a>", f"<{EX}p>", json.dumps(text))])
    found = engine.match(pub)
    if not found:
        return
    [solution] = found[0].explain(pub, engine)
    assert solution["branch"] is not None
    named = {w.text for w in _query_words(q)}
    hits = [h for e in solution["ftcontains"] for h in e["hits"]]
    assert hits
    for hit in hits:
        spans_are_the_words(hit, text)
        for span_text in hit["words"]:
            assert all(any(w.startswith(n) for n in named) for w in words(span_text))


def _query_words(q):
    out = []

    def visit(e):
        for name in ("words", "operands", "operand", "left", "right"):
            value = getattr(e, name, None)
            if value is None:
                continue
            for v in value if isinstance(value, tuple) else (value,):
                if hasattr(v, "prefix"):
                    out.append(v)
                else:
                    visit(v)
    for b in q.branches:
        for t in b.tuples:
            if t.fulltext is not None:
                visit(t.fulltext)
    return out


def test_explain_solution_without_a_witness_says_so():
    q = parse_query(f'SELECT ?s WHERE {{ ?s <{EX}p> ?t FILTER ftcontains(?t, "rio") }}')
    pub = Publication(f"{EX}a", [(f"<{EX}a>", f"<{EX}p>", '"Paris"')])
    assert explain_solution(q, pub, {"s": f"<{EX}a>"}) == {"bindings": {"s": f"<{EX}a>"},
                                                           "branch": None, "ftcontains": []}


# --------------------------- the query's words, not only the analysed terms (issue 40, item 14)

from rtf import TextAnalysis  # noqa: E402


def hits_of(analysis, expr: str, text: str) -> list[dict]:
    engine = Engine(text_analysis=analysis)
    engine.register(f'ASK {{ ?s <{EX}p> ?t FILTER ftcontains(?t, {expr}) }}', "q")
    pub = Publication.from_rdf("a", f'<{EX}a> <{EX}p> {json.dumps(text)} .')
    [match] = engine.match(pub)
    [solution] = match.explain(pub, engine)
    return solution["ftcontains"][0]["hits"]


def test_a_stemmed_term_shows_the_querys_word_and_the_analysed_term_apart():
    [hit] = hits_of(TextAnalysis(stem="english"), '"running"', "She runs, and running is fun")
    assert (hit["query"], hit["analysed"], hit["words"]) == ('"running"', '"run"', ["runs", "running"])
    [hit] = hits_of(TextAnalysis(fold_accents=True), '"Café"', "a cafe and a café")
    assert (hit["query"], hit["analysed"]) == ('"café"', '"cafe"')
    [hit] = hits_of(TextAnalysis(stem="english"), '"rio"', "Rio games")  # the same: no second field
    assert hit["query"] == '"rio"' and "analysed" not in hit


def test_an_ftnear_shows_its_operands_as_written():
    [hit] = hits_of(TextAnalysis(stem="english"), '"games" ftnear(0, 2) "played"', "games were played")
    assert hit["operator"] == "ftnear"
    assert "played" in hit["query"] and "games" in hit["query"]
    assert "play" in hit["analysed"] and "played" not in hit["analysed"]


WRITTEN = ["running", "runs", "Games", "played", "cities", "city", "Olympic", "rio", "CAFÉS", "naïve"]


@settings(max_examples=60, deadline=None)
@given(word=st.sampled_from(WRITTEN), stem=st.sampled_from([None, "english"]), fold=st.booleans())
def test_the_query_field_is_always_the_word_as_written_casefolded(word, stem, fold):
    analysis = TextAnalysis(stem=stem, fold_accents=fold)
    [hit] = hits_of(analysis, json.dumps(word), f"x {word} y")
    assert hit["query"] == f'"{word.casefold()}"'
    assert hit["words"] == [word]
    if "analysed" in hit:
        assert hit["analysed"] != hit["query"]
    if stem is None and not fold:
        assert "analysed" not in hit
