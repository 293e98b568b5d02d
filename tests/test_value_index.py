"""The value index (rtf/matching/value_index.py) against the filter evaluator, the reference.

For every family of values and constants -- numbers of every XSD type with
NaN, INF and -0, strings, language-tagged strings, booleans, dates and
dateTimes with and without time zones, ill-typed literals, unknown
datatypes, IRIs, blank nodes -- a test is in `satisfied(x)` exactly when
`rtf.query.expressions.evaluate` says the FILTER is true for ``?v = x``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf.matching.value_index import FLIPPED, ValueIndex, ValueTest
from rtf.query.expressions import _operand, evaluate
from rtf.query.model import Call, Compare, In, Lang
from rtf.query.terms import XSD, Variable, iri_key, literal_key
from rtf.query.values import ERROR

V = Variable("v")


class _Constant:
    """A constant operand for the model: what `rtf.query.expressions` needs of an IRI or Literal."""

    def __init__(self, key: str):
        self.key = key


def constant(key: str):
    """The model term of a key (IRI, literal or blank node as a constant)."""
    from rtf.query.terms import IRI, Literal, literal_parts
    if key.startswith("<"):
        return IRI(key[1:-1])
    if key.startswith("_:"):
        return IRI("urn:blank:" + key[2:])  # only used where the test skips blank constants
    parts = literal_parts(key)
    return Literal(parts.lexical, None if parts.lang else parts.datatype, parts.lang)


def typed(lexical: str, datatype: str) -> str:
    return literal_key(lexical, XSD + datatype)


NUMBERS = st.one_of(
    st.integers(-10**20, 10**20).map(lambda n: typed(str(n), "integer")),
    st.integers(-200, 300).map(lambda n: typed(str(n), "byte")),  # ill-typed outside -128..127
    st.integers(0, 50).map(lambda n: typed(str(n), "nonNegativeInteger")),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-1000, max_value=1000)
      .map(lambda d: typed(str(d), "decimal")),
    st.floats(allow_nan=True, allow_infinity=True, width=64).map(
        lambda f: typed("NaN" if f != f else "INF" if f == float("inf") else "-INF" if f == -float("inf")
                        else repr(f).replace("e+", "E"), "double")),
    st.sampled_from(["0.1", "1.1", "-0", "0", "NaN", "INF", "-INF", "1E2", "1.5", "100"]).flatmap(
        lambda lex: st.sampled_from([typed(lex, "float"), typed(lex, "double")])),
    st.sampled_from(["1", "1.0", "100", "0.1", "5"]).map(lambda lex: typed(lex, "decimal")),
)
STRINGS = st.one_of(
    st.sampled_from(["", "a", "abc", "abd", "chat", "chien", "Z", "é", "10", "9"]).map(literal_key),
    st.sampled_from(["chat", "a"]).flatmap(lambda s: st.sampled_from(
        [literal_key(s, lang="fr"), literal_key(s, lang="en"), literal_key(s, lang="en-US")])),
)
DATES = st.one_of(
    st.builds(lambda y, m, d, tz: typed(f"{y:04d}-{m:02d}-{d:02d}{tz}", "date"),
              st.integers(1988, 1992), st.integers(1, 12), st.integers(1, 28),
              st.sampled_from(["", "Z", "+02:00", "-05:00"])),
    st.builds(lambda y, m, d, h, tz: typed(f"{y:04d}-{m:02d}-{d:02d}T{h:02d}:30:00{tz}", "dateTime"),
              st.integers(1988, 1992), st.integers(1, 12), st.integers(1, 28), st.integers(0, 23),
              st.sampled_from(["", "Z", "+02:00", "-05:00"])),
)
OTHERS = st.sampled_from([
    typed("true", "boolean"), typed("false", "boolean"), typed("1", "boolean"), typed("0", "boolean"),
    typed("abc", "integer"), typed("2020-13-01", "date"), typed("x", "dateTime"),
    literal_key("x", "http://example.org/type"), literal_key("1", "http://example.org/type"),
    iri_key("http://example.org/a"), iri_key("http://example.org/b"), "_:b0",
])
VALUES = st.one_of(NUMBERS, STRINGS, DATES, OTHERS)
CONSTANTS = st.one_of(NUMBERS, STRINGS, DATES, OTHERS.filter(lambda k: not k.startswith("_:")))
OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])


def reference(test: ValueTest, key: str, flipped: bool = False) -> bool:
    """Whether the FILTER of `test` on ``?v`` is true for ``?v = key``, by the evaluator."""
    if test.op == "in":
        expr = In(V, tuple(constant(c) for c in test.constants))
    elif flipped:  # written `c op' ?v`
        expr = Compare(FLIPPED[test.op], constant(test.constants[0]), V)
    else:
        expr = Compare(test.op, V, constant(test.constants[0]))
    return evaluate(expr, {"v": key}) is True


def _check(tests: list[ValueTest], values: list[str], flipped: bool = False) -> None:
    index = ValueIndex()
    for n, t in enumerate(tests):
        index.add(n, t)
    for x in values:
        found = index.satisfied(x).tolist()
        assert len(found) == len(set(found)), "each test once"
        got = sorted(found)
        want = [n for n, t in enumerate(tests) if reference(t, x, flipped)]
        assert got == want, (x, [(n, tests[n]) for n in sorted(set(got) ^ set(want))])


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.builds(lambda op, c: ValueTest(op, (c,)), OPS, CONSTANTS), min_size=1, max_size=25),
       st.lists(VALUES, min_size=1, max_size=8))
def test_comparisons_equal_the_evaluator(tests, values):
    _check(tests, values)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.builds(lambda op, c: ValueTest(op, (c,)), OPS, CONSTANTS), min_size=1, max_size=15),
       st.lists(VALUES, min_size=1, max_size=6))
def test_constant_on_the_left_is_the_flipped_test(tests, values):
    _check(tests, values, flipped=True)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(CONSTANTS, min_size=1, max_size=5).map(lambda cs: ValueTest("in", tuple(cs))),
                min_size=1, max_size=10),
       st.lists(VALUES, min_size=1, max_size=6))
def test_in_lists_equal_the_evaluator(tests, values):
    _check(tests, values)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["year", "month", "day", "str", "datatype", "lang"]),
       st.lists(st.builds(lambda op, c: ValueTest(op, (c,)), OPS, CONSTANTS), min_size=1, max_size=12),
       st.lists(VALUES, min_size=1, max_size=6))
def test_a_function_of_the_variable_is_evaluated_once_then_looked_up(function, tests, values):
    """``f(?v) op c``: the caller computes f(x) (an error satisfies nothing), the index does the rest."""
    index = ValueIndex()
    for n, t in enumerate(tests):
        index.add(n, t)
    operand = Lang(V) if function == "lang" else Call(function, (V,))
    apply = _operand(operand)  # the compiled operand, as the filter evaluates it
    for x in values:
        fx = apply({"v": x})
        got = [] if fx is ERROR else sorted(set(index.satisfied(fx).tolist()))
        want = [n for n, t in enumerate(tests)
                if evaluate(Compare(t.op, operand, constant(t.constants[0])), {"v": x}) is True]
        assert got == want, (x, fx)


def test_removal_and_replacement():
    one = typed("1", "integer")
    index = ValueIndex()
    index.add(1, ValueTest("=", (one,)))
    index.add(2, ValueTest(">", (typed("0", "integer"),)))
    assert sorted(index.satisfied(one).tolist()) == [1, 2]
    index.remove(2)
    assert index.satisfied(one).tolist() == [1]
    index.add(1, ValueTest("<", (one,)))  # replaced
    assert index.satisfied(one).tolist() == []
    assert len(index) == 1
    with pytest.raises(KeyError):
        index.remove(2)


def test_bad_tests_are_refused():
    index = ValueIndex()
    with pytest.raises(ValueError):
        index.add(1, ValueTest("~", ('"a"',)))
    with pytest.raises(ValueError):
        index.add(1, ValueTest("<", ('"a"', '"b"')))


def test_nan_minus_zero_and_mixed_types_by_hand():
    """Cases checked by hand against XPath: NaN is unequal and unordered, -0 = 0, float rounding."""
    index = ValueIndex()
    index.add(1, ValueTest("=", (typed("0", "integer"),)))
    index.add(2, ValueTest("!=", (typed("NaN", "double"),)))
    index.add(3, ValueTest("<", (typed("NaN", "double"),)))
    index.add(4, ValueTest("=", (typed("1.1", "double"),)))
    index.add(5, ValueTest("=", (typed("1.1", "decimal"),)))
    assert sorted(index.satisfied(typed("-0", "double")).tolist()) == [1, 2]   # -0 = 0; -0 != NaN
    assert sorted(index.satisfied(typed("NaN", "double")).tolist()) == [2]     # NaN != NaN only
    # 1.1 as a float is not 1.1 as a double; a decimal 1.1 promotes to the float 1.1.
    assert sorted(index.satisfied(typed("1.1", "float")).tolist()) == [2, 5]
    assert sorted(index.satisfied(typed("1.1", "double")).tolist()) == [2, 4, 5]
    assert sorted(index.satisfied('"1.1"').tolist()) == []  # a string: not comparable with numbers


TESTS = st.one_of(st.builds(lambda op, c: ValueTest(op, (c,)), OPS, CONSTANTS),
                  st.lists(CONSTANTS, min_size=1, max_size=4).map(lambda cs: ValueTest("in", tuple(cs))))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 7), st.one_of(st.none(), TESTS)), min_size=1, max_size=30),
       st.lists(VALUES, min_size=1, max_size=6))
def test_changes_after_the_first_answer_equal_a_fresh_index(ops, values):
    """Tests added, replaced and removed once the index has answered (kept up to date in place,
    not rebuilt) answer as an index built from the remaining tests at once."""
    live, kept = ValueIndex(), {}
    live.satisfied(values[0])  # built now: every change below is made in place
    for test_id, test in ops:
        if test is None:
            if test_id in kept:
                live.remove(test_id)
                del kept[test_id]
        else:
            live.add(test_id, test)
            kept[test_id] = test
        fresh = ValueIndex()
        for i, t in kept.items():
            fresh.add(i, t)
        for x in values:
            assert sorted(live.satisfied(x).tolist()) == sorted(fresh.satisfied(x).tolist()), (x, kept)


def test_unequal_iris_follow_changes_after_the_first_answer():
    # ``?o != <a>`` for an IRI: the ids grouped by constant are made once, and made again
    # after a test is added or removed (a stale grouping would miss or keep one).
    a, b, c = (iri_key(f"http://example.org/{n}") for n in "abc")
    index = ValueIndex()
    index.add(1, ValueTest("!=", (a,)))
    assert index.satisfied(b).tolist() == [1]
    index.add(2, ValueTest("!=", (b,)))
    index.add(3, ValueTest("!=", (c,)))
    assert sorted(index.satisfied(b).tolist()) == [1, 3]
    index.remove(1)
    assert sorted(index.satisfied(b).tolist()) == [3]
    assert sorted(index.satisfied(a).tolist()) == [2, 3]
