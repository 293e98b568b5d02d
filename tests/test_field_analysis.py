"""Text analysis per field (issue 40, item 9): a `TextAnalysis` chosen by the literal's
predicate and language tag, as Elasticsearch and Lucene pick an analyzer per field.

The oracle is independent of the engines' per-field code (tags, marks, the
expression's variants): it takes a literal's fields from the publication by
hand, picks each field's analysis by the documented rule (re-implemented here),
and asks the *default* naive engine whether the query, its strings analysed by
hand, holds on the literal's words analysed by hand -- the rewrite of the
inputs that tests/test_text_analysis.py uses for one analysis, once per field.
"""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import ALGORITHMS, Engine, FieldAnalysis, FieldRule, Publication, QueryError, TextAnalysis
from rtf.errors import IndexFileError
from rtf.io import store
from rtf.query.analysis import TextAnalysisError, analysis_from_dict
from rtf.query.terms import literal_parts
from rtf.query.text import words

from tests.test_text_analysis import ANALYSES, expressions

EX = "http://ex/"
TITLE, ABSTRACT, NAME = (f"<{EX}{p}>" for p in ("title", "abstract", "name"))
PREDICATES = [TITLE, ABSTRACT, NAME]
LANGS = ["en", "en-gb", "fr", None]
NEVER = "qqqneverqqq"  # a word of no generated text (the oracle's term of stop words only)


# ------------------------------------------------------------------ the oracle

def rule_analysis(fa: FieldAnalysis, predicate: str | None, lang: str | None) -> TextAnalysis:
    """The documented rule, written again: (predicate, lang), (predicate, *), (*, lang),
    default; a lang rule takes the longer tags that start with it and a '-'."""
    rules = {(None if r.predicate is None else f"<{r.predicate}>", r.lang): r.analysis for r in fa.rules}
    tags = []
    if lang is not None:
        parts = lang.lower().split("-")
        tags = ["-".join(parts[:k]) for k in range(len(parts), 0, -1)]
    order = ([(predicate, t) for t in tags] + [(predicate, None)] if predicate else []) + [(None, t) for t in tags]
    return next((rules[k] for k in order if k in rules), fa.default)


def literal_analyses(fa: FieldAnalysis, triples, literal: str) -> set[TextAnalysis]:
    lang = literal_parts(literal).lang
    predicates = {p for _, p, o in triples if o == literal} or {None}
    return {rule_analysis(fa, p, lang) for p in predicates}


def analysed_string(analysis: TextAnalysis, s: str) -> str:
    terms = analysis.terms(words(s))
    return " ".join(terms) if terms else NEVER


_HOLDS: dict = {}


def holds(analysis: TextAnalysis, template: str, parts: list[str], text: str) -> bool:
    """The default naive engine on the inputs analysed by hand."""
    key = (analysis, template, tuple(parts), text)
    if key not in _HOLDS:
        strings = [json.dumps(analysed_string(analysis, s), ensure_ascii=False) for s in parts]
        query = f"ASK {{ ?s <{EX}t> ?t FILTER ftcontains(?t, {template.format(*strings)}) }}"
        engine = Engine("naive")
        engine.register(query, "q")
        body = json.dumps(" ".join(analysis.terms(words(text))) or "x", ensure_ascii=False)
        _HOLDS[key] = bool(engine.match(Publication("p", [(f"<{EX}s>", f"<{EX}t>", body)])))
    return _HOLDS[key]


# ------------------------------------------------------------------ generators

CHOICES = ANALYSES + [TextAnalysis()]


@st.composite
def field_analyses(draw):
    keys = draw(st.lists(st.tuples(st.sampled_from([None, *PREDICATES]), st.sampled_from(LANGS))
                         .filter(lambda k: k != (None, None)), min_size=1, max_size=4, unique=True))
    rules = tuple(FieldRule(p and p[1:-1], lang, draw(st.sampled_from(CHOICES))) for p, lang in keys)
    return FieldAnalysis(draw(st.sampled_from(CHOICES)), rules)


VOCABULARY = ["the", "of", "café", "cafe", "fjords", "Fjörd", "running", "runs", "games", "game",
              "naïve", "東京タワー", "京", "rio", "towers", "in"]


