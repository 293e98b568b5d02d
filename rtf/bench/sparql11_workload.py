"""The ``sparql11`` mix: selective subscriptions, a share of them SPARQL 1.1 queries (version 3).

Language version 3 (spec section 5) takes any SPARQL 1.1 query; the
indexes find one by the triple patterns it requires
(`rtf.algebra.presearch`) and its algebra decides for those candidates
only. This workload measures what that costs on DBpedia-shaped
subscriptions. The base queries are the selective mix's
(`rtf.bench.workload.Mix.selective`: ``?s a C`` on the modelled
publication's most specific class, 1-3 other properties, informative
words); a share of them (``v3_share``, 0.2 by default) is rewritten into a
version-3 query *around the same star*, which stays its required part, so
the query is about as selective as its base:

==================  =============================================================
kind                what the star becomes
==================  =============================================================
aggregate           ``GROUP BY ?s`` with COUNT (DISTINCT, ``*``), SUM, MIN, MAX,
                    SAMPLE or GROUP_CONCAT, sometimes HAVING
minus               ``MINUS { ?s p ?x }``, p a property the class often lacks
                    (and the modelled publication lacks)
not_exists          ``FILTER NOT EXISTS { ?s p ?x }``, p chosen as for minus
exists              ``FILTER EXISTS { ?s p ?x }``, p another property of the
                    modelled publication
path                one tuple's predicate as ``^p``, ``^(p|q)`` (q a property
                    the class often has) or ``p+``
zero_path           one tuple's predicate as ``p?`` or ``p*`` (a zero-length path
                    needs no triple; rare)
bind                ``BIND`` of STRLEN, CONCAT, YEAR of a date of the publication
                    or IF, the bound variable projected
values              ``VALUES`` on the class (``?s a ?class``) or on a constant
                    object, the source's value and another
subselect           a sub-``SELECT`` around the star (DISTINCT, counted, ordered
                    and cut, or with an OPTIONAL label outside)
construct           ``CONSTRUCT { ?s ex:... ?o } WHERE { star }``, or
                    ``CONSTRUCT WHERE { star }`` when it has no FILTER
order_limit         ``ORDER BY ... LIMIT`` (and OFFSET 0)
nested_optional     ``OPTIONAL { ?s p ?x OPTIONAL { ... } }``
projection          expressions in SELECT: LANG, UCASE, SUBSTR, STRAFTER, REPLACE
==================  =============================================================

``minus``, ``not_exists`` and ``exists`` are sometimes ASK queries.
Properties come from the publications (`Vocabulary.class_members`), and
every rewrite keeps the modelled publication a match, as its base query
is. Two rewrites weaken what the indexes can require: ``values`` (the
class or constant becomes a variable) and ``path`` with ``p+`` (a first
step to anywhere, without the object's words); the others require the
star itself (``path``: the same tuple reversed, or either of two).

The rewrites draw from a random generator of their own (seeded by the
seed), so the base queries are those of the selective mix at the same
seed, whatever `v3_share`: ``v3_share = 0`` gives the v2-only workload the
figures compare with (docs/benchmarks.md).

>>> from rtf.io.publication import Publication
>>> from rtf.bench.workload import Mix, generate_queries
>>> T = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
>>> pub = Publication("http://ex/a", [("<http://ex/a>", T, "<http://ex/C>"),
...                                   ("<http://ex/a>", "<http://ex/p>", '"rio games"')])
>>> print(generate_queries([pub], 2, seed=1, mix=Mix.sparql11(v3_share=0.0))[1]["query"])
SELECT ?s WHERE { ?s a <http://ex/C> . ?s <http://ex/p> ?o2 . }
>>> print(generate_queries([pub], 2, seed=1, mix=Mix.sparql11(v3_share=1.0))[1]["query"])
SELECT ?s (COUNT(*) AS ?n) WHERE { ?s a <http://ex/C> . ?s <http://ex/p> ?o2 . } GROUP BY ?s HAVING (SUM(STRLEN(STR(?o2))) > 3)
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from rtf.query.terms import RDF_TYPE, XSD, is_iri, is_literal, literal_parts

if TYPE_CHECKING:  # the base mix's builder hands its stars over (no import circle)
    from rtf.bench.workload import Star, _Builder

_TYPE = f"<{RDF_TYPE}>"
_LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
#: The CONSTRUCT templates' own vocabulary.
EX = "http://example.org/rtf/"
#: A property "the class often lacks": at most this share of its members have it.
OFTEN_LACKED = 0.5
#: A property "the class often has": at least this share of its members have it.
OFTEN_HAD = 0.1
_DATES = {XSD + "date", XSD + "dateTime"}

#: The rewrites and their weights (see the module's table).
KINDS: dict[str, float] = {
    "aggregate": 2.0, "minus": 1.0, "not_exists": 1.0, "exists": 1.0, "path": 1.5,
    "zero_path": 0.05, "bind": 1.5, "values": 1.0, "subselect": 1.0, "construct": 1.0,
    "order_limit": 1.0, "nested_optional": 1.0, "projection": 1.0,
}


class Version3Builder:
    """The next query of a base mix's builder, made version 3 with probability
    ``mix.v3_share`` (`query`); `last_kind` names the rewrite (None: the base query)."""

    def __init__(self, base: "_Builder", seed: int):
        self.base, self.v = base, base.v
        self.share = base.mix.v3_share
        self.rng = random.Random(f"rtf-sparql11-{seed}")
        self.kinds = sorted(KINDS)
        self.weights = [KINDS[k] for k in self.kinds]
        self.last_kind: str | None = None

    def query(self) -> str:
        star = self.base.star()
        self.last_kind = None
        if not self.rng.random() < self.share:
            return star.text()
        kind = self.rng.choices(self.kinds, self.weights)[0]
        text = getattr(self, kind)(star)
        if text is None:  # the star has nothing this rewrite needs
            kind, text = "aggregate", self.aggregate(star)
        self.last_kind = kind
        return text

    # ---------------------------------------------------------- what the star offers

    def variable(self, star: "Star", literal: bool = True) -> str | None:
        """An object variable of the star, a literal-valued one if `literal` and any."""
        found = [t for t in star.tuples if t.object.startswith("?")]
        if literal:
            found = [t for t in found if t.source and is_literal(t.source[2])] or found
        return self.rng.choice(found).object if found else None

    def star_class(self, star: "Star") -> str | None:
        return next((t.source[2] for t in star.tuples if t.is_type), None)

    def own_predicates(self, star: "Star") -> set[str]:
        subject = next((t.source[0] for t in star.tuples if t.source), None)
        return {p for s, p, _ in star.publication.triples if s == subject}

    def lacked_property(self, star: "Star") -> str:
        """A property that at most `OFTEN_LACKED` of the star's class have and its
        publication has not, drawn by how many members have it (so MINUS and NOT
        EXISTS sometimes bite); else the commonest property the publication has not."""
        own = self.own_predicates(star)
        members = self.v.class_members.get(self.star_class(star))
        if members is not None:
            found = sorted((p, n) for p, n in members.properties.items()
                           if n <= OFTEN_LACKED * members.count and p not in own)
            if found:
                return self.rng.choices([p for p, _ in found], [n for _, n in found])[0]
        common = sorted(self.v.predicate_publications.items(), key=lambda pn: (-pn[1], pn[0]))
        return next((p for p, _ in common if p not in own and p != _TYPE),
                    f"<{EX}absent>")

    def had_property(self, star: "Star", other_than: str) -> str | None:
        """A property that at least `OFTEN_HAD` of the star's class have, not `other_than`."""
        members = self.v.class_members.get(self.star_class(star))
        if members is None:
            return None
        found = sorted(p for p, n in members.properties.items()
                       if n >= OFTEN_HAD * members.count and p != other_than)
        return self.rng.choice(found) if found else None

    def where(self, star: "Star", replaced=None, text: str = "") -> str:
        """The star's group body, with the tuple `replaced` written as `text`."""
        tuples = [text if t is replaced else t.text() for t in star.tuples]
        return " ".join(tuples + star.filters)

    def ask_or_select(self, star: "Star", body: str) -> str:
        if self.rng.random() < 0.25:
            return f"ASK {{ {body} }}"
        return f"SELECT {' '.join(star.projected)} WHERE {{ {body} }}"

    # ------------------------------------------------------------------ the rewrites

    def aggregate(self, star: "Star") -> str:
        v = self.variable(star)
        if v is None:
            chosen = "(COUNT(*) AS ?n)"
        else:
            chosen = self.rng.choice([
                f"(COUNT({v}) AS ?n)", f"(COUNT(DISTINCT {v}) AS ?n)", "(COUNT(*) AS ?n)",
                f"(SUM(STRLEN(STR({v}))) AS ?length)", f"(MIN(STR({v})) AS ?first)",
                f"(MAX({v}) AS ?last)", f"(SAMPLE({v}) AS ?any)",
                f'(GROUP_CONCAT(STR({v}); SEPARATOR=" | ") AS ?all)'])
        having = ""
        if self.rng.random() < 0.5:
            having = " HAVING (COUNT(*) >= 1)" if v is None else self.rng.choice(
                [" HAVING (COUNT(*) >= 1)", f" HAVING (SUM(STRLEN(STR({v}))) > 3)",
                 f" HAVING (COUNT(DISTINCT {v}) < 100)"])
        return f"SELECT ?s {chosen} WHERE {{ {self.where(star)} }} GROUP BY ?s{having}"

    def minus(self, star: "Star") -> str:
        return self.ask_or_select(star, f"{self.where(star)} MINUS {{ ?s {self.lacked_property(star)} ?x }}")

    def not_exists(self, star: "Star") -> str:
        return self.ask_or_select(
            star, f"{self.where(star)} FILTER NOT EXISTS {{ ?s {self.lacked_property(star)} ?x }}")

    def exists(self, star: "Star") -> str:
        used = {t.predicate for t in star.tuples}
        own = sorted(self.own_predicates(star) - used - {_TYPE}) or sorted(self.own_predicates(star))
        return self.ask_or_select(star, f"{self.where(star)} FILTER EXISTS {{ ?s {self.rng.choice(own)} ?x }}")

    def _path_tuple(self, star: "Star"):
        found = [t for t in star.tuples if not t.is_type and t.predicate.startswith("<")]
        return self.rng.choice(found) if found else None

    def path(self, star: "Star") -> str | None:
        t = self._path_tuple(star)
        if t is None:
            return None
        form = self.rng.choice(["inverse", "alternative", "one_or_more"])
        other = self.had_property(star, t.predicate) if form == "alternative" else None
        if form == "one_or_more":
            text = f"?s {t.predicate}+ {t.object} ."
        elif other is not None:
            text = f"{t.object} ^({t.predicate}|{other}) ?s ."
        else:
            text = f"{t.object} ^{t.predicate} ?s ."
        return f"SELECT {' '.join(star.projected)} WHERE {{ {self.where(star, t, text)} }}"

    def zero_path(self, star: "Star") -> str | None:
        t = self._path_tuple(star)
        if t is None:
            return None
        text = f"?s {t.predicate}{self.rng.choice('?*')} {t.object} ."
        return f"SELECT {' '.join(star.projected)} WHERE {{ {self.where(star, t, text)} }}"

    def bind(self, star: "Star") -> str:
        v = self.variable(star) or "?s"
        where = self.where(star)
        form = self.rng.choice(["strlen", "concat", "year", "if"])
        dates = sorted(t for t in star.publication.triples
                       if is_literal(t[2]) and literal_parts(t[2]).datatype in _DATES)
        if form == "year" and dates:
            where += f" ?s {self.rng.choice(dates)[1]} ?date . BIND(YEAR(?date) AS ?year)"
            name = "?year"
        elif form in ("strlen", "year"):
            where += f" BIND(STRLEN(STR({v})) AS ?length)"
            name = "?length"
        elif form == "concat":
            where += f' BIND(CONCAT(STR({v}), " @", LANG({v})) AS ?text)'
            name = "?text"
        else:
            where += self.rng.choice([f' BIND(IF(isIRI({v}), "resource", LANG({v})) AS ?kind)',
                                      f' BIND(IF(STRLEN(STR({v})) > 40, "long", "short") AS ?kind)'])
            name = "?kind"
        return f"SELECT ?s {name} WHERE {{ {where} }}"

    def values(self, star: "Star") -> str | None:
        constants = [t for t in star.tuples if not t.is_type and is_iri(t.object)
                     and len(self.v.predicate_objects.get(t.predicate, ())) > 1]
        typed = next((t for t in star.tuples if t.is_type and t.predicate == "a"), None)
        if constants and (typed is None or self.rng.random() < 0.5):
            t = self.rng.choice(constants)
            others = [o for o in self.v.predicate_objects[t.predicate] if o != t.object]
            var, text = "?value", f"?s {t.predicate} ?value ."
            chosen = [t.object, self.rng.choice(others)]
        elif typed is not None and len(self.v.class_members) > 1:
            t, var, text = typed, "?class", "?s a ?class ."
            others = sorted(c for c in self.v.class_members if c != typed.object)
            chosen = [typed.object, self.rng.choice(others)]
        else:
            return None
        self.rng.shuffle(chosen)
        data = f"VALUES {var} {{ {' '.join(chosen)} }}"
        projected = " ".join(star.projected + [var] * (self.rng.random() < 0.5))
        if self.rng.random() < 0.5:  # inline, or after the query
            return f"SELECT {projected} WHERE {{ {data} {self.where(star, t, text)} }}"
        return f"SELECT {projected} WHERE {{ {self.where(star, t, text)} }} {data}"

    def subselect(self, star: "Star") -> str:
        where, v = self.where(star), self.variable(star)
        form = self.rng.choice(["distinct", "count", "label", "limit"])
        if form == "count":
            return f"SELECT ?s ?n WHERE {{ {{ SELECT ?s (COUNT(*) AS ?n) WHERE {{ {where} }} GROUP BY ?s }} }}"
        if form == "label":
            return (f"SELECT ?s ?label WHERE {{ {{ SELECT ?s WHERE {{ {where} }} }} "
                    f"OPTIONAL {{ ?s {_LABEL} ?label }} }}")
        if form == "limit" and v is not None:
            return f"SELECT ?s {v} WHERE {{ {{ SELECT ?s {v} WHERE {{ {where} }} ORDER BY {v} LIMIT 2 }} }}"
        return f"SELECT ?s WHERE {{ {{ SELECT DISTINCT ?s WHERE {{ {where} }} }} }}"

    def construct(self, star: "Star") -> str:
        if not star.filters and self.rng.random() < 0.25:
            return f"CONSTRUCT WHERE {{ {self.where(star)} }}"
        v = self.variable(star, literal=False)
        if v is None:
            template = f"?s ex:matched ex:{self.rng.choice(['news', 'alert'])}"
        else:
            t = next(t for t in star.tuples if t.object == v)
            local = "".join(c for c in t.predicate.rstrip(">").rsplit("/", 1)[-1].split("#")[-1]
                            if c.isalnum()) or "value"
            template = f"?s ex:{local} {v} . ?s ex:kind ex:match"
        return f"PREFIX ex: <{EX}> CONSTRUCT {{ {template} }} WHERE {{ {self.where(star)} }}"

    def order_limit(self, star: "Star") -> str:
        v = self.variable(star)
        where = self.where(star)
        if v is None:
            return f"SELECT ?s WHERE {{ {where} }} ORDER BY ?s LIMIT 1"
        order, cut = self.rng.choice([
            (f"DESC({v})", "LIMIT 1"), (f"?s {v}", "LIMIT 3 OFFSET 0"),
            (f"STRLEN(STR({v}))", "LIMIT 2")])
        return f"SELECT ?s {v} WHERE {{ {where} }} ORDER BY {order} {cut}"

    def nested_optional(self, star: "Star") -> str:
        first = self.had_property(star, _TYPE) or _LABEL
        second = self.had_property(star, first)
        inner = f"?s {second} ?y" if second is not None and self.rng.random() < 0.5 else f"?x {_LABEL} ?y"
        return (f"SELECT ?s ?x ?y WHERE {{ {self.where(star)} "
                f"OPTIONAL {{ ?s {first} ?x OPTIONAL {{ {inner} }} }} }}")

    def projection(self, star: "Star") -> str:
        v = self.variable(star)
        choices = ['(STRAFTER(STR(?s), "/resource/") AS ?name)', '(REPLACE(STR(?s), "^.*/", "") AS ?local)']
        if v is not None:
            choices += [f"(LANG({v}) AS ?lang)", f"(UCASE(STR({v})) AS ?upper)",
                        f"(SUBSTR(STR({v}), 1, 20) AS ?start)"]
        chosen = self.rng.sample(choices, self.rng.randint(1, 2))
        return f"SELECT ?s {' '.join(chosen)} WHERE {{ {self.where(star)} }}"
