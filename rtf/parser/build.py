"""From Lark's parse tree to the query model (`rtf.query.model`).

One pass over the tree, in document order, so that ``BASE`` and ``PREFIX``
apply to what follows them. Everything the grammar lets through but the
spec does not accept is rejected here, with the position of the offending
part: property paths other than ``a/rdfs:subClassOf*``, literal subjects,
undefined prefixes, bad full-text strings, ``ftnear`` bounds and operands,
a group without triple patterns.

Every constant is checked here with the rule the engines apply when they
build its key (pyoxigraph's, see `rtf.query.terms`): an IRI must be absolute and
valid (RFC 3987) once ``BASE`` and prefixes are applied, a language tag
well-formed (BCP 47). So a query that parses registers in every engine.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pyoxigraph as ox
from lark import Token, Tree

from rtf.errors import QueryError, QuerySyntaxError, UnsupportedQueryError
from rtf.parser.lexical import iri_text, string_value
from rtf.query.decompose import decompose, decompose_group
from rtf.query.model import (
    And,
    Arithmetic,
    Call,
    Compare,
    Contains,
    EffectiveBoolean,
    FTAnd,
    FtContains,
    FTNear,
    FTNot,
    FTOr,
    FTTerm,
    GroupPattern,
    In,
    Lang,
    LangMatches,
    Not,
    Or,
    Query,
    Regex,
    TriplePattern,
)
from rtf.query.terms import (
    IRI,
    RDF_LANGSTRING,
    RDF_TYPE,
    RDFS_SUBCLASSOF,
    TYPE_PATH,
    WILDCARD,
    XSD,
    BlankNode,
    Literal,
    Variable,
    is_variable,
    shared,
)
from rtf.query.terms import iri as shared_iri
from rtf.query.terms import variable as shared_variable
from rtf.query.fields import fielded
from rtf.query.text import FullTextError, parse_ft_string
from rtf.query.functions import FUNCTION_ARITY, XSD_CASTS

#: Prefixes known without a PREFIX declaration (as DBpedia's endpoint does);
#: a declaration in the query overrides them.
BUILTIN_PREFIXES = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": XSD,
    "owl": "http://www.w3.org/2002/07/owl#",
}

#: The functions of version 2 (spec section 1): a FILTER calling another makes a
#: version-3 query.
V2_FUNCTIONS = frozenset({
    "str", "lang", "datatype", "bound", "isiri", "isliteral", "isblank", "isnumeric", "sameterm",
    "lcase", "ucase", "strlen", "strstarts", "strends", "contains", "year", "month", "day", "abs"})

#: What version 1 called an operand: kept as such so that its model is unchanged.
_SIMPLE_OPERAND = (Variable, BlankNode, IRI, Literal, Lang)

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_LOCAL_ESC = re.compile(r"\\([_~.\-!$&'()*+,;=/?#@%])")


def _where(node) -> tuple[int | None, int | None]:
    if isinstance(node, Token):
        return node.line, node.column
    meta = getattr(node, "meta", None)
    if meta is not None and not meta.empty:
        return meta.line, meta.column
    return None, None


def _syntax(message: str, node) -> QuerySyntaxError:
    line, col = _where(node)
    return QuerySyntaxError(message, line, col, str(node) if isinstance(node, Token) else None)


def _unsupported(construct: str, node, detail: str = "") -> UnsupportedQueryError:
    line, col = _where(node)
    return UnsupportedQueryError(construct, line, col, detail)


class OutsideFragment(Exception):
    """The query is valid, but outside the fragment of spec sections 1-4 (version 2),
    whose model the indexes answer by themselves: it is built as a version-3 query
    instead (`rtf.parser.algebra`), which its algebra confirms. Never seen by a caller."""

    def __init__(self, construct: str):
        super().__init__(construct)
        self.construct = construct


#: What a version-2 group holds; any other part makes a version-3 query.
_V2_GROUP_PARTS = frozenset({"triples_block", "filter", "group_or_union", "optional_pattern"})


class QueryBuilder:
    """Builds one `Query` from one parse tree."""

    def __init__(self, text: str):
        self.text = text
        self.base: str | None = None
        self.prefixes = dict(BUILTIN_PREFIXES)
        self.patterns: list[TriplePattern] = []  # of the group being built
        self.filters: list = []
        self.unions: list[tuple[GroupPattern, ...]] = []
        self.all_patterns: list[TriplePattern] = []  # of every group
        self.all_filters: list = []
        self.anon = 0
        self.pattern_vars: dict[str, None] = {}  # ordered set: names in order of appearance
        self.valid_iris: set[str] = set()  # IRIs already checked: each is checked once
        self.first_union = None  # the first UNION or alternative predicate, for errors
        self.depth = 0  # of the group being built: 1 is the WHERE group

    # ------------------------------------------------------------ entry
    def prologue(self, prologue: Tree) -> None:
        """``BASE`` and ``PREFIX`` declarations, in order."""
        for decl in prologue.children:
            if decl.data == "base_decl":
                self.base = self.resolve(decl.children[0])
            else:
                ns, iri = decl.children
                self.prefixes[str(ns)[:-1]] = self.resolve(iri)

    def build(self, tree: Tree) -> Query:
        prologue, query, *trailing = tree.children
        self.prologue(prologue)
        if trailing or query.data not in ("ask_query", "select_query"):
            raise OutsideFragment(trailing[0].data if trailing else query.data)
        children = query.children
        if any(c.data == "dataset_clause" for c in children):
            raise OutsideFragment("dataset clause")  # refused by name (`rtf.parser.algebra`)
        if children[-1].children:  # solution_modifier
            raise OutsideFragment("solution modifier")
        if query.data == "ask_query":
            form, distinct, projection_node = "ASK", False, None
            where = children[0]
        else:
            form = "SELECT"
            clause = list(children[0].children)
            distinct = False
            if clause[0].data == "select_modifier":
                distinct = clause.pop(0).children[0].upper() == "DISTINCT"
            projection_node, where = clause[0], children[1]
            if any(isinstance(c, Tree) and c.data == "select_expression"
                   for c in projection_node.children):
                raise OutsideFragment("expression in SELECT")
        group = where.children[0]
        where_pattern = self.group_pattern(group)
        self.collect(where_pattern)
        if not self.all_patterns:
            raise OutsideFragment("group without a triple pattern")
        projection: tuple[str, ...] = ()
        if projection_node is not None:
            first = projection_node.children[0]
            if isinstance(first, Token) and first.type == "STAR":
                projection = shared(tuple(self.pattern_vars))
            else:
                names = [self.variable(v).name for v in projection_node.children]
                projection = shared(tuple(dict.fromkeys(names)))  # ("s",): one tuple for all
        patterns = shared(tuple(self.all_patterns))
        filters = tuple(self.all_filters)
        basic = where_pattern.is_basic
        try:
            branches = decompose(patterns, filters) if basic else decompose_group(where_pattern)
        except QueryError as e:
            if e.line is None:
                # Where the structural disjunction is: the first UNION or (p|q).
                e.line, e.column = _where(self.first_union or group)
                e.args = (f"line {e.line}, column {e.column}: {e.message}",)
            raise
        return Query(form, projection, distinct, patterns, filters, branches, self.text,
                     None if basic else where_pattern)

    def group_pattern(self, node: Tree) -> GroupPattern:
        """A ``{ ... }`` group: its triples, FILTERs, UNIONs and OPTIONALs, in its own scope."""
        if node.data != "group":
            raise OutsideFragment("sub-query")
        saved = self.patterns, self.filters, self.unions
        self.patterns, self.filters, self.unions = [], [], []
        optionals = []
        self.depth += 1
        try:
            for part in node.children:
                if part.data not in _V2_GROUP_PARTS:
                    raise OutsideFragment(part.data)
                if part.data == "triples_block":
                    if optionals:
                        raise OutsideFragment("triple pattern after OPTIONAL")
                    for tss in part.children:
                        self.triples_same_subject(tss)
                elif part.data == "filter":
                    self.filters.append(self.expression(part.children[0]))
                elif part.data == "group_or_union":
                    if optionals:
                        raise OutsideFragment("group or UNION after OPTIONAL")
                    self.first_union = self.first_union or part
                    self.unions.append(tuple(self.group_pattern(g) for g in part.children))
                else:  # optional_pattern
                    optionals.append(self.optional_group(part))
            group = GroupPattern(tuple(self.patterns), tuple(self.filters), tuple(self.unions),
                                 tuple(optionals))
            return group
        finally:
            self.patterns, self.filters, self.unions = saved
            self.depth -= 1

    def collect(self, group: GroupPattern) -> None:
        """Every pattern and filter of `group` (required ones first) into the query's lists."""
        self.all_patterns += group.patterns
        self.all_filters += group.filters
        for union in group.unions:
            for side in union:
                self.collect(side)
        for optional in group.optionals:
            self.collect(optional)

    def optional_group(self, node: Tree) -> GroupPattern:
        """``OPTIONAL { ... }`` in the WHERE group itself (its own group may hold
        UNION and (p|q), not another OPTIONAL: that one is nested)."""
        if self.depth > 1:
            raise OutsideFragment("OPTIONAL inside a nested group")
        return self.group_pattern(node.children[0])

    # ------------------------------------------------------------ terms
    def resolve(self, tok: Token) -> str:
        """The absolute IRI an IRIREF token stands for (resolved against ``BASE``)."""
        iri = iri_text(tok)
        if _SCHEME.match(iri):
            return self.checked_iri(iri, tok)
        if self.base is None:
            raise _syntax(f"relative IRI <{iri}> and no BASE to resolve it against", tok)
        try:
            joined = urljoin(self.base, iri)
        except ValueError as e:  # urljoin parses the base again; it may still refuse it
            raise _syntax(f"IRI <{iri}> cannot be resolved against BASE <{self.base}>: {e}",
                          tok) from None
        # urljoin drops an empty fragment ("ns#"), which namespaces end with.
        if iri.endswith("#") and not joined.endswith("#"):
            joined += "#"
        if not _SCHEME.match(joined):  # urljoin leaves it relative for a base like urn:x
            raise _syntax(f"IRI <{iri}> cannot be resolved against BASE <{self.base}>", tok)
        return self.checked_iri(joined, tok)

    def checked_iri(self, iri: str, node) -> str:
        """`iri`, if it is an absolute IRI the engines' canonicaliser accepts."""
        if iri not in self.valid_iris:
            try:
                ox.NamedNode(iri)
            except ValueError as e:
                raise _syntax(f"invalid IRI <{iri}>: {e}", node) from None
            self.valid_iris.add(iri)
        return iri

    def iri(self, node: Tree) -> IRI:
        tok = node.children[0]
        if tok.type == "IRIREF":
            return shared_iri(self.resolve(tok))
        prefix, _, local = str(tok).partition(":")
        if prefix not in self.prefixes:
            raise _syntax(f"undefined prefix {prefix + ':'!r}; declare it with "
                          f"PREFIX {prefix}: <...>", tok)
        return shared_iri(self.checked_iri(self.prefixes[prefix] + _LOCAL_ESC.sub(r"\1", local), tok))

    def variable(self, node: Tree) -> Variable:
        return shared_variable(str(node.children[0])[1:])

    def literal(self, node: Tree) -> Literal:
        kind = node.data
        if kind == "numeric_literal":
            tok = str(node.children[0])
            if "e" in tok or "E" in tok:
                dt = "double"
            elif "." in tok:
                dt = "decimal"
            else:
                dt = "integer"
            return Literal(tok, XSD + dt)
        if kind == "boolean_literal":
            return Literal(str(node.children[0]).lower(), XSD + "boolean")
        value = string_value(node.children[0])
        if len(node.children) == 1:
            return Literal(value)
        extra = node.children[1]
        if isinstance(extra, Token):  # LANGTAG
            literal = Literal(value, lang=str(extra)[1:].lower())
        else:
            literal = Literal(value, datatype=self.iri(extra).value)
            if literal.datatype == RDF_LANGSTRING:
                raise _syntax("an rdf:langString literal needs a language tag "
                              '("x"@en), not a datatype', node)
        try:
            literal.key  # what every engine computes; it must not fail there
        except ValueError as e:
            what = f"language tag {str(extra)!r}" if literal.lang else "literal"
            raise _syntax(f"invalid {what}: {e}", node) from None
        return literal

    def term(self, node):
        """A subject or object: variable, constant, blank node or wildcard."""
        if isinstance(node, Token):  # STAR inlined
            return WILDCARD
        kind = node.data
        if kind == "var":
            v = self.variable(node)
            self.pattern_vars.setdefault(v.name)
            return v
        if kind == "iri":
            return self.iri(node)
        if kind in ("rdf_literal", "numeric_literal", "boolean_literal"):
            return self.literal(node)
        if kind == "wildcard":
            return WILDCARD
        if kind == "blank_node":
            tok = node.children[0]
            if tok.type == "ANON":
                return self.fresh_blank()
            return BlankNode(str(tok)[2:])
        if kind == "blank_node_property_list":
            b = self.fresh_blank()
            self.property_list(b, node.children[0])
            return b
        if kind == "collection":
            raise OutsideFragment("collection")
        raise _syntax(f"unexpected {kind}", node)

    def fresh_blank(self) -> BlankNode:
        self.anon += 1
        return BlankNode(f"[]{self.anon}")  # '[' never occurs in a written label

    # ---------------------------------------------------------- triples
    def triples_same_subject(self, node: Tree) -> None:
        first = node.children[0]
        if isinstance(first, Tree) and first.data in ("rdf_literal", "numeric_literal",
                                                      "boolean_literal", "collection"):
            raise OutsideFragment("literal or collection as subject")
        subject = self.term(first)
        if len(node.children) > 1:
            self.property_list(subject, node.children[1])

    def property_list(self, subject, node: Tree) -> None:
        for vo in node.children:
            verb_node, objects = vo.children
            predicate = self.verb(verb_node)
            for obj_node in objects.children:
                if isinstance(obj_node, Tree) and obj_node.data == "collection":
                    raise OutsideFragment("collection")
                if isinstance(obj_node, Tree) and obj_node.data == "blank_node_property_list":
                    b = self.fresh_blank()
                    self.add_pattern(subject, predicate, b, verb_node)
                    self.property_list(b, obj_node.children[0])
                else:
                    self.add_pattern(subject, predicate, self.term(obj_node), verb_node)

    def add_pattern(self, subject, predicate, obj, verb_node) -> None:
        """One triple pattern; with alternative predicates, a UNION of one pattern each."""
        if isinstance(predicate, tuple):
            self.first_union = self.first_union or verb_node
            self.unions.append(tuple(GroupPattern((shared(TriplePattern(subject, p, obj)),))
                                     for p in predicate))
        else:
            self.patterns.append(shared(TriplePattern(subject, predicate, obj)))

    def verb(self, node):
        if isinstance(node, Token):
            return WILDCARD
        kind = node.data
        if kind == "var":
            return self.term(node)
        if kind == "wildcard":
            return WILDCARD
        if kind == "iri":
            return self.iri(node)
        if kind == "rdf_type":
            return IRI(RDF_TYPE)
        if kind == "path_group" and len(node.children) == 1:
            return self.verb(node.children[0])
        if self.is_type_path(node):
            return TYPE_PATH
        if kind == "path_alternative":
            alternatives = self.alternative_predicates(node)
            if alternatives is not None:
                return alternatives
        start, end = node.meta.start_pos, node.meta.end_pos
        return self._raise_path(node, self.text[start:end])

    def alternative_predicates(self, node: Tree) -> tuple | None:
        """``(p1|p2|...)`` between IRIs (or ``a``): the distinct predicates, else None."""
        out = []
        for alt in node.children:
            while isinstance(alt, Tree) and alt.data == "path_group" and len(alt.children) == 1:
                alt = alt.children[0]
            if not isinstance(alt, Tree):
                return None
            if alt.data == "iri":
                out.append(self.iri(alt))
            elif alt.data == "rdf_type":
                out.append(shared_iri(RDF_TYPE))
            else:
                return None
        return tuple(dict.fromkeys(out))

    def _raise_path(self, node, written: str):
        raise OutsideFragment("property path")

    def _is_iri(self, node, value: str) -> bool:
        if node.data == "rdf_type":
            return value == RDF_TYPE
        if node.data == "path_group" and len(node.children) == 1 and isinstance(node.children[0], Tree):
            return self._is_iri(node.children[0], value)
        return node.data == "iri" and self.iri(node).value == value

    def is_type_path(self, node: Tree) -> bool:
        """``a/rdfs:subClassOf*`` or ``rdf:type/rdfs:subClassOf*``."""
        if node.data != "path_sequence" or len(node.children) != 2:
            return False
        first, second = node.children
        if not isinstance(first, Tree) or not self._is_iri(first, RDF_TYPE):
            return False
        return (isinstance(second, Tree) and second.data == "path_elt"
                and isinstance(second.children[0], Tree)
                and self._is_iri(second.children[0], RDFS_SUBCLASSOF)
                and str(second.children[1]) == "*")

    # ---------------------------------------------------------- filters
    #: Boolean-valued parse-tree rules; anything else used as a condition is
    #: read by its effective boolean value.
    _CONDITIONS = frozenset({"or_expr", "and_expr", "negation", "compare", "in_expr",
                             "not_in_expr", "ftcontains_call", "regex_call", "langmatches_call"})

    def expression(self, node):
        """A FILTER condition: a boolean expression of `rtf.query.model`."""
        if isinstance(node, Token) or node.data not in self._CONDITIONS:
            value = self.value(node)
            if isinstance(value, Call) and value.name == "contains" and all(
                    isinstance(a, _SIMPLE_OPERAND) for a in value.args):
                return Contains(*value.args)
            return EffectiveBoolean(value)
        kind = node.data
        if kind == "or_expr":
            return Or(tuple(self.expression(c) for c in node.children))
        if kind == "and_expr":
            return And(tuple(self.expression(c) for c in node.children))
        if kind == "negation":
            return Not(self.expression(node.children[0]))
        if kind == "compare":
            left, op, right = node.children
            return Compare(str(op), self.value(left), self.value(right))
        if kind in ("in_expr", "not_in_expr"):
            arg, values = node.children[0], node.children[-1]
            return In(self.value(arg), tuple(self.value(v) for v in values.children),
                      kind == "not_in_expr")
        if kind == "ftcontains_call":
            arg = self.value(node.children[0])
            if not is_variable(arg):
                raise OutsideFragment("ftcontains on an expression")
            return FtContains(arg, fielded(self.ft(node.children[1])))
        if kind == "regex_call":
            return Regex(*(self.value(c) for c in node.children))
        return LangMatches(*(self.value(c) for c in node.children))  # langmatches_call

    def value(self, node):
        """An expression used for its value: a term, a function call, arithmetic."""
        if isinstance(node, Token):
            raise _syntax(f"unexpected {node!r} in an expression", node)
        kind = node.data
        if kind == "var":
            return self.variable(node)
        if kind == "iri":
            return self.iri(node)
        if kind in ("rdf_literal", "numeric_literal", "boolean_literal"):
            return self.literal(node)
        if kind == "arithmetic":
            left, op, right = node.children
            return Arithmetic(str(op), self.value(left), self.value(right))
        if kind == "signed_arithmetic":  # ``?x -1``: the sign is the operator
            left, number = node.children
            text = str(number)
            return Arithmetic(text[0], self.value(left), self.literal(Tree(
                "numeric_literal", [Token("NUMBER", text[1:])])))
        if kind == "unary_arithmetic":
            op, arg = node.children
            return Call(str(op), (self.value(arg),))
        if kind == "builtin_function":
            return self.builtin(node)
        if kind == "function_call":
            return self.cast(node)
        if kind in ("aggregate", "exists_call", "not_exists_call"):
            raise OutsideFragment(kind)
        if kind in self._CONDITIONS:
            return self.expression(node)  # a boolean used as a value: (?a < ?b) = true
        raise _syntax(f"unexpected {kind} in FILTER", node)

    def builtin(self, node):
        name_tok, args_node = node.children
        name = str(name_tok).lower()
        if name == "isuri":
            name = "isiri"
        if name not in V2_FUNCTIONS:
            raise OutsideFragment(f"function {name}")
        arity = FUNCTION_ARITY[name]
        args = tuple(self.value(a) for a in args_node.children)
        if len(args) != arity:
            raise _syntax(f"{name_tok}() takes {arity} argument{'s' if arity != 1 else ''}, "
                          f"not {len(args)}", name_tok)
        if name == "bound" and not is_variable(args[0]):
            raise _syntax("bound() takes a variable", name_tok)
        if name == "lang" and isinstance(args[0], _SIMPLE_OPERAND):
            return Lang(args[0])  # the version-1 operand, as the indexes know it
        return Call(name, args)

    def cast(self, node):
        iri_node, args_node = node.children
        target = self.iri(iri_node).value
        if target not in XSD_CASTS:
            raise _unsupported("function call", iri_node,
                               f"<{target}>; the functions called by IRI are the XSD casts "
                               f"(xsd:{', xsd:'.join(sorted(t.rpartition('#')[2] for t in XSD_CASTS))})")
        args = tuple(self.value(a) for a in args_node.children)
        if len(args) != 1:
            raise _syntax(f"a cast takes one argument, not {len(args)}", iri_node)
        return Call(target, args)

    # ------------------------------------------------------- full text
    def ft(self, node):
        kind = node.data
        if kind == "ft_string":
            tok = node.children[0]
            try:
                return parse_ft_string(string_value(tok))
            except FullTextError as e:
                raise _syntax(f"invalid full-text string: {e}", tok) from None
        operands = [c for c in node.children if isinstance(c, Tree)]
        if kind == "ft_or":
            return FTOr(tuple(self.ft(c) for c in operands))
        if kind == "ft_and":
            return FTAnd(tuple(self.ft(c) for c in operands))
        if kind == "ft_not":
            return FTNot(self.ft(operands[0]))
        if kind == "ft_near":
            return self.ft_near(node, operands)
        raise _syntax(f"unexpected {kind} in a full-text expression", node)

    def ft_near(self, node: Tree, operands) -> FTNear:
        tokens = [c for c in node.children if isinstance(c, Token)]
        keyword = tokens[0]
        numbers = [t for t in tokens if t.type in ("NUMBER", "SIGNED_NUMBER")]
        bounds = []
        for t in numbers:
            if not re.fullmatch(r"\d+", str(t)):
                raise _syntax(f"ftnear bounds must be whole numbers >= 0, not {str(t)!r}", t)
            bounds.append(int(str(t)))
        lo, hi = bounds
        if lo > hi:
            raise _syntax(f"ftnear({lo}, {hi}): the minimum distance exceeds the maximum", keyword)
        ordered = not any(t.type == "UNORDERED" for t in tokens)
        left, right = (self.ft(o) for o in operands)
        for side, o in ((left, operands[0]), (right, operands[1])):
            if not isinstance(side, FTTerm):
                raise _syntax("the operands of ftnear must each be a term or a phrase, "
                              f"not {side}", o)
        return FTNear(left, right, lo, hi, ordered)
