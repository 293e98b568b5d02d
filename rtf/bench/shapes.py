"""Shape families: the query shapes subscribers write, one workload each, for the shape matrix.

A benchmark the engine is tuned on stops measuring the engine (issue 43):
the project's own mixes were stars that project ``?s`` alone, and another
generator's stars that project their values ran 20 to 70 times slower. Each
family here is one shape people write, built independently of the other
mixes, and the shape matrix (``benchmarks/shape_matrix.py``,
docs/benchmarks.md) times each at 10K and 100K queries so that a weak family
shows at a glance: the cost of a publication should follow its matches
whatever their shape.

Every query is modelled on a publication of the DBpedia sample and takes
its predicates, classes, values and words from there, so they come with
their real frequencies (`rtf.bench.shape_sources`). Each family is matched
against the publications of its kind (``stream``): a value family against
whole DBpedia descriptions, the chains against multi-subject publications.

- ``value-star``: stars on ``?x`` that project their value variables, as
  ``SELECT ?x ?v0 ?v1 WHERE { ?x dbo:birthDate ?v0 . ?x dbo:deathDate ?v1 }``
  or ``SELECT ?x ?v0 WHERE { ?x a dbo:Company ; dbo:numberOfEmployees ?v0
  FILTER(?v0 <= 3511) }``: comparisons, ranges, ``IN``, ``||``, ``year()``,
  ``lang()``, one label word; some with no FILTER at all.
- ``chain``: ``?x p ?y . ?y q ?v`` projecting ``?v``, on multi-subject
  publications (a resource and the resources it names).
- ``multi-valued``: properties of several values with projected objects
  (``?x a ?t``, ``?x dbp:team <T> ; dbp:team ?other``, two of them at once).
- ``joined-filter``: a FILTER between two variables (``?v0 < ?v1``,
  ``str(?l) = str(?n)``, ``year(?d) - year(?b) > 60``, ``?a != ?b``).
- ``text-values``: full text and values on one subject
  (``ftcontains(?t, "airline") && ?v0 > 1000``).
- ``paper-dbpedia``: the RTF paper's workload (`rtf.bench.workload.Mix.paper`,
  FT_pr 0, 50 or 100 %) modelled on whole descriptions, so its predicates
  follow DBpedia's distribution rather than the sample's (see
  `rtf.bench.shape_sources`).
- ``rare-constants`` / ``frequent-constants``: stars with an IRI constant
  found in at most two publications, or in at least 1 % of them.

>>> from rtf.io.publication import Publication
>>> pub = Publication("http://dbpedia.org/resource/A", [
...     ("<http://dbpedia.org/resource/A>", "<http://purl.org/dc/terms/subject>", "<http://ex/c>"),
...     ("<http://dbpedia.org/resource/A>", "<http://dbpedia.org/ontology/numberOfEmployees>",
...      '"3511"^^<http://www.w3.org/2001/XMLSchema#nonNegativeInteger>')])
>>> [q["query"] for q in shape_queries([pub], "value-star", 1, seed=3)]
['PREFIX dbo: <http://dbpedia.org/ontology/> SELECT ?x ?v0 WHERE { ?x dbo:numberOfEmployees ?v0 . FILTER(?v0 >= 3511) }']
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rtf.bench.shape_sources import (
    ORDERED_KINDS,
    RDFS_LABEL,
    TEXT_PREDICATES,
    TYPE,
    MissingShapeError,
    ShapeSources,
    dbo_classes,
    multi_valued_predicates,
    own_triples,
    value_kind,
)
from rtf.io.publication import Publication
from rtf.query.terms import XSD, is_iri, is_literal, literal_parts
from rtf.query.text import words

PREFIXES = {"dbo": "http://dbpedia.org/ontology/", "dbp": "http://dbpedia.org/property/",
            "dbr": "http://dbpedia.org/resource/", "foaf": "http://xmlns.com/foaf/0.1/",
            "dct": "http://purl.org/dc/terms/", "geo": "http://www.w3.org/2003/01/geo/wgs84_pos#",
            "dt": "http://dbpedia.org/datatype/"}
#: Predeclared in the language (docs/language.md): never declared in a generated query.
_BUILT_IN = {"rdfs": "http://www.w3.org/2000/01/rdf-schema#", "xsd": XSD}
_LOCAL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
#: The share of value-star queries with no FILTER (the issue's ``?x dbo:date ?v0 . ?x dbo:year ?v1``).
NO_FILTER_SHARE = 0.15
#: The share of queries that also ask ``?x a C`` for a class of the modelled resource.
CLASS_SHARE = 0.4
#: The share of those classes that are the resource's most specific class.
SPECIFIC_CLASS_SHARE = 0.7


class QueryText:
    """A generated query in parts (patterns, FILTERs, projection), written as a user would:
    prefixed names where they fit, the prefixes it uses declared."""

    def __init__(self):
        self.patterns: list[str] = []
        self.filters: list[str] = []
        self.projected: list[str] = []
        self._prefixes: set[str] = set()

    def term(self, key: str, predicate: bool = False) -> str:
        """The SPARQL text of the term `key` (an N-Triples key)."""
        if predicate and key == TYPE:
            return "a"
        if is_iri(key):
            iri = key[1:-1]
            for prefix, ns in (*PREFIXES.items(), *_BUILT_IN.items()):
                if iri.startswith(ns) and _LOCAL.fullmatch(iri[len(ns):]):
                    if prefix in PREFIXES:
                        self._prefixes.add(prefix)
                    return f"{prefix}:{iri[len(ns):]}"
            return key
        if is_literal(key) and "^^<" in key:
            lexical, _, datatype = key.rpartition("^^")
            return f"{lexical}^^{self.term(datatype)}"
        return key  # a plain or tagged literal: N-Triples syntax is SPARQL syntax

    def pattern(self, s: str, p: str, o: str) -> None:
        """``s p o .``: variables as given, constants as N-Triples keys."""
        self.patterns.append(f"{self._part(s)} {self.term(p, predicate=True)} {self._part(o)} .")

    def _part(self, x: str) -> str:
        return x if x.startswith("?") else self.term(x)

    def project(self, *variables: str) -> None:
        self.projected.extend(v for v in variables if v not in self.projected)

    def text(self) -> str:
        prologue = "".join(f"PREFIX {p}: <{PREFIXES[p]}> " for p in sorted(self._prefixes))
        body = " ".join(self.patterns + [f"FILTER({f})" for f in self.filters])
        return f"{prologue}SELECT {' '.join(self.projected)} WHERE {{ {body} }}"


def _numeric(key: str) -> float | None:
    try:
        return float(literal_parts(key).lexical)
    except ValueError:
        return None


class ShapeBuilder:
    """Draws the queries of the shape families (one method each) from `sources` with `rng`."""

    def __init__(self, sources: ShapeSources, rng: random.Random, ft_pr: float = 0.5):
        self.s, self.rng, self.ft_pr = sources, rng, ft_pr
        self._same_type: dict[tuple[str, str], list[str]] = {}
        self._models: dict[str, list[Publication]] = {}
        self._tags: dict[str, list[str]] = {}
        self._paper = None

    # ------------------------------------------------------------ the parts

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def models(self, family: "ShapeFamily") -> list[Publication]:
        """The publications `family`'s queries are modelled on; `MissingShapeError` if none."""
        models = self._models.get(family.name)
        if models is None:
            models = self._models[family.name] = family.models(self)
            if not models:
                raise MissingShapeError(f"no publication has the {family.name} shape "
                                        f"({family.summary}): give publications that do")
        return models

    def model(self, family: "ShapeFamily") -> Publication:
        return self.rng.choice(self.models(family))

    def values_like(self, predicate: str, key: str) -> list[str]:
        """The values of `predicate` in the sample with the datatype (or tag) of `key`, with
        repetitions: a constant drawn from them comes with its real frequency."""
        parts = literal_parts(key)
        found = self._same_type.get((predicate, parts.datatype))
        if found is None:
            found = self._same_type[predicate, parts.datatype] = [
                v for v in self.s.values_of.get(predicate, ()) if literal_parts(v).datatype == parts.datatype
                and (value_kind(v) not in ORDERED_KINDS or self.order(v) is not None)] or [key]
        return found

    def tags_of(self, predicate: str) -> list[str]:
        """The language tags of `predicate`'s values in the sample, with repetitions."""
        found = self._tags.get(predicate)
        if found is None:
            found = self._tags[predicate] = [literal_parts(v).lang for v in self.s.values_of[predicate]
                                             if literal_parts(v).lang]
        return found

    @staticmethod
    def order(key: str):
        """A sort key of an ordered value (a number, or the lexical form of a date)."""
        kind = value_kind(key)
        return literal_parts(key).lexical if kind == "date" else _numeric(key)

    def constant(self, key: str, q: QueryText) -> str:
        """`key` written as the operand of a comparison on its kind (see `operand`)."""
        kind, lexical = value_kind(key), literal_parts(key).lexical
        if kind == "year":
            return str(int(lexical))
        if kind in ("number", "unit") and _NUMBER.fullmatch(lexical):
            return lexical
        if kind == "unit":
            return repr(float(lexical))
        return q.term(key)

    @staticmethod
    def operand(var: str, key: str) -> str:
        """What a comparison compares for a value of `key`'s kind: a gYear through its
        integer, a DBpedia unit datatype through its double (SPARQL orders neither)."""
        kind = value_kind(key)
        return {"year": f"xsd:integer(str({var}))", "unit": f"xsd:double(str({var}))"}.get(kind, var)

    def value_filter(self, var: str, predicate: str, key: str, q: QueryText) -> str | None:
        """A FILTER on `var`, the value `key` of `predicate` in the model, with constants
        drawn from the property's real values (None: nothing to compare on its kind)."""
        kind = value_kind(key)
        if kind in ORDERED_KINDS:
            return self.order_filter(var, predicate, key, q)
        if kind in ("tagged", "string"):
            ws = words(literal_parts(key).lexical)
            if kind == "tagged" and (not ws or self.chance(0.4)):
                return f'lang({var}) = "{self.rng.choice(self.tags_of(predicate))}"'
            return f'ftcontains({var}, "{self.rng.choice(ws)}")' if ws else None
        if kind == "boolean":
            return f"{var} = {literal_parts(key).lexical}"
        return None

    def order_filter(self, var: str, predicate: str, key: str, q: QueryText) -> str:
        """A comparison, a range, IN, ``||`` or ``year()`` on an ordered value."""
        pool = self.values_like(predicate, key)
        e = self.operand(var, key)
        a, b = sorted((self.rng.choice(pool), self.rng.choice(pool)), key=self.order)
        form = self.rng.random()
        years = sorted({y for y in map(year_of, (a, b)) if y is not None})
        if value_kind(key) == "date" and years and form < 0.25:
            if self.chance(0.5) and len(years) > 1:
                return f"year({var}) IN ({', '.join(map(str, years))})"
            return f"year({var}) {self.rng.choice(('<', '<=', '>', '>='))} {years[0]}"
        if form < 0.5:
            return f"{e} {self.rng.choice(('<', '<=', '>', '>='))} {self.constant(a, q)}"
        if form < 0.7:
            return f"{e} >= {self.constant(a, q)} && {e} <= {self.constant(b, q)}"
        if form < 0.85:
            chosen = sorted({key, a, b, self.rng.choice(pool)} if self.chance(0.5) else {a, b},
                            key=lambda v: (self.order(v), v))  # ties by key: no set order leaks in
            return f"{e} IN ({', '.join(self.constant(c, q) for c in chosen)})"
        return f"{e} < {self.constant(a, q)} || {e} > {self.constant(b, q)}"

    def maybe_class(self, q: QueryText, var: str, triples, share: float = CLASS_SHARE) -> None:
        """With probability `share`, ``var a C`` for a DBpedia class of `triples`: mostly the
        most specific one (the class fewest publications have, as people subscribe to
        dbo:Company rather than dbo:Agent), else any of them."""
        c = self.a_class(triples)
        if c is not None and self.chance(share):
            q.pattern(var, TYPE, c)

    def a_class(self, triples) -> str | None:
        classes = dbo_classes(triples)
        if not classes:
            return None
        if self.chance(SPECIFIC_CLASS_SHARE):
            counts = self.s.class_publications
            return min(classes, key=lambda c: (counts[c], c))
        return self.rng.choice(classes)

    def value_tuples(self, pub: Publication, ordered: bool = False) -> list[tuple[str, str, str]]:
        """The literal-valued tuples of `pub`'s subject other than long texts, one per
        predicate (the first); `ordered`: only those a comparison orders."""
        out, seen = [], set()
        for t in own_triples(pub):
            if is_literal(t[2]) and t[1] not in TEXT_PREDICATES and t[1] not in seen:
                if not ordered or (value_kind(t[2]) in ORDERED_KINDS and self.order(t[2]) is not None):
                    seen.add(t[1])
                    out.append(t)
        return out

    # ------------------------------------------------------------ the families

    def value_star(self, family: "ShapeFamily") -> str:
        pub = self.model(family)
        q = QueryText()
        q.project("?x")
        self.maybe_class(q, "?x", own_triples(pub))
        ordered = self.value_tuples(pub, ordered=True)
        others = [t for t in self.value_tuples(pub) if t not in ordered]
        chosen = [self.rng.choice(ordered)]
        pool = [t for t in ordered + others if t not in chosen]
        chosen += self.rng.sample(pool, min(len(pool), self.rng.randint(0, 2)))
        filtered = not self.chance(NO_FILTER_SHARE)
        for i, (_, p, o) in enumerate(chosen):
            var = f"?v{i}"
            q.pattern("?x", p, var)
            q.project(var)
            if filtered and (i == 0 or self.chance(0.3)):
                f = self.value_filter(var, p, o, q)
                if f:
                    q.filters.append(f)
        return q.text()

    def chain(self, family: "ShapeFamily") -> str:
        pub = self.model(family)
        _, p, neighbour = self.rng.choice(self.s.links(pub))
        theirs = [t for t in pub.triples if t[0] == neighbour]
        q = QueryText()
        q.project("?x")
        self.maybe_class(q, "?x", own_triples(pub), 0.3)
        q.pattern("?x", p, "?y")
        self.maybe_class(q, "?y", theirs)
        valued = [t for t in theirs if is_literal(t[2])] or [t for t in theirs if t[1] != TYPE] or theirs
        _, p2, value = self.rng.choice(valued)
        q.pattern("?y", p2, "?v")
        q.project("?v", *(["?y"] if self.chance(0.5) else []))
        if is_literal(value) and self.chance(0.7):
            f = self.value_filter("?v", p2, value, q)
            if f:
                q.filters.append(f)
        mine = self.value_tuples(pub)
        if mine and self.chance(0.3):  # a value of the first subject too
            _, p3, _ = self.rng.choice(mine)
            q.pattern("?x", p3, "?w")
            q.project("?w")
        return q.text()

    def multi_valued(self, family: "ShapeFamily") -> str:
        pub = self.model(family)
        own = own_triples(pub)
        several = multi_valued_predicates(own)
        p = self.rng.choice(several)
        values = [t[2] for t in own if t[1] == p]
        q = QueryText()
        q.project("?x")
        form = self.rng.random()
        if form < 0.35:  # each value of a property of several values (several starring)
            if p != TYPE:
                self.maybe_class(q, "?x", own)
            else:  # each type of the members of a class, not of everything
                c = self.a_class(own) or self.rng.choice(values)
                q.pattern("?x", TYPE, c)
                q.filters.append(f"?o != {q.term(c)}")
            q.pattern("?x", p, "?o")
        elif form < 0.7 and any(is_iri(v) for v in values):  # the others beside a constant one
            c = self.rng.choice([v for v in values if is_iri(v)])
            q.pattern("?x", p, c)
            q.pattern("?x", p, "?o")
            q.filters.append(f"?o != {q.term(c)}")
        elif form < 0.85:  # the types of the resources that have a constant value or class
            anchor = self.rng.choice([t for t in own if is_iri(t[2])])
            q.pattern("?x", anchor[1], anchor[2])
            q.pattern("?x", TYPE, "?o")
            if anchor[1] == TYPE:
                q.filters.append(f"?o != {q.term(anchor[2])}")
        elif len(several) > 1:  # two properties of several values: their values' product
            q.pattern("?x", p, "?o")
            q.pattern("?x", self.rng.choice([x for x in several if x != p]), "?o2")
            q.project("?o", "?o2")
        else:
            q.pattern("?x", p, "?o")
        q.project("?o")
        return q.text()

    def joined_filter(self, family: "ShapeFamily") -> str:
        pub = self.model(family)
        (p0, v0), (p1, v1) = self.rng.choice(joinable_pairs(pub))
        q = QueryText()
        q.project("?x", "?v0", "?v1")
        self.maybe_class(q, "?x", own_triples(pub))
        q.pattern("?x", p0, "?v0")
        q.pattern("?x", p1, "?v1")
        kind = value_kind(v0)
        if kind is None or kind in ("tagged", "string"):  # IRIs, or texts through str()
            e0, e1 = ("?v0", "?v1") if kind is None else ("str(?v0)", "str(?v1)")
            holds = (v0 == v1) if kind is None else lexical_of(v0) == lexical_of(v1)
            op = "=" if holds == self.chance(0.75) else "!="
            q.filters.append(f"{e0} {op} {e1}")
        elif kind == "date" and None not in (year_of(v0), year_of(v1)) and self.chance(0.3):
            gap = year_of(v1) - year_of(v0)  # an expression over both: a lifespan, a duration
            q.filters.append(f"year(?v1) - year(?v0) {'>=' if self.chance(0.75) else '<'} {gap}")
        else:
            a, b = self.order(v0), self.order(v1)
            ops = [op for op, holds in (("<", a < b), ("<=", a <= b), (">", a > b), (">=", a >= b),
                                       ("!=", a != b), ("=", a == b))
                   if holds == self.chance(0.75)] or ["!="]
            q.filters.append(f"{self.operand('?v0', v0)} {self.rng.choice(ops)} {self.operand('?v1', v1)}")
        return q.text()

    def text_values(self, family: "ShapeFamily") -> str:
        pub = self.model(family)
        own = own_triples(pub)
        texts = [t for t in own if is_literal(t[2]) and (t[1] in TEXT_PREDICATES or t[1] == RDFS_LABEL)
                 and words(lexical_of(t[2]))]
        _, tp, text = self.rng.choice(texts)
        q = QueryText()
        q.project("?x")
        self.maybe_class(q, "?x", own)
        q.pattern("?x", tp, "?t")
        ws = sorted(set(words(lexical_of(text))))
        df = self.s.word_publications
        # one or two of its words, rarer ones more often (as people search for what is specific)
        chosen = self.rng.sample(ws, min(len(ws), self.rng.randint(1, 2)))
        chosen.sort(key=lambda w: (df[w], w))
        ft = f"ftcontains(?t, {' ftand '.join(f'{chr(34)}{w}{chr(34)}' for w in chosen)})"
        ordered = self.value_tuples(pub, ordered=True)
        conditions = [ft]
        for i, (_, p, o) in enumerate(self.rng.sample(ordered, min(len(ordered), self.rng.randint(1, 2)))):
            q.pattern("?x", p, f"?v{i}")
            q.project(f"?v{i}")
            conditions.append(self.order_filter(f"?v{i}", p, o, q))
        if self.chance(0.5):
            q.filters.append(" && ".join(f"({c})" if "||" in c else c for c in conditions))
        else:
            q.filters.extend(conditions)
        return q.text()

    def paper_dbpedia(self, family: "ShapeFamily") -> str:
        if self._paper is None:
            from rtf.bench.workload import Mix, Vocabulary, _Builder
            self._paper = _Builder(Vocabulary(self.models(family)), self.rng, Mix.paper(self.ft_pr))
        return self._paper.query()

    def constants_star(self, family: "ShapeFamily", rare: bool) -> str:
        pub = self.model(family)
        own = own_triples(pub)
        constants = self.s.constants(pub, rare)
        chosen = [self.rng.choice(constants)]
        if not rare and len(constants) > 1 and self.chance(0.5):
            chosen.append(self.rng.choice([t for t in constants if t[1] != chosen[0][1]] or constants))
        q = QueryText()
        q.project("?x")
        for _, p, o in dict.fromkeys(chosen):
            q.pattern("?x", p, o)
        used = {t[1] for t in chosen}
        others = sorted({t[1] for t in own if t[1] not in used and t[1] != TYPE})
        for i, p in enumerate(self.rng.sample(others, min(len(others), self.rng.randint(1, 2)))):
            q.pattern("?x", p, f"?o{i}")
            q.project(f"?o{i}")
        return q.text()


