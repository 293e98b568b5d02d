"""The SPARQL 1.1 algebra (section 18): what a version-3 query is, as immutable values.

The parser translates a query's syntax into these operators exactly as
section 18.2 says (`rtf.parser.algebra`), and `rtf.algebra.evaluate` evaluates
them over one publication, as section 18.5 says. Everything is a frozen,
hashable value: a query's algebra is shared like the rest of the model.

Graph patterns (each evaluates to a multiset of solutions):

==========================  =================================================
`BGP`                       triple patterns (blank nodes and ``*`` bind
                            nothing visible; the taxonomy path as in v1)
`PathPattern`               ``subject path object`` for a property path
`Join`, `LeftJoin`          ``{A B}``, ``OPTIONAL`` (with its filter)
`Filter`, `Union`, `Minus`  ``FILTER``, ``UNION``, ``MINUS``
`Extend`, `Values`          ``BIND``, ``VALUES`` (inline or after the query)
`Group`                     ``GROUP BY`` with the aggregates it computes
`OrderBy`, `Project`,       the solution modifiers (a sub-``SELECT`` is
`Distinct`, `Reduced`,      one of these as a pattern)
`Slice`
==========================  =================================================

`UNIT`, the empty basic graph pattern, is the one empty solution (the
group ``{}``). Property paths are `Link`, `Inverse`, `Sequence`, `Alternative`,
`ZeroOrMore`, `OneOrMore`, `ZeroOrOne` and `NegatedSet`.

Variables are named as in `rtf.query.expressions` (``"x"`` for ``?x``); the
names the translation makes up (an aggregate's value, a path's middle node,
a blank node's or wildcard's binding) start with a character no written
variable can hold, so they never clash and are never projected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtf.query.model import TriplePattern

# ------------------------------------------------------------------ paths


@dataclass(frozen=True, slots=True)
class Link:
    """A path of one predicate (its key, ``<iri>``)."""

    iri: str

    def __str__(self) -> str:
        return self.iri


@dataclass(frozen=True, slots=True)
class Inverse:
    path: "Path"

    def __str__(self) -> str:
        return f"^{self.path}"


@dataclass(frozen=True, slots=True)
class Sequence:
    parts: tuple["Path", ...]

    def __str__(self) -> str:
        return "(" + "/".join(map(str, self.parts)) + ")"


@dataclass(frozen=True, slots=True)
class Alternative:
    parts: tuple["Path", ...]

    def __str__(self) -> str:
        return "(" + "|".join(map(str, self.parts)) + ")"


@dataclass(frozen=True, slots=True)
class ZeroOrMore:
    path: "Path"

    def __str__(self) -> str:
        return f"{self.path}*"


@dataclass(frozen=True, slots=True)
class OneOrMore:
    path: "Path"

    def __str__(self) -> str:
        return f"{self.path}+"


@dataclass(frozen=True, slots=True)
class ZeroOrOne:
    path: "Path"

    def __str__(self) -> str:
        return f"{self.path}?"


@dataclass(frozen=True, slots=True)
class NegatedSet:
    """``!(p1|...|^q1|...)``: one triple whose predicate is none of `forward`
    (subject to object), or none of `backward` (object to subject)."""

    forward: tuple[str, ...]
    backward: tuple[str, ...]

    def __str__(self) -> str:
        parts = list(self.forward) + ["^" + p for p in self.backward]
        return "!(" + "|".join(parts) + ")"


Path = Link | Inverse | Sequence | Alternative | ZeroOrMore | OneOrMore | ZeroOrOne | NegatedSet

# -------------------------------------------------------------- patterns


@dataclass(frozen=True, slots=True)
class BGP:
    """A basic graph pattern: triple patterns, matched together."""

    triples: tuple[TriplePattern, ...]

    def __str__(self) -> str:
        return "BGP(" + " . ".join(map(str, self.triples)) + ")"


#: The empty basic graph pattern: one solution that binds nothing (SPARQL's Z).
UNIT = BGP(())


@dataclass(frozen=True, slots=True)
class PathPattern:
    subject: object
    path: Path
    object: object

    def __str__(self) -> str:
        return f"Path({self.subject} {self.path} {self.object})"


@dataclass(frozen=True, slots=True)
class Join:
    left: "Pattern"
    right: "Pattern"

    def __str__(self) -> str:
        return f"Join({self.left}, {self.right})"


@dataclass(frozen=True, slots=True)
class LeftJoin:
    """``left OPTIONAL { right FILTER(expr) }``; `expr` None is true."""

    left: "Pattern"
    right: "Pattern"
    expr: object = None

    def __str__(self) -> str:
        cond = f", {self.expr}" if self.expr is not None else ""
        return f"LeftJoin({self.left}, {self.right}{cond})"


@dataclass(frozen=True, slots=True)
class Filter:
    expr: object
    pattern: "Pattern"

    def __str__(self) -> str:
        return f"Filter({self.expr}, {self.pattern})"


@dataclass(frozen=True, slots=True)
class Union:
    left: "Pattern"
    right: "Pattern"

    def __str__(self) -> str:
        return f"Union({self.left}, {self.right})"


@dataclass(frozen=True, slots=True)
class Minus:
    left: "Pattern"
    right: "Pattern"

    def __str__(self) -> str:
        return f"Minus({self.left}, {self.right})"


@dataclass(frozen=True, slots=True)
class Extend:
    """``BIND(expr AS ?var)`` (and a projection expression): `var` bound where
    `expr` has a value, left unbound where it is an error."""

    pattern: "Pattern"
    var: str
    expr: object

    def __str__(self) -> str:
        return f"Extend({self.pattern}, ?{self.var} := {self.expr})"


@dataclass(frozen=True, slots=True)
class Values:
    """``VALUES``: rows of term keys (None: ``UNDEF``), one per solution."""

    vars: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]

    def __str__(self) -> str:
        return f"Values({' '.join('?' + v for v in self.vars)}; {len(self.rows)} rows)"


@dataclass(frozen=True, slots=True)
class Aggregate:
    """A set function in a SELECT, HAVING or ORDER BY expression: `name` one of
    count, sum, min, max, avg, sample, group_concat; `arg` None for ``COUNT(*)``."""

    name: str
    arg: object
    distinct: bool = False
    separator: str | None = None

    def __str__(self) -> str:
        inner = "*" if self.arg is None else str(self.arg)
        sep = f"; SEPARATOR={self.separator!r}" if self.separator is not None else ""
        return f"{self.name.upper()}({'DISTINCT ' if self.distinct else ''}{inner}{sep})"


@dataclass(frozen=True, slots=True)
class Group:
    """``GROUP BY keys`` and the aggregates computed per group.

    `keys` are (expression, variable name or None) pairs: a key written as a
    variable, or ``(expr AS ?v)``, binds that variable in the group's solution.
    `aggregates` are (variable name, `Aggregate`): the expressions of SELECT,
    HAVING and ORDER BY read these variables. Without keys there is one group,
    even over no solutions (section 18.5.1).
    """

    pattern: "Pattern"
    keys: tuple[tuple[object, str | None], ...]
    aggregates: tuple[tuple[str, Aggregate], ...]

    def __str__(self) -> str:
        keys = ", ".join(str(e) + (f" AS ?{v}" if v else "") for e, v in self.keys)
        aggs = ", ".join(f"?{v} := {a}" for v, a in self.aggregates)
        return f"Group([{keys}], [{aggs}], {self.pattern})"


@dataclass(frozen=True, slots=True)
class OrderBy:
    """`conditions`: (expression, descending) pairs, the first the most significant."""

    pattern: "Pattern"
    conditions: tuple[tuple[object, bool], ...]

    def __str__(self) -> str:
        conds = ", ".join(("DESC " if d else "") + str(e) for e, d in self.conditions)
        return f"OrderBy({self.pattern}, [{conds}])"


@dataclass(frozen=True, slots=True)
class Project:
    pattern: "Pattern"
    vars: tuple[str, ...]

    def __str__(self) -> str:
        return f"Project({self.pattern}, [{' '.join('?' + v for v in self.vars)}])"


@dataclass(frozen=True, slots=True)
class Distinct:
    pattern: "Pattern"

    def __str__(self) -> str:
        return f"Distinct({self.pattern})"


@dataclass(frozen=True, slots=True)
class Reduced:
    pattern: "Pattern"

    def __str__(self) -> str:
        return f"Reduced({self.pattern})"


@dataclass(frozen=True, slots=True)
class Slice:
    """``OFFSET start LIMIT length`` (`length` None: no limit)."""

    pattern: "Pattern"
    start: int
    length: int | None

    def __str__(self) -> str:
        return f"Slice({self.pattern}, {self.start}, {self.length})"


Pattern = (BGP | PathPattern | Join | LeftJoin | Filter | Union | Minus | Extend | Values
           | Group | OrderBy | Project | Distinct | Reduced | Slice)


@dataclass(frozen=True, slots=True)
class AlgebraQuery:
    """A version-3 query: its form (``SELECT``, ``ASK`` or ``CONSTRUCT``), its algebra,
    the variables a SELECT reports, and a CONSTRUCT's template.

    `ordered` says the result has an ORDER BY at its top: a match then lists its
    rows in order (spec section 5).
    """

    form: str
    pattern: Pattern
    projection: tuple[str, ...] = ()
    template: tuple[TriplePattern, ...] = ()
    ordered: bool = False
    #: What evaluating it needs to know, made at its first evaluation and kept with it
    #: (`rtf.algebra.results`): not a part of its value, not pickled (it is keyed by the
    #: identity of its patterns, which a copy does not keep).
    analysis: object = field(default=None, compare=False, hash=False, repr=False)

    def __reduce__(self):
        return (AlgebraQuery, (self.form, self.pattern, self.projection, self.template, self.ordered))

    def __str__(self) -> str:
        return f"{self.form} {self.pattern}"

    def lines(self, indent: str = "") -> list[str]:
        """The algebra as an indented tree (`rtf.algebra.describe`)."""
        from rtf.algebra.describe import algebra_lines
        return algebra_lines(self.pattern, indent)


__all__ = [
    "Link", "Inverse", "Sequence", "Alternative", "ZeroOrMore", "OneOrMore", "ZeroOrOne",
    "NegatedSet", "Path", "BGP", "UNIT", "PathPattern", "Join", "LeftJoin", "Filter", "Union",
    "Minus", "Extend", "Values", "Aggregate", "Group", "OrderBy", "Project", "Distinct",
    "Reduced", "Slice", "Pattern", "AlgebraQuery",
]
