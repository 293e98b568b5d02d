"""Small random worlds for differential tests: publications and queries with every operator.

The vocabulary is tiny on purpose, so that random queries often match
random publications and every path of the engines is exercised: shared
variables, repeated variables, constants, wildcards in every position,
blank nodes, the taxonomy path, value filters, every full-text operator,
``||``, ``!`` and ``ftor``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from rtf.io.publication import Publication
from rtf.io.taxonomy import Taxonomy

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
SUBJECTS = [f"<{EX}{n}>" for n in ("a", "b", "c")]
PREDICATES = [f"<{EX}{n}>" for n in ("p", "q", "r")]
CLASSES = [f"<{EX}{n}>" for n in ("C1", "C2", "C3", "C4")]
# C1 < C2 < C4, C1 < C3 < C4 (multiple inheritance), C4 has no superclass.
TAXONOMY_EDGES = [(CLASSES[0], CLASSES[1]), (CLASSES[0], CLASSES[2]),
                  (CLASSES[1], CLASSES[3]), (CLASSES[2], CLASSES[3])]
WORDS = ["rio", "games", "olympic", "gold", "río", "usa", "s"]
PREFIX = f"PREFIX ex: <{EX}> PREFIX xsd: <{XSD}> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "


def taxonomy() -> Taxonomy:
    return Taxonomy.from_edges(TAXONOMY_EDGES)


def _lit(text: str, suffix: str = "") -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"' + suffix


texts = st.lists(st.sampled_from(WORDS + ["Rio", "GAMES", "U.S.", "olympic-games", "río!"]),
                 min_size=0, max_size=7).map(" ".join)
literals = st.one_of(
    texts.map(_lit),
    texts.map(lambda t: _lit(t, "@en")),
    st.integers(-3, 3).map(lambda i: _lit(str(i), f"^^<{XSD}integer>")),
    st.sampled_from(["1.5", "2.0", "0.0"]).map(lambda d: _lit(d, f"^^<{XSD}decimal>")),
    st.sampled_from(["2016-08-05", "2015-01-01"]).map(lambda d: _lit(d, f"^^<{XSD}date>")),
)
objects = st.one_of(st.sampled_from(SUBJECTS + CLASSES), literals)


@st.composite
def publications(draw) -> Publication:
    main = SUBJECTS[0]
    triples = []
    for _ in range(draw(st.integers(1, 7))):
        s = draw(st.sampled_from([main, main, main] + SUBJECTS[1:]))
        if draw(st.booleans()):
            triples.append((s, TYPE, draw(st.sampled_from(CLASSES))))
        else:
            triples.append((s, draw(st.sampled_from(PREDICATES)), draw(objects)))
    return Publication(main[1:-1], triples)


# ------------------------------------------------------------------ queries

VARS = ["?x", "?y", "?z"]


def ft_string(draw) -> str:
    n = draw(st.integers(1, 2))
    ws = [draw(st.sampled_from(WORDS)) for _ in range(n)]
    if draw(st.integers(0, 4)) == 0:
        ws[-1] = ws[-1][: draw(st.integers(1, max(1, len(ws[-1]))))] + "*"
    return '"' + " ".join(ws) + '"'


def ft_expr(draw, depth: int = 0) -> str:
    choice = draw(st.integers(0, 6 if depth < 2 else 0))
    if choice <= 1:
        return ft_string(draw)
    if choice == 2:
        return f"({ft_expr(draw, depth + 1)} ftand {ft_expr(draw, depth + 1)})"
    if choice == 3:
        return f"({ft_expr(draw, depth + 1)} ftor {ft_expr(draw, depth + 1)})"
    if choice == 4:
        return f"ftnot {ft_expr(draw, depth + 1)}"
    lo = draw(st.integers(0, 2))
    hi = lo + draw(st.integers(0, 2))
    opt = ", unordered" if draw(st.booleans()) else ""
    return f"{ft_string(draw)} ftnear({lo}, {hi}{opt}) {ft_string(draw)}"


def constant(draw) -> str:
    return draw(st.sampled_from(["ex:a", "ex:b", "ex:C1", "ex:C4", '"rio"', '"rio games"@en',
                                 "1", "2.0", '"2016-01-01"^^xsd:date', '"0"^^xsd:integer']))


def atom(draw, used: list[str]) -> str:
    v = draw(st.sampled_from(used))
    kind = draw(st.integers(0, 7))
    if kind <= 2:
        return f"ftcontains({v}, {ft_expr(draw)})"
    if kind == 3:
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        other = draw(st.sampled_from(used)) if draw(st.booleans()) else constant(draw)
        return f"{v} {op} {other}"
    if kind == 4:
        return f'regex({v}, "{draw(st.sampled_from(["^r", "GAM", "o.y", "[0-9]"]))}"' + \
               (', "i")' if draw(st.booleans()) else ")")
    if kind == 5:
        return f'lang({v}) = "{draw(st.sampled_from(["en", ""]))}"'
    if kind == 6:
        return f'contains({v}, "{draw(st.sampled_from(["io", "g", "2"]))}")'
    return v  # effective boolean value


def expr(draw, used: list[str], depth: int = 0) -> str:
    kind = draw(st.integers(0, 4 if depth < 2 else 0))
    if kind <= 1:
        return atom(draw, used)
    if kind == 2:
        return f"({expr(draw, used, depth + 1)} && {expr(draw, used, depth + 1)})"
    if kind == 3:
        return f"({expr(draw, used, depth + 1)} || {expr(draw, used, depth + 1)})"
    return f"!({expr(draw, used, depth + 1)})"


@st.composite
def queries(draw) -> str:
    patterns = []
    for _ in range(draw(st.integers(1, 3))):
        s = draw(st.sampled_from(VARS[:2] + ["*", "ex:a", "_:b"]))
        kind = draw(st.integers(0, 5))
        if kind == 0:
            p, o = "a/rdfs:subClassOf*", draw(st.sampled_from(["ex:C2", "ex:C4", "ex:C1", "?c", "*"]))
        elif kind == 1:
            p, o = "a", draw(st.sampled_from(["ex:C1", "?c", "*"]))
        else:
            p = draw(st.sampled_from(["ex:p", "ex:q", "?p", "*"]))
            o = draw(st.sampled_from(VARS + ["*", "ex:a", '"rio"', "1", "_:b", "?x"]))
        patterns.append(f"{s} {p} {o} .")
    body = " ".join(patterns)
    used = sorted({t for t in body.replace(".", " ").split() if t.startswith("?")})
    filters = []
    if used:
        for _ in range(draw(st.integers(0, 2))):
            filters.append(f"FILTER ({expr(draw, used)})")
    form = draw(st.integers(0, 3))
    if form == 0:
        head = "ASK"
    elif form == 1:
        head = "SELECT *"
    else:
        proj = [v for v in used if draw(st.booleans())] or ["?x"]
        head = "SELECT " + ("DISTINCT " if form == 3 else "") + " ".join(proj)
    return f"{PREFIX}{head} WHERE {{ {body} {' '.join(filters)} }}"


# -------------------------------------------- version 2 structure: UNION, (p|q), OPTIONAL

def structural_pattern(draw) -> str:
    """A triple pattern over the world's vocabulary, maybe with alternative predicates."""
    s = draw(st.sampled_from(VARS[:2] + ["ex:a"]))
    kind = draw(st.integers(0, 4))
    if kind == 0:
        p, o = draw(st.sampled_from(["a", "a/rdfs:subClassOf*"])), draw(st.sampled_from(["ex:C2", "ex:C1", "?c"]))
    elif kind == 1:
        p = "(" + "|".join(draw(st.lists(st.sampled_from(["ex:p", "ex:q", "ex:r", "a"]),
                                         min_size=2, max_size=3))) + ")"
        o = draw(st.sampled_from(VARS + ["ex:a", '"rio"']))
    else:
        p = draw(st.sampled_from(["ex:p", "ex:q", "?p"]))
        o = draw(st.sampled_from(VARS + ["ex:a", '"rio"', "1"]))
    return f"{s} {p} {o} ."


