"""Filter evaluation (`rtf.query.expressions`): three-valued logic and the filter functions.

A solution maps variable names to term keys. Tables list hand-checked
cases with the reason each answer is right; SPARQL 1.1 §17.2 (errors and
three-valued logic), §17.4 (functions) and XPath ``fn:matches`` decide.
"""

from __future__ import annotations

import pytest

from rtf.query.expressions import compile_filter, evaluate, passes
from rtf.query.model import (And, Compare, Contains, EffectiveBoolean, FTAnd, FTNot, FtContains, Lang,
                       LangMatches, Not, Or, Regex)
from rtf.query.terms import IRI, XSD, BlankNode, Literal, Variable, literal_key
from rtf.query.text import parse_ft_string
from rtf.query.values import ERROR

X, Y, U = Variable("x"), Variable("y"), Variable("unbound")


def xsd(lexical: str, name: str) -> str:
    return literal_key(lexical, XSD + name)


TRUE_KEY, FALSE_KEY = xsd("true", "boolean"), xsd("false", "boolean")

# ------------------------------------------------------ three-valued logic

# Three atoms that are true, false and an error on SOLUTION; the error is
# an unbound variable, which is an error wherever it is used.
T = EffectiveBoolean(Variable("t"))
F = EffectiveBoolean(Variable("f"))
E = EffectiveBoolean(U)
SOLUTION = {"t": TRUE_KEY, "f": FALSE_KEY}
NAMES = {T: "T", F: "F", E: "E", True: "T", False: "F", ERROR: "E"}


def truth_id(row) -> str:
    return "".join(NAMES[v] for v in row)


AND_TABLE = [
    (T, T, True), (T, F, False), (T, E, ERROR),
    (F, T, False), (F, F, False), (F, E, False),  # false && anything is false
    (E, T, ERROR), (E, F, False), (E, E, ERROR),
]
OR_TABLE = [
    (T, T, True), (T, F, True), (T, E, True),  # true || anything is true
    (F, T, True), (F, F, False), (F, E, ERROR),
    (E, T, True), (E, F, ERROR), (E, E, ERROR),
]


@pytest.mark.parametrize("a, b, expected", AND_TABLE, ids=[truth_id(r) for r in AND_TABLE])
def test_and_is_kleene_conjunction(a, b, expected):
    assert evaluate(And((a, b)), SOLUTION) is expected


@pytest.mark.parametrize("a, b, expected", OR_TABLE, ids=[truth_id(r) for r in OR_TABLE])
def test_or_is_kleene_disjunction(a, b, expected):
    assert evaluate(Or((a, b)), SOLUTION) is expected


NOT_TABLE = [(T, False), (F, True), (E, ERROR)]


@pytest.mark.parametrize("a, expected", NOT_TABLE, ids=[truth_id(r) for r in NOT_TABLE])
def test_not_keeps_errors(a, expected):
    assert evaluate(Not(a), SOLUTION) is expected


NARY_CASES = [
    (And((T, E, F)), False, "a false operand decides a conjunction wherever it stands"),
    (And((T, T, E)), ERROR, "no false operand, one error"),
    (Or((F, E, T)), True, "a true operand decides a disjunction wherever it stands"),
    (Or((F, F, E)), ERROR, "no true operand, one error"),
    (Not(Or((E, T))), False, "!(ERROR || true) = !true"),
    (Not(And((E, T))), ERROR, "!(ERROR && true) = !ERROR"),
    (Not(Not(E)), ERROR, "an error survives any number of negations"),
]


@pytest.mark.parametrize("expr, expected, why", NARY_CASES, ids=[w for _, _, w in NARY_CASES])
def test_connectives_over_several_operands(expr, expected, why):
    assert evaluate(expr, SOLUTION) is expected


@pytest.mark.parametrize("expr, expected", [(T, True), (F, False), (E, False)], ids=["T", "F", "E"])
def test_a_filter_passes_only_when_true(expr, expected):
    assert passes(expr, SOLUTION) is expected


# -------------------------------------------------------- unbound variables

UNBOUND_USES = [
    Compare("=", U, Literal("a")),
    Compare("<", Literal("a"), U),
    Compare("=", Lang(U), Literal("en")),
    Compare("=", BlankNode("b"), Literal("a")),
    FtContains(U, parse_ft_string("rio")),
    Regex(U, Literal("a")),
    Regex(X, U),
    Regex(X, Literal("a"), U),
    Contains(U, Literal("a")),
    Contains(X, U),
    LangMatches(Lang(U), Literal("*")),
    EffectiveBoolean(U),
]


@pytest.mark.parametrize("expr", UNBOUND_USES, ids=str)
def test_an_unbound_variable_is_an_error_wherever_it_is_used(expr):
    assert evaluate(expr, {"x": '"abc"'}) is ERROR


