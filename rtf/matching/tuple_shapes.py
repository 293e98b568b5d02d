"""Tuple shapes: what an index stores of a tuple conjunct (see `rtf.matching.query_table`).

A *tuple shape* is the tuple with its variables renamed by position inside
the tuple (``(?x, p, ?y)`` and ``(?a, p, ?b)`` both become ``(?1, p, ?2)``, as
G-ToPSS labels variables ``*1, *2``), plus its full-text constraint. Equal
shapes from different queries are stored once and share every node of the
index, known by a small integer id.
"""

from __future__ import annotations

import sys

from rtf.matching.structures import SlotList
from rtf.query.model import FTExpr, TupleConjunct
from rtf.query.terms import TypePath, Wildcard, is_variable
from rtf.query.text import compile_ft, index_alternatives, is_plain_disjunction, required_words

WILDCARD_CONTENT = "*"


_VAR_CONTENTS = tuple(f"?{k}" for k in range(4))  # one string each, for every shape


def var_content(k: int) -> str:
    """Node content of the k-th variable of a tuple (1-based): ``?1``, ``?2``..."""
    return _VAR_CONTENTS[k] if k < 4 else f"?{k}"


def is_var_content(content: str) -> bool:
    return content[0] == "?"


def _var_number(content: str) -> int:
    return int(content[1:])


_TYPE_PATH = TypePath().key


def shape_of(t: TupleConjunct) -> tuple[tuple[str, str, str, FTExpr | None], tuple[str, ...]]:
    """(shape key, variable names by position) of a tuple conjunct."""
    names: list[str] = []
    contents = []
    for term in t.terms:
        if is_variable(term):
            if term.name not in names:
                names.append(term.name)
            contents.append(var_content(names.index(term.name) + 1))
        elif isinstance(term, Wildcard):
            contents.append(WILDCARD_CONTENT)
        else:  # IRI, Literal, TypePath
            contents.append(sys.intern(term.key))  # one copy per IRI across all shapes
    return (contents[0], contents[1], contents[2], t.fulltext), tuple(names)


_SMALL_TUPLES: dict[tuple, tuple] = {}


def _shared(t: tuple) -> tuple:
    """One copy of each small tuple (``(0,)``, ``("s",)``...) for all branches: 100K
    queries repeat a handful of them."""
    return _SMALL_TUPLES.setdefault(t, t)


#: variable layout (a structure's variables, "" for its constants) -> `row_positions`
_ROWS: dict[tuple, tuple] = {}


def row_positions(structure: tuple[str, str, str]) -> tuple[int, ...]:
    """Where a triple's binding row comes from, for a shape of `structure`: the first
    position of ?1, ?2, ... (one tuple for all the shapes of a variable layout)."""
    layout = tuple(c if is_var_content(c) else "" for c in structure)
    rows = _ROWS.get(layout)
    if rows is None:
        firsts: dict[str, int] = {}
        for i, c in enumerate(layout):
            if c and c not in firsts:
                firsts[c] = i
        rows = _ROWS[layout] = _shared(tuple(firsts[c] for c in sorted(firsts, key=_var_number)))
    return rows


class TupleShape:
    """One distinct (S, P, O, F) with variables renamed by position.

    The branches that count the shape are kept by its `id` in the query
    table (`QueryTable.pivots`); a branch with value tests is counted by them
    instead, and its shapes through its structure (`structures`: the ids of
    the structures holding the shape, a `SlotList`, None when none; see
    `rtf.matching.structures`).
    `alternatives` are the word keys of its full-text constraint: sorted
    (words, prefixes) tuples, one per ``ftor`` alternative, of which a
    literal must hold all of at least one (empty when nothing is certain:
    the shape is then verified on every literal reaching its structure).
    `needs_check` says the expression says more than its keys; `checker()` then
    decides it on a text (`rtf.query.text.compile_ft`, compiled at the first
    check). Most shapes have one alternative of words only: those are kept as
    the words alone (`_keys`), two tuples fewer a shape.
    """

    __slots__ = ("id", "key", "subject", "predicate", "object", "fulltext", "_keys",
                 "needs_check", "check", "structures", "is_type_path", "row_positions")

    def __init__(self, id: int, key):
        self.id = id
        self.key = key
        self.subject, self.predicate, self.object, self.fulltext = key
        if self.fulltext is not None:
            alternatives, self.needs_check = index_keys(self.fulltext)
            one = len(alternatives) == 1 and not alternatives[0][1]
            self._keys = alternatives[0][0] if one else alternatives
        else:
            self._keys = ()
            self.needs_check = False
        #: the whole full-text constraint as a function of a TextIndex: made when first
        #: needed (`checker`), as most shapes are never checked
        self.check = None
        self.structures: SlotList | None = None
        self.is_type_path = self.predicate == _TYPE_PATH
        self.row_positions = row_positions(self.structure)

    def checker(self):
        """The whole full-text constraint as a function of a `TextIndex` (made once)."""
        check = self.check
        if check is None:
            check = self.check = compile_ft(self.fulltext)
        return check

    def __getstate__(self):
        # `check` is a closure, which cannot be pickled (Spark ships engines): made again.
        return None, {name: getattr(self, name) for name in self.__slots__ if name != "check"}

    def __setstate__(self, state) -> None:
        for name, value in state[1].items():
            setattr(self, "_keys" if name == "alternatives" else name, value)  # an older rtf's name
        self.check = None

    @property
    def structure(self) -> tuple[str, str, str]:
        return (self.subject, self.predicate, self.object)

    @property
    def alternatives(self) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
        """The (words, prefixes) keys, one per ``ftor`` alternative (see the class)."""
        keys = self._keys
        return ((keys, ()),) if keys and type(keys[0]) is str else keys

    @property
    def has_words(self) -> bool:
        """The shape has word keys (an index finds it by them)."""
        return bool(self._keys)

    @property
    def words(self) -> tuple[str, ...]:
        """The words of the shape's only key (empty unless it has exactly one)."""
        return self.alternatives[0][0] if len(self.alternatives) == 1 else ()

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The prefixes of the shape's only key (empty unless it has exactly one)."""
        return self.alternatives[0][1] if len(self.alternatives) == 1 else ()

    def __repr__(self) -> str:
        ft = f", FT {self.fulltext}" if self.fulltext is not None else ""
        return f"TupleShape({self.subject}, {self.predicate}, {self.object}{ft})"


def index_keys(fulltext: FTExpr) -> tuple[tuple[tuple[tuple[str, ...], tuple[str, ...]], ...], bool]:
    """(alternatives, needs_check) of a full-text constraint (see `TupleShape`).

    Every ``ftor`` alternative is a key (`rtf.query.text.index_alternatives`: words,
    prefixes, and the bigrams of phrases, looked up in `TextIndex.keys`); when
    there are too many, or one requires no word, the shape keys on the
    words certain in all of them (`required_words`), maybe none. The keys
    alone decide the expression only when it is whole words under ftand
    and ftor and each alternative is a key.
    """
    alternatives = index_alternatives(fulltext)
    if alternatives is None:
        ws, ps = required_words(fulltext)
        keys = ((tuple(sorted(ws)), tuple(sorted(ps))),) if ws or ps else ()
        return keys, True
    keys = tuple((tuple(sorted(ws)), tuple(sorted(ps))) for ws, ps in alternatives)
    return keys, not is_plain_disjunction(fulltext)
