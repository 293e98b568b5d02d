"""Publications from anywhere give the same terms (issue 21 item 11, issue 26 item 2).

String triples given to `Publication` or `Engine.match` are canonicalised as a
file's are (language tags, ``^^xsd:string``, ``\\u`` escapes); `read_publications`
reads bytes, strings of RDF and open streams; `Publication.from_rdf` parses a
string; every constructor takes the id first.
"""

from __future__ import annotations

import bz2
import gzip
import io
import warnings

import pyoxigraph as ox
import pytest
import rdflib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication, read_publications
from rtf.errors import PublicationError
from rtf.io.publication import canonical_term

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
S, P = f"<{EX}s>", f"<{EX}p>"


def file_keys(tmp_path, line: str) -> tuple:
    """The triples a file holding `line` reads as: the reference spelling of every term."""
    path = tmp_path / "one.nt"
    path.write_text(line + "\n", encoding="utf-8")
    (pub,) = read_publications(path)
    return pub.triples


# ------------------------------------------------------------ the reproductions

@pytest.mark.parametrize("algorithm", ["naive", "rtfs", "rtfm", "ibroker"])
@pytest.mark.parametrize("written, constant", [
    ('"chat"@FR', '"chat"@fr'),
    ('"chat"@en-US', '"chat"@en-us'),
    (f'"chat"^^<{XSD}string>', '"chat"'),
    ('"ch\\u0061t"', '"chat"'),
    ('"caf\\u00E9"@fr', '"café"@fr'),
    ('"\\U0001F600"', '"\U0001F600"'),
])
def test_string_triples_match_as_the_file_does(tmp_path, algorithm, written, constant):
    engine = Engine(algorithm)
    engine.register(f"ASK {{ ?s ?p ?o FILTER(?o = {constant}) }}", "eq")
    engine.register(f"ASK {{ ?s <{EX}p> {constant} }}", "pattern")
    from_strings = engine.match(Publication(f"{EX}s", [(S, P, written)]))
    from_file = engine.match(Publication(f"{EX}s", file_keys(tmp_path, f"{S} {P} {written} .")))
    assert [m.query_id for m in from_strings] == [m.query_id for m in from_file] == ["eq", "pattern"]


def test_iri_escapes_are_decoded(tmp_path):
    engine = Engine()
    engine.register(f"SELECT ?s {{ ?s <{EX}p> ?o }}", "q")
    written = ("<http://ex.org/\\u0073>", "<http://ex.org/\\u0070>", '"x"')
    (m,) = engine.match([written])
    assert m.bindings == [{"s": S}]
    assert Publication("x", [written]).triples == file_keys(tmp_path, " ".join(written) + " .")


# ------------------------------------------------------------ hypothesis: term families

_CHARS = st.characters(blacklist_categories=("Cs",), max_codepoint=0x1FFFF)


def _escape_char(c: str, escape: bool) -> str:
    """One character of an N-Triples string, plain or as a \\u / \\U escape."""
    if c in '"\\\n\r':
        return {"\"": '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r"}[c] if not escape else f"\\u{ord(c):04X}"
    if escape:
        return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08X}"
    return c


@st.composite
def spelled_literal(draw):
    """A literal spelled as a person might: escapes, tag case, an explicit xsd:string."""
    text = draw(st.text(_CHARS, max_size=12))
    body = "".join(_escape_char(c, draw(st.booleans())) for c in text)
    kind = draw(st.sampled_from(["plain", "string", "lang", "integer"]))
    if kind == "string":
        return f'"{body}"^^<{XSD}string>'
    if kind == "lang":
        tag = draw(st.sampled_from(["en", "EN", "en-US", "En-Gb", "fr", "FR", "zh-Hant-TW", "de-CH-1996"]))
        return f'"{body}"@{tag}'
    if kind == "integer":
        return f'"{draw(st.integers(-999, 999))}"^^<{XSD}integer>'
    return f'"{body}"'


