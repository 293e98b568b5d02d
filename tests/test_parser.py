"""The parser: spec sections 1 and 2, accepted and rejected, with positions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rtf.errors import QueryError, QuerySyntaxError, QueryTooComplexError, UnsupportedQueryError
from rtf.query.model import (And, Compare, Contains, EffectiveBoolean, FTAnd, FTNear, FTNot, FTOr,
                       FTTerm, FTWord, FtContains, Lang, LangMatches, Not, Or, Regex)
from rtf.parser import parse_query
from rtf.query.terms import (IRI, RDF_TYPE, TYPE_PATH, WILDCARD, XSD, BlankNode, Literal, Variable)

EX = "http://ex.org/"
P = f"PREFIX ex: <{EX}> "


def ft_of(query: str):
    """The full-text expression of the single FILTER of `query`."""
    [f] = parse_query(query).filters
    assert isinstance(f, FtContains)
    return f.ft


def term(*words):
    return FTTerm(tuple(FTWord(w.rstrip("*"), w.endswith("*")) for w in words))


# ------------------------------------------------------------------ section 1

def test_running_example_of_the_spec():
    q = parse_query("""
        PREFIX dbo: <http://dbpedia.org/ontology/>
        SELECT ?article WHERE {
          ?article a dbo:Article ;
                   dbo:title ?title ;
                   dbo:abstract ?body .
          FILTER ftcontains(?title, "olympic" ftand "games")
          FILTER ftcontains(?body, "olympic" ftand ("games" ftnear(0, 2) "rio"))
        }""")
    dbo = "http://dbpedia.org/ontology/"
    assert q.form == "SELECT" and q.projection == ("article",)
    a = Variable("article")
    assert [p.terms for p in q.patterns] == [
        (a, IRI(RDF_TYPE), IRI(dbo + "Article")),
        (a, IRI(dbo + "title"), Variable("title")),
        (a, IRI(dbo + "abstract"), Variable("body"))]
    [branch] = q.branches
    assert branch.residual == ()
    assert branch.tuples[0].fulltext is None
    assert branch.tuples[1].fulltext == FTAnd((term("olympic"), term("games")))
    assert branch.tuples[2].fulltext == FTAnd(
        (term("olympic"), FTNear(term("games"), term("rio"), 0, 2, True)))


@pytest.mark.parametrize("text", [
    "select ?s where { ?s ?p ?o }",
    "SeLeCt ?s WhErE { ?s ?p ?o }",
    "SELECT ?s { ?s ?p ?o }",
    "SELECT $s { $s ?p ?o . }",
    "SELECT DISTINCT ?s { ?s ?p ?o }",
    "SELECT REDUCED ?s { ?s ?p ?o }",
    "ASK { ?s ?p ?o }",
    "ask where { ?s ?p ?o }",
    "SELECT * { * * * }",
    "SELECT ?s { ?s ?p ?o FILTER(?o) }",
    "SELECT ?s { ?s ?p ?o FILTER(true) }",
    "SELECT ?s { ?s ?p ?o FILTER(!(?o = 1) && (?o < 2 || ?o >= -3.5e1)) }",
    "SELECT ?s { ?s ?p ?o FILTER regex(?o, \"^a.*\", \"i\") }",
    "SELECT ?s { ?s ?p ?o FILTER contains(?o, 'x') }",
    "SELECT ?s { ?s ?p ?o FILTER (lang(?o) = \"en\") }",
    "SELECT ?s { ?s ?p ?o FILTER langMatches(lang(?o), \"en\") }",
    "SELECT ?s { ?s ?p ?o FILTER(?o != ?s) }",
    "SELECT ?s { ?s ?p ?o # a comment\n }",
    "SELECT ?s { ?s ?p \"\"\"long\n\"string\" here\"\"\" }",
    "SELECT ?s { ?s ?p '''x''' ; ?q 'y' , \"z\"@en-GB , \"1\"^^<http://www.w3.org/2001/XMLSchema#int> }",
    "SELECT ?s { ?s ?p 1, 1.5, 1e3, -2, true, FALSE }",
    "SELECT ?s { _:b ?p [] . [ ?q ?s ] ?r [ ?t ?u ] }",
    "SELECT ?s { ?s ?p ?o FILTER ftcontains(?o, \"a\" FTAND \"b\" ftOr ftnot \"c\") }",
    "BASE <http://ex.org/> SELECT ?s { ?s <p> <#o> }",
])
def test_accepts(text):
    q = parse_query(text)
    assert q.patterns and q.branches


def test_keywords_are_case_insensitive_and_dollar_vars_are_question_vars():
    a = parse_query("select $x where { ?x ?p ?o filter(?o > 1) }")
    b = parse_query("SELECT ?x WHERE { $x ?p ?o FILTER(?o > 1) }")
    assert (a.projection, a.patterns, a.filters) == (b.projection, b.patterns, b.filters)


def test_semicolon_and_comma_abbreviations():
    q = parse_query(P + "ASK { ?s ex:p ?o , ex:c ; a ex:C ; ex:q 'x' . }")
    s = Variable("s")
    assert [p.terms for p in q.patterns] == [
        (s, IRI(EX + "p"), Variable("o")), (s, IRI(EX + "p"), IRI(EX + "c")),
        (s, IRI(RDF_TYPE), IRI(EX + "C")), (s, IRI(EX + "q"), Literal("x"))]


def test_literals_take_their_sparql_datatypes():
    q = parse_query('SELECT ?s { ?s ?p 1, 1.5, 1.0e3, "a"@EN, "b"^^xsd:string, "c", TRUE, "\\u00e9\\n" }')
    objs = [p.object for p in q.patterns]
    assert objs == [Literal("1", XSD + "integer"), Literal("1.5", XSD + "decimal"),
                    Literal("1.0e3", XSD + "double"), Literal("a", lang="en"),
                    Literal("b", XSD + "string"), Literal("c"), Literal("true", XSD + "boolean"),
                    Literal("é\n")]
    assert objs[4].key == objs[5].key.replace("c", "b") == '"b"'  # xsd:string is the simple literal


def test_prefixes_base_and_escaped_local_names():
    q = parse_query("BASE <http://b.org/dir/> PREFIX : <http://d.org/> PREFIX e: <rel#> "
                    "ASK { :x\\(1\\) e:y <z> }")
    [p] = q.patterns
    assert p.subject == IRI("http://d.org/x(1)")
    assert p.predicate == IRI("http://b.org/dir/rel#y")
    assert p.object == IRI("http://b.org/dir/z")


def test_common_prefixes_are_builtin_but_can_be_redeclared():
    [p] = parse_query("ASK { ?s rdfs:label ?o }").patterns
    assert p.predicate == IRI("http://www.w3.org/2000/01/rdf-schema#label")
    [p] = parse_query("PREFIX rdfs: <http://other/> ASK { ?s rdfs:label ?o }").patterns
    assert p.predicate == IRI("http://other/label")


def test_select_star_projects_pattern_variables_not_blank_nodes_or_filter_only_ones():
    q = parse_query("SELECT * { ?b ?p [ ?q ?a ] . _:x ?r ?b FILTER(?z = 1) }")
    assert q.projection == ("b", "p", "q", "a", "r")


def test_select_list_keeps_order_and_drops_duplicates():
    assert parse_query("SELECT ?o ?s ?o { ?s ?p ?o }").projection == ("o", "s")


def test_ask_projects_nothing():
    q = parse_query("ASK { ?s ?p ?o }")
    assert q.is_ask and q.projection == ()


def test_wildcards_in_every_position_are_not_variables():
    q = parse_query("SELECT * { * ?p * . ?s * ?o }")
    assert [p.terms for p in q.patterns] == [(WILDCARD, Variable("p"), WILDCARD),
                                             (Variable("s"), WILDCARD, Variable("o"))]
    assert q.projection == ("p", "s", "o")


def test_blank_nodes_share_labels_and_anonymous_ones_are_fresh():
    q = parse_query("ASK { _:a ?p [] . _:a ?q [] . [ ?r ?o ] ?t _:a }")
    terms = [p.terms for p in q.patterns]
    assert terms[0][0] == terms[1][0] == terms[3][2] == BlankNode("a")
    anon = {terms[0][2], terms[1][2], terms[2][0]}
    assert len(anon) == 3 and all(isinstance(b, BlankNode) for b in anon)
    assert terms[2][0] == terms[3][0]


def test_type_path_both_spellings():
    for path in ("a/rdfs:subClassOf*", "rdf:type/rdfs:subClassOf*",
                 "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>/"
                 "<http://www.w3.org/2000/01/rdf-schema#subClassOf>*"):
        [p] = parse_query(f"SELECT ?x {{ ?x {path} <{EX}C> }}").patterns
        assert p.predicate == TYPE_PATH, path


def test_a_star_after_whitespace_is_the_wildcard_object():
    [p] = parse_query(P + "ASK { ?x ex:p * }").patterns
    assert p.object == WILDCARD


def test_filters_build_the_expression_model():
    q = parse_query('SELECT ?s { ?s ?p ?o FILTER(!(?o = 1) || lang(?o) = "en" && ?o) '
                    'FILTER regex(?o, "a", "i") FILTER contains(?o, "b") '
                    'FILTER langMatches(lang(?o), "*") }')
    o = Variable("o")
    one = Literal("1", XSD + "integer")
    assert q.filters == (
        Or((Not(Compare("=", o, one)),
            And((Compare("=", Lang(o), Literal("en")), EffectiveBoolean(o))))),
        Regex(o, Literal("a"), Literal("i")),
        Contains(o, Literal("b")),
        LangMatches(Lang(o), Literal("*")))


def test_or_becomes_branches():
    q = parse_query("SELECT ?s { ?s ?p ?o FILTER(?o = 1 || ?o = 2 || !(?o > 0 && ?o < 9)) }")
    assert len(q.branches) == 4


def test_ftor_stays_one_fulltext_constraint_on_one_branch():
    q = parse_query("SELECT ?s { ?s ?p ?o FILTER ftcontains(?o, \"a\" ftor \"b\") }")
    assert [b.tuples[0].fulltext for b in q.branches] == [FTOr((term("a"), term("b")))]


def test_a_thousand_ftor_alternatives_are_one_branch():
    words = " ftor ".join(f'"w{i}"' for i in range(1000))
    q = parse_query(f"SELECT ?s {{ ?s ?p ?o FILTER ftcontains(?o, {words}) }}")
    assert len(q.branches) == 1


def test_too_many_branches_is_a_clear_error():
    ors = " && ".join(f"(?o = {i} || ?o = {i + 100})" for i in range(7))  # 2**7 = 128 > 64
    with pytest.raises(QueryTooComplexError, match="64") as e:
        parse_query(f"SELECT ?s {{ ?s ?p ?o FILTER({ors}) }}")
    assert e.value.line is not None
    assert "structural" in str(e.value) and "ftor" in str(e.value)


# ------------------------------------------------------------------ section 2

@pytest.mark.parametrize("ft, expected", [
    ('"olympic"', term("olympic")),
    ('"Olympic Games"', term("olympic", "games")),
    ('"U.S."', term("u", "s")),
    ('"olymp*"', term("olymp*")),
    ('"usab* test*"', term("usab*", "test*")),
    ('"a" ftand "b" ftand "c"', FTAnd((term("a"), term("b"), term("c")))),
    ('"a" ftor "b" ftand "c"', FTOr((term("a"), FTAnd((term("b"), term("c")))))),
    ('("a" ftor "b") ftand "c"', FTAnd((FTOr((term("a"), term("b"))), term("c")))),
    ('ftnot "a"', FTNot(term("a"))),
    ('ftnot ftnot "a"', FTNot(FTNot(term("a")))),
    ('"a" ftand ftnot ("b" ftor "c")', FTAnd((term("a"), FTNot(FTOr((term("b"), term("c"))))))),
    ('"games" ftnear(0, 2) "rio"', FTNear(term("games"), term("rio"), 0, 2, True)),
    ('"a b" FTNEAR(1,1, UNORDERED) "c*"', FTNear(term("a", "b"), term("c*"), 1, 1, False)),
    ('("x") ftnear(0, 0) ("y")', FTNear(term("x"), term("y"), 0, 0, True)),
])
def test_fulltext_expressions(ft, expected):
    assert ft_of(f"SELECT ?s {{ ?s ?p ?o FILTER ftcontains(?o, {ft}) }}") == expected


@pytest.mark.parametrize("ft", [
    '""', '"--"', '"ol*mp"', '"*"', '"a *b"',
    '"a" ftnear(2, 1) "b"', '"a" ftnear(-1, 1) "b"', '"a" ftnear(1.5, 2) "b"',
    '("a" ftand "b") ftnear(0, 1) "c"', '"a" ftnear(0, 1) ftnot "b"',
    '"a" ftnear(0, 1) "b" ftnear(0, 1) "c"', '"a" ftand', 'ftnot', '"a" ftnear "b"',
])
def test_fulltext_errors_have_positions(ft):
    with pytest.raises(QuerySyntaxError) as e:
        parse_query(f"SELECT ?s {{ ?s ?p ?o\n  FILTER ftcontains(?o, {ft}) }}")
    assert e.value.line == 2 and e.value.column >= 3


# ------------------------------------------------------------------ rejection

@pytest.mark.parametrize("text, construct, line, column", [
    ("SELECT * { GRAPH ?g { ?s ?p ?o } }", "GRAPH", 1, 12),
    ("SELECT * { ?s ?p ?o OPTIONAL { GRAPH <http://x/g> { ?s ?q ?v } } }", "GRAPH", 1, 32),
    ("SELECT * { SERVICE <http://x/> { ?s ?p ?o } }", "SERVICE", 1, 12),
    ("SELECT * { SERVICE SILENT <http://x/> { ?s ?p ?o } }", "SERVICE", 1, 12),
    ("DESCRIBE ?s WHERE { ?s ?p ?o }", "DESCRIBE", 1, 1),
    ("PREFIX x: <http://x/>\ndescribe x:a", "DESCRIBE", 2, 1),
    ("SELECT * FROM <http://x/g> { ?s ?p ?o }", "FROM", 1, 10),
    ("SELECT * FROM NAMED <http://x/g> { ?s ?p ?o }", "FROM NAMED", 1, 10),
    ("ASK FROM <http://x/g> { ?s ?p ?o }", "FROM", 1, 5),
    ("CONSTRUCT { ?s ?p ?o } FROM <http://x/g> WHERE { ?s ?p ?o }", "FROM", 1, 24),
    ("SELECT * { ?s ?p ?o FILTER EXISTS { GRAPH ?g { ?s ?q ?o } } }", "GRAPH", 1, 37),
    ("INSERT DATA { <http://x/a> <http://x/p> 1 }", "SPARQL Update", 1, 1),
    ("DELETE WHERE { ?s ?p ?o }", "SPARQL Update", 1, 1),
])
def test_unsupported_constructs_are_named_with_their_position(text, construct, line, column):
    with pytest.raises(UnsupportedQueryError) as e:
        parse_query(text)
    assert construct in str(e.value)
    assert (e.value.line, e.value.column) == (line, column)


@pytest.mark.parametrize("text, line, column", [
    ("SELECT ?s { ?s ?p }", 1, 19),
    ("SELECT ?s { ?s ?p ?o", 1, 21),
    ("SELECT ?s\n{ ?s ?p ?o . . }", 2, 14),
    ("SELEC ?s { ?s ?p ?o }", 1, 1),
    ("SELECT ?s { ?s _:b ?o }", 1, 16),
    ("SELECT ?s { ?s [] ?o }", 1, 16),
    ("SELECT ?s { ?s ?p ?o FILTER(?o = ) }", 1, 34),
    ("SELECT ?s { ?s undefined:p ?o }", 1, 16),
    ("SELECT ?s { ?s ?p ?o FILTER(?o = = 1) }", 1, 34),
    ("SELECT ?s { ?s ?p \"unterminated }", 1, 19),
    ("SELECT { ?s ?p ?o }", 1, 8),
    ("", 1, 1),
])
def test_syntax_errors_have_line_and_column(text, line, column):
    with pytest.raises(QuerySyntaxError) as e:
        parse_query(text)
    assert (e.value.line, e.value.column) == (line, column), str(e.value)
    assert f"line {line}, column {column}" in str(e.value)


def test_syntax_error_says_what_was_expected():
    with pytest.raises(QuerySyntaxError) as e:
        parse_query("SELECT ?s { ?s ?p ?o")
    assert '"}"' in e.value.expected and '"."' in e.value.expected
    assert "end of query" in str(e.value)


def test_non_strings_are_a_type_error():
    with pytest.raises(TypeError):
        parse_query(b"ASK { ?s ?p ?o }")


# ---------------------------------------------------------------- fuzzing

_PIECES = ["SELECT", "ASK", "WHERE", "{", "}", "(", ")", "[", "]", ".", ";", ",", "?x", "$y",
           "*", "a", "<http://x/p>", "ex:p", "_:b", '"olympic"', "'s'@en", "1", "-2.5",
           "FILTER", "ftcontains", "ftand", "ftor", "ftnot", "ftnear", "(0,2)", "unordered",
           "&&", "||", "!", "=", "<", ">=", "regex", "lang", "langMatches", "contains",
           "OPTIONAL", "UNION", "PREFIX", "ex:", "BASE", "/", "|", "^", "rdfs:subClassOf*",
           "true", "#c\n", "\n", '"""x"""', "DISTINCT", "^^", "xsd:int", "@en", "\\", '"'] 

_query_like = st.lists(st.sampled_from(_PIECES), max_size=30).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_query_like, st.text(max_size=60),
                 st.text(alphabet="{}()[]?.;,*\"'<>!|&=ftandor: \n", max_size=60)))
def test_fuzz_only_documented_errors_escape(text):
    try:
        q = parse_query(text)
    except QueryError as e:
        assert e.line is not None and e.column is not None and e.line >= 1 and e.column >= 1
        assert str(e).startswith(f"line {e.line}, column {e.column}: ")
    else:
        assert q.patterns and q.branches


_VARS = st.sampled_from(["?x", "?y", "$z"])
_TERMS = st.one_of(_VARS, st.sampled_from(["*", "ex:a", "<http://ex.org/b>", "_:n", "[]"]))
_OBJECTS = st.one_of(_TERMS, st.sampled_from(['"rio"', "'G'@en", "3", "2.5", "true"]))
_PREDS = st.one_of(_VARS, st.sampled_from(["*", "ex:p", "a", "a/rdfs:subClassOf*"]))


@st.composite
def valid_queries(draw):
    triples = [f"{draw(_TERMS)} {draw(_PREDS)} {draw(_OBJECTS)}"
               for _ in range(draw(st.integers(1, 4)))]
    filters = []
    for _ in range(draw(st.integers(0, 2))):
        v = draw(_VARS)
        filters.append(draw(st.sampled_from([
            f'FILTER ftcontains({v}, "a" ftor ("b c" ftnear(0, 1) "d*"))',
            f"FILTER(!({v} < 3) || {v} = {draw(_VARS)})",
            f'FILTER regex({v}, "^r", "i")', f'FILTER(lang({v}) = "en")'])))
    form = draw(st.sampled_from(["SELECT *", "SELECT DISTINCT ?x ?y", "ASK"]))
    return f"{P}{form} WHERE {{ {' . '.join(triples)} {' '.join(filters)} }}"


@settings(max_examples=200, deadline=None)
@given(valid_queries())
def test_generated_valid_queries_parse_and_reparse_stably(text):
    q = parse_query(text)
    assert len(q.patterns) >= 1
    assert parse_query(text) == q