@st.composite
def publications(draw):
    texts = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=8).map(" ".join)
    literals = draw(st.lists(st.tuples(texts, st.sampled_from(LANGS)), min_size=1, max_size=3))
    keys = [json.dumps(t, ensure_ascii=False) + (f"@{lang}" if lang else "") for t, lang in literals]
    triples = draw(st.lists(st.tuples(st.sampled_from([f"<{EX}a>", f"<{EX}b>"]), st.sampled_from(PREDICATES),
                                      st.sampled_from(keys)), min_size=1, max_size=5, unique=True))
    return triples


def answers(engine: Engine, query: str, triples) -> set[str]:
    if "q" not in engine:
        engine.register(query, "q")
    return {b["o"] for m in engine.match(Publication("p", triples)) for b in m.bindings}


QUERY_FORMS = {
    # (the query, whether a literal answers it when the expression holds)
    "positive": ("SELECT ?o WHERE {{ ?s {p} ?o FILTER ftcontains(?o, {e}) }}", True),
    "negated": ("SELECT ?o WHERE {{ ?s {p} ?o FILTER (!ftcontains(?o, {e})) }}", False),
    "version 3": ("SELECT ?o WHERE {{ {{ ?s {p} ?o }} UNION {{ ?s <http://ex/none> ?o }} "
                  "FILTER ftcontains(?o, {e}) }}", True),
}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fa=field_analyses(), expr=expressions(), triples=publications(),
       predicate=st.sampled_from([TITLE, "?p"]), form=st.sampled_from(sorted(QUERY_FORMS)),
       inner_not=st.booleans(), algorithm=st.sampled_from(ALGORITHMS))
def test_every_engine_equals_the_oracle_per_field(fa, expr, triples, predicate, form, inner_not, algorithm):
    template, parts = expr
    if inner_not:  # an expression that holds without any of its words
        template = f"ftnot ({template})"
    shape, when = QUERY_FORMS[form]
    strings = [json.dumps(s, ensure_ascii=False) for s in parts]
    query = shape.format(p=predicate, e=template.format(*strings))
    engine = Engine(algorithm, text_analysis=fa)
    every = set(fa.analyses)
    if any(all(a.terms(words(s)) == [] for a in every) for s in parts):  # stop words in every field
        with pytest.raises(QueryError, match="only stop words"):
            engine.register(query, "q")
        return
    expected = {o for _, p, o in triples if predicate == "?p" or p == predicate
                if any(holds(a, template, parts, literal_parts(o).lexical)
                       for a in literal_analyses(fa, triples, o)) == when}
    assert answers(engine, query, triples) == expected
    assert answers(Engine("naive", text_analysis=fa), query, triples) == expected


# ------------------------------------------------------------------ the rule, by hand

STEMMED = FieldAnalysis.from_dict({
    "default": {"fold_accents": True},
    "fields": [{"lang": "en", "stem": "english"},
               {"predicate": f"{EX}code", "lang": "en"},
               {"predicate": f"{EX}code"},
               {"predicate": f"{EX}title", "stop_words": "english"}]})


@pytest.mark.parametrize("predicate, lang, expected", [
    (f"<{EX}code>", "en", TextAnalysis()),  # (predicate, lang) before (*, lang)
    (f"<{EX}code>", "en-GB", TextAnalysis()),  # en takes en-gb
    (f"<{EX}code>", "fr", TextAnalysis()),  # (predicate, *) before the default
    (f"<{EX}title>", "en", TextAnalysis(stem="english")),  # (*, lang) before (predicate, *)? no:
    (f"<{EX}title>", None, TextAnalysis(stop_words="english")),
    (f"<{EX}other>", "en-us", TextAnalysis(stem="english")),
    (None, "en", TextAnalysis(stem="english")),
    (None, None, TextAnalysis(fold_accents=True)),
])
def test_the_first_matching_rule_wins(predicate, lang, expected):
    if (predicate, lang) == (f"<{EX}title>", "en"):
        # (title, en) has no rule; (title, *) comes before (*, en)
        expected = TextAnalysis(stop_words="english")
    assert STEMMED.analysis_for(predicate, None if lang is None else lang.lower()) == expected
    assert rule_analysis(STEMMED, predicate, lang) == expected


def test_a_literal_of_two_predicates_matches_under_either_field():
    engine = Engine(text_analysis=STEMMED)
    engine.register("SELECT ?o WHERE { ?s <http://ex/code> ?o FILTER ftcontains(?o, \"running\") }", "q")
    run = '"He runs"@en'
    assert not engine.match(Publication("p", [(f"<{EX}a>", f"<{EX}code>", run)]))
    # the same literal is also a name (English: stemmed): the query holds under that field
    assert engine.match(Publication("p", [(f"<{EX}a>", f"<{EX}code>", run), (f"<{EX}b>", f"<{EX}name>", run)]))