@st.composite
def spelled_iri(draw):
    local = draw(st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=8))
    return "<" + "".join(_escape_char(c, draw(st.booleans())) for c in EX + local) + ">"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(s=st.one_of(spelled_iri(), st.just("_:b1")), p=spelled_iri(),
       o=st.one_of(spelled_literal(), spelled_iri(), st.just("_:b2")))
def test_any_spelling_gives_the_file_terms(tmp_path, s, p, o):
    reference = file_keys(tmp_path, f"{s} {p} {o} .")
    assert Publication("x", [(s, p, o)]).triples == reference
    assert Publication.from_rdf("x", f"{s} {p} {o} .").triples == reference


def test_rdflib_terms_are_canonical_too():
    graph = rdflib.Graph()
    graph.add((rdflib.URIRef(f"{EX}s"), rdflib.URIRef(f"{EX}p"), rdflib.Literal("chat", lang="FR")))
    graph.add((rdflib.URIRef(f"{EX}s"), rdflib.URIRef(f"{EX}p"),
               rdflib.Literal("x", datatype=rdflib.URIRef(f"{XSD}string"))))
    assert set(Publication.from_rdflib(None, graph).triples) == {(S, P, '"chat"@fr'), (S, P, '"x"')}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(o=spelled_literal())
def test_every_engine_answers_string_triples_as_the_file(tmp_path, o):
    canonical = file_keys(tmp_path, f"{S} {P} {o} .")[0][2]
    engines = {name: Engine(name) for name in ("naive", "rtfs", "ibroker")}
    for engine in engines.values():
        engine.register(f"ASK {{ ?s ?p ?o FILTER(sameTerm(?o, {canonical})) }}", "same")
        engine.register(f"SELECT ?o {{ ?s <{EX}p> ?o FILTER(str(?o) = str({canonical})) }}", "str")
    for engine in engines.values():
        got = engine.match([(S, P, o)])
        assert [(m.query_id, m.bindings) for m in got] == [
            ("same", []), ("str", [{"o": canonical}])]


@pytest.mark.parametrize("term, position, reason", [
    ("<not an iri>", 0, "not a valid N-Triples term"),
    ("<relative>", 1, "not a valid N-Triples term"),
    ('"x"@en-', 2, "not a well-formed literal"),
    ('"a" . <http://ex/s> <http://ex/p> "b"', 2, "N-Triples term"),
    ('"a\nb"', 2, "not a valid N-Triples term"),
])
def test_what_pyoxigraph_refuses_is_a_value_error_naming_the_term(term, position, reason):
    triple = [S, P, '"x"']
    triple[position] = term
    with pytest.raises(ValueError, match=reason) as e:
        Publication("x", [tuple(triple)])
    assert "publication triple #0" in str(e.value)
    with pytest.raises(ValueError):
        canonical_term(term, position)


def test_publications_read_from_files_are_not_checked_again(monkeypatch, tmp_path):
    """A reader's triples are pyoxigraph's, canonical: the per-term check never runs."""
    import rtf.io.publication as publication

    path = tmp_path / "a.nt"
    path.write_text(f'{S} {P} "x"@en .\n{S} {P} "y" .\n')
    calls = []
    monkeypatch.setattr(publication, "checked_triple", lambda *a: calls.append(a))
    assert len(list(read_publications(path))[0]) == 2 and calls == []


# ------------------------------------------------------------ read_publications from memory

NT = (f'{S} {P} "Rio games"@en .\n{S} {P} "more" .\n'
      f'<{EX}t> {P} "other" .\n')


@pytest.mark.parametrize("make", [
    lambda: NT, lambda: NT.encode(), lambda: io.BytesIO(NT.encode()), lambda: io.StringIO(NT),
    lambda: gzip.compress(NT.encode()), lambda: io.BytesIO(bz2.compress(NT.encode())),
    lambda: bytearray(NT.encode()),
], ids=["str", "bytes", "BytesIO", "StringIO", "gzip bytes", "bz2 stream", "bytearray"])
def test_read_publications_from_memory(make):
    pubs = list(read_publications(make()))
    assert [(p.id, len(p)) for p in pubs] == [(f"{EX}s", 2), (f"{EX}t", 1)]


