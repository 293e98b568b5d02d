"""A workload whose selectivity lies in value predicates: typed publications and FILTER queries.

The DBpedia sample has few typed values, so this workload generates its
publications too, DBpedia-style and deterministic for a seed: resources of
ten classes, each with the class's typed properties (integers, decimals,
doubles, dates, dateTimes), labels in a few languages and a short abstract
of words. A few values are deliberately awkward: ill-typed literals, NaN
and INF doubles, dates with and without time zones, integers written as
another integer type.

Queries ask ``?s a C`` plus one to three properties of C, and put their
selectivity in FILTERs on those properties: comparisons (``<, <=, >, >=,
=, !=``) against constants drawn from the property's own values, ranges
joined by ``&&``, ``IN`` lists, ``year()``/``month()`` of dates,
``lang()`` of labels, ``datatype()``, sometimes a word of the abstract
with ``ftcontains`` or a regex on the label (one of a few dozen patterns,
shared by many queries). A publication satisfies the structure of about one
query in ten (its class's queries) and the FILTERs of about four in a
hundred: the cost of a publication should follow the four, not the ten.

>>> pubs, queries = values_workload(20, 5, seed=1)
>>> len(pubs), len(queries), queries[0]["id"]
(20, 5, 'v1')
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from rtf.io.publication import Publication
from rtf.query.terms import XSD, iri_key, literal_key

DBO = "http://dbpedia.org/ontology/"
RES = "http://dbpedia.org/resource/"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

#: The share of a class's publications a query's FILTERs aim to let through.
FILTER_PASS = 0.5
#: Languages a label may have, each present with this probability.
LABEL_LANGUAGES = ("en", "fr", "de", "es")
LABEL_SHARE = 0.45
#: Probability that a query also asks a word of the abstract.
WORD_SHARE = 0.2
#: Probability that a query also tests its label with a regex (an expensive predicate that
#: many queries share: one of a few dozen patterns, seed 002's case).
REGEX_SHARE = 0.1
WORDS = ("river", "city", "film", "album", "company", "mountain", "club", "book", "war", "music",
         "history", "north", "south", "new", "old", "great", "little", "red", "black", "golden",
         "festival", "league", "island", "valley", "national", "royal", "saint", "lake")


@dataclass(frozen=True)
class Property:
    """A typed property of a class: its datatype and how its values are drawn."""

    name: str
    datatype: str          # XSD local name: integer, decimal, double, date, dateTime, ...
    low: float
    high: float
    log: bool = False      # drawn log-uniformly (populations, budgets)

    def draw(self, rng: random.Random) -> float:
        if self.log:
            return math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        return rng.uniform(self.low, self.high)


def _p(name, datatype, low, high, log=False) -> Property:
    return Property(name, datatype, low, high, log)


CLASSES: dict[str, tuple[Property, ...]] = {
    "City": (_p("populationTotal", "nonNegativeInteger", 1e3, 1e7, True), _p("areaTotal", "double", 1, 1e4, True),
             _p("foundingDate", "date", 800, 2000), _p("elevation", "double", -50, 3000)),
    "Person": (_p("birthDate", "date", 1900, 2005), _p("height", "double", 1.5, 2.1),
               _p("weight", "decimal", 45, 120)),
    "Film": (_p("releaseDate", "date", 1920, 2024), _p("runtime", "double", 60, 200),
             _p("budget", "double", 1e5, 3e8, True)),
    "Company": (_p("numberOfEmployees", "nonNegativeInteger", 5, 5e5, True), _p("foundingDate", "date", 1800, 2020),
                _p("revenue", "double", 1e5, 1e11, True)),
    "Book": (_p("numberOfPages", "positiveInteger", 40, 1500), _p("releaseDate", "date", 1800, 2024)),
    "River": (_p("length", "double", 5, 6500, True), _p("discharge", "double", 1, 2e5, True)),
    "Mountain": (_p("elevation", "double", 300, 8848), _p("firstAscent", "date", 1780, 2020)),
    "Album": (_p("releaseDate", "date", 1950, 2024), _p("runtime", "decimal", 20, 90)),
    "SoccerClub": (_p("capacity", "integer", 500, 1e5, True), _p("foundingDate", "date", 1860, 2015)),
    "Event": (_p("startDate", "dateTime", 2000, 2025), _p("numberOfParticipants", "integer", 10, 1e5, True)),
}


def _lexical(prop: Property, x: float, rng: random.Random) -> tuple[str, str]:
    """(lexical form, datatype IRI) of value `x` of `prop`, sometimes awkward on purpose."""
    r = rng.random()
    if r < 0.005:  # ill-typed: in no value space, equal only to itself
        return "unknown", XSD + prop.datatype
    if prop.datatype in ("date", "dateTime"):
        year = int(x)
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        zone = rng.choice(("", "", "Z", "+02:00", "-05:00"))
        if prop.datatype == "date":
            return f"{year:04d}-{month:02d}-{day:02d}{zone}", XSD + "date"
        return f"{year:04d}-{month:02d}-{day:02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00{zone}", \
            XSD + "dateTime"
    if prop.datatype == "double":
        if r < 0.01:
            return rng.choice(("NaN", "INF")), XSD + "double"
        return f"{x:.6g}".replace("e+", "E").replace("e-", "E-"), XSD + "double"
    if prop.datatype == "decimal":
        return f"{x:.2f}", XSD + "decimal"
    datatype = prop.datatype if r > 0.05 else "integer"  # the same numbers under another integer type
    return str(max(int(round(x)), 1 if prop.datatype == "positiveInteger" else 0)), XSD + datatype


def values_publications(n: int, seed: int = 0) -> list[Publication]:
    """`n` typed DBpedia-style publications, the same for a seed."""
    rng = random.Random(seed)
    names = list(CLASSES)
    pubs = []
    for k in range(n):
        cls = names[k % len(names)] if k < len(names) else rng.choice(names)
        subject = f"{RES}{cls}_{k}"
        s = iri_key(subject)
        triples = [(s, iri_key(RDF_TYPE), iri_key(DBO + cls))]
        for prop in CLASSES[cls]:
            lexical, datatype = _lexical(prop, prop.draw(rng), rng)
            triples.append((s, iri_key(DBO + prop.name), literal_key(lexical, datatype)))
        name = f"{rng.choice(WORDS).title()} {cls} {k}"
        for lang in LABEL_LANGUAGES:
            if rng.random() < LABEL_SHARE:
                triples.append((s, iri_key(RDFS_LABEL), literal_key(name, lang=lang)))
        abstract = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 15)))
        triples.append((s, iri_key(DBO + "abstract"), literal_key(abstract.capitalize() + ".", lang="en")))
        pubs.append(Publication(subject, triples))
    return pubs


# ------------------------------------------------------------------ queries


def _constant(prop: Property, q: float) -> str:
    """The SPARQL constant at quantile `q` of `prop`'s distribution."""
    if prop.log:
        x = math.exp(math.log(prop.low) + q * (math.log(prop.high) - math.log(prop.low)))
    else:
        x = prop.low + q * (prop.high - prop.low)
    if prop.datatype in ("date", "dateTime"):
        year = int(x)
        return (f'"{year:04d}-01-01"^^xsd:date' if prop.datatype == "date"
                else f'"{year:04d}-01-01T00:00:00Z"^^xsd:dateTime')
    if prop.datatype == "double":
        return f"{x:.4E}"  # a SPARQL double: 1.2340E+05
    if prop.datatype == "decimal":
        return f"{x:.2f}"
    return str(int(round(x)))


