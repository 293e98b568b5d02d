"""Text rules of the spec (section 3) and the full-text evaluator.

A text becomes words (spec section 5, "Text, version 3"): the text in NFC,
each maximal run of alphanumeric characters and of the combining marks that
follow one, casefolded and in NFC again, numbered from 0
(`rtf.query.analysis.words`).

>>> words("The U.S. Olympic-Games!")
['the', 'u', 's', 'olympic', 'games']
>>> TextIndex.of("games in rio").matches(parse_ft_string("games"))
True
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from rtf.query.analysis import WORD as _WORD
from rtf.query.analysis import FieldAnalysis, TextAnalysis, word_of, word_places, words
from rtf.query.memo import bounded_by_chars
from rtf.query.terms import lexical_form, literal_parts
from rtf.query.model import (
    FTAnd,
    FTExpr,
    FTNear,
    FTNot,
    FTOr,
    FTTerm,
    FTWord,
    ft_term,
    ft_word,
)



#: The text analysis of the engine at work (`Engine(text_analysis=...)` sets it for the
#: duration of each of its calls); None: the spec's default words.
_ANALYSIS: ContextVar[TextAnalysis | FieldAnalysis | None] = ContextVar("rtf_text_analysis", default=None)
#: Under a `FieldAnalysis`: the predicates of each literal of the publication being matched
#: (`publication_fields`), which make its fields.
_PREDICATES: ContextVar[dict[str, set[str]]] = ContextVar("rtf_literal_predicates", default={})


@contextmanager
def analysed(analysis: TextAnalysis | FieldAnalysis | None) -> Iterator[None]:
    """Texts and query strings are analysed by `analysis` within the block (None: default)."""
    token = _ANALYSIS.set(None if analysis is None or analysis.is_default else analysis)
    try:
        yield
    finally:
        _ANALYSIS.reset(token)


def current_analysis() -> TextAnalysis | FieldAnalysis | None:
    """The analysis in effect (None for the spec's default words)."""
    return _ANALYSIS.get()


@contextmanager
def publication_fields(triples) -> Iterator[None]:
    """Within the block, the literals' fields are their predicates in `triples` (a
    publication's, `FieldAnalysis`); nothing to do under any other analysis."""
    if type(_ANALYSIS.get()) is not FieldAnalysis:
        yield
        return
    by_literal: dict[str, set[str]] = {}
    for _, p, o in triples:
        if o[0] == '"':
            by_literal.setdefault(o, set()).add(p)
    token = _PREDICATES.set(by_literal)
    try:
        yield
    finally:
        _PREDICATES.reset(token)


def terms(text: str) -> list[str]:
    """The terms of `text` under the analysis in effect: its words, analysed (per field:
    as a literal of no triple and no language tag)."""
    analysis = _ANALYSIS.get()
    ws = words(text)
    if isinstance(analysis, FieldAnalysis):
        return analysis.tokens(ws, analysis.field_ids((), None))
    return ws if analysis is None else analysis.terms(ws)


class FullTextError(ValueError):
    """A query string that is not a valid full-text term or phrase."""


def parse_ft_string(value: str) -> FTTerm:
    """Split a query string into a term or phrase.

    ``*`` may only end a word (a prefix term); a string without words is an
    error.

    >>> str(parse_ft_string("Usab* TEST*"))
    '"usab* test*"'
    """
    analysis: TextAnalysis | FieldAnalysis | None = _ANALYSIS.get()
    fields = None
    if isinstance(analysis, FieldAnalysis):  # default words here; `rtf.query.fields` analyses them per field
        fields, analysis = analysis, None
    result = []
    text = value if value.isascii() else unicodedata.normalize("NFC", value)
    places = word_places(text)
    ends = {end for _, end in places}
    for k, c in enumerate(text):  # a '*' that does not end a word: alone, or at its start
        if c == "*" and k not in ends:
            raise FullTextError(f"'*' must end a word in {value!r}")
    for start, end in places:
        word = word_of(text[start:end])
        if end < len(text) and text[end] == "*":
            # "ol*mp": the '*' is followed directly by another word character.
            if end + 1 < len(text) and _WORD.match(text, end + 1):
                raise FullTextError(f"'*' must end a word in {value!r}")
            result.append(ft_word(word if analysis is None else analysis.prefix(word), True))
        elif analysis is None:
            result.append(ft_word(word, False))
        else:  # a query word is analysed as a text's words are: maybe several terms, maybe none
            result.extend(ft_word(term, False) for term in analysis.terms([word]))
    if not result:
        if analysis is not None and places:
            raise FullTextError(f"only stop words in {value!r} (the engine's text analysis drops them)")
        raise FullTextError(f"no words in {value!r}")
    if fields is not None and not any(fields.word_terms(i, w.text, w.prefix) for i in range(len(fields.analyses))
                                      for w in result):
        raise FullTextError(f"only stop words in {value!r} (the text analysis of every field drops them)")
    return ft_term(tuple(result))


class TextIndex:
    """Word positions of one text, for evaluating full-text expressions.

    `positions` maps each word to its increasing positions; `sorted_words`
    answers prefix terms by a key range instead of a scan. Both are made when
    first read: most literals of a publication are only looked up word by word
    in an index (`word_set`, `keys`, made in C from the words), and each is
    seen once in a stream, so the positions of most are never read.
    """

    __slots__ = ("_positions", "length", "_sorted", "_cache", "_word_set", "_tokens", "_keys")

    def __init__(self, tokens: list[str]):
        self._tokens = tokens
        self.length = len(tokens)
        self._positions: dict[str, list[int]] | None = None
        self._sorted: list[str] | None = None
        self._cache: dict = {}
        self._word_set: frozenset[str] | None = None
        self._keys: set[str] | None = None

    @property
    def positions(self) -> dict[str, list[int]]:
        """Each word -> its increasing positions."""
        positions = self._positions
        if positions is None:
            positions = self._positions = {}
            for i, w in enumerate(self._tokens):
                positions.setdefault(w, []).append(i)
        return positions

    @property
    def keys(self) -> set[str]:
        """What an index's word keys are looked up in (`index_alternatives`): the
        distinct words, and each pair of consecutive words as ``"w1 w2"``."""
        keys = self._keys
        if keys is None:
            tokens = self._tokens
            keys = self._keys = set(tokens)
            keys.update(map(bigram, tokens, tokens[1:]))
        return keys

    @classmethod
    def of(cls, text: str) -> "TextIndex":
        """The index of `text`'s terms under the analysis in effect (`analysed`)."""
        return cls(terms(text))

    @property
    def sorted_words(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.word_set)
        return self._sorted

    @property
    def word_set(self) -> frozenset[str]:
        """The distinct words of the text."""
        if self._word_set is None:
            self._word_set = frozenset(self._tokens)
        return self._word_set

    def words_with_prefix(self, prefix: str) -> list[str]:
        """Words of the text that start with `prefix` (a sorted key range)."""
        sw = self.sorted_words
        i = bisect_left(sw, prefix)
        out = []
        while i < len(sw) and sw[i].startswith(prefix):
            out.append(sw[i])
            i += 1
        return out

    def has_word(self, word: FTWord) -> bool:
        if not word.prefix:
            return word.text in self.word_set
        sw = self.sorted_words
        i = bisect_left(sw, word.text)
        return i < len(sw) and sw[i].startswith(word.text)

    def word_positions(self, word: FTWord) -> list[int]:
        if not word.prefix:
            return self.positions.get(word.text, [])
        found = self.words_with_prefix(word.text)
        if len(found) == 1:
            return self.positions[found[0]]
        return sorted(p for w in found for p in self.positions[w])

    def occurrences(self, term: FTTerm) -> list[int]:
        """Start positions of `term` (a word or a phrase), increasing (cached, `starts_of`)."""
        return self.starts_of(term_key(term), term.words)

    def starts(self, words: tuple[FTWord, ...]) -> list[int]:
        """Start positions of the consecutive `words` (uncached: `starts_of` caches)."""
        first = self.word_positions(words[0])
        if len(words) > 1 and first:
            if len(words) == 2:  # most phrases: one set, no inner loop
                second = set(self.word_positions(words[1]))
                return [p for p in first if p + 1 in second] if second else []
            rest = [set(self.word_positions(w)) for w in words[1:]]
            first = [p for p in first if all((p + k) in s for k, s in enumerate(rest, 1))]
        return first

    def starts_of(self, key: str, words: tuple[FTWord, ...]) -> list[int]:
        """`starts` of `words`, cached under `key` (their `term_key`: a string, whose hash
        Python keeps, where a term's is computed at each lookup)."""
        cache = self._cache
        found = cache.get(key)
        if found is None:
            found = cache[key] = self.starts(words)
        return found

    def matches(self, expr: FTExpr) -> bool:
        """Evaluate a full-text expression on this text."""
        if isinstance(expr, FTTerm):
            if not expr.is_phrase:
                return self.has_word(expr.words[0])
            return bool(self.occurrences(expr))
        if isinstance(expr, FTAnd):
            return all(self.matches(e) for e in expr.operands)
        if isinstance(expr, FTOr):
            plain = plain_alternatives(expr)
            if plain is not None:
                # One set test: time grows with the text, not the alternatives.
                return not plain.isdisjoint(self.word_set)
            return any(self.matches(e) for e in expr.operands)
        if isinstance(expr, FTNot):
            return not self.matches(expr.operand)
        if isinstance(expr, FTNear):
            return self._near(expr)
        raise TypeError(f"not a full-text expression: {expr!r}")

    def _near(self, e: FTNear) -> bool:
        return _near_holds(self.occurrences(e.left), len(e.left.words), self.occurrences(e.right),
                           len(e.right.words), e.min, e.max, e.ordered)


def compile_ft(expr: FTExpr):
    """`expr` as a function of a `TextIndex`, answering what `TextIndex.matches`
    answers without dispatching on the expression's types at each call.

    The indexed engines verify their candidate shapes with it, once per
    (shape, literal); the reference engine keeps `TextIndex.matches`, so the
    differential tests compare the two.
    """
    if isinstance(expr, FTTerm):
        words_ = expr.words
        if len(words_) == 1:
            word = words_[0]
            if not word.prefix:
                text = word.text
                return lambda ti: text in ti.word_set
            return lambda ti: ti.has_word(word)
        if len(words_) == 2 and not words_[0].prefix and not words_[1].prefix:
            first, second = words_[0].text, words_[1].text

            def phrase(ti) -> bool:  # `starts` of two whole words, stopping at the first
                positions = ti.positions
                a = positions.get(first)
                if not a:
                    return False
                b = positions.get(second)
                if not b:
                    return False
                following = set(b)
                return any(p + 1 in following for p in a)
            return phrase
        return lambda ti: bool(ti.starts(words_))
    # ftand and ftor have no side effects: their operands are tried cheapest first
    # (a word's test is a lookup, a proximity's a search), so that a common word
    # ftor a rare proximity is mostly decided by the word.
    if isinstance(expr, FTAnd):
        parts = tuple(compile_ft(o) for o in sorted(expr.operands, key=_check_cost))
        if len(parts) == 2:
            a, b = parts
            return lambda ti: a(ti) and b(ti)
        return lambda ti: all(p(ti) for p in parts)
    if isinstance(expr, FTOr):
        plain = plain_alternatives(expr)
        if plain is not None:
            return lambda ti: not plain.isdisjoint(ti.word_set)
        parts = tuple(compile_ft(o) for o in sorted(expr.operands, key=_check_cost))
        if len(parts) == 2:
            a, b = parts
            return lambda ti: a(ti) or b(ti)
        return lambda ti: any(p(ti) for p in parts)
    if isinstance(expr, FTNot):
        inner = compile_ft(expr.operand)
        return lambda ti: not inner(ti)
    if isinstance(expr, FTNear):
        return _compile_near(expr)
    raise TypeError(f"not a full-text expression: {expr!r}")


def _check_cost(expr: FTExpr) -> int:
    """A rank of how much testing `expr` on a text costs: a whole word, a phrase or
    prefix, a combination, a proximity (sorted is stable: equal ranks keep their order)."""
    if isinstance(expr, FTTerm):
        return 0 if len(expr.words) == 1 and not expr.words[0].prefix else 1
    return 3 if isinstance(expr, FTNear) else 2


def term_key(term: FTTerm) -> str:
    """A string naming `term`'s words (no word holds a control character), for caches."""
    return "\x1f".join(w.text + ("\x1e" if w.prefix else "") for w in term.words)


def _compile_near(e: FTNear):
    """`TextIndex._near` of `e`, its terms' keys made once (the right term's positions
    are not looked up when the left one does not occur)."""
    left, right = e.left.words, e.right.words
    left_key, right_key = term_key(e.left), term_key(e.right)
    left_len, right_len, lo, hi, ordered = len(left), len(right), e.min, e.max, e.ordered

    def near(ti) -> bool:
        a = ti.starts_of(left_key, left)
        return bool(a) and _near_holds(a, left_len, ti.starts_of(right_key, right), right_len, lo, hi, ordered)
    return near


def _near_holds(a: list[int], a_len: int, b: list[int], b_len: int, lo: int, hi: int,
                ordered: bool) -> bool:
    """Starts `a` (of a term of `a_len` words) ftnear(lo, hi) starts `b`, in that order
    unless not `ordered`."""
    if not a or not b:
        return False
    if _follows(a, a_len, b, lo, hi):
        return True
    return not ordered and _follows(b, b_len, a, lo, hi)


def _follows(first: list[int], first_len: int, second: list[int], lo: int, hi: int) -> bool:
    """Some `second` start lies lo..hi words after the end of some `first`."""
    for start in first:
        gap_start = start + first_len  # position right after this occurrence
        j = bisect_left(second, gap_start + lo)
        if j < len(second) and second[j] <= gap_start + hi:
            return True
    return False


#: Bytes of word tables the `text_index` cache may hold (a TextIndex takes about
#: 40 bytes per character of its text, with its bigrams).
TEXT_CACHE_BYTES = 16 << 20


def text_index(text: str) -> TextIndex:
    """A cached `TextIndex` of a text under the analysis in effect (literals repeat
    across tuples and queries; the cache is bounded by bytes, `rtf.query.memo`); per
    field, the text of a literal of no triple and no language tag."""
    analysis = _ANALYSIS.get()
    if analysis is None:
        return _default_text_index(text)
    if type(analysis) is FieldAnalysis:
        return _fielded_text_index(text, analysis, analysis.field_ids((), None))
    return _analysed_text_index(text, analysis)


def literal_text_index(key: str) -> TextIndex:
    """`text_index` of a literal (a key) of the publication being matched: per field, its
    text under the analyses of its fields (`FieldAnalysis`, `publication_fields`)."""
    analysis = _ANALYSIS.get()
    if analysis is None:
        return _default_text_index(lexical_form(key))
    if type(analysis) is not FieldAnalysis:
        return _analysed_text_index(lexical_form(key), analysis)
    return _fielded_text_index(lexical_form(key), analysis, literal_field_ids(key))


def literal_field_ids(key: str) -> tuple[int, ...]:
    """Under a `FieldAnalysis`: the analyses of literal `key`'s fields (`FieldAnalysis.field_ids`)."""
    analysis = _ANALYSIS.get()
    assert type(analysis) is FieldAnalysis
    return analysis.field_ids(_PREDICATES.get().get(key), literal_parts(key).lang)


@bounded_by_chars(TEXT_CACHE_BYTES, weight=40)
def _default_text_index(text: str) -> TextIndex:
    return TextIndex(words(text))


@bounded_by_chars(TEXT_CACHE_BYTES, weight=40)
def _analysed_text_index(text: str, analysis: TextAnalysis) -> TextIndex:
    return TextIndex(analysis.terms(words(text)))


@bounded_by_chars(TEXT_CACHE_BYTES, weight=40)
def _fielded_text_index(text: str, analysis: FieldAnalysis, ids: tuple[int, ...]) -> TextIndex:
    return TextIndex(analysis.tokens(words(text), ids))


_TEXT_CACHES = (_default_text_index, _analysed_text_index, _fielded_text_index)


def _clear_text_indexes() -> None:
    for cache in _TEXT_CACHES:
        cache.cache_clear()


text_index.cache_clear = _clear_text_indexes  # type: ignore[attr-defined]
text_index.cache_chars = lambda: sum(c.cache_chars() for c in _TEXT_CACHES)  # type: ignore[attr-defined]


# By identity: hashing a 1,000-alternative expression on every call would cost
# what the set test saves. Each entry holds its expression, so ids are not reused.
_PLAIN: dict[int, tuple[FTOr, frozenset[str] | None]] = {}


def plain_alternatives(expr: FTOr) -> frozenset[str] | None:
    """The words of ``"w1" ftor "w2" ftor ...`` when every alternative is one
    whole word (nested ``ftor`` s flattened), else None."""
    hit = _PLAIN.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    if len(_PLAIN) >= 4096:
        _PLAIN.clear()
    result = _plain_alternatives(expr)
    _PLAIN[id(expr)] = (expr, result)
    return result


def _plain_alternatives(expr: FTOr) -> frozenset[str] | None:
    found: set[str] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, FTOr):
            stack.extend(e.operands)
        elif isinstance(e, FTTerm) and not e.is_phrase and not e.words[0].prefix:
            found.add(e.words[0].text)
        else:
            return None
    return frozenset(found)