def test_stop_words_of_one_field_match_nothing_there_and_are_refused_only_everywhere():
    fa = FieldAnalysis(rules=(FieldRule(f"{EX}title", None, TextAnalysis(stop_words="english")),))
    engine = Engine(text_analysis=fa)
    engine.register('SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "the") }', "q")
    assert engine.match(Publication("p", [(f"<{EX}a>", f"<{EX}name>", '"the end"')]))
    assert not engine.match(Publication("p", [(f"<{EX}a>", f"<{EX}title>", '"the end"')]))
    everywhere = Engine(text_analysis=FieldAnalysis(TextAnalysis(stop_words="english"), fa.rules))
    with pytest.raises(QueryError, match="only stop words"):
        everywhere.register('SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "the") }', "q")


def test_a_literal_of_no_triple_has_the_field_of_its_language_tag():
    fa = FieldAnalysis(rules=(FieldRule(None, "en", TextAnalysis(stem="english")),))
    engine = Engine(text_analysis=fa)
    engine.register('ASK { ?s ?p ?x BIND("they were running"@en AS ?c) FILTER ftcontains(?c, "run") }', "en")
    engine.register('ASK { ?s ?p ?x BIND("they were running" AS ?c) FILTER ftcontains(?c, "run") }', "plain")
    assert [m.query_id for m in engine.match(Publication("p", [(f"<{EX}a>", f"<{EX}b>", f"<{EX}c>")]))] == ["en"]


# ------------------------------------------------------------------ the default stays the default

def test_no_rule_is_the_default_analysis_itself():
    assert Engine(text_analysis=FieldAnalysis()).text_analysis is None
    assert Engine(text_analysis={"default": {}, "fields": []}).text_analysis is None
    stem = TextAnalysis(stem="english")
    assert Engine(text_analysis=FieldAnalysis(stem)).text_analysis == stem
    # rules that all give the default's analysis are no rules
    same = FieldAnalysis(stem, (FieldRule(f"{EX}title", "en", stem),))
    assert Engine(text_analysis=same).text_analysis == stem
    queries = [('SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "fjords" ftand ftnot "rio") }', "q")]
    saved = []
    for analysis in (stem, same):
        engine = Engine(text_analysis=analysis)
        engine.register_many(queries)
        saved.append(engine.to_bytes())
    assert saved[0] == saved[1]  # byte for byte


def test_bad_field_options_are_refused():
    for bad in ({"fields": [{"stem": "english"}]},  # neither predicate nor lang
                {"fields": [{"lang": "en"}, {"lang": "EN"}]},  # the same field twice
                {"fields": [{"lang": "en_US"}]}, {"fields": [{"predicate": "a b"}]},
                {"fields": {"lang": "en"}}, {"default": {"stem": "klingon"}},
                {"fields": [{"lang": "en", "lemmatize": True}]}, {"fieldz": []}):
        with pytest.raises(TextAnalysisError):
            Engine(text_analysis=bad)


# ------------------------------------------------------------------ saved and restored

def test_the_saved_index_round_trips_the_fields(tmp_path):
    engine = Engine("rtfs", text_analysis=STEMMED)
    engine.register('SELECT ?o WHERE { ?s ?p ?o FILTER ftcontains(?o, "running" ftand "café") }', "q")
    pub = Publication("p", [(f"<{EX}a>", f"<{EX}name>", '"Running to the café"@en')])
    assert engine.match(pub)
    engine.save(tmp_path / "x.idx")
    loaded = Engine.load(tmp_path / "x.idx")
    assert loaded.text_analysis == STEMMED and loaded.match(pub) == engine.match(pub)
    assert store.file_info(tmp_path / "x.idx")["text_analysis"] == STEMMED.as_dict()
    assert analysis_from_dict(STEMMED.as_dict()) == STEMMED


def test_an_index_whose_fields_were_edited_is_refused(tmp_path):
    saved = Engine(text_analysis=STEMMED)
    saved.register('SELECT ?o WHERE { ?s ?p ?o FILTER ftcontains(?o, "running") }', "q")
    data = saved._saved()
    edited = STEMMED.as_dict()
    edited["fields"][0]["stem"] = "french"
    data.text_analysis = edited
    (tmp_path / "x.idx").write_bytes(store.encode_index(data))
    with pytest.raises(IndexFileError, match="text analysis"):
        Engine.load(tmp_path / "x.idx")


