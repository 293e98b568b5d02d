"""Text analysis options: what an engine does to words beyond the spec's default.

The spec's words (section 3) are the casefolded runs of ``str.isalnum()``
characters, with no stemming and no stop words *by default*; "an engine
option may add them; it must then apply to queries and publications
alike". A `TextAnalysis` is that option. It maps the default words of a
text to its *terms*, and the words of a query string to terms the same way,
so that a query term and a text word meet when their analysed forms are
equal:

1. ``cjk_bigrams``: a word holding Chinese, Japanese or Korean characters
   (which are written without spaces, so one ``isalnum`` run is a whole
   sentence) is cut into its CJK runs and the other runs; a CJK run of two
   or more characters becomes its overlapping bigrams (``東京タワー`` ->
   ``東京 京タ タワ ワー``), a lone CJK character stays a unigram. A query
   word is cut the same way, so ``"東京"`` is the bigram ``東京`` and
   ``"東京タワー"`` the phrase of its four bigrams.
2. ``fold_accents``: diacritics removed (Unicode NFKD, combining marks
   dropped): ``café`` -> ``cafe``, ``Ångström`` -> ``angstrom``.
3. ``stop_words``: words of a stop list are dropped, and the remaining
   words are numbered again without gaps (a phrase ``"games of rio"`` is
   the phrase ``games rio``, and ``ftnear`` distances count the words
   kept). A list is a language of the `stop-words` package or explicit
   words, analysed by steps 1-2 before comparing. A query string made of
   stop words only is an error at registration.
4. ``stem``: each word reduced to its stem by the Snowball stemmer of a
   language (the `snowballstemmer` package): ``fjords`` -> ``fjord``,
   ``running`` -> ``run``.

Prefix terms (``olymp*``) are casefolded and accent-folded but neither
stemmed nor stop-listed: they match the analysed words that start with
them, as Lucene's prefix queries do (``olympi*`` does not match
``olympics`` under English stemming, whose stem is ``olymp``).

>>> a = TextAnalysis(fold_accents=True, stem="english")
>>> a.terms(["cafés", "fjords"])
['cafe', 'fjord']
>>> TextAnalysis(cjk_bigrams=True).terms(["東京タワー"])
['東京', '京タ', 'タワ', 'ワー']
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass, field

from rtf.query.memo import bounded_by_chars

#: A run of ``str.isalnum()`` characters: Python's ``\w`` is exactly ``isalnum()`` plus ``_``,
#: so ``[^\W_]+`` finds the runs in C. An ASCII text's words are exactly these runs.
WORD = re.compile(r"[^\W_]+")
#: What may hold a word of a text that is not ASCII: an alphanumeric character, then
#: alphanumeric characters and characters that are neither word characters, spaces nor ASCII
#: (among them the combining marks; the others end the word, `_split`).
_CANDIDATE = re.compile(r"[^\W_](?:[^\W_]|[^\w\s\x00-\x7f])*")
_MARKS = frozenset(("Mn", "Mc"))
#: A character that may be a combining mark (neither a word character, a space nor ASCII):
#: a text with none after an alphanumeric one has its alphanumeric runs for words.
_MAYBE_MARK = re.compile(r"[^\w\s\x00-\x7f]")
#: An ASCII text's words in C: each letter lowered (a casefold, in ASCII), each character
#: that is not alphanumeric a space, then the text split at spaces.
_ASCII_WORDS = bytes(ord(chr(c).lower()) if chr(c).isalnum() else 32 for c in range(256))


def words(text: str) -> list[str]:
    """The words of `text`, in order (spec section 5, "Text, version 3"): the text in NFC; a
    word is a maximal run of alphanumeric characters (``str.isalnum()``) and of combining
    marks (categories Mn, Mc) following one, casefolded and put in NFC again.

    >>> words("Naïve café, U.S.!")
    ['naïve', 'café', 'u', 's']
    >>> words("cafe\u0301") == words("caf\u00e9") == ["caf\u00e9"]
    True
    """
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    if not _mark_after_word(text):  # no word goes on past its alphanumeric run
        found = WORD.findall(text)
        if not found:
            return found
        # The words casefolded in one call: casefolding maps each character alone, and
        # no word holds NUL nor casefolds to it. (NUL composes with nothing either: the
        # words are in NFC exactly when their join is.)
        joined = "\0".join(found).casefold()
        folded = joined.split("\0")
        if unicodedata.is_normalized("NFC", joined):
            return folded
        return [unicodedata.normalize("NFC", w) for w in folded]
    return [word_of(text[start:end]) for start, end in word_places(text)]


def _mark_after_word(text: str) -> bool:
    """Whether a combining mark follows an alphanumeric character somewhere in `text`."""
    category = unicodedata.category
    for m in _MAYBE_MARK.finditer(text):
        at = m.start()
        if at and text[at - 1].isalnum() and category(text[at]) in _MARKS:
            return True
    return False


def word_places(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each word of `text` as it is written (not normalised): the
    characters the words of `words` come from, for explanations' spans."""
    if text.isascii():
        return [m.span() for m in WORD.finditer(text)]
    out = []
    for m in _CANDIDATE.finditer(text):
        run = m.group()
        if run.isalnum():
            out.append(m.span())
        else:
            out += _split(run, m.start())
    return out