def test_read_publications_mixes_paths_and_memory(tmp_path):
    path = tmp_path / "a.nt"
    path.write_text(NT)
    assert [p.id for p in read_publications([NT.encode(), str(path)])] == [f"{EX}s", f"{EX}t"] * 2


def test_read_publications_turtle_string_with_format():
    ttl = f"@prefix ex: <{EX}> .\nex:s ex:p \"a\", \"b\" .\n"
    assert [len(p) for p in read_publications(ttl, format="ttl")] == [2]
    assert [len(p) for p in read_publications(f"PREFIX ex: <{EX}> ex:s ex:p 1 .", format="ttl")] == [1]


def test_a_bad_line_in_memory_names_its_line():
    with pytest.raises(PublicationError, match=r"^<bytes>:2: "):
        list(read_publications(f"{S} {P} \"a\" .\n{S} {P} .\n".encode()))
    stats_skip = list(read_publications(f"{S} {P} \"a\" .\nnot rdf\n", skip_invalid=True))
    assert len(stats_skip) == 1


def test_a_path_is_still_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.nt").write_text(NT)
    assert len(list(read_publications("x.nt"))) == 2
    with pytest.raises(PublicationError, match="cannot read publications file missing.nt"):
        list(read_publications("missing.nt"))


# ------------------------------------------------------------ Publication.from_rdf

def test_from_rdf_turtle_and_ntriples():
    pub = Publication.from_rdf(None, f"@prefix ex: <{EX}> . ex:s ex:p \"Rio\"@PT ; ex:q ex:o .", "ttl")
    assert pub.id == f"{EX}s"
    assert set(pub.triples) == {(S, P, '"Rio"@pt'), (S, f"<{EX}q>", f"<{EX}o>")}
    assert Publication.from_rdf("mine", NT.encode()).id == "mine"
    assert len(Publication.from_rdf("all", NT)) == 3  # every triple, whatever its subject


def test_from_rdf_errors():
    with pytest.raises(PublicationError, match=r"^<string>:2: "):
        Publication.from_rdf(None, f"{S} {P} \"a\" .\n{S} {P} .\n")
    with pytest.raises(PublicationError):
        Publication.from_rdf(None, "<relative> <p> <o> .")
    with pytest.raises(TypeError):
        Publication.from_rdf(None, [NT])  # type: ignore[arg-type]


# ------------------------------------------------------------ one argument order

def test_every_constructor_takes_the_id_first():
    quads = list(ox.parse(NT, ox.RdfFormat.N_TRIPLES))
    graph = rdflib.Graph().parse(data=NT, format="nt")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Publication.from_oxigraph("o", quads).id == "o"
        assert Publication.from_oxigraph(None, quads).id == f"{EX}s"
        assert Publication.from_rdflib("r", graph).id == "r"
        assert len(Publication.from_rdflib(None, graph)) == 3


def test_the_old_order_warns_and_still_works():
    quads = list(ox.parse(NT, ox.RdfFormat.N_TRIPLES))
    graph = rdflib.Graph().parse(data=NT, format="nt")
    with pytest.warns(DeprecationWarning, match=r"from_oxigraph\(id, triples\)"):
        assert Publication.from_oxigraph(quads, "old").id == "old"
    with pytest.warns(DeprecationWarning):
        assert Publication.from_oxigraph(quads).id == f"{EX}s"
    with pytest.warns(DeprecationWarning, match=r"from_rdflib\(id, graph\)"):
        assert Publication.from_rdflib(graph, "old").id == "old"
    with pytest.raises(TypeError, match="the id is a str or None"):
        Publication.from_oxigraph(quads, 5)
    with pytest.raises(TypeError, match="publication id is a str"):
        Publication(5, [])  # type: ignore[arg-type]
