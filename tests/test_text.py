"""Spec section 3 (text) and section 2 (full-text operators), case by case.

Each row: a text, a full-text expression written in the query language's
own syntax, and the answer worked out by hand from the spec.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.query.model import FTAnd, FTNear, FTNot, FTOr, FTTerm, FTWord
from rtf.query.text import FullTextError, TextIndex, bigram, compile_ft, parse_ft_string, required_words, words


def T(s):
    return parse_ft_string(s)


def near(a, b, lo, hi, ordered=True):
    return FTNear(T(a), T(b), lo, hi, ordered)


# ------------------------------------------------------------------ words

@pytest.mark.parametrize("text, expected", [
    ("The U.S. Olympic-Games!", ["the", "u", "s", "olympic", "games"]),   # punctuation splits
    ("Río de Janeiro", ["río", "de", "janeiro"]),                         # accents are letters
    ("STRASSE Straße", ["strasse", "strasse"]),                           # casefold, not lower
    ("snake_case", ["snake", "case"]),                                    # '_' is not alphanumeric
    ("2016 Rio", ["2016", "rio"]),                                        # digits are words
    ("東京 2020", ["東京", "2020"]),                                       # CJK run is one word
    ("", []),
    ("-- !!", []),
    ("a\nb\tc", ["a", "b", "c"]),
])
def test_words_are_casefolded_alphanumeric_runs(text, expected):
    assert words(text) == expected


def _spec_words(text: str) -> list[str]:
    """Spec section 5, "Text, version 3", read character by character: the text in NFC; a
    word is a maximal run of alphanumeric characters and of combining marks (Mn, Mc)
    following one, casefolded and put in NFC again."""
    text = unicodedata.normalize("NFC", text)
    runs, current = [], ""
    for ch in text:
        if ch.isalnum() or (current and unicodedata.category(ch) in ("Mn", "Mc")):
            current += ch
        elif current:
            runs.append(current)
            current = ""
    if current:
        runs.append(current)
    return [unicodedata.normalize("NFC", r.casefold()) for r in runs]


# Texts rich in what the rule is about: combining marks, Indic vowel signs, letters whose
# casefold is several characters, a mark that casefolds to a letter (U+0345: the words are
# casefolded, not the text), capitals, punctuation between them.
_MARKED = st.text(st.sampled_from("ae iu\u0301\u0308\u0323\u093f\u094d\u0915\u0937\u0947"
                                  "\u0130\u1f50\u03c2\u00df\u212b.-_*\u2014 \u00e9\u1ebd\u0e31"
                                  "\u0345\u1e9e\u01c5AZ\u03a3"),
                  max_size=24)
_ASCII = st.text(st.characters(max_codepoint=127), max_size=40)


@given(st.one_of(st.text(), _MARKED, _ASCII))
def test_words_agree_with_the_character_by_character_definition(text):
    assert words(text) == _spec_words(text)


@pytest.mark.parametrize("text, expected", [
    ("cafe\u0301", ["caf\u00e9"]),                        # NFD: one word, in NFC
    ("na\u00efve approach", ["na\u00efve", "approach"]),
    ("nai\u0308ve approach", ["na\u00efve", "approach"]),
    ("\u0939\u093f\u0928\u094d\u0926\u0940", ["\u0939\u093f\u0928\u094d\u0926\u0940"]),  # हिन्दी: one word
    ("\u0301abc", ["abc"]),                                # a mark starts no word
    ("a.\u0301b", ["a", "b"]),                             # nor continues one after punctuation
])
def test_combining_marks_stay_inside_words(text, expected):
    assert words(text) == expected


def test_a_phrase_with_combining_marks_matches_either_normalisation():
    nfd = TextIndex.of("le cafe\u0301 na\u0131ve")
    assert nfd.matches(parse_ft_string("caf\u00e9"))
    assert TextIndex.of("un caf\u00e9").matches(parse_ft_string("cafe\u0301*"))


# ----------------------------------------------------------- query strings

@pytest.mark.parametrize("value, expected", [
    ("olympic", '"olympic"'),
    ("Olympic Games", '"olympic games"'),
    ("U.S.", '"u s"'),                       # the spec's own example: a phrase
    ("olymp*", '"olymp*"'),
    ("usab* test*", '"usab* test*"'),        # any word of a phrase may be a prefix
    ("  rio  ", '"rio"'),
])
def test_query_strings_split_like_text(value, expected):
    assert str(parse_ft_string(value)) == expected


@pytest.mark.parametrize("value", ["", "--", "*", "ol*mp", "*olymp", "olymp**", "a * b"])
def test_bad_query_strings_are_errors(value):
    with pytest.raises(FullTextError):
        parse_ft_string(value)


# -------------------------------------------------------------- evaluation

CASES = [
    # terms
    ("games in rio", T("games"), True),
    ("games in rio", T("game"), False),                  # no stemming
    ("Games IN Rio", T("RIO"), True),                    # case-insensitive both sides
    ("STRAßE", T("strasse"), True),                      # casefold equates ß and ss
    ("río", T("rio"), False),                            # accents are kept
    # prefixes
    ("olympic games", T("olymp*"), True),
    ("olympic games", T("olympic*"), True),              # a prefix matches the whole word too
    ("the olympiad", T("olympic*"), False),
    ("Usability testing", T("usab* test*"), True),
    ("usability the testing", T("usab* test*"), False),  # phrase words must be adjacent
    # phrases
    ("the olympic games in rio", T("olympic games"), True),
    ("games olympic", T("olympic games"), False),        # order matters
    ("olympic, games!", T("olympic games"), True),       # punctuation is not a word
    ("U.S. team", T("u.s."), True),
    ("us team", T("u.s."), False),
    ("olympic olympic games", T("olympic games"), True),  # second occurrence starts it
    # ftand / ftor / ftnot
    ("rio games", FTAnd((T("rio"), T("games"))), True),
    ("rio", FTAnd((T("rio"), T("games"))), False),
    ("rio", FTOr((T("paris"), T("rio"))), True),
    ("london", FTOr((T("paris"), T("rio"))), False),
    ("rio", FTNot(T("paris")), True),
    ("paris", FTNot(T("paris")), False),
    ("", FTNot(T("paris")), True),                        # nothing occurs in an empty text
    ("rio paris", FTNot(FTNot(T("paris"))), True),        # nested ftnot
    ("rio", FTAnd((T("rio"), FTNot(FTOr((T("paris"), T("london")))))), True),
    ("rio london", FTAnd((T("rio"), FTNot(FTOr((T("paris"), T("london")))))), False),
    # ftnear: words strictly between A's end and B's start, within [m, n]
    ("games in rio", near("games", "rio", 0, 2), True),   # the spec's examples
    ("games rio", near("games", "rio", 0, 2), True),
    ("rio games", near("games", "rio", 0, 2), False),
    ("games a b c rio", near("games", "rio", 0, 2), False),  # 3 words between
    ("games a b rio", near("games", "rio", 0, 2), True),     # exactly the upper bound
    ("games rio", near("games", "rio", 1, 2), False),        # 0 between, below the lower bound
    ("games a rio", near("games", "rio", 1, 1), True),
    ("rio games", near("games", "rio", 0, 2, ordered=False), True),
    ("rio x y z games", near("games", "rio", 0, 2, ordered=False), False),
    ("the olympic games in rio", near("olympic games", "rio", 1, 1), True),  # phrase operand: gap after its end
    ("olympic games rio", near("olympic games", "rio", 1, 1), False),
    ("rio olympic games", near("rio", "olympic games", 0, 0), True),
    ("games rio games", near("games", "rio", 0, 0), True),   # some occurrence pair suffices
    ("rio x games y rio", near("games", "rio", 1, 1), True),
    ("games", near("games", "games", 0, 0), False),          # B must start after A ends
    ("games games", near("games", "games", 0, 0), True),
    ("olympics in rio", near("olymp*", "rio", 1, 1), True),
]


@pytest.mark.parametrize("text, expr, expected", CASES, ids=[f"{c[0]!r}-{i}" for i, c in enumerate(CASES)])
def test_full_text_expression_on_text(text, expr, expected):
    assert TextIndex.of(text).matches(expr) is expected


def test_required_words_are_the_positive_words_only():
    expr = FTAnd((T("rio"), T("olymp*"), FTNot(T("paris")), near("games", "gold", 0, 1)))
    assert required_words(expr) == (frozenset({"rio", "games", "gold"}), frozenset({"olymp"}))


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=12), st.integers(0, 3), st.integers(0, 3))
def test_ftnear_agrees_with_its_definition(tokens, lo, extra):
    hi = lo + extra
    expected = any(j - (i + 1) in range(lo, hi + 1)
                   for i, x in enumerate(tokens) if x == "a"
                   for j, y in enumerate(tokens) if y == "b" and j > i)
    assert TextIndex(tokens).matches(near("a", "b", lo, hi)) is expected


_VOCAB = ["rio", "games", "gold", "go", "gol", "olympic"]
_ft_words = st.builds(FTWord, st.sampled_from(_VOCAB), st.booleans())
_ft_terms = st.lists(_ft_words, min_size=1, max_size=3).map(lambda ws: FTTerm(tuple(ws)))
_ft_near = st.builds(lambda l, r, lo, extra, o: FTNear(l, r, lo, lo + extra, o),
                     _ft_terms, _ft_terms, st.integers(0, 3), st.integers(0, 3), st.booleans())
_ft_exprs = st.recursive(
    _ft_terms | _ft_near,
    lambda inner: (st.lists(inner, min_size=2, max_size=4).map(lambda xs: FTAnd(tuple(xs)))
                   | st.lists(inner, min_size=2, max_size=4).map(lambda xs: FTOr(tuple(xs)))
                   | inner.map(FTNot)),
    max_leaves=8)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(_ft_exprs, st.lists(st.sampled_from(_VOCAB + ["other"]), max_size=14))
def test_compiled_full_text_answers_as_the_evaluator(expr, tokens):
    """`compile_ft` (the indexed engines' checks, compiled to closures) answers what
    `TextIndex.matches` (the reference engine's evaluator) answers, for any nesting
    of phrases, prefixes, ftand, ftor, ftnot and ftnear."""
    text = " ".join(tokens)
    expected = TextIndex.of(text).matches(expr)
    assert compile_ft(expr)(TextIndex.of(text)) == expected
    # On one index, after the evaluator and again: the positions each caches agree.
    shared = TextIndex.of(text)
    check = compile_ft(expr)
    assert shared.matches(expr) == expected and check(shared) == expected and check(shared) == expected


_whole_words = st.builds(FTWord, st.sampled_from(["a", "b", "c"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_whole_words, min_size=2, max_size=3), st.lists(st.sampled_from(["a", "b", "c"]), max_size=10))
def test_compiled_phrases_of_whole_words_answer_as_the_evaluator(words_, tokens):
    """Phrases of two and three whole words, alone and beside a proximity under ftor
    (compiled to their own closures, and tried before the proximity)."""
    term = FTTerm(tuple(words_))
    expected = any(tokens[i:i + len(words_)] == [w.text for w in words_] for i in range(len(tokens)))
    assert compile_ft(term)(TextIndex(tokens)) is expected
    either = FTOr((near("a", "c", 1, 2), term))
    assert compile_ft(either)(TextIndex(tokens)) == TextIndex(tokens).matches(either)


def _starts(term: FTTerm, tokens: list[str]) -> list[int]:
    n = len(term.words)
    return [i for i in range(len(tokens) - n + 1) if tokens[i:i + n] == [w.text for w in term.words]]


@settings(max_examples=400, deadline=None)
@given(st.lists(_whole_words, min_size=1, max_size=2), st.lists(_whole_words, min_size=1, max_size=2),
       st.integers(0, 2), st.integers(0, 2), st.booleans(), st.lists(st.sampled_from(["a", "b", "c"]), max_size=10))
def test_ftnear_of_phrases_agrees_with_the_spec(left, right, lo, extra, ordered, tokens):
    """Spec section 3: some occurrence of B starts after some occurrence of A ends, with
    lo..hi words strictly between them; with ``unordered`` either may come first. The
    reference evaluator and the compiled checks share `_near_holds`: this is their
    independent check, with terms and phrases of different lengths."""
    a, b = FTTerm(tuple(left)), FTTerm(tuple(right))
    hi = lo + extra

    def follows(x: FTTerm, y: FTTerm) -> bool:
        return any(j - (i + len(x.words)) in range(lo, hi + 1)
                   for i in _starts(x, tokens) for j in _starts(y, tokens))
    expected = follows(a, b) or (not ordered and follows(b, a))
    expr = FTNear(a, b, lo, hi, ordered)
    assert TextIndex(tokens).matches(expr) is expected
    assert compile_ft(expr)(TextIndex(tokens)) is expected


@given(st.lists(st.sampled_from(["a", "b", "c", "dd"]), max_size=12))
def test_a_text_index_makes_its_positions_only_when_read(tokens):
    """A stream's literals are looked up word by word (`word_set`, `keys`, `has_word`)
    and most never have their positions read: those are made when first read, and
    are then each word's increasing positions."""
    ti = TextIndex(list(tokens))
    assert ti.word_set == set(tokens) and ti.keys == set(tokens) | set(map(bigram, tokens, tokens[1:]))
    assert ti.has_word(FTWord("a")) == ("a" in tokens) and ti.sorted_words == sorted(set(tokens))
    assert ti._positions is None
    assert ti.positions == {w: [i for i, t in enumerate(tokens) if t == w] for w in tokens}


_KEY_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _unescaped_by_hand(body: str) -> str:
    """A literal key's body decoded character by character, left to right."""
    out, i = [], 0
    while i < len(body):
        if body[i] != "\\":
            out.append(body[i])
            i += 1
        elif body[i + 1] in "uU":
            n = 4 if body[i + 1] == "u" else 8
            out.append(chr(int(body[i + 2:i + 2 + n], 16)))
            i += 2 + n
        else:
            out.append(_KEY_ESCAPES[body[i + 1]])
            i += 2
    return "".join(out)


_BODIES = st.lists(st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters='"\\')),
    st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c <= 0xDFFF).flatmap(
        lambda c: st.sampled_from([f"\\U{c:08X}", f"\\u{c & 0xFFFF:04x}" if not 0xD800 <= c & 0xFFFF <= 0xDFFF
                                   else "\\t"])),
    st.sampled_from(["\\t", "\\b", "\\n", "\\r", "\\f", '\\"', "\\'", "\\\\", "\\\\u0041", "\\\\\\u0041",
                     "\\\\U0001F600", "u0041"])), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(_BODIES, st.text(st.characters(blacklist_categories=("Cs",))))
def test_a_literal_keys_text_is_its_body_unescaped(body, text):
    """The text full-text operators see (`lexical_form`) is the key's body with each escape
    decoded, left to right; the key `literal_key` writes for a text gives that text back."""
    from rtf.query.terms import literal_key, literal_parts
    literal_parts.cache_clear()
    assert literal_parts(f'"{body}"@en').lexical == _unescaped_by_hand(body)
    assert literal_parts(literal_key(text)).lexical == text
