"""Saved indexes and the words of full-text terms (issue 37, item 6 and the note on text_analysis).

What the builder writes, the loader must accept, and a loaded engine must
answer as a fresh one built from the same query texts with the same
options. The loader judges a query's words by the functions that made
them (`rtf.io.term_checks`): here every letter of Unicode goes through
build -> load -> match, and a file whose text analysis options were edited
after it was built is refused or answers as a fresh engine with the edited
options would.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication, TextAnalysis
from rtf.cli import main
from rtf.errors import IndexFileError
from rtf.io import term_checks
from rtf.io.term_checks import TermChecker, ftcontains_strings, is_word
from rtf.parser import parse_query
from rtf.query.analysis import words
from rtf.query.model import FtContains, FTTerm, FTWord, Query, TriplePattern
from rtf.query.decompose import decompose
from rtf.query.terms import IRI, Variable
from tests.index_bodies import body, unsigned, with_body

ABS = "<http://ex/abstract>"
LABEL = "<http://ex/label>"
#: Every letter and digit of Unicode: the characters words are made of.
ALNUM = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isalnum()]
#: The letters whose casefolded form is not a word of its own (Turkish İ, Greek ὐ ᾶ ῶ, ǰ,
#: ẖ...): an index of a query holding one could be built and not loaded.
UNUSUAL = [c for c in ALNUM if words(words(c)[0]) != words(c)]
ALL = TextAnalysis(fold_accents=True, stem="english", stop_words="english", cjk_bigrams=True)
#: All but stop words (a query of single letters holds some).
FOLDED = TextAnalysis(fold_accents=True, stem="english", cjk_bigrams=True)


def ft_query(expr: str, literal: str | None = None) -> str:
    pattern = f" . ?s {LABEL} {json.dumps(literal, ensure_ascii=False)}" if literal is not None else ""
    return f"SELECT ?s WHERE {{ ?s {ABS} ?t{pattern} FILTER ftcontains(?t, {expr}) }}"


def publication(uri: str, text: str, label: str | None = None) -> Publication:
    triples = [(f"<{uri}>", ABS, json.dumps(text, ensure_ascii=False))]
    if label is not None:
        triples.append((f"<{uri}>", LABEL, json.dumps(label, ensure_ascii=False)))
    return Publication(uri, triples)


def answers(engine: Engine, pubs: list[Publication]) -> list:
    return [sorted((m.query_id, m.solutions) for m in engine.match(p)) for p in pubs]


def test_the_issues_letters_are_words_of_their_own_under_the_version_3_rule():
    # Under the rule of sections 1-4, 27 letters casefolded to a letter and combining marks,
    # no word of its own (İ, ὐ, ᾶ, ῶ, ΐ, ǰ, ẖ...); under version 3's (marks stay inside
    # words) every letter's word is a word of its own, those 27 included.
    assert UNUSUAL == []
    assert all(words(c) == [words(c)[0]] and words(words(c)[0]) == words(c)
               for c in "İὐᾶῶΐǰẖ")


def test_an_index_of_a_greek_query_builds_and_loads_with_the_cli(tmp_path, capsys):
    """The issue's case: `rtf index build` exited 0, then `rtf index info` refused the file."""
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "query": ft_query('"ὐμνος"')}) + "\n", encoding="utf-8")
    idx = tmp_path / "q.idx"
    assert main(["index", "build", "--queries", str(queries), "--output", str(idx)]) == 0
    assert main(["index", "info", str(idx)]) == 0
    assert json.loads(capsys.readouterr().out)["queries"] == 1
    engine = Engine.load(idx)
    assert [m.query_id for m in engine.match(publication("http://ex/a", "ὐμνος, a hymn"))] == ["q1"]


