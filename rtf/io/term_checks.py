"""A saved query's full-text words against its text: made again by the same functions, or refused.

A saved index stores each query's text, its parsed model (`rtf.io.store`)
and, in its head, the engine's text analysis options. The words of the
model's full-text terms were made from the text by
`rtf.query.text.parse_ft_string` under those options, and nothing but that
function can say which words it makes: casefolding ``ὐ`` gives ``υ`` and a
combining mark, which is no word character of its own; a stemmer's stems
are its own; the word rule itself changes between language versions. So
the loader does not judge words by a rule of its own (one that did refused
the indexes ``rtf index build`` wrote of 27 letters): it asks that function
again (`TermChecker`).

- A query with a text: its full-text terms must be those `parse_ft_string`
  makes, under the file's options, of the strings of its own ``ftcontains``
  calls. So a file whose ``text_analysis`` was edited after it was built is
  refused wherever the options make other terms, and a file is accepted
  whenever its terms are those a fresh engine would make. The strings are
  found by a scan of the text's string literals (`ftcontains_strings`), not
  a parse; a text the scan cannot read (a quote in a comment or an IRI, a
  syntax it does not know) is parsed again by `rtf.parser`, which decides.
- A query without a text (a parsed `Query` given to `Engine.register`): its
  words must be ones the text rules make of some text (`is_word`), and the
  file must have the default words, as `Engine.register` requires of such
  a query.

Checking every query would cost about a fifth of `Engine.load` (100K
queries: 8.1 -> 9.8 s of CPU), so a sample is checked (`VERIFY_FIRST`, `VERIFY_EVERY`),
and every query holding a word that is not a word of its own.
docs/index-format.md says what a saved index is trusted for.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections import Counter
from functools import lru_cache

from rtf.errors import QueryError
from rtf.query import model
from rtf.query.analysis import TextAnalysis, words
from rtf.query.text import FullTextError, analysed, parse_ft_string

#: SPARQL 1.1's four string literal forms (STRING_LITERAL_LONG1, _LONG2, 1 and 2), as
#: grammar/ftsparql.lark's STRING.
_STRING = "|".join([r'"""(?:(?:"|"")?(?:[^"\\]|\\.))*+"""', r"'''(?:(?:'|'')?(?:[^'\\]|\\.))*+'''",
                    r'"(?:[^"\\\n\r]|\\.)*+"', r"'(?:[^'\\\n\r]|\\.)*+'"])
#: Every string literal of a text, for the first, cheapest comparison.
_STRINGS = re.compile(_STRING, re.DOTALL)
#: A string, a backslash outside a string with the character it escapes (a prefixed
#: name's ``\\'``), an ``ftcontains`` call's start, and the parentheses and commas that
#: delimit its arguments.
_SCAN = re.compile(rf"(?P<string>{_STRING})|\\.|(?P<call>(?<![\w:?$])ftcontains\s*\()"
                   r"|(?P<open>\()|(?P<close>\))|(?P<comma>,)", re.IGNORECASE | re.DOTALL)


class TermCheckError(ValueError):
    """A query's full-text terms are not what its text and the file's options make."""


def ftcontains_strings(text: str, raw: bool = False) -> list[tuple[str, ...]] | None:
    """The string literals of each ``ftcontains`` call's full-text argument in `text`, in
    order, their quotes and escapes removed (kept if `raw`); None when the parentheses
    do not balance."""
    calls: list[tuple[str, ...]] = []
    open_calls: list[list] = []  # [depth at the call, past its first argument, strings]
    depth = 0
    for m in _SCAN.finditer(text):
        kind = m.lastgroup
        if kind == "string":
            if open_calls and open_calls[-1][1]:
                open_calls[-1][2].append(m.group() if raw else _string_value(m.group()))
        elif kind == "call":
            open_calls.append([depth, False, []])
            depth += 1
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            if open_calls and depth == open_calls[-1][0]:
                calls.append(tuple(open_calls.pop()[2]))
        elif kind == "comma":
            if open_calls and depth == open_calls[-1][0] + 1:
                open_calls[-1][1] = True
    return None if open_calls or depth else calls


def _string_value(literal: str) -> str:
    """The value of a string literal as the parser reads it (QueryError if it cannot)."""
    from lark import Token  # (the parser: not imported by a mapped load, which checks no model)

    from rtf.parser.lexical import string_value
    return string_value(Token("STRING", literal, line=1, column=1))


def fulltext_calls(filters) -> Counter:
    """The term sequence (a tuple of `FTTerm` s, in the order written) of each
    ``ftcontains`` in the expressions `filters`, counted."""
    return Counter(tuple(_terms_of(call.ft)) for call in _ftcontains(filters))


def fulltext_terms(filters) -> list:
    """Every `FTTerm` of the ``ftcontains`` in the expressions `filters`: each call's in the
    order written, the calls in the order of `filters` (first to last, depth first)."""
    if len(filters) == 1 and type(filters[0]) is model.FtContains:  # most queries
        return _terms_of(filters[0].ft)
    return [t for call in _ftcontains(filters) for t in _terms_of(call.ft)]


def _ftcontains(filters) -> list:
    found = []
    stack = list(reversed(filters))
    while stack:
        e = stack.pop()
        cls = type(e)
        if cls is model.FtContains:
            found.append(e)
        elif cls is tuple:
            stack.extend(reversed(e))
        else:
            names = _PARTS.get(cls)
            if names is None:
                names = _PARTS[cls] = _parts(cls)
            stack.extend(getattr(e, name) for name in reversed(names))
    return found


#: class -> the fields of its values that may hold an ``ftcontains`` (the query model's
#: expressions; none of the RDF terms).
_PARTS: dict[type, tuple[str, ...]] = {}


def _parts(cls: type) -> tuple[str, ...]:
    if not dataclasses.is_dataclass(cls) or cls.__module__ != model.__name__:
        return ()
    return tuple(f.name for f in dataclasses.fields(cls))


def _terms_of(ft) -> list:
    out: list = []
    stack = [ft]
    while stack:
        e = stack.pop()
        if type(e) is model.FTTerm:
            out.append(e)
        elif type(e) is model.FTNot:
            stack.append(e.operand)
        elif type(e) is model.FTNear:
            stack += (e.right, e.left)
        else:  # FTAnd, FTOr
            stack.extend(reversed(e.operands))
    return out


#: Queries of a file whose terms are all checked against their texts: the first
#: `VERIFY_FIRST`, then one in `VERIFY_EVERY` (and every query holding an unusual word,
#: see `TermChecker`). Checking them all costs about a fifth of `Engine.load`; the
#: sample is within the noise of a load (docs/index-format.md, "Guarantees").
VERIFY_FIRST = 4096
VERIFY_EVERY = 16


class TermChecker:
    """Checks the queries of one file under the file's text analysis (`analysis`, None:
    the default words), remembering the term each string literal makes: they repeat.

    Which queries: every one holding a word that is not a word of its own under
    the text rules (``words(w) != [w]``: see `is_word`; `note_word` is told of each
    word as it is built), and the first `VERIFY_FIRST` and one in `VERIFY_EVERY`
    of the others: a file whose options were changed after it was built has
    other terms in most of its queries that hold words.

    How, cheapest first, each tried when the one before cannot tell: the text's
    string literals make the model's terms, in order (most queries); the same
    as multisets; the strings of each ``ftcontains`` call make the terms of one
    of the model's calls (`ftcontains_strings`); the text parsed again
    (`rtf.parser`) has the model's terms.
    """

    def __init__(self, analysis: TextAnalysis | None):
        self.analysis = None if analysis is None or analysis.is_default else analysis
        self._made: dict[str, object] = {}  # string literal as written -> its term (or itself)
        self._unusual: set[str] = set()
        self._queries = 0
        #: How many queries were checked against their texts, and how many of them the third
        #: and fourth ways decided (for the tests and benchmarks).
        self.decided = {"checked": 0, "calls": 0, "parsed": 0}

    def note_word(self, word: model.FTWord) -> None:
        """Remember `word` if it is not a word of its own (its queries are then all checked)."""
        if words(word.text) != [word.text]:
            self._unusual.add(word.text)

    def check(self, query: model.Query) -> None:
        """TermCheckError unless `query`'s full-text terms are those its text makes under
        the file's analysis or, for a query without its text, words of the text rules."""
        self._queries += 1
        text = query.text
        if (text and self._queries > VERIFY_FIRST and self._queries % VERIFY_EVERY
                and not (self._unusual and self._holds_unusual(query))):
            return
        terms = fulltext_terms(query.filters)
        if not terms:
            return
        if not text:
            self._check_without_text(terms)
            return
        self.decided["checked"] += 1
        literals = _STRINGS.findall(text)
        made = list(map(self._made.get, literals))
        if not all(made):  # a literal seen first (`None in made` would call FTTerm.__eq__)
            made = list(map(self._term, literals))
        if made != terms:
            self._check_slowly(query, terms, made)

    def _holds_unusual(self, query: model.Query) -> bool:
        unusual = self._unusual
        return any(w.text in unusual for t in fulltext_terms(query.filters) for w in t.words)

    def _check_slowly(self, query: model.Query, terms: list, made: list) -> None:
        """The second, third and fourth ways (see the class's doc)."""
        if len(made) == len(terms) and Counter(made) == Counter(terms):
            return
        calls = fulltext_calls(query.filters)
        scanned = ftcontains_strings(query.text, raw=True)
        if scanned is not None and calls == Counter(tuple(map(self._term, c)) for c in scanned):
            self.decided["calls"] += 1
            return
        self.decided["parsed"] += 1
        if calls != self._parsed_calls(query.text):
            raise TermCheckError(self._mismatch(terms, made))

    def _mismatch(self, terms: list, made: list) -> str:
        """One line on the first of the model's terms that its text does not make."""
        origin = {id(t): literal for literal, t in self._made.items()}
        for held, got in zip(terms, made):
            if held != got:
                source = origin.get(id(got), got)
                makes = f"makes {got}" if isinstance(got, model.FTTerm) else "is not a full-text string"
                return (f"the query's string {source} {makes} under the index's text analysis "
                        f"({_options(self.analysis)}), but the index holds {held}: was the file edited? "
                        "rebuild it with `rtf index build`")
        return (f"the query's full-text terms {', '.join(map(str, terms))} are not what the index's "
                f"text analysis ({_options(self.analysis)}) makes of its strings: was the file edited? "
                "rebuild it with `rtf index build`")

    def _term(self, literal: str):
        """The term made of the string `literal` (as written: quotes and escapes) under the
        file's analysis, or the literal itself when it makes none."""
        term = self._made.get(literal)
        if term is None:
            try:
                with analysed(self.analysis):
                    term = parse_ft_string(_string_value(literal))
            except (FullTextError, QueryError):
                term = literal
            self._made[literal] = term
        return term

    def _parsed_calls(self, text: str) -> Counter | None:
        from rtf.parser import parse_query
        try:
            with analysed(self.analysis):
                return fulltext_calls(parse_query(text).filters)
        except QueryError:
            return None

    def _check_without_text(self, terms: list) -> None:
        if self.analysis is not None:
            raise TermCheckError("a query with full-text terms but without its text in an index with "
                                 "text analysis (such a query cannot be registered in that engine)")
        for term in terms:
            for word in term.words:
                if word.text in self._unusual and not is_word(word.text):
                    raise TermCheckError(f"{word.text!r} is not a word the text rules can make")