def _split(run: str, offset: int) -> list[tuple[int, int]]:
    """The words in `run` (it starts with an alphanumeric character): a character that is
    neither alphanumeric nor a combining mark ends a word; marks after it start none."""
    category = unicodedata.category
    out = []
    start = None
    for i, c in enumerate(run):
        if c.isalnum():
            if start is None:
                start = i
        elif start is not None and category(c) not in _MARKS:
            out.append((offset + start, offset + i))
            start = None
    if start is not None:
        out.append((offset + start, offset + len(run)))
    return out


def word_of(written: str) -> str:
    """The word a run of `word_places` stands for: casefolded, in NFC."""
    folded = written.casefold()
    return folded if folded.isascii() else unicodedata.normalize("NFC", folded)


#: Characters written without spaces between words: CJK ideographs (with
#: extensions and compatibility forms), kana, and Hangul.
_CJK = re.compile(
    "([\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3038-\u303c\u3040-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+)")

#: Option names as they appear in saved indexes, `Engine.stats()` and `rtf index info`.
OPTION_NAMES = ("fold_accents", "stem", "stop_words", "cjk_bigrams")


class TextAnalysisError(ValueError):
    """Text analysis options that cannot be used (an unknown language, a bad stop word)."""


def stemmer_languages() -> list[str]:
    """The languages `stem` accepts (the Snowball stemmers of `snowballstemmer`)."""
    import snowballstemmer
    return sorted(snowballstemmer.algorithms())


def stop_word_languages() -> list[str]:
    """The languages `stop_words` accepts by name (the lists of the `stop-words` package)."""
    from stop_words import AVAILABLE_LANGUAGES
    return sorted(AVAILABLE_LANGUAGES)