def builds_loads_and_matches_as_a_fresh_engine(letters: list[str], analysis: TextAnalysis | None) -> None:
    """Each letter as a word of a phrase, inside a word and ending a prefix, in full-text
    strings and in a literal of a pattern: a query per 512 letters, and publications
    with its letters as written and upper-cased."""
    chunks = [letters[i:i + 512] for i in range(0, len(letters), 512)]
    texts, pubs = {}, []
    for n, chunk in enumerate(chunks):
        inside = " ".join(f"x{c}y" for c in chunk[::7])
        texts[f"q{n}"] = ft_query(f'"{" ".join(chunk)}" ftor "{inside}" ftor "{chunk[0]} {chunk[-1]}*"',
                                  literal="".join(chunk))
        pubs.append(publication(f"http://ex/{n}", " ".join(chunk), label="".join(chunk)))
        pubs.append(publication(f"http://ex/{n}u", " ".join(chunk).upper() + " " + inside.upper(),
                                label="".join(chunk)))
    fresh = Engine(text_analysis=analysis)
    for qid, text in texts.items():
        fresh.register(text, qid)
    loaded = Engine.from_bytes(fresh.to_bytes())
    assert [rq.query for rq in loaded.queries()] == [rq.query for rq in fresh.queries()]
    expected = answers(fresh, pubs)
    assert answers(loaded, pubs) == expected
    assert all(f"q{n}" in {qid for qid, _ in expected[2 * n]} for n in range(len(chunks)))


@pytest.mark.slow
def test_every_letter_of_unicode_builds_loads_and_matches_as_a_fresh_engine():
    builds_loads_and_matches_as_a_fresh_engine(ALNUM, None)


@pytest.mark.slow
def test_every_fifth_letter_with_text_analysis():
    """Found that accent folding makes an empty word of the halfwidth katakana sound marks
    (U+FF9E, U+FF9F), which the loader then refused."""
    builds_loads_and_matches_as_a_fresh_engine(ALNUM[::5] + ["\uff9e", "\uff9f"], FOLDED)


@pytest.mark.slow
@pytest.mark.soak  # deselected by default (pyproject.toml): pytest -m soak
def test_every_letter_with_text_analysis():
    builds_loads_and_matches_as_a_fresh_engine(ALNUM, FOLDED)


@pytest.mark.parametrize("letter", UNUSUAL)
def test_each_unusual_letter_in_a_prefix_and_a_phrase(letter):
    texts = {"whole": ft_query(f'"{letter}mnos"'), "prefix": ft_query(f'"{letter}m*"'),
             "phrase": ft_query(f'"to {letter}mnos"'), "near": ft_query(f'"to" ftnear(0, 1) "{letter}"')}
    pubs = [publication("http://ex/a", f"to {letter}mnos"), publication("http://ex/b", f"{letter.upper()}MNOS")]
    for analysis in (None, TextAnalysis(stem="greek")):
        fresh = Engine(text_analysis=analysis)
        for qid, text in texts.items():
            fresh.register(text, qid)
        assert answers(Engine.from_bytes(fresh.to_bytes()), pubs) == answers(fresh, pubs)


# ------------------------------------------------------------------ the words themselves


def test_is_word_accepts_what_words_makes_of_every_character():
    made = {w for c in ALNUM for w in words(c)}
    assert all(map(is_word, made))
    assert all(is_word(w + "x" + w) for w in made if not w.isascii())


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "a b", "\u0313", "\u0313a", "A", "a\x1fb", "ὐ\u0300"])
def test_is_word_refuses_what_no_text_makes(text):
    assert not is_word(text)


