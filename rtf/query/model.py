"""The query model: what a parsed continuous query is, independent of any index.

Data flows one way: text -> `rtf.parser` -> this model -> an index -> the
filter -> matches. Everything here is an immutable value.

A `Query` keeps the query as written (`patterns`, `filters`, which the
reference engine evaluates directly with SPARQL's three-valued logic) and
its decomposition into `Branch` es (disjunctive normal form of the filters),
each a conjunction of `TupleConjunct` s in the sense of the RTF paper's
Definition 1 -- subject, predicate, object and an optional full-text
constraint -- plus the residual filter literals the index cannot answer.
The indexed engines (RTFm, RTFs, iBroker) work on branches.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from rtf.query.terms import (
    IRI,
    TYPE_PATH,
    WILDCARD,
    BlankNode,
    Literal,
    TypePath,
    Variable,
    Wildcard,
    is_variable,
    shared,
)

# ------------------------------------------------------------ full-text model


@dataclass(frozen=True, slots=True)
class FTWord:
    """One casefolded word of a query string; `prefix` for ``"olymp*"``."""

    text: str
    prefix: bool = False

    def __str__(self) -> str:
        return self.text + ("*" if self.prefix else "")

    def __reduce__(self):
        return (ft_word, (self.text, self.prefix))


def ft_word(text: str, prefix: bool = False) -> FTWord:
    """The shared `FTWord` (see `rtf.query.terms.shared`)."""
    return shared(FTWord(sys.intern(text), prefix))


@dataclass(frozen=True, slots=True)
class FTTerm:
    """A term (one word) or a phrase (several consecutive words)."""

    words: tuple[FTWord, ...]

    def __reduce__(self):
        return (ft_term, (self.words,))

    @property
    def is_phrase(self) -> bool:
        return len(self.words) > 1

    def __str__(self) -> str:
        return '"' + " ".join(map(str, self.words)) + '"'


@dataclass(frozen=True, slots=True)
class FTAnd:
    operands: tuple["FTExpr", ...]

    def __str__(self) -> str:
        return "(" + " ftand ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True, slots=True)
class FTOr:
    operands: tuple["FTExpr", ...]

    def __str__(self) -> str:
        return "(" + " ftor ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True, slots=True)
class FTNot:
    operand: "FTExpr"

    def __str__(self) -> str:
        return f"ftnot {self.operand}"


@dataclass(frozen=True, slots=True)
class FTNear:
    """`left` ftnear(`min`, `max`[, unordered]) `right`; words strictly between."""

    left: FTTerm
    right: FTTerm
    min: int
    max: int
    ordered: bool = True

    def __str__(self) -> str:
        opt = "" if self.ordered else ", unordered"
        return f"({self.left} ftnear({self.min}, {self.max}{opt}) {self.right})"


def shared_value(cls, *fields):
    """The shared instance of ``cls(*fields)`` (see `rtf.query.terms.shared`): what an
    unpickled pattern, tuple conjunct or branch becomes."""
    return shared(cls(*fields))


def ft_term(words: tuple[FTWord, ...]) -> FTTerm:
    """The shared `FTTerm` of `words` (see `rtf.query.terms.shared`)."""
    return shared(FTTerm(tuple(words)))


FTExpr = FTTerm | FTAnd | FTOr | FTNot | FTNear

# --------------------------------------------------------------- filter model


@dataclass(frozen=True, slots=True)
class Lang:
    """``lang(arg)`` as an operand."""

    arg: "Operand"

    def __str__(self) -> str:
        return f"lang({self.arg})"


@dataclass(frozen=True, slots=True)
class Call:
    """A built-in function or XSD cast applied to expressions (language version 2).

    `name` is the function's lower-case name (``"str"``, ``"year"``, ...),
    ``"-"``/``"+"`` for unary minus and plus, or a cast's datatype IRI
    (``"http://www.w3.org/2001/XMLSchema#integer"``).
    """

    name: str
    args: tuple

    def __str__(self) -> str:
        name = self.name
        if name.startswith("http"):
            name = "xsd:" + name.rpartition("#")[2]
        if name in ("-", "+"):
            return f"{name}{self.args[0]}"
        return f"{name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True, slots=True)
class Arithmetic:
    """``left op right`` with op one of ``+ - * /`` (SPARQL 1.1 numeric operators)."""

    op: str
    left: object
    right: object

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


Operand = Variable | BlankNode | IRI | Literal | Lang | Call | Arithmetic


@dataclass(frozen=True, slots=True)
class Compare:
    """``left op right`` with op one of = != < <= > >=."""

    op: str
    left: Operand
    right: Operand

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True, slots=True)
class FtContains:
    """``ftcontains(var, ft)``: false on IRIs and blank nodes."""

    var: Operand
    ft: FTExpr

    def __str__(self) -> str:
        return f"ftcontains({self.var}, {self.ft})"


@dataclass(frozen=True, slots=True)
class Regex:
    arg: Operand
    pattern: Operand
    flags: Operand | None = None

    def __str__(self) -> str:
        extra = f", {self.flags}" if self.flags is not None else ""
        return f"regex({self.arg}, {self.pattern}{extra})"


@dataclass(frozen=True, slots=True)
class Contains:
    arg: Operand
    needle: Operand

    def __str__(self) -> str:
        return f"contains({self.arg}, {self.needle})"


@dataclass(frozen=True, slots=True)
class LangMatches:
    tag: Operand
    range: Operand

    def __str__(self) -> str:
        return f"langMatches({self.tag}, {self.range})"


@dataclass(frozen=True, slots=True)
class EffectiveBoolean:
    """A bare operand used as a filter: ``FILTER(?o)``, ``FILTER(true)``."""

    arg: Operand

    def __str__(self) -> str:
        return f"ebv({self.arg})"


@dataclass(frozen=True, slots=True)
class In:
    """``arg IN (values...)``, or ``NOT IN`` when `negated` (SPARQL 1.1 §17.4.1.9-10)."""

    arg: Operand
    values: tuple
    negated: bool = False

    def __str__(self) -> str:
        word = "NOT IN" if self.negated else "IN"
        return f"{self.arg} {word} ({', '.join(map(str, self.values))})"


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple["Expr", ...]

    def __str__(self) -> str:
        return "(" + " && ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple["Expr", ...]

    def __str__(self) -> str:
        return "(" + " || ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True, slots=True)
class Not:
    operand: "Expr"

    def __str__(self) -> str:
        return f"!{self.operand}"


@dataclass(frozen=True, slots=True)
class If:
    """``IF(condition, then, else)`` (version 3): the condition's effective boolean
    value picks one branch, an error in it is an error."""

    condition: object
    then: object
    otherwise: object

    def __str__(self) -> str:
        return f"IF({self.condition}, {self.then}, {self.otherwise})"


@dataclass(frozen=True, slots=True)
class Coalesce:
    """``COALESCE(e1, ...)`` (version 3): the first argument that has a value."""

    args: tuple

    def __str__(self) -> str:
        return f"COALESCE({', '.join(map(str, self.args))})"


@dataclass(frozen=True, slots=True)
class Exists:
    """``EXISTS { pattern }`` / ``NOT EXISTS`` (version 3): `pattern` is an algebra
    pattern (`rtf.algebra.model`), evaluated with the solution's bindings substituted."""

    pattern: object
    negated: bool = False

    def __str__(self) -> str:
        return f"{'NOT ' if self.negated else ''}EXISTS {{ {self.pattern} }}"