@dataclass(frozen=True)
class TextAnalysis:
    """Engine-wide text analysis options (all off: the spec's default words)."""

    fold_accents: bool = False
    #: A Snowball language (`stemmer_languages`), or None.
    stem: str | None = None
    #: A language of the stop-words package (`stop_word_languages`), a tuple of words, or None.
    stop_words: str | tuple[str, ...] | None = None
    cjk_bigrams: bool = False
    _stop: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if type(self.fold_accents) is not bool or type(self.cjk_bigrams) is not bool:
            raise TextAnalysisError("fold_accents and cjk_bigrams are true or false")
        if self.stem is not None:
            if not isinstance(self.stem, str) or self.stem not in stemmer_languages():
                raise TextAnalysisError(f"no Snowball stemmer for {self.stem!r}; "
                                        f"one of: {', '.join(stemmer_languages())}")
        stop = self.stop_words
        if isinstance(stop, list):
            object.__setattr__(self, "stop_words", stop := tuple(stop))
        if stop is None:
            dropped: frozenset = frozenset()
        elif isinstance(stop, str):
            if stop not in stop_word_languages():
                raise TextAnalysisError(f"no stop-word list for {stop!r}; "
                                        f"one of: {', '.join(stop_word_languages())}")
            from stop_words import get_stop_words
            dropped = frozenset(self._folded(words(" ".join(get_stop_words(stop)))))
        elif isinstance(stop, tuple) and all(isinstance(w, str) for w in stop):
            for w in stop:
                if words(w) != [w.casefold()]:
                    raise TextAnalysisError(f"a stop word is one word of letters and digits, not {w!r}")
            dropped = frozenset(self._folded([w.casefold() for w in stop]))
        else:
            raise TextAnalysisError("stop_words is a language name or a list of words")
        object.__setattr__(self, "_stop", dropped)

    # ------------------------------------------------------------------ options

    @property
    def is_default(self) -> bool:
        """Whether nothing is added to the spec's default words."""
        return not (self.fold_accents or self.stem or self.stop_words or self.cjk_bigrams)

    def as_dict(self) -> dict:
        """The options as JSON values (saved indexes, `rtf index info`)."""
        stop = list(self.stop_words) if isinstance(self.stop_words, tuple) else self.stop_words
        return {"fold_accents": self.fold_accents, "stem": self.stem, "stop_words": stop,
                "cjk_bigrams": self.cjk_bigrams}

    @classmethod
    def from_dict(cls, options: dict) -> "TextAnalysis":
        """The options of `as_dict` (TextAnalysisError for unknown names or bad values)."""
        if not isinstance(options, dict):
            raise TextAnalysisError("text analysis options are a JSON object")
        unknown = set(options) - set(OPTION_NAMES)
        if unknown:
            raise TextAnalysisError(f"unknown text analysis option(s): {', '.join(sorted(unknown))}")
        return cls(**options)

    # ------------------------------------------------------------------ analysis

    def terms(self, words: list[str]) -> list[str]:
        """The terms of a text's default words (casefolded ``isalnum`` runs), in order."""
        if self.cjk_bigrams:
            words = [t for w in words for t in _cjk_terms(w)]
        words = self._folded(words)
        if self._stop:
            stop = self._stop
            words = [w for w in words if w not in stop]
        if self.stem:
            language = self.stem
            words = [_stem(w, language) for w in words]
        return words

    def origins(self, words: list[str]) -> list[int]:
        """For each of ``terms(words)``, the index in `words` of the word it comes from
        (explanations show a term's span as its word's)."""
        pairs = [(t, i) for i, w in enumerate(words) for t in (_cjk_terms(w) if self.cjk_bigrams else (w,))]
        if self._stop:
            stop = self._stop
            pairs = [(t, i) for t, i in pairs if (_fold(t) if self.fold_accents else t) not in stop]
        return [i for _, i in pairs]

    def prefix(self, word: str) -> str:
        """A prefix term's analysed form: folded only (see the module's note)."""
        return _fold(word) if self.fold_accents else word

    def _folded(self, words: list[str]) -> list[str]:
        return [_fold(w) for w in words] if self.fold_accents else words


#: Characters of words the folding and stemming caches may hold (`rtf.query.memo`).
WORD_CACHE_CHARS = 4 << 20