# ------------------------------------------------------------------ real data

@pytest.mark.slow
def test_every_engine_equals_naive_on_dbpedia_per_field(dbpedia_slice):
    from rtf.bench.workload import Mix, generate_queries

    fa = FieldAnalysis.from_dict({"default": {"fold_accents": True}, "fields": [
        {"predicate": "http://www.w3.org/2000/01/rdf-schema#comment", "lang": "en",
         "stem": "english", "stop_words": "english"},
        {"predicate": "http://www.w3.org/2000/01/rdf-schema#label"},
        {"lang": "en", "stem": "porter"},
        {"lang": "de", "stem": "german", "fold_accents": True}]})
    pubs = dbpedia_slice[:300]
    records = generate_queries(pubs, 300, seed=40, mix=Mix.all_operators(1.0), prefix="f")
    results = {}
    for algorithm in ALGORITHMS:
        engine = Engine(algorithm, text_analysis=fa)
        for r in records:
            try:
                engine.register(r["query"], r["id"])
            except QueryError as e:  # only a string of stop words in every field may be refused
                assert "only stop words" in str(e)
        results[algorithm] = [(p.id, m.query_id, m.solutions) for p in pubs for m in engine.match(p)]
    for algorithm in ALGORITHMS:
        assert results[algorithm] == results["naive"], algorithm
    assert len(results["naive"]) > 50
    default = Engine("naive")
    default.register_many([(r["query"], r["id"]) for r in records])
    assert results["naive"] != [(p.id, m.query_id, m.solutions) for p in pubs for m in default.match(p)]


# ------------------------------------------------------------------ the command line

TOML = """\
[default]
fold_accents = true

[[fields]]
predicate = "http://ex/abstract"
lang = "en"
stem = "english"
"""


@pytest.mark.slow
def test_the_command_line_takes_a_field_analysis_file(tmp_path):
    query = 'SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "running" ftand "cafe") }'
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q", "query": query}) + "\n")
    (tmp_path / "p.nt").write_text('<http://ex/a> <http://ex/abstract> "Runs to a cafe"@en .\n'
                                   '<http://ex/b> <http://ex/title> "Runs to a café"@en .\n'
                                   '<http://ex/c> <http://ex/title> "Running to a café"@en .\n')
    (tmp_path / "fields.toml").write_text(TOML)
    rtf = [sys.executable, "-m", "rtf.cli"]
    run = lambda *a: subprocess.run([*rtf, *a], capture_output=True, text=True, cwd=tmp_path)  # noqa: E731

    def subjects(out: str) -> list[str]:
        return [b["s"] for line in out.splitlines() for b in json.loads(line)["bindings"]]
    # a: stemmed (abstract, en); b: accents folded, not stemmed; c: both words as written, folded
    expected = ["<http://ex/a>", "<http://ex/c>"]
    assert subjects(run("match", "--queries", "q.jsonl", "--publications", "p.nt",
                        "--text-analysis", "fields.toml").stdout) == expected
    inline = json.dumps({"default": {"fold_accents": True},
                         "fields": [{"predicate": "http://ex/abstract", "lang": "en", "stem": "english"}]})
    assert subjects(run("match", "--queries", "q.jsonl", "--publications", "p.nt",
                        "--text-analysis", inline).stdout) == expected
    assert run("index", "build", "--queries", "q.jsonl", "--text-analysis", "fields.toml",
               "--output", "q.idx").returncode == 0
    assert subjects(run("match", "--index", "q.idx", "--publications", "p.nt").stdout) == expected
    info = json.loads(run("index", "info", "q.idx").stdout)
    assert info["text_analysis"]["fields"][0]["stem"] == "english"
    same = run("match", "--index", "q.idx", "--publications", "p.nt", "--text-analysis", inline)
    assert subjects(same.stdout) == expected
    clash = run("match", "--index", "q.idx", "--publications", "p.nt", "--fold-accents")
    assert clash.returncode == 1 and "rebuild the index" in clash.stderr
    both = run("match", "--queries", "q.jsonl", "--publications", "p.nt", "--text-analysis", "fields.toml",
               "--stem", "english")
    assert both.returncode == 2 and "in one place" in both.stderr
    (tmp_path / "bad.json").write_text('{"fields": [{"lang": "en", "stem": "klingon"}]}')
    bad = run("match", "--queries", "q.jsonl", "--publications", "p.nt", "--text-analysis", "bad.json")
    assert bad.returncode == 2 and "bad.json" in bad.stderr and "klingon" in bad.stderr
    export = run("index", "export", "q.idx", "--output", "back.jsonl")
    assert export.returncode == 0 and "--text-analysis ANALYSIS.json" in export.stderr