# --------------------------------------------------------------- comparisons

COMPARE_CASES = [
    (Compare(">", X, Literal("3", XSD + "integer")), {"x": xsd("5", "integer")}, True,
     "a variable against a constant, by value"),
    (Compare("=", X, Y), {"x": xsd("1", "integer"), "y": xsd("1.0", "decimal")}, True,
     "two variables, numeric promotion"),
    (Compare("=", X, Y), {"x": '"1"', "y": xsd("1", "integer")}, ERROR,
     "a string is not a number"),
    (Compare("=", BlankNode("b"), IRI("http://a")), {"_:b": "<http://a>"}, True,
     "a query blank node is looked up by its binding name _:b"),
    (Compare("=", Lang(X), Literal("en")), {"x": '"chat"@en'}, True, "lang of a tagged literal"),
    (Compare("=", Lang(X), Literal("")), {"x": '"chat"'}, True, "lang of an untagged literal is \"\""),
    (Compare("=", Lang(X), Literal("")), {"x": xsd("1", "integer")}, True, "typed literals have no tag"),
    (Compare("=", Lang(X), Literal("")), {"x": "<http://a>"}, ERROR, "lang of an IRI is an error"),
    (Compare("=", Lang(X), Literal("")), {"x": "_:n"}, ERROR, "lang of a blank node is an error"),
    (Compare("=", Lang(X), Literal("en-gb")), {"x": literal_key("colour", lang="en-GB")}, True,
     "keys carry tags in lower case"),
    (Compare("=", Lang(Literal("chat", lang="FR")), Literal("fr")), {}, True, "lang of a constant"),
]


@pytest.mark.parametrize("expr, solution, expected, why", COMPARE_CASES,
                         ids=[c[3] for c in COMPARE_CASES])
def test_comparison_operands(expr, solution, expected, why):
    assert evaluate(expr, solution) is expected


# ---------------------------------------------------------------- ftcontains

RIO = parse_ft_string("rio")
FT_CASES = [
    ('"Olympic games in Rio"', RIO, True, "the literal's words include rio (casefolded)"),
    ('"Olympic games in Tokyo"', RIO, False, "no word rio"),
    ('"Rio de Janeiro"@pt', RIO, True, "a tagged literal: its lexical form"),
    (xsd("2016", "gYear"), parse_ft_string("2016"), True, "a typed literal: its lexical form"),
    ('"Olympic games in Rio"', FTAnd((parse_ft_string("olymp*"), FTNot(RIO))), False,
     "the full-text expression is evaluated whole"),
    ("<http://example.org/Rio>", RIO, False, "ftcontains on an IRI is false (spec section 3)"),
    ("_:rio", RIO, False, "ftcontains on a blank node is false (spec section 3)"),
]


@pytest.mark.parametrize("term, ft, expected, why", FT_CASES, ids=[c[3] for c in FT_CASES])
def test_ftcontains(term, ft, expected, why):
    assert evaluate(FtContains(X, ft), {"x": term}) is expected


def test_not_ftcontains_on_an_iri_is_true():
    # False, not an error: so its negation keeps the solution.
    assert evaluate(Not(FtContains(X, RIO)), {"x": "<http://example.org/Rio>"}) is True


# --------------------------------------------------------------------- regex