def lexical_of(key: str) -> str:
    return literal_parts(key).lexical


def year_of(key: str) -> int | None:
    """The year of a date's lexical form (None if it does not start with one)."""
    head = lexical_of(key)[:4]
    return int(head) if head.isdigit() else None


def joinable_pairs(pub: Publication) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Pairs of (predicate, value) of `pub`'s subject that a FILTER can compare: two values
    of one ordered kind (and datatype), two texts, or two IRIs of different predicates."""
    own = [t for t in own_triples(pub) if t[1] not in TEXT_PREDICATES and t[1] != TYPE]
    pairs = []
    for i, (_, p0, v0) in enumerate(own):
        for _, p1, v1 in own[i + 1:]:
            if p0 == p1 or is_iri(v0) != is_iri(v1) or not (is_iri(v0) or is_literal(v0)):
                continue
            if is_literal(v0):
                k0, k1 = value_kind(v0), value_kind(v1)
                same = (k0 in ORDERED_KINDS and k0 == k1 and ShapeBuilder.order(v0) is not None
                        and literal_parts(v0).datatype == literal_parts(v1).datatype)
                texts = k0 in ("tagged", "string") and k1 in ("tagged", "string")
                if not (same or texts):
                    continue
                if texts:
                    v0, v1 = sorted((v0, v1))  # typed the same way for value_kind below
            pairs.append(((p0, v0), (p1, v1)))
    return pairs


@dataclass(frozen=True)
class ShapeFamily:
    """One shape: its name, what it is, the publications its queries are modelled on
    (`models`) and those it is matched against (`stream`), and how a query is drawn."""

    name: str
    summary: str
    models: "object"   # ShapeBuilder -> list[Publication]
    stream: "object"   # ShapeSources -> list[Publication]
    draw: "object"     # (ShapeBuilder, ShapeFamily) -> query text

    def query(self, builder: ShapeBuilder) -> str:
        return self.draw(builder, self)


def _ordered_descriptions(b: ShapeBuilder) -> list[Publication]:
    return [p for p in b.s.descriptions if b.value_tuples(p, ordered=True)]


def _text_and_values(b: ShapeBuilder) -> list[Publication]:
    return [p for p in _ordered_descriptions(b)
            if any(is_literal(t[2]) and (t[1] in TEXT_PREDICATES or t[1] == RDFS_LABEL)
                   and words(lexical_of(t[2])) for t in own_triples(p))]


def _descriptions(s: ShapeSources) -> list[Publication]:
    return s.descriptions


FAMILIES: dict[str, ShapeFamily] = {f.name: f for f in (
    ShapeFamily("value-star", "stars projecting their value variables, FILTERs on constants",
                _ordered_descriptions, _descriptions, ShapeBuilder.value_star),
    ShapeFamily("chain", "?x p ?y . ?y q ?v projecting ?v, on multi-subject publications",
                lambda b: b.s.linked, lambda s: s.linked, ShapeBuilder.chain),
    ShapeFamily("multi-valued", "properties of several values, their objects projected",
                lambda b: b.s.multi_valued, lambda s: s.multi_valued, ShapeBuilder.multi_valued),
    ShapeFamily("joined-filter", "a FILTER between two variables of the query",
                lambda b: [p for p in b.s.descriptions if joinable_pairs(p)], _descriptions,
                ShapeBuilder.joined_filter),
    ShapeFamily("text-values", "full text and values on one subject",
                _text_and_values, _descriptions, ShapeBuilder.text_values),
    ShapeFamily("paper-dbpedia", "the RTF paper's mix modelled on whole DBpedia descriptions",
                lambda b: b.s.descriptions, _descriptions, ShapeBuilder.paper_dbpedia),
    ShapeFamily("rare-constants", "stars with an IRI constant found in at most 2 publications",
                lambda b: b.s.with_rare_constants, lambda s: s.with_rare_constants,
                lambda b, f: b.constants_star(f, rare=True)),
    ShapeFamily("frequent-constants", "stars with IRI constants found in at least 1 % of the publications",
                lambda b: b.s.with_frequent_constants, lambda s: s.with_frequent_constants,
                lambda b, f: b.constants_star(f, rare=False)),
)}


def _sources(publications: ShapeSources | Sequence[Publication]) -> ShapeSources:
    return publications if isinstance(publications, ShapeSources) else ShapeSources(publications)


def shape_queries(publications: ShapeSources | Sequence[Publication], family: str, n: int,
                  seed: int = 0, ft_pr: float = 0.5, prefix: str | None = None) -> list[dict]:
    """`n` query records {"id", "query", "subscriber"} of the shape `family` (a name of
    `FAMILIES`), deterministic for `seed`; `ft_pr` is paper-dbpedia's FT_pr (0 to 1)."""
    shape = FAMILIES[family]
    builder = ShapeBuilder(_sources(publications), random.Random(f"{family}-{seed}"), ft_pr)
    prefix = f"{family}-" if prefix is None else prefix
    return [{"id": f"{prefix}{i}", "query": shape.query(builder), "subscriber": f"user{i % 97}"}
            for i in range(1, n + 1)]


def shape_stream(publications: ShapeSources | Sequence[Publication], family: str) -> list[Publication]:
    """The publications the shape `family` is matched against (see the module docstring)."""
    shape = FAMILIES[family]
    stream = shape.stream(_sources(publications))
    if not stream:
        raise MissingShapeError(f"no publication to match the {family} queries against "
                                f"({shape.summary}): give publications that have its shape")
    return stream


def write_nquads(publications: Sequence[Publication], path) -> int:
    """Write `publications` as N-Quads, each in a named graph of its id (so a publication of
    several subjects stays one: ``rtf match --group-by graph``); the number written."""
    from rtf.io.files import atomic_output

    with atomic_output(path) as f:  # a failed run leaves an existing file as it was
        for pub in publications:
            graph = f"<{pub.id}>"
            f.writelines(f"{s} {p} {o} {graph} .\n" for s, p, o in pub.triples)
    return len(publications)
