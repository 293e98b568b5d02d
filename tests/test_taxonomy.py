"""The class taxonomy behind ``a/rdfs:subClassOf*`` (one behaviour per test).

Small taxonomies are built inline; the DBpedia 2015-10 ontology is read
through `rtf.io.datasets` and its tests skip when it is absent.
"""

from __future__ import annotations

import gzip
import pickle

import pytest

from rtf.io import datasets
from rtf.errors import TaxonomyError
from rtf.io.reader import read_publications
from rtf.io.taxonomy import Taxonomy
from rtf.query.terms import RDF_TYPE, TYPE_PATH_KEY, iri_key

EX = "http://ex/"
A, B, C, D, E = (f"<{EX}{n}>" for n in "ABCDE")
TYPE = iri_key(RDF_TYPE)
OWL_THING = "<http://www.w3.org/2002/07/owl#Thing>"


DBO = "<http://dbpedia.org/ontology/"


def dbo(name: str) -> str:
    return f"{DBO}{name}>"


@pytest.fixture
def diamond() -> Taxonomy:
    """D is both a B and a C, which are both As; E stands alone."""
    return Taxonomy.from_edges([(B, A), (C, A), (D, B), (D, C)], classes=[E])


# ----------------------------------------------------------------- closures


def test_ancestors_or_self_holds_the_class_and_its_superclasses_transitively(diamond):
    assert diamond.ancestors_or_self(B) == {B, A}


def test_multiple_inheritance_reaches_every_superclass(diamond):
    assert diamond.ancestors_or_self(D) == {D, B, C, A}


def test_an_unknown_class_is_its_own_only_ancestor(diamond):
    # The zero-length path: ?x a/rdfs:subClassOf* C holds for ?x a C.
    assert diamond.ancestors_or_self("<http://other/X>") == {"<http://other/X>"}
    assert Taxonomy.empty().ancestors_or_self(A) == {A}


def test_descendants_or_self_holds_the_class_and_its_subclasses_transitively(diamond):
    assert diamond.descendants_or_self(A) == {A, B, C, D}
    assert diamond.descendants_or_self(D) == {D}


def test_closures_are_memoised(diamond):
    assert diamond.ancestors_or_self(D) is diamond.ancestors_or_self(D)


def test_a_deep_chain_does_not_hit_the_recursion_limit():
    chain = [f"<{EX}c{i}>" for i in range(1500)]  # deeper than the default limit of 1000
    t = Taxonomy.from_edges(zip(chain[1:], chain))
    assert len(t.ancestors_or_self(chain[-1])) == 1500
    assert len(t.descendants_or_self(chain[0])) == 1500


# ------------------------------------------------------------------ building


def test_a_self_loop_is_ignored():
    t = Taxonomy.from_edges([(A, A), (B, A)])
    assert t.ancestors_or_self(A) == {A} and t.parents(A) == ()


def test_edges_with_blank_nodes_are_ignored():
    # OWL restrictions are blank-node superclasses.
    t = Taxonomy.from_edges([(B, A), (B, "_:restriction"), ("_:union", A)])
    assert t.edges() == {(B, A)}
    assert "_:restriction" not in t


def test_a_class_key_must_be_an_iri_key():
    with pytest.raises(TaxonomyError, match="IRI key"):
        Taxonomy.from_edges([("http://ex/B", "http://ex/A")])


def test_a_cycle_is_an_error_naming_its_classes():
    with pytest.raises(TaxonomyError, match="cycle") as raised:
        Taxonomy.from_edges([(E, A), (A, B), (B, C), (C, A)])
    message = str(raised.value)
    assert all(c in message for c in (A, B, C)) and E not in message


def test_len_counts_classes_and_contains_tells_a_known_class(diamond):
    assert len(diamond) == 5
    assert D in diamond and E in diamond and "<http://other/X>" not in diamond
    assert len(Taxonomy.empty()) == 0


@pytest.mark.parametrize("taxonomy", [Taxonomy.empty(), Taxonomy.from_edges([(B, A), (D, B)])],
                         ids=["empty", "chain"])
def test_a_taxonomy_survives_pickling(taxonomy):
    taxonomy.ancestors_or_self(D)  # a filled cache is not shipped
    copy = pickle.loads(pickle.dumps(taxonomy))
    assert copy == taxonomy
    assert copy.ancestors_or_self(D) == taxonomy.ancestors_or_self(D)
    assert copy.descendants_or_self(A) == taxonomy.descendants_or_self(A)