REGEX_CASES = [
    ('"Olympic Games"', "^Oly", None, True, "^ anchors at the start"),
    ('"Olympic Games"', "Games", None, True, "a match anywhere (re.search, not a full match)"),
    ('"Olympic Games"', "games", None, False, "case-sensitive by default"),
    ('"Olympic Games"', "games", "i", True, "i: case-insensitive"),
    ('"abc"', "", None, True, "the empty pattern matches every string"),
    ('"line1\nline2"', "^line2", None, False, "^ is the start of the string only"),
    ('"line1\nline2"', "^line2", "m", True, "m: ^ at every line start"),
    ('"line1\nline2"', "line1$", None, False, "$ is the end of the string only"),
    ('"line1\nline2"', "line1$", "m", True, "m: $ at every line end"),
    ('"abc\n"', "abc$", None, False, "$ is the very end (Python's $ also matches before a final newline)"),
    ('"a\nb"', "a.b", None, False, ". does not match a newline"),
    ('"a\nb"', "a.b", "s", True, "s: . matches a newline"),
    ('"A\nB"', "a.b", "si", True, "flags combine"),
    ('"hello world"', "hello world", "x", False, "x removes the space from the pattern: helloworld"),
    ('"helloworld"', "hello world", "x", True, "x removes the space from the pattern: helloworld"),
    ('"a#b"', "a#b", "x", True, "x: # is a character, not a comment as in Python's VERBOSE"),
    ('"a b"', "a[ ]b", "x", True, "x keeps whitespace inside a character class (XPath 2.0)"),
    ('"a\tb"', r"a\sb", None, True, r"\s matches a tab"),
    ('"a\u00a0b"', r"a\sb", None, False, r"XPath's \s is space, tab, CR and LF only: not NBSP"),
    ('"a\u00a0b"', r"a\Sb", None, True, r"so NBSP is \S"),
    ('"a\u00a0b"', r"a[\s]b", None, False, r"the same \s inside a class"),
    ('"a$b"', r"a[$]b", None, True, "$ inside a class is a character"),
    ('"a$b"', r"a\$b", None, True, "an escaped $ is a character"),
    ('"Chat"@fr', "^ch", "i", True, "a tagged string is a string argument"),
    ('"abc"', "b", "g", ERROR, "g is not an XPath flag (FORX0001)"),
    ('"abc"', "(", None, ERROR, "an invalid pattern (FORX0002)"),
    ('"abc"', "[]a]", None, ERROR, "XPath has no empty class; Python would read ] as a member"),
    ('"abc"', "[a-z-[b]]", None, ERROR, "class subtraction: valid XPath that RE2 cannot express"),
    # The RE2 dialect (rtf.query.regex.xpath_regex): XPath meanings, linear time.
    ('"a.c"', "a.c", "q", True, "q: the pattern is a plain string"),
    ('"abc"', "a.c", "q", False, "q: '.' is only a dot"),
    ('"A.C"', "a.c", "qi", True, "q keeps i"),
    ('"a\u0663"', r"a\d", None, True, r"\d is any decimal digit (Arabic-Indic three)"),
    ('"x\u00e9"', r"^x\w$", None, True, r"XPath's \w takes letters beyond ASCII"),
    ('"x_"', r"^x\w$", None, False, r"but not '_' (punctuation: XPath's \w is [^\p{P}\p{Z}\p{C}])"),
    ('"x$"', r"^x\w$", None, True, r"and it takes symbols such as '$'"),
    ('"x$"', r"^x[a\w]$", None, True, r"\w inside a class too"),
    ('"x\f"', r"^x[\S]$", None, True, r"form feed is not XPath space, even inside a class"),
    ('"\u00c9t\u00e9"', r"^\p{Lu}\p{Ll}+$", None, True, "general categories"),
    ('"\u00c9T\u00c9"', "^\u00e9t\u00e9$", "i", True, "i folds beyond ASCII"),
    ('"aa"', r"(a)\1", None, ERROR, "back-references: RE2 cannot run them"),
    ('"aa"', "(?=a)", None, ERROR, "look-ahead is not XPath"),
    ('"aa"', "(?i)A", None, ERROR, "nor are inline flags"),
    ('"a b"', r"a\bb", None, ERROR, r"nor \b"),
    ('"a"', r"\p{IsBasicLatin}", None, ERROR, "Unicode blocks are not supported"),
    ('"aa"', "a{1001}", None, ERROR, "a repetition over 1000"),
    ('"ab"', "(?:a)b", None, True, "(?:...) is XPath 3"),
    ('"' + "a" * 40 + '!"', "^(a+)+$", None, False, "nested quantifiers in linear time"),
]


@pytest.mark.parametrize("text, pattern, flags, expected, why", REGEX_CASES,
                         ids=[c[4] for c in REGEX_CASES])
def test_regex_follows_xpath_matches(text, pattern, flags, expected, why):
    expr = Regex(X, Literal(pattern), Literal(flags) if flags is not None else None)
    assert evaluate(expr, {"x": text}) is expected


REGEX_ARGUMENT_CASES = [
    (Regex(X, Literal("a")), "<http://a>", ERROR, "the text must be a string literal, not an IRI"),
    (Regex(X, Literal("a")), "_:a", ERROR, "nor a blank node"),
    (Regex(X, Literal("5")), xsd("5", "integer"), ERROR, "nor a number"),
    (Regex(X, Literal("a")), literal_key("a", XSD + "string"), True, "xsd:string is a simple literal"),
    (Regex(X, Literal("a", lang="en")), '"a"', ERROR, "the pattern must be a simple literal"),
    (Regex(X, Literal("a"), Literal("i", lang="en")), '"a"', ERROR, "the flags must be a simple literal"),
    (Regex(X, Y), '"abc"', True, "a pattern bound at run time (?y = \"^a\")"),
]


@pytest.mark.parametrize("expr, text, expected, why", REGEX_ARGUMENT_CASES,
                         ids=[c[3] for c in REGEX_ARGUMENT_CASES])
def test_regex_argument_types(expr, text, expected, why):
    assert evaluate(expr, {"x": text, "y": '"^a"'}) is expected


# ------------------------------------------------------------------ contains

