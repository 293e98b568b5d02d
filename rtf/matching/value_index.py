"""Value tests on one operand, answered for a value by binary search (seed 004: matching trees).

A *value test* compares one operand of one variable with constants:
``?pop > 1000000``, ``year(?d) >= 1990``, ``lang(?l) = "en"``,
``?x IN (1, 2, 3)``. Many queries test the same operand (the population of
a city, the year of a birth date) against different constants. Aguilera et
al.'s matching tree answers "which subscriptions does this event satisfy"
by testing each attribute once and following the edges of the results;
for ordered attributes the edges of one test are ranges of constants. Here
the constants of each operator are kept sorted, by value space, so that a
value finds every test it satisfies with one binary search per operator
and value space, whatever the number of tests::

    <  : constants sorted  [ 3 | 7 | 7 | 12 | 40 ]      x = 9: "x < c" holds for 12, 40
                                       ^ bisect_right(9)

A `ValueIndex` holds the tests of one operand (the caller evaluates the
operand once per distinct value, e.g. ``year(?d)`` of a literal, and asks
`satisfied` with the result): its answer is the array of the ids of the
tests that are *true* for that value, exactly as `rtf.query.values.compare`
says, three-valued logic included (an error is not true):

- numbers of different types compare after XPath type promotion
  (integer/decimal -> float -> double); promotion keeps order, so one
  sorted list per (constant type, target type) serves every value;
- NaN is unequal to everything and unordered: ``NaN != c`` holds for every
  comparable ``c``, no ordering holds;
- values of different spaces (a string and a number, a date and a
  dateTime) are not comparable: orderings are errors, ``=`` is false or an
  error (RDFterm-equal), ``!=`` true only where one side is not a literal;
- terms without a value (IRIs, blank nodes, language-tagged strings, unknown
  datatypes, ill-typed literals) are equal to themselves only.

``IN`` is ``=`` against each of its constants, true when any is true.
`ValueTest` ops: ``= != < <= > >= in``, with the operand on the left
(the caller flips ``c < ?v`` into ``?v > c``).

>>> index = ValueIndex()
>>> integer = lambda n: f'"{n}"^^<http://www.w3.org/2001/XMLSchema#integer>'
>>> index.add(1, ValueTest(">", (integer(1000),)))
>>> index.add(2, ValueTest("<=", (integer(10),)))
>>> index.add(3, ValueTest("in", (integer(5), '"5"')))
>>> sorted(index.satisfied(integer(5)).tolist()), index.satisfied('"5"').tolist()
([2, 3], [3])
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from rtf.matching.structures import sorted_unique
from rtf.query.values import DECIMAL, DOUBLE, FLOAT, _promote, typed_value

#: The operators a test may use (``in``: equal to any of the constants).
OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "in")
#: ``c op ?v`` is ``?v FLIPPED[op] c``.
FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

_NUMERIC = (DECIMAL, FLOAT, DOUBLE)
_EMPTY = np.empty(0, dtype=np.int64)


class ValueTest(NamedTuple):
    """``operand op constant`` (one constant), or ``operand IN (constants)``; constants are term keys."""

    op: str
    constants: tuple[str, ...]


def _is_nan(value) -> bool:
    return value != value


class _Sorted:
    """The constants of one value space for one operator: values sorted, test ids aligned.

    NaN constants are kept apart (they are unordered). For a numeric space
    the values promoted to each wider numeric type are computed once, on
    first use: promotion keeps order, so the promoted list stays sorted.
    """

    __slots__ = ("kind", "values", "ids", "nan_ids", "_promoted")

    def __init__(self, kind: int, entries: list[tuple[object, int]]):
        self.kind = kind
        ordered = sorted((v, i) for v, i in entries if not _is_nan(v))
        self.values = [v for v, _ in ordered]
        self.ids = np.fromiter((i for _, i in ordered), dtype=np.int64, count=len(ordered))
        self.nan_ids = np.fromiter((i for v, i in entries if _is_nan(v)), dtype=np.int64)
        self._promoted: dict[int, list] = {kind: self.values}

    def insert(self, value, test_id: int) -> None:
        """Add one constant in place (a registration while publications stream: no rebuild)."""
        if _is_nan(value):
            self.nan_ids = np.append(self.nan_ids, test_id)
            return
        at = bisect_right(self.values, value)
        self.values.insert(at, value)
        self.ids = np.insert(self.ids, at, test_id)
        self._promoted = {self.kind: self.values}

    def delete(self, value, test_id: int) -> None:
        """Remove the constant `insert` added for `test_id`."""
        if _is_nan(value):
            self.nan_ids = self.nan_ids[self.nan_ids != test_id]
            return
        lo, hi = bisect_left(self.values, value), bisect_right(self.values, value)
        at = lo + int(np.flatnonzero(self.ids[lo:hi] == test_id)[0])
        del self.values[at]
        self.ids = np.delete(self.ids, at)
        self._promoted = {self.kind: self.values}

    def promoted(self, target: int) -> list:
        found = self._promoted.get(target)
        if found is None:
            found = self._promoted[target] = [_promote(self.kind, v, target) for v in self.values]
        return found


class _Table:
    """The tests of one operator: constants with a value, by space; constants without one, by key."""

    __slots__ = ("by_kind", "valueless", "valueless_nonliteral", "_grouped")

    def __init__(self):
        self.by_kind: dict[int, _Sorted] = {}
        self.valueless: dict[str, list[int]] = {}  # key -> ids (RDFterm-equal only)
        self.valueless_nonliteral: list[int] = []  # ids whose constant is an IRI or blank node
        #: the valueless ids grouped by key in one array, each key's span, and the ids of the
        #: nonliteral constants: made on first use after a change (`grouped`)
        self._grouped: tuple[np.ndarray, dict[str, tuple[int, int]], np.ndarray] | None = None

    def grouped(self) -> tuple[np.ndarray, dict[str, tuple[int, int]], np.ndarray]:
        """The valueless ids in one array grouped by key, each key's span in it, and the ids
        whose constant is not a literal: arrays made once after a change, not per publication."""
        grouped = getattr(self, "_grouped", None)  # (a table pickled by an older rtf has none)
        if grouped is None or len(grouped) != 3:
            spans, ids = {}, []
            for k, posted in self.valueless.items():
                spans[k] = (len(ids), len(ids) + len(posted))
                ids.extend(posted)
            grouped = self._grouped = (_ids(ids), spans, _ids(self.valueless_nonliteral))
        return grouped

    def equal(self, key: str) -> np.ndarray:
        """The ids of the valueless constants equal to `key` (a slice of `grouped`)."""
        ids, spans, _ = self.grouped()
        span = spans.get(key)
        return _EMPTY if span is None else ids[span[0]:span[1]]

    def unequal(self, key: str) -> np.ndarray:
        """The ids of the valueless constants but `key`'s: ``?o != dbo:Agent`` for an IRI. Two
        slices of one array made once after a change, not a Python step per test (at 100K
        multi-valued queries, listing them per term was most of a publication's time)."""
        ids, spans, _ = self.grouped()
        span = spans.get(key)
        return ids if span is None else np.concatenate((ids[:span[0]], ids[span[1]:]))

    def post_valueless(self, key: str, test_id: int) -> None:
        self._grouped = None
        self.valueless.setdefault(key, []).append(test_id)
        if key[0] != '"':
            self.valueless_nonliteral.append(test_id)

    def unpost_valueless(self, key: str, test_id: int) -> None:
        self._grouped = None
        ids = self.valueless[key]
        ids.remove(test_id)
        if not ids:
            del self.valueless[key]
        if key[0] != '"':
            self.valueless_nonliteral.remove(test_id)


def _postings(test: ValueTest) -> Iterator[tuple[str, int | None, object]]:
    """What the tables hold for `test`: (operator, value space, value) per distinct constant
    (``IN (1, 1)``: one posting; ``in`` is ``=`` against each), the space None and the
    value the key itself for a constant without a value."""
    for op, kind, value, _ in keyed_postings(test):
        yield op, kind, value


def keyed_postings(test: ValueTest) -> Iterator[tuple[str, int | None, object, str]]:
    """`_postings`, each with the key of its constant."""
    op = "=" if test.op == "in" else test.op
    for key in dict.fromkeys(test.constants):
        typed = typed_value(key)
        yield (op, None, key, key) if typed is None else (op, typed[0], typed[1], key)


def sorted_postings(entries: list[tuple[object, int, str]]) -> tuple[list, list]:
    """The (value, test id, key) `entries` of one value space in the order `_Sorted` keeps
    them (by value, then id), the NaN ones apart: (ordered, nan)."""
    return sorted(e for e in entries if not _is_nan(e[0])), [e for e in entries if _is_nan(e[0])]


def laid_out(runs) -> dict[str, "_Table"]:
    """The tables of a `ValueIndex` from the runs a saved index keeps them as
    (`rtf.matching.value_snapshot`): (operator, value space, values, ids, NaN ids) for the
    constants with a value, in `sorted_postings` order, and (operator, None, keys, ids,
    None) for those without, in the order they were posted."""
    tables: dict[str, _Table] = {}
    for op, kind, values, ids, nan_ids in runs:
        table = tables.get(op)
        if table is None:
            table = tables[op] = _Table()
        if kind is None:
            for key, test_id in zip(values, ids.tolist()):
                table.post_valueless(key, test_id)
            continue
        found = table.by_kind[kind] = _Sorted.__new__(_Sorted)
        found.kind, found.values, found.ids, found.nan_ids = kind, values, ids, nan_ids
        found._promoted = {kind: values}
    return tables


def _ids(ids: list[int]) -> np.ndarray:
    return np.fromiter(ids, dtype=np.int64, count=len(ids))


class ValueIndex:
    """The value tests of one operand: `add`, `remove`, and `satisfied(value)` by binary search."""

    def __init__(self):
        self._tests: dict[int, ValueTest] = {}
        self._tables: dict[str, _Table] | None = None  # built on first use after a change
        self._repeats = False  # an IN whose constants may be equal by value: dedupe answers
        #: a restored index's tests, made when first asked for (`rtf.matching.value_snapshot`)
        self.saved = None

    def tests(self) -> dict[int, ValueTest]:
        """Test id -> its test (a restored index's made now)."""
        saved = getattr(self, "saved", None)  # (an index pickled by an older rtf has none)
        if saved is not None:
            self._tests, self.saved = saved(), None
            self._repeats = any(test.op == "in" and len(test.constants) > 1 for test in self._tests.values())
        return self._tests

    def __getstate__(self) -> dict:
        self.tests()
        return self.__dict__

    def __len__(self) -> int:
        return len(self.tests())

    def __contains__(self, test_id: int) -> bool:
        return test_id in self.tests()

    def add(self, test_id: int, test: ValueTest) -> None:
        """Index `test` under `test_id` (an id already present is replaced)."""
        if test.op not in OPERATORS:
            raise ValueError(f"not a value-test operator: {test.op!r}")
        if test.op != "in" and len(test.constants) != 1:
            raise ValueError(f"{test.op!r} takes one constant, not {len(test.constants)}")
        if test_id in self.tests():
            self.remove(test_id)
        self._tests[test_id] = test
        if test.op == "in" and len(test.constants) > 1:
            self._repeats = True
        if self._tables is not None:  # built: kept up to date in place, not rebuilt
            self._changed(test_id, test, add=True)

    def build(self) -> None:
        """Lay out the sorted tables now (after many registrations at once), not on the first
        publication that asks: later changes keep them up to date in place."""
        if self._tables is None:
            self._tables = self._build()

    def remove(self, test_id: int) -> None:
        """Forget the test of `test_id` (KeyError if there is none)."""
        test = self.tests().pop(test_id)
        if self._tables is not None:
            self._changed(test_id, test, add=False)

    def _changed(self, test_id: int, test: ValueTest, add: bool) -> None:
        """`_change` the built tables; tables laid out from a saved index that turn out not to
        be its tests' (a file edited, then signed again) are dropped, made from the tests."""
        if not getattr(self, "_laid_out", False):
            return self._change(self._tables, test_id, test, add)
        try:
            self._change(self._tables, test_id, test, add)
        except (KeyError, ValueError, IndexError, AttributeError, TypeError):
            self._tables, self._laid_out = None, False

    @staticmethod
    def _change(tables: dict[str, "_Table"], test_id: int, test: ValueTest, add: bool) -> None:
        """Add or remove one test's postings in built tables: a sorted insertion or deletion
        per constant (a registration among 100K value queries cost a rebuild of its operand's
        index on the next publication, ~40 ms; now microseconds)."""
        for op, kind, value in _postings(test):
            table = tables.get(op)
            if table is None:
                table = tables[op] = _Table()
            if kind is None:
                (table.post_valueless if add else table.unpost_valueless)(value, test_id)
                continue
            sorted_ = table.by_kind.get(kind)
            if add and sorted_ is None:
                table.by_kind[kind] = _Sorted(kind, [(value, test_id)])
            elif add:
                sorted_.insert(value, test_id)
            else:
                sorted_.delete(value, test_id)

    # ------------------------------------------------------------ building

    def _build(self) -> dict[str, _Table]:
        saved = getattr(self, "saved", None)
        if saved is not None and saved.runs is not None:  # (restored: laid out as it was saved)
            self._repeats, self._laid_out = saved.repeats(), True
            return laid_out(saved.runs())
        entries: dict[str, dict[int | None, list]] = {}
        for test_id, test in self.tests().items():
            for op, kind, value in _postings(test):
                entries.setdefault(op, {}).setdefault(kind, []).append((value, test_id))
        tables: dict[str, _Table] = {}
        for op, by_kind in entries.items():
            table = tables[op] = _Table()
            for kind, items in by_kind.items():
                if kind is None:
                    for key, test_id in items:
                        table.post_valueless(key, test_id)
                else:
                    table.by_kind[kind] = _Sorted(kind, items)
        return tables

    # ------------------------------------------------------------ answering

    def satisfied(self, key: str) -> np.ndarray:
        """The ids of the tests that are true for the value `key` (a term key), as an int64 array,
        each once."""
        tables = self._tables
        if tables is None:
            tables = self._tables = self._build()
        typed = typed_value(key) if key[0] == '"' else None
        is_literal = key[0] == '"'
        parts: list[np.ndarray] = []
        # An IN reports its test once per equal constant (1 and 1.0 both equal 1); a test has
        # one operator and every other operator one constant, so only the "=" ids can repeat:
        # they are collected apart and deduplicated.
        equal: list[np.ndarray] = []
        for op, table in tables.items():
            out = equal if op == "=" and self._repeats else parts
            for kind, sorted_ in table.by_kind.items():
                if typed is not None and (typed[0] == kind or (typed[0] in _NUMERIC and kind in _NUMERIC)):
                    out.append(self._comparable(op, sorted_, typed))
                elif op == "!=" and not is_literal:
                    # An IRI or blank node against literals: unequal, not an error.
                    out.append(sorted_.ids)
                    out.append(sorted_.nan_ids)
            if table.valueless:
                if op == "=":
                    out.append(table.equal(key))
                elif op == "!=":
                    if not is_literal:  # unequal to every other term
                        out.append(table.unequal(key))
                    else:  # a literal against IRIs and blank nodes only (two literals: an error)
                        out.append(table.grouped()[2])
        if equal:
            parts.append(sorted_unique(np.concatenate(equal)))
        parts = [p for p in parts if len(p)]
        if not parts:
            return _EMPTY
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @staticmethod
    def _comparable(op: str, sorted_: _Sorted, typed: tuple[int, object]) -> np.ndarray:
        """The tests of `op` over `sorted_`'s constants true for a value of a comparable space."""
        kind, value = typed
        if kind in _NUMERIC:
            target = max(kind, sorted_.kind)
            values = sorted_.promoted(target)
            if kind != target:
                value = _promote(kind, value, target)
            if _is_nan(value):  # unordered, unequal to everything
                return np.concatenate((sorted_.ids, sorted_.nan_ids)) if op == "!=" else _EMPTY
        else:
            values = sorted_.values
        ids = sorted_.ids
        if op == "=":
            return ids[bisect_left(values, value):bisect_right(values, value)]
        if op == "!=":
            lo, hi = bisect_left(values, value), bisect_right(values, value)
            return np.concatenate((ids[:lo], ids[hi:], sorted_.nan_ids))
        if op == "<":  # value < c: the constants above it
            return ids[bisect_right(values, value):]
        if op == "<=":
            return ids[bisect_left(values, value):]
        if op == ">":
            return ids[:bisect_left(values, value)]
        return ids[:bisect_right(values, value)]  # ">="
