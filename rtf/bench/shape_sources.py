"""The DBpedia sample as the shape families see it: publications, values and constants by frequency.

The shape families (`rtf.bench.shapes`) model every query on a real
publication and draw its predicates, classes, values and words from the
sample as they occur there, so each is found with its real frequency. This
module holds what they draw from, each computed once, on first use:

- `descriptions`: the resources whose whole DBpedia description is in the
  sample -- those with article categories (``dct:subject``; every DBpedia
  resource with an article has some). They carry the dump's predicate mix:
  labels, abstracts, types, typed values, links. The sample's partial
  sources (DB8k-28's relation subset, the abstract-only files) carry none,
  and their predicate mix is not DBpedia's: a third of the sample is
  ``dbo:abstract`` alone.
- `linked`: multi-subject publications. A DBpedia resource is published
  alone; a publisher that sends a resource with what it links to (a season
  with its stadiums, an airline with its hubs) sends several subjects. Each
  resource of the sample that names other resources of the sample becomes
  a publication of its own triples and those of the first
  `LINKED_NEIGHBOURS` resources it names (in the order it names them).
- `multi_valued`: publications with a property of several values (several
  ``rdf:type``, ``dbp:stadium``, ``dbp:team`` ...).
- `values_of`: every literal of each predicate, with repetitions, for
  constants drawn with their real frequency; `constant_publications`: in
  how many publications each (predicate, IRI object) pair occurs, for rare
  and frequent constants.

>>> from rtf.io.publication import Publication
>>> a = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", "<http://ex/b>")])
>>> b = Publication("http://ex/b", [("<http://ex/b>", "<http://ex/q>", '"B"@en')])
>>> [len(p.triples) for p in ShapeSources([a, b]).linked]
[2]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cached_property

from rtf.bench.workload import document_frequencies, objects_by_predicate
from rtf.errors import RtfError
from rtf.io.publication import Publication
from rtf.query.terms import RDF_TYPE, XSD, is_iri, is_literal, literal_parts

TYPE = f"<{RDF_TYPE}>"
DCT_SUBJECT = "<http://purl.org/dc/terms/subject>"
RDFS_LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
#: Predicates of long texts (the full-text constraints' usual target).
TEXT_PREDICATES = frozenset({"<http://www.w3.org/2000/01/rdf-schema#comment>",
                             "<http://dbpedia.org/ontology/abstract>"})
DBO = "http://dbpedia.org/ontology/"
#: How many linked resources a multi-subject publication carries at most.
LINKED_NEIGHBOURS = 4
#: A constant found in at most this many publications is rare.
RARE_PUBLICATIONS = 2
#: A constant found in at least this share of the publications is frequent.
FREQUENT_SHARE = 0.01

_NUMBERS = {XSD + t for t in ("integer", "decimal", "double", "float", "int", "long", "short",
                              "nonNegativeInteger", "positiveInteger", "negativeInteger",
                              "nonPositiveInteger", "unsignedInt", "unsignedLong")}


class MissingShapeError(RtfError, ValueError):
    """The publications hold nothing a shape family's queries can be modelled on."""


def value_kind(key: str) -> str | None:
    """What kind of value the term `key` is, as the filters treat it, or None for no literal.

    ``number`` (an XSD numeric), ``date`` (xsd:date or dateTime), ``year``
    (xsd:gYear: no ordering in SPARQL, compared through ``xsd:integer(str(?v))``),
    ``unit`` (a DBpedia datatype such as ``dt:euro`` over a number, compared
    through ``xsd:double(str(?v))``), ``boolean``, ``tagged`` (a language-tagged
    string), ``string`` (a plain one) or ``other``.

    >>> value_kind('"1950-03-04"^^<http://www.w3.org/2001/XMLSchema#date>'), value_kind('"Rio"@en')
    ('date', 'tagged')
    """
    if not is_literal(key):
        return None
    parts = literal_parts(key)
    if parts.lang:
        return "tagged"
    dt = parts.datatype
    if dt == XSD + "string":
        return "string"
    if dt in _NUMBERS:
        return "number"
    if dt in (XSD + "date", XSD + "dateTime"):
        return "date"
    if dt == XSD + "gYear":
        return "year" if parts.lexical.lstrip("-").isdigit() else "other"
    if dt == XSD + "boolean":
        return "boolean"
    if dt.startswith("http://dbpedia.org/datatype/"):
        try:
            float(parts.lexical)
        except ValueError:
            return "other"
        return "unit"
    return "other"


