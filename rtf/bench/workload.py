"""Query workloads generated from publications, as in the RTF paper's section 4.

Queries are built from the classes and properties that occur in the given
publications: at most `max_tuples` tuples each, star-shaped around a
subject variable, some with constant objects; each literal-valued tuple
carries a full-text constraint with probability `ft_pr`, made of 1-3
conjunctive terms drawn from the *multiset* of words of the publications'
text (frequency-weighted, as the paper did). A `Mix` adds the other
operators (phrases, ftnear, ftor, ftnot, prefix terms, wildcards, value
filters, taxonomy paths) with chosen probabilities.

Each query is modelled on one publication picked at random, so that its
structure occurs in the data; its words come from the whole vocabulary, so
most full-text constraints still fail, as in the paper. With
``distinct_predicates`` a query asks for distinct properties (``rtf bench``
sets it): otherwise ``?s p ?o1 . ?s p ?o2 . ?s p ?o3`` on a property with
many values has the cube of those values as solutions. Generation is
deterministic for a seed. The tests, ``rtf gen-queries`` and ``rtf bench``
all use this one generator.

That paper workload is unselective: on the DBpedia sample about 11 % of
the queries match each publication, so per-match work hides the index.
`Mix.selective` (``rtf gen-queries --selective``, ``rtf bench --mix
selective``) models subscriptions as people write them: each query is
modelled on a publication that has a class and asks ``?s a C`` for its
most specific class (the one fewest publications have) plus 1-3 tuples
on other, distinct properties; an IRI object is a constant half of the
time; each literal-valued tuple carries, with probability FT_pr, 1-3
conjunctive words of *its own* text that occur in at most
`COMMON_WORD_SHARE` (1 %) of the publications (else the rarest word not
yet in the constraint; no word twice). A query with a full-text
constraint thus matches its source publication and a few similar ones; one without matches the members of a
class that have its properties. On the DBpedia sample about 2 % of the
queries match a publication at FT_pr = 50 % (docs/benchmarks.md).

>>> from rtf.io.publication import Publication
>>> pub = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"rio games"')])
>>> qs = generate_queries([pub], 2, seed=1, mix=Mix(ft_pr=1.0))
>>> [q["id"] for q in qs]
['g1', 'g2']
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property

from rtf.bench.sparql11_workload import Version3Builder
from rtf.io.publication import Publication
from rtf.query.terms import (
    RDF_TYPE,
    XSD,
    is_iri,
    is_literal,
    lexical_form,
    literal_parts,
)
from rtf.query.text import words

_TYPE = f"<{RDF_TYPE}>"
RDFS_SUBCLASS_OF = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
#: A word in more than this share of the publications is not informative (selective mix).
COMMON_WORD_SHARE = 0.01
#: The full-text mix draws no word found in more than this share of the publications.
FULLTEXT_WORD_SHARE = 0.05
#: The selective mix keeps an IRI object as a constant with this probability.
SELECTIVE_CONSTANT = 0.5
_NUMERIC = {XSD + t for t in ("integer", "decimal", "double", "float", "int", "long",
                              "nonNegativeInteger", "positiveInteger", "date", "dateTime", "gYear")}


@dataclass
class Mix:
    """Probabilities of each feature in generated queries (0 disables it)."""

    ft_pr: float = 0.5        # a literal-valued tuple carries ftcontains
    max_tuples: int = 4
    max_terms: int = 3        # conjunctive terms in one full-text constraint
    constant: float = 0.2     # a non-literal object is a constant from the data
    phrase: float = 0.0       # a term is a two-word phrase from a real text
    near: float = 0.0         # two terms joined by ftnear instead of ftand
    ftor: float = 0.0         # two terms joined by ftor
    ftnot: float = 0.0        # one term negated
    prefix: float = 0.0       # a term becomes a prefix term
    wildcard: float = 0.0     # a predicate or object becomes *
    value_filter: float = 0.0  # a comparison filter on a typed literal
    taxonomy: float = 0.0     # the type tuple uses a/rdfs:subClassOf* on a superclass
    local_words: float = 0.0  # a term is drawn from the modelled publication's own text
    # the query's tuples have distinct predicates (rdf:type aside): no ?s p ?o1 . ?s p ?o2,
    # whose solutions are the cross product of a multi-valued property's values
    distinct_predicates: float = 0.0
    # the query projects all its variables; otherwise only the resource ?s, which is
    # what a subscriber to a stream of resources asks for
    project_all: float = 0.0
    # the query is modelled on a typed publication and asks ?s a C for its rarest class
    # (the most specific one), plus 0 to max_tuples-1 other tuples
    rare_class: float = 0.0
    # a term is an informative word of the tuple's own text: one in at most
    # COMMON_WORD_SHARE of the publications (else the text's rarest word)
    informative_words: float = 0.0
    # the query is full text alone: one tuple ?s p ?o (p the predicate of a literal of
    # the modelled publication) and its ftcontains, as a search engine's stored queries
    fulltext_only: float = 0.0
    # words found in more than this share of the publications are never drawn
    # (1.0: any word; the multiset's Zipf law then favours stop words)
    max_word_share: float = 1.0
    # the query becomes a SPARQL 1.1 query beyond the version-2 fragment (aggregates,
    # paths, MINUS, EXISTS, BIND, VALUES, sub-queries, CONSTRUCT...) built around its star
    # (rtf.bench.sparql11_workload); the other queries are as the mix makes them
    v3_share: float = 0.0

    @classmethod
    def paper(cls, ft_pr: float = 0.5) -> "Mix":
        """The RTF paper's workload (``rtf bench``, ``rtf gen-queries``): conjunctive terms
        only, distinct properties per query."""
        return cls(ft_pr=ft_pr, distinct_predicates=1.0)

    @classmethod
    def selective(cls, ft_pr: float = 0.5) -> "Mix":
        """A selective paper-style workload (``--selective``), as real subscriptions are.

        Star queries of 1-4 tuples with distinct properties, always with
        ``?s a C`` on the modelled publication's most specific class, IRI
        objects kept as constants half of the time, and 1-3 conjunctive
        informative words of the tuple's own text: a query matches its
        source publication and a few similar ones. On the DBpedia sample
        about 1.5 % of the queries match a publication (docs/benchmarks.md).
        """
        return cls(ft_pr=ft_pr, distinct_predicates=1.0, rare_class=1.0, informative_words=1.0,
                   constant=SELECTIVE_CONSTANT)

    @classmethod
    def sparql11(cls, ft_pr: float = 0.5, v3_share: float = 0.2) -> "Mix":
        """The selective workload with `v3_share` of its queries made version-3 queries
        (``--mix sparql11``) around their star, so they stay as selective
        (`rtf.bench.sparql11_workload`); at ``v3_share = 0`` the selective queries themselves."""
        mix = cls.selective(ft_pr)
        mix.v3_share = v3_share
        return mix

    @classmethod
    def fulltext(cls, ft_pr: float = 1.0) -> "Mix":
        """Full-text-only queries (``--mix fulltext``), as Lucene Monitor stores them.

        ``?s p ?o FILTER ftcontains(?o, ...)`` with 1-3 terms, joined by ftand
        mostly, some ftor and ftnear; some two-word phrases of a real text and
        some prefix terms. Words are drawn from the multiset of the
        publications' words (a Zipf law), leaving out those found in more than
        `FULLTEXT_WORD_SHARE` of the publications, so that about 1.5 % of the
        queries match each DBpedia abstract (docs/benchmarks.md). `ft_pr` is
        not used: every query is full text.
        """
        return cls(ft_pr=1.0, max_tuples=1, phrase=0.15, near=0.1, ftor=0.15, prefix=0.1,
                   fulltext_only=1.0, max_word_share=FULLTEXT_WORD_SHARE)

    @classmethod
    def all_operators(cls, ft_pr: float = 0.5) -> "Mix":
        """Every operator switched on, for differential testing."""
        return cls(ft_pr=ft_pr, phrase=0.2, near=0.2, ftor=0.2, ftnot=0.15, prefix=0.15,
                   wildcard=0.15, value_filter=0.2, taxonomy=0.3, local_words=0.5,
                   project_all=0.3)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


class Vocabulary:
    """What queries are built from: publications, text words as a multiset.

    The selective mix also needs, computed on first use: how many
    publications each word and each class occurs in, and the publications
    that have a class.
    """

    def __init__(self, publications: Iterable[Publication], taxonomy=None):
        self.publications: list[Publication] = []
        self.word_multiset: list[str] = []
        for pub in publications:
            self.publications.append(pub)
            for o in pub.literals():
                ws = words(lexical_form(o))
                self.word_multiset.extend(ws)
        self.taxonomy = taxonomy
        self._within: dict[float, list[str]] = {}
        if not self.publications:
            raise ValueError("no publications to build queries from")

    @cached_property
    def word_publications(self) -> Counter:
        """word -> number of publications whose text has it (document frequency)."""
        return document_frequencies(self.publications)

    def words_within(self, share: float) -> list[str]:
        """The word multiset without the words found in more than `share` of the publications."""
        if share >= 1.0:
            return self.word_multiset
        found = self._within.get(share)
        if found is None:
            limit = share * len(self.publications)
            df = self.word_publications
            found = self._within[share] = [w for w in self.word_multiset if df[w] <= limit]
        return found

    @cached_property
    def common_word_limit(self) -> float:
        """A word in more publications than this is too common to make a query selective."""
        return COMMON_WORD_SHARE * len(self.publications)

    @cached_property
    def class_publications(self) -> Counter:
        """class -> number of publications typed with it."""
        return Counter(o for pub in self.publications for o in {t[2] for t in pub.triples if t[1] == _TYPE})

    @cached_property
    def class_members(self) -> dict[str, "ClassMembers"]:
        """class -> its publications' properties: how many of its members (publications
        whose main subject has the class) have each, about that subject."""
        out: dict[str, ClassMembers] = {}
        for pub in self.publications:
            own = _own_triples(pub)
            predicates = {t[1] for t in own if t[1] != _TYPE}
            for _, _, cls in _class_tuples(own):
                members = out.get(cls)
                if members is None:
                    members = out[cls] = ClassMembers()
                members.count += 1
                members.properties.update(predicates)
        return out

    @cached_property
    def predicate_publications(self) -> Counter:
        """predicate -> number of publications that use it about their main subject."""
        return Counter(p for pub in self.publications for p in {t[1] for t in _own_triples(pub)})

    @cached_property
    def predicate_objects(self) -> dict[str, list[str]]:
        """predicate -> the IRIs it has as objects, sorted, each once."""
        return {p: sorted(set(os)) for p, os in objects_by_predicate(self.publications, is_iri).items()}

    @cached_property
    def typed_publications(self) -> list[Publication]:
        """The publications whose main subject has a class, in input order."""
        return [pub for pub in self.publications if _class_tuples(_own_triples(pub))]


@dataclass
class ClassMembers:
    """The publications of one class: how many, and how many have each property."""

    count: int = 0
    properties: Counter = field(default_factory=Counter)


def document_frequencies(publications: Iterable[Publication]) -> Counter:
    """word -> the number of `publications` whose text (literals) has it."""
    df: Counter = Counter()
    for pub in publications:
        df.update({w for o in pub.literals() for w in words(lexical_form(o))})
    return df


def objects_by_predicate(publications: Iterable[Publication], keep) -> dict[str, list[str]]:
    """predicate -> its objects in `publications` for which `keep(object)` holds, one entry
    per occurrence, in input order."""
    found: dict[str, list[str]] = {}
    for pub in publications:
        for _, p, o in pub.triples:
            if keep(o):
                found.setdefault(p, []).append(o)
    return found


def _own_triples(pub: Publication) -> list[tuple[str, str, str]]:
    """The triples about the publication's first subject (all of them if none)."""
    subject = pub.triples[0][0]
    return [t for t in pub.triples if t[0] == subject] or list(pub.triples)