def required_words(expr: FTExpr) -> tuple[frozenset[str], frozenset[str]]:
    """Words and prefixes that must occur for `expr` to hold (an ``ftor`` requires none).

    Returns ``(words, prefixes)``; an index keys on them, and the full
    expression is checked afterwards when it says more than a conjunction of
    single words.
    """
    ws: set[str] = set()
    ps: set[str] = set()
    stack = [expr]  # a loop, not a recursive closure (a reference cycle per call)
    while stack:
        e = stack.pop()
        if isinstance(e, FTTerm):
            for w in e.words:
                (ps if w.prefix else ws).add(w.text)
        elif isinstance(e, FTAnd):
            stack.extend(e.operands)
        elif isinstance(e, FTNear):
            stack += (e.left, e.right)
        # FTNot requires nothing; FTOr would require one of several: nothing certain.
    return frozenset(ws), frozenset(ps)


#: Most alternatives a full-text expression is indexed under; beyond it the
#: shape keys on its certain words only (`required_words`), as before.
MAX_WORD_ALTERNATIVES = 4096

Alternative = tuple[frozenset[str], frozenset[str]]


def bigram(first: str, second: str) -> str:
    """The key of two consecutive words (no word holds a space, so no word is a bigram)."""
    return first + " " + second


def _term_words(term: FTTerm) -> Alternative:
    return (frozenset(w.text for w in term.words if not w.prefix),
            frozenset(w.text for w in term.words if w.prefix))