#: Kinds that order: a comparison or a range filter means something on them.
ORDERED_KINDS = frozenset({"number", "date", "year", "unit"})


def own_triples(pub: Publication) -> list[tuple[str, str, str]]:
    """The triples about the publication's main subject (its first one)."""
    subject = pub.triples[0][0]
    return [t for t in pub.triples if t[0] == subject]


def dbo_classes(triples: Iterable[tuple[str, str, str]]) -> list[str]:
    """The DBpedia ontology classes among the types in `triples`, sorted, each once."""
    return sorted({o for _, p, o in triples if p == TYPE and o.startswith(f"<{DBO}")})


class ShapeSources:
    """What the shape families draw from, computed once from `publications` (see the module)."""

    def __init__(self, publications: Iterable[Publication]):
        self.publications: list[Publication] = [p for p in publications if p.triples]
        if not self.publications:
            raise MissingShapeError("no publications to build queries from")

    @cached_property
    def descriptions(self) -> list[Publication]:
        """Whole DBpedia descriptions: the publications with article categories (dct:subject)."""
        return [p for p in self.publications if any(t[1] == DCT_SUBJECT for t in p.triples)]

    @cached_property
    def by_subject(self) -> dict[str, Publication]:
        """subject key -> the publication about it (the first, if several)."""
        out: dict[str, Publication] = {}
        for pub in self.publications:
            out.setdefault(pub.triples[0][0], pub)
        return out

    @cached_property
    def linked(self) -> list[Publication]:
        """Multi-subject publications: a resource and the resources it names (module docstring)."""
        out = []
        for pub in self.publications:
            subject = pub.triples[0][0]
            named = []
            for _, _, o in own_triples(pub):
                if o != subject and o in self.by_subject and o not in named:
                    named.append(o)
                    if len(named) == LINKED_NEIGHBOURS:
                        break
            if named:
                triples = list(pub.triples)
                for o in named:
                    triples.extend(self.by_subject[o].triples)
                out.append(Publication.from_canonical(pub.id, triples))
        return out

    def links(self, pub: Publication) -> list[tuple[str, str, str]]:
        """The triples of a `linked` publication's main subject that name another subject of it."""
        subjects = {t[0] for t in pub.triples}
        main = pub.triples[0][0]
        return [t for t in own_triples(pub) if t[2] != main and t[2] in subjects]

    @cached_property
    def multi_valued(self) -> list[Publication]:
        """The publications with a property of several values about their main subject."""
        return [p for p in self.publications if multi_valued_predicates(own_triples(p))]

    @cached_property
    def values_of(self) -> dict[str, list[str]]:
        """predicate -> its literal objects in the sample, one entry per occurrence."""
        return objects_by_predicate(self.publications, is_literal)

    @cached_property
    def constant_publications(self) -> Counter:
        """(predicate, IRI object) -> the number of publications that have it."""
        return Counter(pair for pub in self.publications
                       for pair in {(p, o) for _, p, o in own_triples(pub) if is_iri(o)})

    @cached_property
    def frequent_limit(self) -> float:
        """A constant in at least this many publications is frequent."""
        return max(RARE_PUBLICATIONS + 1, FREQUENT_SHARE * len(self.publications))

    def constants(self, pub: Publication, rare: bool) -> list[tuple[str, str, str]]:
        """The triples of `pub`'s subject whose (predicate, IRI object) is rare (in at most
        `RARE_PUBLICATIONS` publications), or frequent (in at least `frequent_limit`)."""
        counts, limit = self.constant_publications, self.frequent_limit
        return [t for t in own_triples(pub) if is_iri(t[2]) and
                (counts[t[1], t[2]] <= RARE_PUBLICATIONS if rare else counts[t[1], t[2]] >= limit)]

    @cached_property
    def with_rare_constants(self) -> list[Publication]:
        return [p for p in self.publications if self.constants(p, rare=True)]

    @cached_property
    def with_frequent_constants(self) -> list[Publication]:
        return [p for p in self.publications if self.constants(p, rare=False)]

    @cached_property
    def class_publications(self) -> Counter:
        """class -> the number of publications whose main subject has it."""
        return Counter(c for pub in self.publications for c in dbo_classes(own_triples(pub)))

    @cached_property
    def word_publications(self) -> Counter:
        """word -> the number of publications whose text has it."""
        return document_frequencies(self.publications)


def multi_valued_predicates(triples: Sequence[tuple[str, str, str]]) -> list[str]:
    """The predicates with several values in `triples`, sorted."""
    counts = Counter(t[1] for t in triples)
    return sorted(p for p, n in counts.items() if n > 1)