# ------------------------------------------------------------------ rtf serve

FIELDS_JSON = json.dumps({"default": {"fold_accents": True},
                          "fields": [{"predicate": "http://ex/abstract", "lang": "en", "stem": "english"}]})


def test_rtf_serve_takes_the_analysis_from_every_source(tmp_path, monkeypatch):
    pytest.importorskip("pydantic_settings")
    from rtf.server.settings import SettingsError, serve_settings

    for name in [k for k in __import__("os").environ if k.upper().startswith("RTF_SERVE_")]:
        monkeypatch.delenv(name)
    expected = analysis_from_dict(json.loads(FIELDS_JSON))
    assert serve_settings({"data": "d", "text_analysis": FIELDS_JSON}).text_analysis == expected
    (tmp_path / "fields.toml").write_text(TOML)
    monkeypatch.setenv("RTF_SERVE_TEXT_ANALYSIS", str(tmp_path / "fields.toml"))
    assert serve_settings({"data": "d"}).text_analysis == expected
    monkeypatch.delenv("RTF_SERVE_TEXT_ANALYSIS")
    table = "data = 'd'\n" + TOML.replace("[default]", "[text_analysis.default]").replace(
        "[[fields]]", "[[text_analysis.fields]]")
    (tmp_path / "serve.toml").write_text(table)
    assert serve_settings({}, tmp_path / "serve.toml").text_analysis == expected
    with pytest.raises(SettingsError, match="setting 'text_analysis'.*klingon"):
        serve_settings({"data": "d", "text_analysis": '{"stem": "klingon"}'})


def test_the_server_s_registry_keeps_the_analysis_across_restarts(tmp_path):
    pytest.importorskip("pydantic_settings")
    from rtf.server.registry import ImportRefusedError, Registry

    fa = analysis_from_dict(json.loads(FIELDS_JSON))
    query = 'SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "running") }'
    pub = Publication("p", [(f"<{EX}a>", f"<{EX}abstract>", '"Runs"@en')])
    for folder in ("d", "empty", "other"):
        (tmp_path / folder).mkdir()
    registry = Registry(tmp_path / "d", text_analysis=fa)
    registry.put("q", query, None)
    assert registry.engine.text_analysis == fa and registry.engine.match(pub)
    registry.snapshot()
    registry.store.close()
    again = Registry(tmp_path / "d", text_analysis=fa)
    assert again.startup["from"] == "snapshot" and again.engine.match(pub)
    again.store.close()
    # started without it: the snapshot is not this server's; rebuilt from the table, default words
    plain = Registry(tmp_path / "d")
    assert plain.startup["from"] == "rebuilt" and plain.engine.text_analysis is None
    assert not plain.engine.match(pub)
    plain.store.close()
    engine = Engine(text_analysis=fa)
    engine.register(query, "q")
    engine.save(tmp_path / "x.idx")
    with pytest.raises(ImportRefusedError, match="text analysis"):
        Registry(tmp_path / "empty", import_index=tmp_path / "x.idx")
    imported = Registry(tmp_path / "other", import_index=tmp_path / "x.idx", text_analysis=fa)
    assert imported.engine.match(pub)
    imported.store.close()


# ------------------------------------------------------------------ the Spark jobs' options

def test_the_spark_jobs_take_the_option_and_refuse_it_beside_an_index(tmp_path):
    pytest.importorskip("pyspark")
    from rtf.spark.replay import ReplayConfig, ReplayError, index_for_broadcast
    from rtf.spark.replay_command import build_parser as replay_parser
    from rtf.spark.stream_command import build_parser as stream_parser

    (tmp_path / "q.idx").write_bytes(Engine(text_analysis=STEMMED).to_bytes())
    config = ReplayConfig(dumps=[], queries=None, output=str(tmp_path / "out"), index=str(tmp_path / "q.idx"),
                          text_analysis=FIELDS_JSON)
    with pytest.raises(ReplayError, match="--text-analysis cannot be used with --index"):
        index_for_broadcast(config)
    args = replay_parser("replay").parse_args(["--dump", "d.nt", "--queries", "q.jsonl", "--algorithm", "rtfs",
                                               "--output", "o", "--text-analysis", FIELDS_JSON])
    assert args.text_analysis == FIELDS_JSON
    args = stream_parser("stream").parse_args(["--input", "i", "--output", "o", "--checkpoint", "c",
                                               "--queries-log", "l", "--text-analysis", FIELDS_JSON])
    assert args.text_analysis == FIELDS_JSON