def _options(analysis: TextAnalysis | None) -> str:
    if analysis is None:
        return "the default words"
    return ", ".join(f"{k}={v}" for k, v in analysis.as_dict().items() if v)


def is_word(text: str) -> bool:
    """Whether the text rules (`rtf.query.analysis.words`) make `text` a word of some text.

    Most words are a word of their own (``words(w) == [w]``). A few are not:
    casefolding ``İ``, ``ǰ`` or Greek letters with breathings gives a letter
    and combining marks, which are no word characters. Those are the
    words made of pieces that `words` makes of single characters
    (`_pieces`), each piece either a word of its own or one of those.
    """
    if type(text) is not str or not text:
        return False
    if words(text) == [text]:
        return True
    pieces = _pieces()
    longest = max(map(len, pieces), default=1)
    reachable = [True] + [False] * len(text)
    for i in range(len(text)):
        if not reachable[i]:
            continue
        if words(text[i]) == [text[i]]:
            reachable[i + 1] = True
        for n in range(2, min(longest, len(text) - i) + 1):
            if text[i:i + n] in pieces:
                reachable[i + n] = True
    return reachable[-1]


@lru_cache(maxsize=1)
def _pieces() -> frozenset[str]:
    """What `words` makes of each single character, but the characters that are words of
    their own (computed once, the first time a word needs it: about a second)."""
    found = set()
    for code in range(sys.maxunicode + 1):
        for w in words(chr(code)):
            if len(w) > 1 or words(w) != [w]:
                found.add(w)
    return frozenset(found)