def _filter(var: str, prop: Property, rng: random.Random, pass_share: float = FILTER_PASS) -> str:
    """A FILTER on `var` (the value of `prop`) that lets about `pass_share` of the values through."""
    share = rng.uniform(pass_share / 2, min(1.0, pass_share * 1.5))
    kind = rng.random()
    if pass_share < FILTER_PASS:
        # A share below the default is a scaled workload (more queries, the same matches):
        # only the comparisons whose share can shrink (no datatype(), !=, or whole months).
        kind *= 0.9
    dated = prop.datatype in ("date", "dateTime")
    if dated and kind < 0.35:
        year = int(prop.low + (1 - share) * (prop.high - prop.low))
        return rng.choice((f"year({var}) >= {year}", f"{year} <= year({var})"))
    if dated and kind < 0.5 and 12 * share >= 1:
        months = rng.sample(range(1, 13), max(1, round(12 * share)))
        return f"month({var}) IN ({', '.join(map(str, sorted(months)))})"
    if kind < 0.45:
        op = rng.choice((">", ">="))
        return f"{var} {op} {_constant(prop, 1 - share)}"
    if kind < 0.6:
        op = rng.choice(("<", "<="))
        return rng.choice((f"{var} {op} {_constant(prop, share)}",
                           f"{_constant(prop, share)} {'>' if op == '<' else '>='} {var}"))
    if kind < 0.9:
        low = rng.uniform(0, 1 - share)
        return f"{var} >= {_constant(prop, low)} && {var} < {_constant(prop, low + share)}"
    if kind < 0.95:
        return f"datatype({var}) = xsd:{prop.datatype}"
    return f"{var} != {_constant(prop, rng.random())}"


def values_queries(n: int, seed: int = 0, pass_share: float = FILTER_PASS) -> list[dict]:
    """`n` queries over `values_publications`' classes, as ``rtf match`` query records.

    `pass_share`: the share of a class's values each query's first FILTER lets
    through (lower it as `n` grows to keep the matches per publication constant).
    """
    rng = random.Random(seed + 1)
    names = list(CLASSES)
    records = []
    for k in range(1, n + 1):
        cls = rng.choice(names)
        props = rng.sample(CLASSES[cls], rng.randint(1, min(3, len(CLASSES[cls]))))
        lines = [f"?s a dbo:{cls} ."]
        filters = []
        for j, prop in enumerate(props):
            var = f"?v{j}"
            lines.append(f"?s dbo:{prop.name} {var} .")
            if j == 0 or rng.random() < 0.3:  # one FILTER at least
                filters.append(_filter(var, prop, rng, pass_share if j == 0 else FILTER_PASS))
        if rng.random() < 0.15:
            lines.append("?s rdfs:label ?label .")
            filters.append(f'lang(?label) = "{rng.choice(LABEL_LANGUAGES)}"')
        if rng.random() < REGEX_SHARE:
            lines.append("?s rdfs:label ?name .")
            filters.append(f'regex(?name, "^{rng.choice(WORDS).title()} ", "i")')
        if rng.random() < WORD_SHARE:
            lines.append("?s dbo:abstract ?abstract .")
            filters.append(f'ftcontains(?abstract, "{rng.choice(WORDS)}")')
        body = " ".join(lines) + "".join(f" FILTER({f})" for f in filters)
        query = ("PREFIX dbo: <http://dbpedia.org/ontology/> "
                 "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> "
                 "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
                 f"SELECT ?s WHERE {{ {body} }}")
        records.append({"id": f"v{k}", "query": query})
    return records


def values_workload(publications: int, queries: int, seed: int = 0) -> tuple[list[Publication], list[dict]]:
    """Typed publications and value queries over them, both deterministic for `seed`."""
    return values_publications(publications, seed), values_queries(queries, seed)