def _term_keys(term: FTTerm) -> Alternative:
    """A term's index keys: its consecutive pairs of whole words as bigrams (a
    two-word phrase is then found only where it occurs), the whole words in no
    such pair, and its prefixes."""
    ws = term.words
    pairs = [i for i in range(len(ws) - 1) if not ws[i].prefix and not ws[i + 1].prefix]
    paired = {i for p in pairs for i in (p, p + 1)}
    keys = {bigram(ws[i].text, ws[i + 1].text) for i in pairs}
    keys.update(w.text for i, w in enumerate(ws) if not w.prefix and i not in paired)
    return frozenset(keys), frozenset(w.text for w in ws if w.prefix)


def index_alternatives(expr: FTExpr, cap: int = MAX_WORD_ALTERNATIVES) -> tuple[Alternative, ...] | None:
    """`word_alternatives` as an index keys them: phrases by their bigrams
    (`_term_keys`), looked up in `TextIndex.keys`."""
    return word_alternatives(expr, cap, _term_keys)


def word_alternatives(expr: FTExpr, cap: int = MAX_WORD_ALTERNATIVES,
                      term_keys=_term_words) -> tuple[Alternative, ...] | None:
    """The (words, prefixes) sets of which at least one must all occur for `expr` to hold.

    A small DNF over the expression's positive words: ``ftor`` concatenates
    its operands' alternatives, ``ftand`` and ``ftnear`` multiply them out,
    ``ftnot`` requires nothing. None when some alternative requires nothing
    (the expression could hold on any text) or when there would be more than
    `cap` alternatives; an index then keys on `required_words` only.

    >>> from rtf.query.model import FTAnd, FTOr
    >>> t = parse_ft_string
    >>> [sorted(w) for w, _ in word_alternatives(FTAnd((t("rio"), FTOr((t("games"), t("olymp*"))))))]
    [['games', 'rio'], ['rio']]
    """
    found = _alternatives(expr, cap, term_keys)
    if found is None:
        return None
    unique = tuple(dict.fromkeys(found))
    if any(not ws and not ps for ws, ps in unique):
        return None
    return unique