CONTAINS_CASES = [
    ('"foobar"', '"oba"', True, "a substring"),
    ('"foobar"', '"x"', False, "not a substring"),
    ('"foobar"', '""', True, "the empty string is in every string"),
    ('"foobar"', literal_key("oba", XSD + "string"), True, "xsd:string is a simple literal"),
    ('"foobar"@en', '"oba"', True, "compatible: a simple needle fits any string"),
    ('"foobar"@en', '"oba"@en', True, "compatible: the same tag"),
    ('"foobar"', '"oba"@en', ERROR, "incompatible: a tagged needle needs the same tag (§17.4.3.1.1)"),
    ('"foobar"@en', '"oba"@fr', ERROR, "incompatible: different tags"),
    (xsd("123", "integer"), '"2"', ERROR, "a number is not a string literal"),
    ("<http://foobar>", '"oba"', ERROR, "an IRI is not a string literal"),
]


@pytest.mark.parametrize("text, needle, expected, why", CONTAINS_CASES,
                         ids=[c[3] for c in CONTAINS_CASES])
def test_contains_needs_argument_compatible_strings(text, needle, expected, why):
    assert evaluate(Contains(X, Y), {"x": text, "y": needle}) is expected


# --------------------------------------------------------------- langMatches

LANGMATCHES_CASES = [
    ('"en"', '"en"', True, "equal"),
    ('"en-us"', '"en"', True, "the range is a prefix ending before '-'"),
    ('"de-ch-1996"', '"de-ch"', True, "a prefix of several subtags"),
    ('"eng"', '"en"', False, "a prefix must end at a subtag boundary"),
    ('"en"', '"en-us"', False, "a longer range does not match a shorter tag"),
    ('"fr"', '"en"', False, "different languages"),
    ('"EN-US"', '"en"', True, "case-insensitive"),
    ('"en"', '"*"', True, "* matches any tag"),
    ('""', '"*"', False, "* does not match the empty tag (no language)"),
    ('""', '"en"', False, "no language is not English"),
    ('"en"@en', '"en"', ERROR, "the tag must be a simple literal"),
    ("<http://en>", '"en"', ERROR, "the tag must be a simple literal, not an IRI"),
]


@pytest.mark.parametrize("tag, rng, expected, why", LANGMATCHES_CASES,
                         ids=[c[3] for c in LANGMATCHES_CASES])
def test_langmatches_is_rfc4647_basic_filtering(tag, rng, expected, why):
    assert evaluate(LangMatches(X, Y), {"x": tag, "y": rng}) is expected


@pytest.mark.parametrize("term, expected", [('"colour"@en-gb', True), ('"colour"', False),
                                            ("<http://a>", ERROR)])
def test_langmatches_of_lang(term, expected):
    # lang() of an untagged literal is "", which no range but "" matches; of an IRI, an error.
    assert evaluate(LangMatches(Lang(X), Literal("en")), {"x": term}) is expected


# ---------------------------------------------------- effective boolean value


@pytest.mark.parametrize("term, expected", [
    (TRUE_KEY, True), (xsd("0", "integer"), False), ('""', False), ('"no"', True), ("<http://a>", ERROR),
], ids=["boolean", "zero", "empty string", "non-empty string", "IRI"])
def test_a_bare_variable_is_read_by_its_effective_boolean_value(term, expected):
    assert evaluate(EffectiveBoolean(X), {"x": term}) is expected


def test_a_bare_constant_is_read_by_its_effective_boolean_value():
    assert evaluate(EffectiveBoolean(Literal("true", XSD + "boolean")), {}) is True


# ---------------------------------------------------------------- compiling


def test_compiled_filters_are_cached_per_expression():
    expr = Compare("=", X, Literal("a"))
    assert compile_filter(expr) is compile_filter(Compare("=", X, Literal("a")))


def test_a_compiled_filter_is_the_evaluation():
    expr = Or((Regex(X, Literal("^a")), FtContains(Y, RIO)))
    f = compile_filter(expr)
    for solution in ({"x": '"abc"'}, {"x": '"b"', "y": '"to Rio"'}, {"x": '"b"'}, {}):
        assert f(solution) is evaluate(expr, solution)


def test_a_filter_without_variables_ignores_the_solution():
    expr = Compare("<", Literal("1", XSD + "integer"), Literal("2", XSD + "integer"))
    assert evaluate(expr, {}) is True
    assert evaluate(expr, {"x": '"unrelated"'}) is True


def test_an_invalid_constant_pattern_is_an_error_at_evaluation_not_compilation():
    f = compile_filter(Regex(X, Literal("(")))
    assert f({"x": '"("'}) is ERROR


def test_other_objects_are_not_filter_expressions():
    with pytest.raises(TypeError):
        compile_filter(X)