def test_a_query_without_its_text_loads_with_its_words_checked_by_the_rules():
    """`Engine.register` takes a parsed Query: its words are checked by `is_word`."""
    def query(word: str) -> Query:
        patterns = (TriplePattern(Variable("s"), IRI("http://ex/abstract"), Variable("t")),)
        ft = FTTerm((FTWord(word),))
        filters = (FtContains(Variable("t"), ft),)
        return Query("SELECT", ("s",), False, patterns, filters, decompose(patterns, filters))

    engine = Engine()
    engine.register(query(words("ὐμνος")[0]), "greek")  # (casefolded, in NFC: version 3's word)
    engine.register(query("rio"), "rio")
    loaded = Engine.from_bytes(engine.to_bytes())
    assert sorted(m.query_id for m in loaded.match(publication("http://ex/a", "ὐμνος in Rio"))) == ["greek", "rio"]
    engine.register(query("ὐμνος".casefold()), "nfd")  # υ and a combining mark: not in NFC
    with pytest.raises(IndexFileError, match="not a word the text rules can make"):
        Engine.from_bytes(unsigned(engine.to_bytes()), "f.idx")
    # A file this installation signed has its models checked when they are first decoded, each
    # from its own record (rtf/io/query_models.py): the others are read all the same.
    mapped = Engine.from_bytes(engine.to_bytes(), "f.idx")
    assert mapped.get("rio").query == engine.get("rio").query
    with pytest.raises(IndexFileError, match="^f.idx: .*not a word the text rules can make"):
        mapped.get("nfd").query
    engine.unregister("nfd")
    engine.register(query("\u0313rio"), "bad")
    with pytest.raises(IndexFileError, match="not a word the text rules can make"):
        Engine.from_bytes(unsigned(engine.to_bytes()), "f.idx")


# ------------------------------------------------------------------ how texts are read


def test_the_string_pattern_is_the_grammar_s():
    grammar = (term_checks.__file__.rsplit("rtf", 1)[0] + "grammar/ftsparql.lark")
    with open(grammar, encoding="utf-8") as f:
        pattern = re.search(r"^STRING: /(.*)/s$", f.read(), re.M).group(1)
    assert pattern == term_checks._STRING


def test_ftcontains_strings_reads_each_call_s_strings():
    text = ('SELECT ?s WHERE { ?s <p> ?o FILTER (ftcontains(?o, ("a b" ftnear(0, 2) \'c\\\'d\') '
            'ftor """x"y""") && ?o != "z" && FTContains (?o, "\\u00e9t\\u00e9")) }')
    assert ftcontains_strings(text) == [("a b", "c'd", 'x"y'), ("été",)]
    assert ftcontains_strings("ftcontains(?o, \"a\"") is None


@pytest.mark.parametrize("text, way", [
    (ft_query('"rio"') + " # the river's name", None),                   # a quote in a comment
    ("PREFIX ex: <http://ex/it's#> " + ft_query('"rio"'), None),           # a quote in an IRI
    ("PREFIX ex: <http://ex/> SELECT ?s WHERE { ?s ex:abstract ?t OPTIONAL { ?s ex:it\\'s ?o } "
     "FILTER ftcontains(?t, \"rio\") }", None),                            # a quote in a prefixed name
    (ft_query('"rio"').replace("FILTER", "FILTER (?t != 'games') FILTER"), "calls"),  # another string
    (ft_query('"rio"') + ' # was ftcontains(?t, "games")', "parsed"),    # a call in a comment
    (ft_query('"rio" ftand "games"').replace("ftcontains(?t, ", "ftcontains(?t, ((").replace(") }", "))) }"),
     None),
])
def test_texts_the_scan_cannot_read_are_parsed_and_load(text, way):
    analysis = TextAnalysis(stem="english")
    fresh = Engine(text_analysis=analysis)
    fresh.register(text, "q")
    loaded = Engine.from_bytes(fresh.to_bytes())
    pub = publication("http://ex/a", "Rio games")
    assert answers(loaded, [pub]) == answers(fresh, [pub]) == [[("q", fresh.match(pub)[0].solutions)]]
    checker = TermChecker(analysis)
    checker.check(fresh.get("q").query)
    assert checker.decided == {"checked": 1, "calls": way == "calls", "parsed": way == "parsed"}