def test_a_match_is_explained_with_its_literal_s_field():
    engine = Engine(text_analysis=FieldAnalysis(rules=(FieldRule(None, "en", TextAnalysis(stem="english")),)))
    engine.register('SELECT ?o WHERE { ?s ?p ?o FILTER ftcontains(?o, "running" ftand ftnot "xyz") }', "q")
    pub = Publication("p", [(f"<{EX}a>", f"<{EX}name>", '"She runs fast"@en')])
    (match,) = engine.match(pub)
    (explained,) = match.explain(pub, engine)
    assert explained["branch"] == 1
    (entry,) = explained["ftcontains"]
    # 0: the default analysis, 1: the (*, en) rule's (English stems)
    assert entry["ftcontains"] == '(("0:running" ftand ftnot "0:xyz") ftor ("1:run" ftand ftnot "1:xyz"))'
    assert entry["hits"] == [{"operator": "term", "query": '"running"', "analysed": '"1:run"',
                              "spans": [[4, 8]], "words": ["runs"]}]


def test_the_docs_toml_configuration_reads_as_documented(tmp_path):
    import re
    from pathlib import Path

    from rtf.io.analysis_file import read_text_analysis

    docs = (Path(__file__).resolve().parents[1] / "docs" / "language.md").read_text(encoding="utf-8")
    section = docs[docs.index("### Text analysis per field"):docs.index("## 5. Publications")]
    (tmp_path / "fields.toml").write_text(re.search(r"```toml\n(.*?)```", section, re.S).group(1))
    fa = read_text_analysis(str(tmp_path / "fields.toml"))
    abstract, code = "<http://dbpedia.org/ontology/abstract>", "<http://example.org/code>"
    assert fa.analysis_for(abstract, "en") == TextAnalysis(stem="english", stop_words="english")
    assert fa.analysis_for(abstract, "de") == TextAnalysis(fold_accents=True)
    assert fa.analysis_for(f"<{EX}x>", "en-gb") == TextAnalysis(stem="english")
    assert fa.analysis_for(code, "en") == TextAnalysis()


def test_queries_parsed_ahead_or_elsewhere_are_read_per_field():
    from rtf import parse_query

    queries = [(f'SELECT ?o WHERE {{ ?s ?p ?o FILTER ftcontains(?o, "{w}" ftor ftnot "rio") }}', f"q{i}")
               for i, w in enumerate(["running", "cafés", "the games", "fjord*"] * 3)]
    serial = Engine(text_analysis=STEMMED)
    serial.register_many(queries)
    ahead = Engine(text_analysis=STEMMED)
    ahead.register_many(queries, workers=2)
    assert [rq.query for rq in ahead.queries()] == [rq.query for rq in serial.queries()]
    elsewhere = Engine(text_analysis=STEMMED)
    elsewhere.register(parse_query(queries[0][0]), "q0")  # parsed without the analysis: parsed again
    assert elsewhere.get("q0").query == serial.get("q0").query


@pytest.mark.slow
def test_a_real_rtf_serve_matches_per_field(tmp_path):
    pytest.importorskip("httpx")
    from rtf.server.client import Client
    from rtf.server.process import ServerProcess

    (tmp_path / "fields.toml").write_text(TOML)
    query = 'SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "running" ftand "cafe") }'
    rdf = ('<http://ex/a> <http://ex/abstract> "Runs to a cafe"@en .\n'
           '<http://ex/b> <http://ex/title> "Runs to a café"@en .\n'
           '<http://ex/c> <http://ex/title> "Running to a café"@en .\n')
    with ServerProcess(tmp_path / "d", "--text-analysis", tmp_path / "fields.toml") as server, \
            Client(server.url) as broker:
        broker.register(query, "q", "alice")
        assert [line["publication"] for line in broker.publish(rdf)] == ["http://ex/a", "http://ex/c"]