@bounded_by_chars(WORD_CACHE_CHARS)
def _fold(word: str) -> str:
    """`word` without diacritics (NFKD, combining marks dropped, composed again)."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", folded).casefold()


def _cjk_terms(word: str) -> list[str]:
    if word.isascii() or not _CJK.search(word):
        return [word]
    out = []
    for part in _CJK.split(word):
        if not part:
            continue
        if _CJK.fullmatch(part):
            out.extend([part] if len(part) == 1 else [part[i:i + 2] for i in range(len(part) - 1)])
        else:
            out.append(part)
    return out


_STEMMERS = threading.local()  # a Snowball stemmer keeps state while it works: one per thread


@bounded_by_chars(WORD_CACHE_CHARS)
def _stem(word: str, language: str) -> str:
    """The Snowball stem of `word` in `language`."""
    stemmers = getattr(_STEMMERS, "by_language", None)
    if stemmers is None:
        stemmers = _STEMMERS.by_language = {}
    stemmer = stemmers.get(language)
    if stemmer is None:
        import snowballstemmer
        stemmer = stemmers[language] = snowballstemmer.stemmer(language)
    return stemmer.stemWord(word)


# ------------------------------------------------------------------ per field

#: What starts and ends the tag of a field analysis's terms: a control character, which
#: no word holds (`words`), so that the terms of two analyses never meet.
_TAG = "\x1d"
#: A term no text holds: what a query string of stop words only becomes in a field
#: whose analysis drops them all (it matches no literal of that field).
_NEVER = "\x1c"


@dataclass(frozen=True)
class FieldRule:
    """One rule of a `FieldAnalysis`: the literals of `predicate` (an IRI, without angle
    brackets; None: any) in language `lang` (a tag, lowercase; None: any) get `analysis`."""

    predicate: str | None
    lang: str | None
    analysis: TextAnalysis

    def __post_init__(self) -> None:
        p, lang = self.predicate, self.lang
        if p is not None:
            if not isinstance(p, str) or not p.strip("<>") or any(c in p.strip("<>") for c in '<>" {}|\\^`'):
                raise TextAnalysisError(f"a field's predicate is an IRI, not {p!r}")
            object.__setattr__(self, "predicate", p.strip("<>"))
        if lang is not None:
            if not isinstance(lang, str) or not re.fullmatch(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*", lang):
                raise TextAnalysisError(f"a field's lang is a language tag (en, en-GB), not {lang!r}")
            object.__setattr__(self, "lang", lang.lower())
        if p is None and lang is None:
            raise TextAnalysisError("a field rule names a predicate, a lang or both "
                                    "(the analysis of every other literal is the default one)")
        if not isinstance(self.analysis, TextAnalysis):
            raise TextAnalysisError("a field rule's analysis is a TextAnalysis")

    def as_dict(self) -> dict:
        named = {"predicate": self.predicate, "lang": self.lang}
        return {**{k: v for k, v in named.items() if v is not None}, **self.analysis.as_dict()}


@dataclass(frozen=True)
class FieldAnalysis:
    """Text analysis per field, as Lucene and Elasticsearch pick an analyzer per field.

    A literal's *fields* are the (predicate, language tag) pairs of the triples of the
    publication whose object it is; a literal that is no triple's object (a query's
    constant, a ``BIND`` result) has the one field (no predicate, its tag). Each field's
    analysis is the first rule that matches, in this order: (predicate, lang),
    (predicate, any lang), (any predicate, lang), then `default`; a lang rule ``en``
    also takes ``en-gb`` when no rule names ``en-gb``. ``ftcontains(?x, E)`` holds
    when E holds on ?x's text under one of its fields' analyses, E's strings analysed
    by that same analysis (docs/language.md, "Text analysis per field").

    >>> fa = FieldAnalysis.from_dict({"fields": [{"lang": "en", "stem": "english"},
    ...     {"predicate": "http://ex.org/code", "lang": "en"}]})
    >>> [fa.analysis_for(p, lang).is_default for p, lang in
    ...     [("<http://ex.org/code>", "en"), ("<http://ex.org/name>", "en-gb"), (None, "fr")]]
    [True, False, True]
    """

    default: TextAnalysis = TextAnalysis()
    rules: tuple[FieldRule, ...] = ()
    _ids: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.default, TextAnalysis):
            raise TextAnalysisError("a field analysis's default is a TextAnalysis")
        rules = tuple(self.rules)
        if not all(isinstance(r, FieldRule) for r in rules):
            raise TextAnalysisError("a field analysis's rules are FieldRule values")
        object.__setattr__(self, "rules", rules)
        seen = set()
        for r in rules:
            if (r.predicate, r.lang) in seen:
                raise TextAnalysisError(f"two rules for the field (predicate={r.predicate}, lang={r.lang})")
            seen.add((r.predicate, r.lang))
        analyses = tuple(dict.fromkeys([self.default, *(r.analysis for r in rules)]))
        object.__setattr__(self, "_analyses", analyses)
        number = {a: i for i, a in enumerate(analyses)}
        object.__setattr__(self, "_rule_ids", {(None if r.predicate is None else f"<{r.predicate}>", r.lang):
                                               number[r.analysis] for r in rules})
        object.__setattr__(self, "_hash", hash((self.default, rules)))

    def __hash__(self) -> int:  # (kept: the text caches hash the analysis at every literal)
        return self._hash  # type: ignore[attr-defined]

    def __reduce__(self):  # made again where it is unpickled: a string's hash is per process
        return (FieldAnalysis, (self.default, self.rules))

    @property
    def analyses(self) -> tuple[TextAnalysis, ...]:
        """The distinct analyses: the default one first, then the rules' in order."""
        return self._analyses  # type: ignore[attr-defined]

    @property
    def is_default(self) -> bool:
        """Whether every literal gets the spec's default words."""
        return len(self.analyses) == 1 and self.default.is_default

    def simplest(self) -> "TextAnalysis | FieldAnalysis":
        """The `TextAnalysis` every field gets when there is one, else this."""
        return self.default if len(self.analyses) == 1 else self

    def as_dict(self) -> dict:
        """The options as JSON values: ``{"default": {...}, "fields": [{"predicate", "lang", ...}]}``."""
        return {"default": self.default.as_dict(), "fields": [r.as_dict() for r in self.rules]}

    @classmethod
    def from_dict(cls, options: dict) -> "FieldAnalysis":
        """The options of `as_dict` ("default" may be left out; a rule's options too)."""
        if not isinstance(options, dict):
            raise TextAnalysisError("text analysis options are a JSON object")
        unknown = set(options) - {"default", "fields"}
        if unknown:
            raise TextAnalysisError(f"unknown text analysis option(s): {', '.join(sorted(unknown))} "
                                    "(per field: 'default' and 'fields')")
        fields = options.get("fields", [])
        if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
            raise TextAnalysisError("'fields' is a list of objects, each a predicate and/or lang "
                                    "and text analysis options")
        rules = []
        for f in fields:
            f = dict(f)
            predicate, lang = f.pop("predicate", None), f.pop("lang", None)
            rules.append(FieldRule(None if predicate == "*" else predicate, None if lang == "*" else lang,
                                   TextAnalysis.from_dict(f)))
        return cls(TextAnalysis.from_dict(options.get("default", {})), tuple(rules))

    # ------------------------------------------------------------------ fields

    def analysis_id(self, predicate: str | None, lang: str | None) -> int:
        """The index in `analyses` of the analysis of the field (`predicate`, a key
        ``<iri>`` or None; `lang`, a tag or None): the rule order of the class's doc."""
        key = (predicate, lang)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = self._first_rule(predicate, lang)
        return found

    def _first_rule(self, predicate: str | None, lang: str | None) -> int:
        rules = self._rule_ids  # type: ignore[attr-defined]
        ranges = [] if lang is None else _ranges(lang.lower())
        order = [(predicate, r) for r in ranges] + [(predicate, None)] if predicate is not None else []
        for key in order + [(None, r) for r in ranges]:
            if key in rules:
                return rules[key]
        return 0

    def analysis_for(self, predicate: str | None, lang: str | None) -> TextAnalysis:
        """The analysis of the field (`predicate`, `lang`) (see `analysis_id`)."""
        return self.analyses[self.analysis_id(predicate, lang)]

    def field_ids(self, predicates, lang: str | None) -> tuple[int, ...]:
        """The analyses of a literal in language `lang` that is the object of `predicates`
        (keys; none: the literal of no triple), as sorted indexes in `analyses`."""
        if not predicates:
            return (self.analysis_id(None, lang),)
        return tuple(sorted({self.analysis_id(p, lang) for p in predicates}))

    @staticmethod
    def tag(number: int) -> str:
        """What the terms of analysis `number` start with (and, alone, the mark of a literal
        analysed by it)."""
        return f"{_TAG}{number}{_TAG}"

    def tokens(self, words: list[str], ids: tuple[int, ...]) -> list[str]:
        """The terms of a text's default `words` under each analysis of `ids`, tagged,
        each analysis's run of terms after its mark."""
        out: list[str] = []
        for i in ids:
            tag = self.tag(i)
            out.append(tag)
            out += [tag + t for t in self.analyses[i].terms(words)]
        return out

    def origins(self, words: list[str], ids: tuple[int, ...]) -> list[int]:
        """For each of ``tokens(words, ids)``, the index in `words` of the word it comes from
        (a mark: 0)."""
        out: list[int] = []
        for i in ids:
            out.append(0)
            out += self.analyses[i].origins(words)
        return out

    def is_mark(self, term: str) -> bool:
        """Whether `term` is the mark of an analysis (`tag` alone)."""
        return term[:1] == _TAG and term[-1:] == _TAG

    def word_terms(self, number: int, word: str, prefix: bool) -> list[str]:
        """A query word's terms under analysis `number`, tagged (a prefix: one term)."""
        tag, analysis = self.tag(number), self.analyses[number]
        if prefix:
            return [tag + analysis.prefix(word)]
        return [tag + t for t in analysis.terms([word])]

    def never(self, number: int) -> str:
        """A term of analysis `number` that no text holds."""
        return self.tag(number) + _NEVER


def _ranges(tag: str) -> list[str]:
    """`tag` and its shorter ranges, longest first: ``en-gb-x`` -> en-gb-x, en-gb, en."""
    parts = tag.split("-")
    return ["-".join(parts[:k]) for k in range(len(parts), 0, -1)]


def analysis_from_dict(options: dict) -> TextAnalysis | FieldAnalysis:
    """A `TextAnalysis` or `FieldAnalysis` from its `as_dict` (a saved index's, a config file's):
    per field when it holds "default" or "fields"."""
    if isinstance(options, dict) and ("fields" in options or "default" in options):
        return FieldAnalysis.from_dict(options).simplest()
    return TextAnalysis.from_dict(options)


def normal_analysis(analysis: TextAnalysis | FieldAnalysis | None) -> TextAnalysis | FieldAnalysis | None:
    """`analysis` as an engine holds it: None for the default words, a `FieldAnalysis` whose
    fields all get one analysis as that `TextAnalysis`."""
    if isinstance(analysis, FieldAnalysis):
        analysis = analysis.simplest()
    return None if analysis is None or analysis.is_default else analysis