def test_the_checker_checks_a_sample_and_every_query_with_an_unusual_word(monkeypatch):
    monkeypatch.setattr(term_checks, "VERIFY_FIRST", 3)
    monkeypatch.setattr(term_checks, "VERIFY_EVERY", 4)
    # A word that is not a word of its own (none is under the default text rule of version
    # 3; an analysis can make one, such as accent folding's empty word of U+FF9E): "zz" here.
    monkeypatch.setattr(term_checks, "words", lambda text: ["z", "z"] if text == "zz" else words(text))
    checker = TermChecker(None)
    for n in range(1, 21):
        query = parse_query(ft_query(f'"w{n}"' if n != 10 else '"zz"'))
        for word in query.filters[0].ft.words:
            checker.note_word(word)
        checker.check(query)
    # 1, 2, 3, then 4, 8, 12, 16, 20; and 10, which holds an unusual word
    assert checker.decided["checked"] == 3 + 5 + 1


# ------------------------------------------------------------------ edited options


OPTIONS = [None, TextAnalysis(stem="english"), TextAnalysis(fold_accents=True),
           TextAnalysis(stop_words="english"), TextAnalysis(cjk_bigrams=True), ALL,
           TextAnalysis(stop_words=("rio",))]
VOCABULARY = ["fjords", "fjord", "running", "games", "the", "of", "café", "Ångström", "東京タワー",
              "naïve", "rio", "ὐμνος", "İstanbul", "olymp*", "caf*"]
_word = st.sampled_from(VOCABULARY)
_string = st.lists(_word, min_size=1, max_size=3).map(" ".join).filter(lambda s: not s.endswith("* "))
_ft = st.recursive(_string.map(lambda s: f'"{s}"'),
                   lambda inner: st.tuples(inner, st.sampled_from(["ftand", "ftor"]), inner).map(
                       lambda t: f"({t[0]} {t[1]} {t[2]})"), max_leaves=3)
TEXTS = ["Norway's fjords and the running games of Rio", "Le Café naïve, Ångström", "東京タワーは高い",
         "ὑμνος İstanbul olympics", "a fjord, a cafe, the rio"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exprs=st.lists(_ft, min_size=1, max_size=4), built=st.sampled_from(OPTIONS),
       edited=st.sampled_from(OPTIONS), together=st.booleans())
def test_a_file_with_edited_options_is_refused_or_answers_as_a_fresh_engine(exprs, built, edited, together):
    """The issue's note: the head's text_analysis replaced (checksum recomputed)."""
    texts = {}
    if together:  # several ftcontains calls in one query, and a string that is not full-text
        calls = " && ".join(f"ftcontains(?t, {e})" for e in exprs)
        texts["q0"] = f'SELECT ?s WHERE {{ ?s {ABS} ?t FILTER ({calls} && ?t != "rio") }}'
    else:
        texts.update((f"q{n}", ft_query(e)) for n, e in enumerate(exprs))
    engine = Engine(text_analysis=built)
    for qid, text in list(texts.items()):
        try:
            engine.register(text, qid)
        except Exception:  # only stop words under these options
            del texts[qid]
    content = body(engine.to_bytes())
    content.pop("text_analysis", None)
    if edited is not None:
        content["text_analysis"] = edited.as_dict()
    pubs = [publication(f"http://ex/{n}", t) for n, t in enumerate(TEXTS)]
    try:
        loaded = Engine.from_bytes(with_body(content), "f.idx")
    except IndexFileError as e:
        assert "\n" not in str(e) and "rebuild it" in str(e)
        return
    fresh = Engine(text_analysis=edited)
    for qid, text in texts.items():
        fresh.register(text, qid)
    assert answers(loaded, pubs) == answers(fresh, pubs)


def test_the_issue_s_edit_is_refused_with_the_string_that_disagrees():
    engine = Engine(text_analysis=TextAnalysis(stem="english"))
    engine.register(ft_query('"fjords"'), "q1")
    content = body(engine.to_bytes())
    del content["text_analysis"]
    with pytest.raises(IndexFileError, match='"fjords" makes "fjords" under the index\'s text analysis '
                                             r'\(the default words\), but the index holds "fjord"'):
        Engine.from_bytes(with_body(content), "f.idx")