def _class_tuples(triples: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [t for t in triples if t[1] == _TYPE and is_iri(t[2])]


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


class _Builder:
    def __init__(self, vocab: Vocabulary, rng: random.Random, mix: Mix):
        self.v, self.rng, self.mix = vocab, rng, mix

    def chance(self, p: float) -> bool:
        return p > 0 and self.rng.random() < p

    def word(self, local: list[str], used: set[str]) -> str:
        if local and self.chance(self.mix.informative_words):
            return self.informative_word(local, used)
        if local and self.chance(self.mix.local_words):
            return self.rng.choice(local)
        pool = self.v.words_within(self.mix.max_word_share)
        if pool:
            return self.rng.choice(pool)
        return "rio"

    def informative_word(self, local: list[str], used: set[str]) -> str:
        """A word of `local` found in few publications and not in `used` (the constraint's
        other words), else the rarest word of `local`; it is added to `used`."""
        df, limit = self.v.word_publications, self.v.common_word_limit
        fresh = {w for w in local if w not in used} or set(local)
        candidates = sorted(w for w in fresh if df[w] <= limit)  # sorted: sets vary by hash seed
        chosen = self.rng.choice(candidates) if candidates else min(fresh, key=lambda w: (df[w], w))
        used.add(chosen)
        return chosen

    def term(self, local: list[str], used: set[str]) -> str:
        if local and len(local) > 1 and self.chance(self.mix.phrase):
            i = self.rng.randrange(len(local) - 1)
            return f'"{local[i]} {local[i + 1]}"'
        w = self.word(local, used)
        if len(w) > 3 and self.chance(self.mix.prefix):
            return f'"{w[: self.rng.randint(2, len(w) - 1)]}*"'
        return f'"{w}"'

    def fulltext(self, local: list[str]) -> str:
        n = self.rng.randint(1, self.mix.max_terms)
        if self.mix.informative_words > 0 and local:  # informative words do not repeat
            n = min(n, len(set(local)))
        used: set[str] = set()
        parts = [self.term(local, used) for _ in range(n)]
        expr = parts[0]
        for i in range(1, n):
            p = parts[i]
            if self.chance(self.mix.near):
                a = self.rng.randint(0, 4)
                b = a + self.rng.randint(0, 4)
                opt = ", unordered" if self.chance(0.3) else ""
                near = f"({parts[i - 1]} ftnear({a}, {b}{opt}) {p})"
                expr = near if i == 1 else f"{expr} ftand {near}"
            elif self.chance(self.mix.ftor):
                expr = f"({expr} ftor {p})"
            elif self.chance(self.mix.ftnot):
                expr = f"{expr} ftand ftnot {p}"
            else:
                expr = f"{expr} ftand {p}"
        return expr

    def pick(self, triples: list, k: int) -> list:
        """`k` of `triples` at random (fewer if distinct properties run out)."""
        if not self.chance(self.mix.distinct_predicates):
            return self.rng.sample(triples, k)
        chosen, seen = [], set()
        for t in self.rng.sample(triples, len(triples)):
            if len(chosen) == k:
                break
            if t[1] == _TYPE or t[1] not in seen:
                seen.add(t[1])
                chosen.append(t)
        return chosen

    def rarest_class(self, own: list) -> tuple[str, str, str] | None:
        """The type tuple of `own` whose class has the fewest publications, if any."""
        classes = _class_tuples(own)
        counts = self.v.class_publications
        return min(classes, key=lambda t: (counts[t[2]], t[2])) if classes else None

    def fulltext_query(self) -> "Star":
        """One tuple ``?s p ?o`` on a literal of a random publication, and its ftcontains."""
        pub = self.rng.choice(self.v.publications)
        literals = [t for t in pub.triples if is_literal(t[2]) and words(lexical_form(t[2]))]
        if not literals:  # a publication without text: any word of the vocabulary
            predicate, local, source = "*", [], None
        else:
            source = self.rng.choice(literals)
            predicate, local = source[1], words(lexical_form(source[2]))
        return Star(pub, [StarTuple(predicate, "?o", source)],
                    [f"FILTER ftcontains(?o, {self.fulltext(local)})"], ["?s"], dots=False)

    def query(self) -> str:
        return self.star().text()

    def star(self) -> "Star":
        """The next query of the mix, as its parts (`Star`)."""
        if self.chance(self.mix.fulltext_only):
            return self.fulltext_query()
        models = self.v.publications
        if self.mix.rare_class > 0 and self.v.typed_publications:
            models = self.v.typed_publications
        pub = self.rng.choice(models)
        own = _own_triples(pub)
        k = self.rng.randint(1, min(self.mix.max_tuples, len(own)))
        typed = self.rarest_class(own) if self.chance(self.mix.rare_class) else None
        if typed is not None:
            # the class and 1 to max_tuples-1 other properties: ?s a C alone would ask
            # for a whole class, a firehose rather than a subscription
            others = [t for t in own if t[1] != _TYPE]
            if others and self.mix.max_tuples > 1:
                k = 1 + self.rng.randint(1, min(self.mix.max_tuples - 1, len(others)))
            chosen = [typed] + self.pick(others, min(k - 1, len(others)))
        else:
            chosen = self.pick(own, k)
        tuples, filters = [], []
        var = 0
        for t in chosen:
            s, p, o = t
            var += 1
            pred = p
            if p == _TYPE:
                if self.v.taxonomy is not None and is_iri(o) and self.chance(self.mix.taxonomy):
                    ancestors = sorted(self.v.taxonomy.ancestors_or_self(o))
                    tuples.append(StarTuple(f"a/<{RDFS_SUBCLASS_OF}>*", self.rng.choice(ancestors), t))
                else:
                    tuples.append(StarTuple("a", o, t))
                continue
            if self.chance(self.mix.wildcard):
                pred = "*"
            if is_literal(o):
                obj = f"?o{var}"
                parts = literal_parts(o)
                if self.chance(self.mix.ft_pr):
                    local = words(parts.lexical)
                    filters.append(f"FILTER ftcontains({obj}, {self.fulltext(local)})")
                elif parts.datatype in _NUMERIC and self.chance(self.mix.value_filter):
                    op = self.rng.choice(["<", "<=", ">", ">=", "=", "!="])
                    filters.append(f'FILTER ({obj} {op} "{_esc(parts.lexical)}"^^<{parts.datatype}>)')
                elif parts.lang and self.chance(self.mix.value_filter):
                    filters.append(f'FILTER (lang({obj}) = "{parts.lang}")')
            elif is_iri(o) and self.chance(self.mix.constant):
                obj = o  # an IRI only: a blank node in a query is a variable, not a constant
            elif self.chance(self.mix.wildcard) and pred != "*":
                obj = "*"
            else:
                obj = f"?o{var}"
            tuples.append(StarTuple(pred, obj, t))
        star = Star(pub, tuples, filters, ["?s"])
        if self.chance(self.mix.project_all):
            star.projected = sorted({w for t in tuples for w in t.text().split() if w.startswith("?")})
        return star


@dataclass
class StarTuple:
    """One tuple ``?s predicate object .`` of a generated query, as written (the predicate
    may be ``a``, ``*`` or the taxonomy path; the object a constant, ``?oN`` or ``*``),
    and the triple of the modelled publication it was made from (None: any word)."""

    predicate: str
    object: str
    source: tuple[str, str, str] | None

    def text(self) -> str:
        return f"?s {self.predicate} {self.object} ."

    @property
    def is_type(self) -> bool:
        return self.source is not None and self.source[1] == _TYPE


@dataclass
class Star:
    """A generated query in parts: a star of tuples about ``?s`` modelled on one
    publication, its FILTERs and its projection (`text` is the query)."""

    publication: Publication
    tuples: list[StarTuple]
    filters: list[str]
    projected: list[str]
    dots: bool = True  # each tuple ends with " ." (the full-text mix writes none)

    def where(self) -> str:
        """The group's body: the tuples, then the FILTERs."""
        tuples = [t.text() if self.dots else t.text()[:-2] for t in self.tuples]
        return " ".join(tuples + self.filters)

    def text(self) -> str:
        return f"SELECT {' '.join(self.projected)} WHERE {{ {self.where()} }}"


#: The named workloads of ``rtf bench --mix`` (each a function of FT_pr from 0 to 1).
MIXES = {"paper": Mix.paper, "selective": Mix.selective, "fulltext": Mix.fulltext,
         "sparql11": Mix.sparql11}


def named_mix(name: str, ft_pr: float) -> Mix:
    """The workload `name` of `MIXES` at FT_pr = `ft_pr` (0 to 1)."""
    return MIXES[name](ft_pr)


def generate_queries(publications: Sequence[Publication] | Vocabulary, n: int, seed: int = 0,
                     mix: Mix | None = None, taxonomy=None, prefix: str = "g") -> list[dict]:
    """`n` query records {"id", "query", "subscriber"}, deterministic for `seed`."""
    return list(iter_queries(publications, n, seed, mix, taxonomy, prefix))


def iter_queries(publications: Sequence[Publication] | Vocabulary, n: int, seed: int = 0,
                 mix: Mix | None = None, taxonomy=None, prefix: str = "g") -> Iterator[dict]:
    """`generate_queries`' records one at a time, so that a file of ten million is written
    without holding them all (`rtf gen-queries`)."""
    vocab = publications if isinstance(publications, Vocabulary) else Vocabulary(publications, taxonomy)
    mix = mix or Mix()
    builder = _Builder(vocab, random.Random(seed), mix)
    if mix.v3_share > 0:
        # the same base queries as at v3_share = 0, a share of them made version 3
        make = Version3Builder(builder, seed).query
    else:
        make = builder.query
    for i in range(1, n + 1):
        yield {"id": f"{prefix}{i}", "query": make(), "subscriber": f"user{i % 97}"}


def write_jsonl(records: Iterable[dict], path) -> int:
    from rtf.io.files import atomic_output

    n = 0
    with atomic_output(path) as f:  # a failed run leaves an existing file as it was
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
    return n