def test_from_file_reads_turtle_with_owl_restrictions_and_declared_classes(tmp_path):
    f = tmp_path / "onto.ttl.gz"
    with gzip.open(f, "wt") as out:
        out.write(f"""@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix : <{EX}> .
:B rdfs:subClassOf :A , [ a owl:Restriction ; owl:onProperty :p ; owl:someValuesFrom :C ] .
:D rdfs:subClassOf :B .
:E a owl:Class .
""")
    t = Taxonomy.from_file(f)
    assert t.edges() == {(B, A), (D, B)}
    assert E in t and len(t) == 4


def test_from_file_reports_a_syntax_error_with_file_and_line(tmp_path):
    f = tmp_path / "onto.nt"
    f.write_text(f"{B} <http://www.w3.org/2000/01/rdf-schema#subClassOf> {A} .\nbroken\n")
    with pytest.raises(TaxonomyError, match=r"onto\.nt:2"):
        Taxonomy.from_file(f)


def test_from_file_of_an_unknown_format_is_a_taxonomy_error(tmp_path):
    with pytest.raises(TaxonomyError, match="format"):
        Taxonomy.from_file(tmp_path / "onto.docx")


# -------------------------------------------------------------------- expand


def test_expand_gives_one_virtual_triple_per_type_and_ancestor(diamond):
    s = f"<{EX}s>"
    assert set(diamond.expand([(s, TYPE, B)])) == {(s, TYPE_PATH_KEY, B), (s, TYPE_PATH_KEY, A)}


def test_expand_lists_each_virtual_triple_once(diamond):
    s = f"<{EX}s>"
    virtual = diamond.expand([(s, TYPE, D), (s, TYPE, B), (s, TYPE, A)])
    assert len(virtual) == len(set(virtual)) == 4


def test_expand_ignores_other_predicates(diamond):
    assert diamond.expand([(f"<{EX}s>", f"<{EX}kind>", B), (f"<{EX}s>", TYPE_PATH_KEY, B)]) == []


def test_expand_keeps_a_type_unknown_to_the_taxonomy(diamond):
    s, other = f"<{EX}s>", "<http://yago/Thing>"
    assert diamond.expand([(s, TYPE, other)]) == [(s, TYPE_PATH_KEY, other)]


# --------------------------------------------------- the DBpedia 2015-10 ontology


@pytest.fixture(scope="module")
def dbpedia() -> Taxonomy:
    path = datasets.dbpedia_ontology()
    if not path.is_file():
        pytest.skip(f"DBpedia ontology not found at {path} (set {datasets.ENV_VAR})")
    return Taxonomy.from_file(path)


def test_dbpedia_soccer_player_reaches_athlete_person_and_agent(dbpedia):
    assert {dbo("Athlete"), dbo("Person"), dbo("Agent"), OWL_THING} <= \
        dbpedia.ancestors_or_self(dbo("SoccerPlayer"))


def test_dbpedia_person_is_not_a_place(dbpedia):
    assert dbo("Place") not in dbpedia.ancestors_or_self(dbo("SoccerPlayer"))
    assert dbo("SoccerPlayer") not in dbpedia.descendants_or_self(dbo("Place"))


def test_dbpedia_ontology_has_the_classes_and_edges_of_the_data_readme(dbpedia):
    # 739 declared dbo classes and 748 rdfs:subClassOf edges; the edges also
    # name 7 outside superclasses (owl:Thing, 4 schema.org, 2 DUL classes).
    assert len(dbpedia.edges()) == 748
    assert len(dbpedia) == 739 + 7


def test_dbpedia_rdfxml_and_ntriples_ontologies_are_the_same_taxonomy(dbpedia):
    owl = datasets.dbpedia_ontology().with_name("dbpedia_2015-10.owl.gz")
    if not owl.is_file():
        pytest.skip(f"{owl} not found")
    assert Taxonomy.from_file(owl) == dbpedia


def test_dbpedia_sample_types_are_closed_under_the_taxonomy(dbpedia):
    # The data README: DB8k-28 resources carry one class plus all its dbo
    # superclasses, taken from this ontology. expand() must add no dbo class.
    path = datasets.dbpedia_dir() / "db8k28_dbpedia-2015-10_publications.nt.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    for pub in read_publications(path):
        types = {o for _, p, o in pub.triples if p == TYPE}
        expanded = {c for _, _, c in dbpedia.expand(pub.triples)}
        assert {c for c in expanded if c.startswith(DBO)} == types
