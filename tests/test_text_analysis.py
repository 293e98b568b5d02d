"""Text analysis options (issue 26, item 4): accent folding, stemming, stop words, CJK bigrams.

The spec allows an engine option that adds stemming or stop words "if it
applies to queries and publications alike". The oracle here is independent
of the engines' text code: a query under analysis A over a text T must
answer as the *default* engine answers the query whose strings were
analysed by hand over the text whose words were analysed by hand
(``" ".join(A.terms(words(T)))``) -- a rewrite of the inputs, not of the
engines. Every engine is also compared with the naive one under A.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import ALGORITHMS, Engine, Publication, QueryError, TextAnalysis
from rtf.errors import IndexFileError
from rtf.io import store
from rtf.query.analysis import TextAnalysisError
from rtf.query.text import words

ABS = "<http://ex/abstract>"
ALL = TextAnalysis(fold_accents=True, stem="english", stop_words="english", cjk_bigrams=True)


def ft_query(expr: str) -> str:
    return f"SELECT ?s WHERE {{ ?s {ABS} ?t FILTER ftcontains(?t, {expr}) }}"


def matched(engine: Engine, text: str, queries: dict[str, str]) -> set[str]:
    for qid, q in queries.items():
        if qid not in engine:
            engine.register(q, qid)
    pub = Publication("p", [("<http://ex/d>", ABS, json.dumps(text, ensure_ascii=False))])
    return {m.query_id for m in engine.match(pub)}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("query, text, analysis", [
    ('"cafe"', "Le Café de Flore", TextAnalysis(fold_accents=True)),
    ('"fjord"', "Norway's Fjords", TextAnalysis(stem="english")),
    ('"東京"', "東京タワーは高い", TextAnalysis(cjk_bigrams=True)),
    ('"tower of london"', "the Tower in London", TextAnalysis(stop_words="english")),
    ('"Ångström" ftand "naïve"', "angstrom units, a naive view", TextAnalysis(fold_accents=True)),
    ('"running" ftnear(0, 0) "game"', "they run games daily", TextAnalysis(stem="english")),
])
def test_the_issue_s_cases_match_with_the_option_and_not_without(algorithm, query, text, analysis):
    assert matched(Engine(algorithm, text_analysis=analysis), text, {"q": ft_query(query)}) == {"q"}
    assert matched(Engine(algorithm), text, {"q": ft_query(query)}) == set()


def test_default_options_are_no_options():
    assert Engine(text_analysis=TextAnalysis()).text_analysis is None
    assert Engine(text_analysis={}).text_analysis is None
    assert Engine().stats()["text_analysis"] is None


@pytest.mark.parametrize("bad", [{"stem": "klingon"}, {"stop_words": "klingon"}, {"stop_words": ["two words"]},
                                 {"fold_accents": "yes"}, {"lemmatize": True}])
def test_bad_options_are_refused(bad):
    with pytest.raises(TextAnalysisError):
        Engine(text_analysis=bad)


def test_a_query_string_of_stop_words_only_is_refused_at_registration():
    engine = Engine(text_analysis=TextAnalysis(stop_words="english"))
    with pytest.raises(QueryError, match="only stop words"):
        engine.register(ft_query('"the" ftand "rio"'))
    assert len(engine) == 0


def test_prefixes_are_folded_not_stemmed():
    engine = Engine(text_analysis=TextAnalysis(fold_accents=True, stem="english"))
    assert matched(engine, "Olympic Cafés", {"a": ft_query('"olymp*"'), "b": ft_query('"CAFÉ*"'),
                                              "c": ft_query('"olympi*"')}) == {"a", "b"}


def test_a_parsed_query_is_analysed_again_from_its_text():
    from rtf import parse_query

    engine = Engine(text_analysis=TextAnalysis(fold_accents=True))
    engine.register(parse_query(ft_query('"cafe"')), "q")
    assert matched(engine, "Café", {}) == {"q"}


def test_saved_pickled_and_explained_with_the_options(tmp_path):
    engine = Engine(text_analysis=ALL)
    queries = {"a": ft_query('"tower" ftand "東京"'), "b": ft_query('"cafes"')}
    found = matched(engine, "The Café, near 東京タワー towers", queries)
    assert found == {"a", "b"}
    engine.save(tmp_path / "x.idx")
    loaded = Engine.load(tmp_path / "x.idx")
    assert loaded.text_analysis == ALL and matched(loaded, "The Café, near 東京タワー towers", {}) == found
    assert store.file_info(tmp_path / "x.idx")["text_analysis"] == ALL.as_dict()
    copy = pickle.loads(pickle.dumps(engine))
    assert copy.text_analysis == ALL and matched(copy, "The Café, near 東京タワー towers", {}) == found
    text = "The Café, near 東京タワー towers"
    pub = Publication("p", [("<http://ex/d>", ABS, json.dumps(text, ensure_ascii=False))])
    (match,) = [m for m in engine.match(pub) if m.query_id == "b"]
    hits = match.explain(pub, engine)[0]["ftcontains"][0]["hits"]
    assert hits[0]["words"] == ["Café"]  # the span of the word the term comes from


def test_an_analysed_index_loads_without_parsing(tmp_path, monkeypatch):
    """Its words are stored analysed: loading registers the stored queries as they are."""
    engine = Engine(text_analysis=ALL)
    matched(engine, "x", {"a": ft_query('"tower" ftand "東京"'), "b": ft_query('"cafes"')})
    data = engine.to_bytes()
    import rtf.parser

    def no_parsing(text):
        raise AssertionError(f"parsed again: {text}")
    monkeypatch.setattr(rtf.parser, "parse_query", no_parsing)  # (the engine imports it where it parses)
    loaded = Engine.from_bytes(data)
    assert matched(loaded, "The Café, near 東京タワー towers", {}) == {"a", "b"}


def test_a_file_with_bad_options_is_refused(tmp_path):
    saved = Engine(text_analysis=ALL)._saved()
    saved.text_analysis = {"stem": "klingon"}
    (tmp_path / "bad.idx").write_bytes(store.encode_index(saved))
    with pytest.raises(IndexFileError, match="text_analysis"):
        Engine.load(tmp_path / "bad.idx")


@pytest.mark.slow
def test_the_command_line_options(tmp_path):
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "query": ft_query('"cafe"')}) + "\n")
    (tmp_path / "p.nt").write_text(f'<http://ex/a> {ABS} "Un café" .\n')
    rtf = [sys.executable, "-m", "rtf.cli"]
    run = lambda *a: subprocess.run([*rtf, *a], capture_output=True, text=True, cwd=tmp_path)  # noqa: E731
    assert run("match", "--queries", "q.jsonl", "--publications", "p.nt").stdout == ""
    assert '"query": "q"' in run("match", "--queries", "q.jsonl", "--publications", "p.nt", "--fold-accents").stdout
    assert run("index", "build", "--queries", "q.jsonl", "--fold-accents", "--output", "q.idx").returncode == 0
    assert '"query": "q"' in run("match", "--index", "q.idx", "--publications", "p.nt").stdout
    info = json.loads(run("index", "info", "q.idx").stdout)
    assert info["text_analysis"]["fold_accents"] is True
    clash = run("match", "--index", "q.idx", "--publications", "p.nt", "--stem", "english")
    assert clash.returncode == 1 and "rebuild the index" in clash.stderr
    unknown = run("match", "--queries", "q.jsonl", "--publications", "p.nt", "--stem", "klingon")
    assert unknown.returncode == 2 and "no Snowball stemmer" in unknown.stderr
    (tmp_path / "stop.txt").write_text("# my stop words\nun\n")
    stop = run("match", "--queries", "q.jsonl", "--publications", "p.nt", "--fold-accents",
               "--stop-words-file", "stop.txt")
    assert '"query": "q"' in stop.stdout


# ------------------------------------------- the independent oracle: analysed inputs


VOCABULARY = ["the", "of", "and", "café", "cafe", "cafés", "fjord", "fjords", "Fjörd", "running", "runs",
              "ran", "games", "game", "olympic", "olympics", "naïve", "naive", "東京", "東京タワー",
              "タワー", "京", "rio", "Rio", "towers", "tower", "in", "a"]
ANALYSES = [TextAnalysis(fold_accents=True), TextAnalysis(stem="english"),
            TextAnalysis(stop_words="english"), TextAnalysis(cjk_bigrams=True), ALL,
            TextAnalysis(fold_accents=True, stop_words=("cafe", "rio"))]

texts = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=12).map(" ".join)
strings = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(" ".join)


@st.composite
def expressions(draw, depth=2):
    """(the expression with its strings as written, the strings in order)."""
    kind = draw(st.sampled_from(["term", "term", "and", "or", "near", "not"] if depth else ["term"]))
    if kind == "term":
        s = draw(strings)
        return "{}", [s]
    left, ls = draw(expressions(depth - 1))
    right, rs = draw(expressions(depth - 1))
    if kind == "not":
        return f"({left} ftand ftnot {right})", ls + rs
    if kind == "near":  # between terms or phrases only
        lo = draw(st.integers(0, 2))
        a, b = draw(strings), draw(strings)
        return f"({{}} ftnear({lo}, {lo + draw(st.integers(0, 3))}) {{}})", [a, b]
    return f"({left} {'ftand' if kind == 'and' else 'ftor'} {right})", ls + rs


def analysed_string(analysis: TextAnalysis, s: str) -> str | None:
    ts = analysis.terms(words(s))
    return " ".join(ts) if ts else None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(analysis=st.sampled_from(ANALYSES), expr=expressions(), text=texts,
       algorithm=st.sampled_from(ALGORITHMS))
def test_an_option_equals_the_default_engine_on_analysed_inputs(analysis, expr, text, algorithm):
    template, parts = expr
    rewritten = [analysed_string(analysis, s) for s in parts]
    query = ft_query(template.format(*(json.dumps(s, ensure_ascii=False) for s in parts)))
    engine = Engine(algorithm, text_analysis=analysis)
    if None in rewritten:  # a string of stop words only: refused, nothing registered
        with pytest.raises(QueryError, match="only stop words"):
            engine.register(query, "q")
        return
    expected = matched(Engine("naive"), " ".join(analysis.terms(words(text))),
                       {"q": ft_query(template.format(*(json.dumps(s, ensure_ascii=False) for s in rewritten)))})
    assert matched(engine, text, {"q": query}) == expected
    assert matched(Engine("naive", text_analysis=analysis), text, {"q": query}) == expected