def _variables(text: str) -> list[str]:
    return sorted({t.strip("(),") for t in text.replace(".", " ").split() if t.startswith("?")})


def group_body(draw, depth: int = 0, optional: bool = True) -> str:
    """The inside of a group: patterns, maybe UNIONs (nested), FILTERs, OPTIONALs last."""
    parts = [structural_pattern(draw) for _ in range(draw(st.integers(1, 2)))]
    if depth < 2 and draw(st.integers(0, 2)) > 0:
        sides = [group_body(draw, depth + 1, optional=False) for _ in range(draw(st.integers(1, 3)))]
        parts.insert(draw(st.integers(0, len(parts))), " UNION ".join(f"{{ {s} }}" for s in sides))
    body = " ".join(parts)
    # A FILTER may read a variable its group does not bind (SPARQL: it is unbound there).
    used = _variables(body) + (["?z"] if draw(st.booleans()) else [])
    for _ in range(draw(st.integers(0, 1)) if used else 0):
        body += f" FILTER ({expr(draw, used)})"
    if optional and depth == 0:
        for _ in range(draw(st.integers(0, 2))):
            inner = " ".join(structural_pattern(draw) for _ in range(draw(st.integers(1, 2))))
            if draw(st.booleans()) and _variables(inner + " " + body):
                inner += f" FILTER ({expr(draw, _variables(inner + ' ' + body))})"
            body += f" OPTIONAL {{ {inner} }}"
    return body


@st.composite
def structured_queries(draw, optional: bool = True) -> str:
    """Queries whose WHERE has UNION (nested, chained), alternative predicates and,
    when `optional`, OPTIONAL groups after the required patterns."""
    body = group_body(draw, optional=optional)
    used = _variables(body)
    form = draw(st.integers(0, 2))
    if form == 0 or not used:
        head = "ASK"
    elif form == 1:
        head = "SELECT *"
    else:
        head = "SELECT " + " ".join([v for v in used if draw(st.booleans())] or used[:1])
    return f"{PREFIX}{head} WHERE {{ {body} }}"