@dataclass(frozen=True, slots=True)
class IriCall:
    """``IRI(arg)`` / ``URI(arg)`` (version 3): a string resolved against the query's `base`."""

    arg: object
    base: str | None = None

    def __str__(self) -> str:
        return f"IRI({self.arg})"


Atom = Compare | FtContains | Regex | Contains | LangMatches | EffectiveBoolean | In | Exists
Expr = Atom | And | Or | Not


def operand_variables(op) -> set[str]:
    """Names of the variables an operand or expression mentions."""
    if is_variable(op):
        return {op.name}
    if isinstance(op, Lang):
        return operand_variables(op.arg)
    if isinstance(op, (IRI, Literal)) or op is None:
        return set()
    if isinstance(op, (And, Or)):
        return set().union(*(operand_variables(o) for o in op.operands))
    if isinstance(op, Not):
        return operand_variables(op.operand)
    if isinstance(op, Compare):
        return operand_variables(op.left) | operand_variables(op.right)
    if isinstance(op, FtContains):
        return operand_variables(op.var)
    if isinstance(op, Regex):
        return operand_variables(op.arg) | operand_variables(op.pattern) | operand_variables(op.flags)
    if isinstance(op, Contains):
        return operand_variables(op.arg) | operand_variables(op.needle)
    if isinstance(op, LangMatches):
        return operand_variables(op.tag) | operand_variables(op.range)
    if isinstance(op, EffectiveBoolean):
        return operand_variables(op.arg)
    if isinstance(op, Call):
        return set().union(*(operand_variables(a) for a in op.args))
    if isinstance(op, Arithmetic):
        return operand_variables(op.left) | operand_variables(op.right)
    if isinstance(op, In):
        return operand_variables(op.arg).union(*(operand_variables(v) for v in op.values))
    if isinstance(op, If):
        return operand_variables(op.condition) | operand_variables(op.then) | operand_variables(op.otherwise)
    if isinstance(op, Coalesce):
        return set().union(*(operand_variables(a) for a in op.args))
    if isinstance(op, IriCall):
        return operand_variables(op.arg)
    if isinstance(op, Exists):
        return set()  # the pattern's own variables; those of the solution are substituted
    names = getattr(op, "variable_names", None)  # an algebra expression (rtf.algebra.model)
    if names is not None:
        return set(names())
    raise TypeError(f"not an operand or expression: {op!r}")