def _alternatives(e: FTExpr, cap: int, term_keys) -> list[Alternative] | None:
    """`word_alternatives` before duplicates are dropped. A module function, not a
    closure: a recursive closure is a reference cycle, garbage for the cyclic
    collector at every call (registration pauses that collector)."""
    if isinstance(e, FTTerm):
        return [term_keys(e)]
    if isinstance(e, FTOr):
        out: list[Alternative] = []
        for o in e.operands:
            sub = _alternatives(o, cap, term_keys)
            if sub is None:
                return None
            out.extend(sub)
            if len(out) > cap:
                return None
        return out
    if isinstance(e, (FTAnd, FTNear)):
        parts = e.operands if isinstance(e, FTAnd) else (e.left, e.right)
        out = [(frozenset(), frozenset())]
        for o in parts:
            sub = _alternatives(o, cap, term_keys)
            if sub is None or len(out) * len(sub) > cap:
                return None
            out = [(w1 | w2, p1 | p2) for w1, p1 in out for w2, p2 in sub]
        return out
    return [(frozenset(), frozenset())]  # FTNot: nothing is certain


def is_plain_disjunction(expr: FTExpr) -> bool:
    """True when `expr` is single words, prefix terms and two-word phrases of whole
    words under ftand and ftor: finding all the keys of one alternative
    (`index_alternatives`: a prefix is found when some word of the text starts
    with it, a two-word phrase when its bigram occurs) decides it."""
    if isinstance(expr, FTTerm):
        ws = expr.words
        return len(ws) == 1 or (len(ws) == 2 and not ws[0].prefix and not ws[1].prefix)
    if isinstance(expr, (FTAnd, FTOr)):
        return all(is_plain_disjunction(o) for o in expr.operands)
    return False


def is_plain_conjunction(expr: FTExpr) -> bool:
    """True when `expr` is single whole words under ftand: the index alone decides it."""
    if isinstance(expr, FTTerm):
        return not expr.is_phrase and not expr.words[0].prefix
    if isinstance(expr, FTAnd):
        return all(is_plain_conjunction(o) for o in expr.operands)
    return False
