"""A full-text expression analysed per field (`rtf.query.analysis.FieldAnalysis`).

Under a field analysis, the parser reads a query's strings as the spec's
default words (`rtf.query.text.parse_ft_string`) and hands each ``ftcontains``
expression E here. E becomes the disjunction, over the configuration's distinct
analyses A_i, of E_i: E with every word analysed by A_i and tagged with i
(`FieldAnalysis.word_terms`). A literal's text index holds the tagged terms of
its fields' analyses only (`rtf.query.text.literal_text_index`), so E_i can
only hold on a literal analysed by A_i, and the whole holds when E holds under
one of the literal's analyses -- the rule of docs/language.md.

Every index keys E_i's words as it keys any expression's (`word_alternatives`):
they are tagged, so they are found in the literals of that analysis only, and
no index misses a literal. An E_i that could hold without any of its words
(``ftnot "x"``) is guarded by the analysis's mark, a term every literal
analysed by A_i holds.

>>> from rtf.query.analysis import FieldAnalysis
>>> from rtf.query.text import analysed, parse_ft_string
>>> fa = FieldAnalysis.from_dict({"fields": [{"lang": "en", "stem": "english"}]})
>>> with analysed(fa):
...     e = fielded(parse_ft_string("running"))
>>> [w.text.replace("\\x1d", "|") for alternative in e.operands for w in alternative.words]
['|0|running', '|1|run']
"""

from __future__ import annotations

import re

from rtf.query.analysis import FieldAnalysis
from rtf.query.model import FTAnd, FTExpr, FTNear, FTNot, FTOr, FTTerm, ft_term, ft_word
from rtf.query.text import current_analysis, literal_field_ids, word_alternatives


_TAGGED = re.compile("\x1d([0-9]+)\x1d")


def fielded(expr: FTExpr) -> FTExpr:
    """`expr` (of default words) as the field analysis in effect reads it (see the module's
    doc); `expr` itself under any other analysis."""
    fields = current_analysis()
    if type(fields) is not FieldAnalysis:
        return expr
    variants = []
    for number in range(len(fields.analyses)):
        variant = _analysed(expr, fields, number)
        if word_alternatives(variant) is None:  # it could hold without its words: only on this field
            variant = FTAnd((ft_term((ft_word(fields.tag(number)),)), variant))
        variants.append(variant)
    return FTOr(tuple(variants))


def term_variants(term: FTTerm) -> list[FTTerm]:
    """`term` (of default words) as each analysis of the field analysis in effect reads it
    (for explanations, which show the query's words); [] under any other analysis."""
    fields = current_analysis()
    if type(fields) is not FieldAnalysis:
        return []
    return [_term(term, fields, number) for number in range(len(fields.analyses))]


def literal_origins(key: str | None, words: list[str]) -> list[int] | None:
    """For each term of `literal_text_index` of literal `key` (None: `text_index` of a
    text), whose default `words` these are, the index in `words` of the word it comes
    from; None unless per field."""
    fields = current_analysis()
    if type(fields) is not FieldAnalysis:
        return None
    return fields.origins(words, fields.field_ids((), None) if key is None else literal_field_ids(key))


def readable(shown: str) -> str:
    """An expression as `str` shows it, each tagged term ``\\x1dN\\x1dword`` as ``N:word``
    (the word under the configuration's analysis N: 0 the default, then the rules' in order)."""
    return _TAGGED.sub(r"\1:", shown) if "\x1d" in shown else shown


def is_mark(term: FTTerm) -> bool:
    """Whether `term` is the mark of an analysis (`fielded`'s guard: no hit to show)."""
    fields = current_analysis()
    return type(fields) is FieldAnalysis and len(term.words) == 1 and fields.is_mark(term.words[0].text)


def _analysed(e: FTExpr, fields: FieldAnalysis, number: int) -> FTExpr:
    if isinstance(e, FTTerm):
        return _term(e, fields, number)
    if isinstance(e, FTAnd):
        return FTAnd(tuple(_analysed(o, fields, number) for o in e.operands))
    if isinstance(e, FTOr):
        return FTOr(tuple(_analysed(o, fields, number) for o in e.operands))
    if isinstance(e, FTNot):
        return FTNot(_analysed(e.operand, fields, number))
    if isinstance(e, FTNear):
        return FTNear(_term(e.left, fields, number), _term(e.right, fields, number), e.min, e.max, e.ordered)
    raise TypeError(f"not a full-text expression: {e!r}")


def _term(term: FTTerm, fields: FieldAnalysis, number: int) -> FTTerm:
    """`term` under analysis `number`, as `parse_ft_string` analyses a string (a word may
    give several terms or none); a term of stop words only holds on no literal."""
    words = [ft_word(t, w.prefix) for w in term.words for t in fields.word_terms(number, w.text, w.prefix)]
    return ft_term(tuple(words) if words else (ft_word(fields.never(number)),))