# -------------------------------------------------------------- graph model

PatternTerm = IRI | Literal | Variable | BlankNode | Wildcard
PredicateTerm = IRI | Variable | Wildcard | TypePath


@dataclass(frozen=True, slots=True)
class TriplePattern:
    """A triple pattern as written; `predicate` may be the taxonomy path."""

    subject: PatternTerm
    predicate: PredicateTerm
    object: PatternTerm

    def __str__(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"

    def __reduce__(self):  # unpickled queries share their parts too (Spark, the bench)
        return (shared_value, (TriplePattern, self.subject, self.predicate, self.object))

    @property
    def terms(self) -> tuple:
        return (self.subject, self.predicate, self.object)


@dataclass(frozen=True, slots=True)
class TupleConjunct:
    """Definition 1 of the RTF paper: (S, P, O, {F}).

    `fulltext` is the conjunction of the positive ``ftcontains`` constraints
    on the object variable, ``ftor`` s included (one constraint, not branches).
    """

    subject: PatternTerm
    predicate: PredicateTerm
    object: PatternTerm
    fulltext: FTExpr | None = None

    def __reduce__(self):
        return (shared_value, (TupleConjunct, self.subject, self.predicate, self.object, self.fulltext))

    @property
    def pattern(self) -> TriplePattern:
        return TriplePattern(self.subject, self.predicate, self.object)

    @property
    def terms(self) -> tuple:
        return (self.subject, self.predicate, self.object)

    def __str__(self) -> str:
        ft = f", FT {self.fulltext}" if self.fulltext is not None else ""
        return f"({self.subject}, {self.predicate}, {self.object}{ft})"


@dataclass(frozen=True, slots=True)
class Branch:
    """One conjunctive branch of the disjunctive normal form of a query.

    It matches when every tuple conjunct matches a triple of the publication
    under one mapping of the variables and every residual literal is true.
    """

    tuples: tuple[TupleConjunct, ...]
    residual: tuple[Expr, ...] = ()

    def __reduce__(self):
        return (shared_value, (Branch, self.tuples, self.residual))

    def __str__(self) -> str:
        parts = [str(t) for t in self.tuples] + [f"FILTER {r}" for r in self.residual]
        return " AND ".join(parts)


@dataclass(frozen=True, slots=True)
class GroupPattern:
    """A group graph pattern as written: ``{ triples FILTER ... {A} UNION {B} OPTIONAL {C} }``.

    SPARQL's algebra: the join of `patterns` and of each union (the
    multiset union of its sides' solutions), filtered by `filters` (a
    FILTER applies to the whole group it is written in, and only to it),
    then left-joined with each of `optionals` in order. An alternative
    predicate ``?s (p|q) ?o`` is a union of one-pattern sides.
    """

    patterns: tuple[TriplePattern, ...]
    filters: tuple[Expr, ...] = ()
    unions: tuple[tuple["GroupPattern", ...], ...] = ()
    optionals: tuple["GroupPattern", ...] = ()

    @property
    def is_basic(self) -> bool:
        """Triple patterns and filters only (version 1's group)."""
        return not self.unions and not self.optionals

    def variables(self) -> set[str]:
        """Names of the variables the group's patterns can bind (optional parts included)."""
        out = {t.name for p in self.patterns for t in p.terms if is_variable(t)}
        for union in self.unions:
            for side in union:
                out |= side.variables()
        for opt in self.optionals:
            out |= opt.variables()
        return out

    def describe(self, indent: str = "") -> list[str]:
        """The group as indented lines (for `Query.describe`)."""
        lines = [f"{indent}{p}" for p in self.patterns]
        lines += [f"{indent}FILTER {f}" for f in self.filters]
        for union in self.unions:
            for i, side in enumerate(union):
                label = "UNION side" if len(union) > 1 else "group"
                lines.append(f"{indent}{label} {i + 1} of {len(union)}:" if len(union) > 1
                             else f"{indent}{label}:")
                lines += side.describe(indent + "  ")
        for opt in self.optionals:
            lines.append(f"{indent}OPTIONAL (extends each solution when it matches; "
                         f"not indexed):")
            lines += opt.describe(indent + "  ")
        return lines


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed continuous query.

    `projection` lists the projected variable names (``SELECT *`` is
    resolved to the query's named variables in order of appearance; ``ASK``
    projects nothing).
    """

    form: str  # "SELECT" or "ASK"
    projection: tuple[str, ...]
    distinct: bool
    patterns: tuple[TriplePattern, ...]
    filters: tuple[Expr, ...]
    branches: tuple[Branch, ...]
    text: str = field(default="", compare=False)
    #: The WHERE clause as written; None stands for ``{ patterns FILTER filters }``.
    #: `patterns` and `filters` then list every pattern and filter anywhere in it.
    group: GroupPattern | None = None
    #: A version-3 query (spec section 5): its SPARQL algebra (`rtf.algebra.model.AlgebraQuery`),
    #: which decides its answers; its `branches` are then only what the indexes use to find
    #: the publications where it may match (`rtf.algebra.presearch`), and `patterns`,
    #: `filters` and `group` are empty.
    algebra: object = None

    @property
    def where(self) -> GroupPattern:
        """The WHERE clause as a group graph pattern."""
        return self.group if self.group is not None else GroupPattern(self.patterns, self.filters)

    @property
    def is_ask(self) -> bool:
        return self.form == "ASK"

    @property
    def is_construct(self) -> bool:
        return self.form == "CONSTRUCT"

    def describe(self) -> str:
        """The decomposition, as a person reads it (what ``rtf check`` prints)."""
        if self.algebra is not None:
            return self._describe_algebra()
        lines = [f"form:        {self.form}{' DISTINCT' if self.distinct else ''}"]
        if not self.is_ask:
            lines.append("projection:  " + (" ".join("?" + v for v in self.projection) or "(none)"))
        if self.group is not None and not self.group.is_basic:
            lines.append("where (UNION sides and alternative predicates become branches):")
            lines += self.group.describe("  ")
        else:
            lines.append("patterns:")
            lines += [f"  {p}" for p in self.patterns]
            if self.filters:
                lines.append("filters:")
                lines += [f"  {f}" for f in self.filters]
        lines.append(f"branches:    {len(self.branches)} (disjunctive normal form)")
        lines += self._branch_lines()
        return "\n".join(lines)

    def _describe_algebra(self) -> str:
        lines = [f"form:        {self.form} (language version 3: its SPARQL algebra answers it)"]
        if self.form == "SELECT":
            lines.append("projection:  " + (" ".join("?" + v for v in self.projection) or "(none)"))
        if self.form == "CONSTRUCT":
            lines.append("template:")
            lines += [f"  {t}" for t in self.algebra.template]
        lines.append("algebra:")
        lines += self.algebra.lines("  ")  # (rtf.algebra.describe)
        if not self.branches:
            lines.append("presearch:   none (evaluated for every publication)")
        else:
            lines.append(f"presearch:   {len(self.branches)} branch(es): the query is evaluated on a "
                         "publication that holds a triple for each tuple of one of them")
        lines += self._branch_lines()
        return "\n".join(lines)

    def _branch_lines(self) -> list[str]:
        lines = []
        for i, b in enumerate(self.branches, 1):
            lines.append(f"  branch {i}:")
            for j, t in enumerate(b.tuples, 1):
                lines.append(f"    t{j} {t}")
            for r in b.residual:
                lines.append(f"    residual FILTER {r}")
        return lines


__all__ = [
    "FTWord", "FTTerm", "FTAnd", "FTOr", "FTNot", "FTNear", "FTExpr",
    "Lang", "Call", "Arithmetic", "In", "Compare", "FtContains", "Regex", "Contains", "LangMatches", "EffectiveBoolean",
    "And", "Or", "Not", "Atom", "Expr", "operand_variables", "If", "Coalesce", "Exists", "IriCall",
    "TriplePattern", "TupleConjunct", "Branch", "GroupPattern", "Query",
    "IRI", "Literal", "Variable", "BlankNode", "Wildcard", "TypePath", "WILDCARD", "TYPE_PATH",
]
