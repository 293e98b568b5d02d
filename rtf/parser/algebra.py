"""From the parse tree to the algebra of a version-3 query (SPARQL 1.1, section 18.2).

A query outside the fragment of spec sections 1-4 (`rtf.parser.build` says
so by raising `OutsideFragment`) is built here, by the translation of
section 18.2 step by step:

- each group graph pattern is folded left to right: a triples block joins
  the group so far, ``OPTIONAL`` left-joins it (the optional group's FILTER
  becomes the left join's condition), ``MINUS`` subtracts, ``BIND`` extends,
  ``VALUES``, nested groups, ``UNION`` and sub-``SELECT`` s join; the
  group's FILTERs then apply to the whole group (18.2.2.6);
- property paths: a sequence becomes triples through hidden middle
  variables and ``^p`` the reversed triple (18.2.2.4); the other paths stay
  path patterns; ``a/rdfs:subClassOf*`` is the taxonomy's, as in version 1;
- a SELECT: ``GROUP BY`` and the aggregates (each aggregate of SELECT,
  HAVING and ORDER BY becomes a hidden variable the `Group` binds),
  ``HAVING``, a trailing ``VALUES``, the projection's expressions,
  ``ORDER BY``, the projection, ``DISTINCT``/``REDUCED``, ``OFFSET``/``LIMIT``
  (18.2.4), in that order.

The query's branches, what the indexes use to decide which queries to
evaluate, are the algebra's required triple patterns (`rtf.algebra.presearch`).
Terms, expressions and full-text expressions are built by the version-2
builder this one extends, so a constant is checked the same way in both.
"""

from __future__ import annotations

from lark import Token, Tree

from rtf.algebra.model import (
    BGP,
    UNIT,
    Aggregate,
    AlgebraQuery,
    Alternative,
    Distinct,
    Extend,
    Filter,
    Group,
    Inverse,
    Join,
    LeftJoin,
    Link,
    Minus,
    NegatedSet,
    OneOrMore,
    OrderBy,
    PathPattern,
    Project,
    Reduced,
    Sequence,
    Slice,
    Union,
    Values,
    ZeroOrMore,
    ZeroOrOne,
)
from rtf.algebra.presearch import presearch_branches
from rtf.algebra.scope import in_scope
from rtf.parser.build import QueryBuilder, V2_FUNCTIONS, _syntax, _unsupported
from rtf.parser.lexical import string_value
from rtf.query.fields import fielded
from rtf.query.functions import FUNCTION_ARITIES
from rtf.query.model import And, Call, Coalesce, Exists, FtContains, If, IriCall, Query, TriplePattern
from rtf.query.terms import (
    RDF_TYPE,
    TYPE_PATH,
    WILDCARD,
    BlankNode,
    IRI,
    TypePath,
    Variable,
    shared,
)
from rtf.query.terms import iri as shared_iri

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

class AlgebraBuilder(QueryBuilder):
    """Builds one version-3 `Query` (its `algebra`) from one parse tree."""

    def __init__(self, text: str):
        super().__init__(text)
        self.hidden = 0  # hidden variables made so far (aggregates)
        self.in_template = False  # building a CONSTRUCT template
        #: While a SELECT's expressions are built: the aggregates met, (hidden name, Aggregate)
        self.aggregates: list[tuple[str, Aggregate]] | None = None
        #: each variable's first place in the text outside a FILTER: SELECT *'s order of
        #: appearance (the translation may move a group's paths after its triples)
        self.appearance: dict[str, int] = {}
        self.filtering = 0  # FILTERs being built: a variable there is not in scope by it

    def variable(self, node: Tree) -> Variable:
        var = super().variable(node)
        place = getattr(node.children[0], "start_pos", None)
        if place is not None and not self.filtering and place < self.appearance.get(var.name, place + 1):
            self.appearance[var.name] = place
        return var

    def filter_condition(self, node) -> object:
        """A FILTER's condition (its variables do not place them in SELECT *'s order: a
        FILTER binds nothing, as the other engines read a query's patterns)."""
        self.filtering += 1
        try:
            return self.expression(node)
        finally:
            self.filtering -= 1

    # ------------------------------------------------------------ entry
    def build(self, tree: Tree) -> Query:
        prologue, query, *trailing = tree.children
        self.prologue(prologue)
        self.refuse_outside_contract(query)
        values = self.values_block(trailing[0].children[1]) if trailing else None
        kind = query.data
        template: tuple = ()
        if kind == "select_query":
            clause, where, modifiers = self._parts(query)
            pattern, projection, ordered = self.select(clause, where, modifiers, values)
            form = "SELECT"
        elif kind == "ask_query":
            _, where, modifiers = self._parts(query, clause=False)
            pattern, _, ordered = self.select(None, where, modifiers, values)
            form, projection = "ASK", ()
        elif kind == "construct_query":
            template_node, where, modifiers = self._parts(query)
            template = self.template(template_node.children[0] if template_node.children else None)
            pattern, _, ordered = self.select(None, where, modifiers, values)
            form, projection = "CONSTRUCT", ()
        else:  # construct_where: the template is the pattern
            nodes = [c for c in query.children if isinstance(c, Tree) and c.data != "dataset_clause"]
            triples_node = nodes[0] if nodes[0].data == "triples_template" else None
            template = self.template(triples_node)
            if any(isinstance(t.predicate, TypePath) for t in template):
                raise _unsupported("property path in CONSTRUCT WHERE", query,
                                   "its template is its pattern, and a template holds triples")
            where_pattern = BGP(tuple(TriplePattern(*(self._template_to_pattern(x) for x in t.terms))
                                      for t in template))
            pattern, _, ordered = self.modified(where_pattern, None, nodes[-1], values)
            form, projection = "CONSTRUCT", ()
        algebra = AlgebraQuery(form, _interned(pattern), projection, template, ordered)
        return Query(form, projection, False, (), (), presearch_branches(algebra), self.text,
                     None, algebra)

    def refuse_outside_contract(self, query: Tree) -> None:
        """Raise `UnsupportedQueryError` for what no version of the contract accepts:
        DESCRIBE, FROM / FROM NAMED, GRAPH and SERVICE (spec section 5)."""
        if query.data == "describe_query":
            raise _unsupported("DESCRIBE", query.children[0])
        stack = [query]
        while stack:
            node = stack.pop()
            kind = node.data
            if kind == "dataset_clause":
                named = any(isinstance(c, Token) and c.type == "NAMED" for c in node.children)
                raise _unsupported("FROM NAMED (dataset clause)" if named else "FROM (dataset clause)",
                                   node.children[0], "a query reads the publication, its default graph")
            if kind == "graph_pattern":
                raise _unsupported("GRAPH", node.children[0],
                                   "a publication is one default graph, with no named graphs")
            if kind == "service_pattern":
                raise _unsupported("SERVICE", node.children[0], "federated queries are not evaluated")
            stack.extend(c for c in reversed(node.children) if isinstance(c, Tree))

    @staticmethod
    def _parts(query: Tree, clause: bool = True):
        nodes = [c for c in query.children if isinstance(c, Tree) and c.data != "dataset_clause"]
        if not clause:
            return (None, *nodes)
        return nodes

    # ------------------------------------------------------------ SELECT and modifiers
    def select(self, clause: Tree | None, where: Tree, modifiers: Tree, values):
        """The algebra of a SELECT (or of ASK and CONSTRUCT, without `clause`), its
        projection and whether it ends in ORDER BY."""
        pattern = self.group(where.children[0])
        return self.modified(pattern, clause, modifiers, values)

    def modified(self, pattern, clause: Tree | None, modifiers: Tree, values):
        """`pattern` with the select clause and solution modifiers applied (18.2.4)."""
        parts = {c.data: c for c in modifiers.children}
        self.aggregates = []
        star, distinct, reduced, items = False, False, False, []
        if clause is not None:
            children = list(clause.children)
            if children[0].data == "select_modifier":
                word = str(children.pop(0).children[0]).upper()
                distinct, reduced = word == "DISTINCT", word == "REDUCED"
            vars_node = children[0]
            if isinstance(vars_node.children[0], Token):  # STAR
                star = True
            else:
                for item in vars_node.children:
                    if item.data == "var":
                        items.append((self.variable(item).name, None, item))
                    else:  # select_expression: (expr AS ?v)
                        expr_node, _, var_node = item.children
                        items.append((self.variable(var_node).name, self.value(expr_node), var_node))
        keys = []
        group_node = parts.get("group_clause")
        if group_node is not None:
            for cond in group_node.children[2:]:
                keys.append(self.group_key(cond))
        having = []
        having_node = parts.get("having_clause")
        if having_node is not None:
            having = [self.expression(c) for c in having_node.children[1:]]
        order = []
        order_node = parts.get("order_clause")
        if order_node is not None:
            for cond in order_node.children[2:]:
                order.append(self.order_condition(cond))
        aggregates, self.aggregates = self.aggregates, None
        grouped = bool(keys) or bool(aggregates)
        if grouped:
            if star:
                raise _syntax("SELECT * cannot be used with GROUP BY or aggregates; name the "
                              "grouped variables", clause)
            pattern = Group(pattern, tuple(keys), tuple(aggregates))
            allowed = {name for expr, name in keys if name is not None}
            allowed |= {expr.name for expr, _ in keys if isinstance(expr, Variable)}
            for name, expr, node in items:
                free = {name} if expr is None else self._free_variables(expr)
                for v in sorted(free - allowed):
                    if v[0] not in "_.":
                        raise _syntax(f"?{v} is neither grouped nor aggregated: group by it, "
                                      f"or use it inside an aggregate (SAMPLE(?{v}))", node)
        if having:
            pattern = Filter(having[0] if len(having) == 1 else And(tuple(having)), pattern)
        if values is not None:
            pattern = Join(pattern, values) if pattern != UNIT else values
        visible = in_scope(pattern)
        for name, expr, node in items:
            if expr is not None:
                if name in in_scope(pattern):
                    raise _syntax(f"?{name} is already bound where SELECT (... AS ?{name}) binds it",
                                  node)
                pattern = Extend(pattern, name, expr)
        if order:
            pattern = OrderBy(pattern, tuple(order))
        if star:  # in order of appearance (stable: a variable never written keeps its place last)
            last = len(self.text) + 1
            visible = sorted(visible, key=lambda name: self.appearance.get(name, last))
        projection = tuple(dict.fromkeys(visible if star else [name for name, _, _ in items]))
        if clause is not None:
            pattern = Project(pattern, shared(projection))
        if distinct:
            pattern = Distinct(pattern)
        elif reduced:
            pattern = Reduced(pattern)
        limit_node = parts.get("limit_offset_clauses")
        if limit_node is not None:
            start, length = 0, None
            for c in limit_node.children:
                number = int(str(c.children[1]))
                if c.data == "limit_clause":
                    length = number
                else:
                    start = number
            pattern = Slice(pattern, start, length)
        return pattern, projection, bool(order)

    @staticmethod
    def _free_variables(expr) -> set[str]:
        from rtf.query.model import operand_variables
        return operand_variables(expr)

    def group_key(self, node):
        if isinstance(node, Tree) and node.data == "group_expression":
            expr = self.value(node.children[0])
            name = self.variable(node.children[-1]).name if len(node.children) > 1 else None
            return expr, name
        if isinstance(node, Tree) and node.data == "var":
            v = self.variable(node)
            return v, v.name
        return self.value(node), None

    def order_condition(self, node):
        if node.data == "order_ascending":
            return self.value(node.children[1]), False
        if node.data == "order_descending":
            return self.value(node.children[1]), True
        return self.value(node.children[0]), False

    # ------------------------------------------------------------ groups
    def group(self, node: Tree):
        """A group graph pattern's algebra (18.2.2.6)."""
        if node.data == "sub_select_group":
            sub = node.children[0]
            clause, where, modifiers, *trailing = sub.children
            values = self.values_block(trailing[0].children[1]) if trailing else None
            saved, self.aggregates = self.aggregates, None
            try:
                pattern, _, _ = self.select(clause, where, modifiers, values)
            finally:
                self.aggregates = saved
            return pattern
        saved = self.aggregates
        self.aggregates = None  # an aggregate inside a group is an error
        try:
            g = UNIT
            filters = []
            for part in node.children:
                kind = part.data
                if kind == "triples_block":
                    g = _join(g, self.triples_block(part))
                elif kind == "filter":
                    filters.append(self.filter_condition(part.children[0]))
                elif kind == "group_or_union":
                    sides = [self.group(side) for side in part.children]
                    union = sides[0]
                    for side in sides[1:]:
                        union = Union(union, side)
                    g = _join(g, union)
                elif kind == "optional_pattern":
                    inner = self.group(part.children[0])
                    if isinstance(inner, Filter):
                        g = LeftJoin(g, inner.pattern, inner.expr)
                    else:
                        g = LeftJoin(g, inner, None)
                elif kind == "minus_pattern":
                    g = Minus(g, self.group(part.children[1]))
                elif kind == "bind":
                    _, expr_node, _, var_node = part.children
                    name = self.variable(var_node).name
                    if name in in_scope(g):
                        raise _syntax(f"BIND(... AS ?{name}): ?{name} is already bound in this "
                                      "group before the BIND", var_node)
                    g = Extend(g, name, self.value(expr_node))
                elif kind == "inline_data":
                    g = _join(g, self.values_block(part.children[1]))
                else:  # GRAPH and SERVICE were refused before
                    raise _syntax(f"unexpected {kind}", part)
            if filters:
                g = Filter(filters[0] if len(filters) == 1 else And(tuple(filters)), g)
                if type(g.pattern) is BGP:
                    g = shared(g)
            return g
        finally:
            self.aggregates = saved

    def values_block(self, node: Tree) -> Values:
        if node.data == "inline_data_one_var":
            var, *cells = node.children
            return Values((self.variable(var).name,), tuple((self._cell(c),) for c in cells))
        names = [self.variable(c).name for c in node.children if c.data == "var"]
        rows = []
        for row in (c for c in node.children if c.data == "data_block_row"):
            if len(row.children) != len(names):
                raise _syntax(f"a VALUES row has {len(row.children)} values for "
                              f"{len(names)} variables", row)
            rows.append(tuple(self._cell(c) for c in row.children))
        return Values(tuple(names), tuple(rows))

    def _cell(self, node) -> str | None:
        if isinstance(node, Token):  # UNDEF
            return None
        if node.data == "iri":
            return self.iri(node).key
        return self.literal(node).key

    # ------------------------------------------------------------ triples
    def triples_block(self, node: Tree):
        """A block's triple patterns (a BGP) joined with its path patterns."""
        self.items: list = []
        for tss in node.children:
            self.triples_same_subject(tss)
        triples = tuple(shared(t) for t in self.items if isinstance(t, TriplePattern))
        # (shared: queries that repeat a basic graph pattern hold one object, which a
        # publication evaluates once for all of them: rtf.algebra.evaluate)
        g = shared(BGP(triples)) if triples else UNIT
        for item in self.items:
            if isinstance(item, PathPattern):
                g = _join(g, item)
        return g

    def template(self, node: Tree | None) -> tuple[TriplePattern, ...]:
        """A CONSTRUCT template's triples (blank nodes are fresh per solution)."""
        self.items = []
        if node is not None:
            self.in_template = True
            try:
                for tss in node.children:
                    self.triples_same_subject(tss)
            finally:
                self.in_template = False
        for item in self.items:
            if isinstance(item, PathPattern) or isinstance(item.predicate, TypePath):
                raise _syntax("a CONSTRUCT template holds triples, not property paths", node)
            if any(t is WILDCARD for t in item.terms):
                raise _syntax("a CONSTRUCT template cannot hold the wildcard *", node)
        return tuple(self.items)

    @staticmethod
    def _template_to_pattern(term):
        return term

    def triples_same_subject(self, node: Tree) -> None:
        subject = self.term(node.children[0])
        if len(node.children) > 1:
            self.property_list(subject, node.children[1])

    def term(self, node):
        if isinstance(node, Tree) and node.data == "collection":
            return self.collection(node)
        return super().term(node)

    def collection(self, node: Tree):
        """``( a b ... )``: rdf:first/rdf:rest triples through fresh blank nodes; ``()`` is rdf:nil."""
        members = [self.term(c) for c in node.children]
        if not members:
            return shared_iri(RDF + "nil")
        heads = [self.fresh_blank() for _ in members]
        for k, (head, member) in enumerate(zip(heads, members)):
            self.items.append(TriplePattern(head, shared_iri(RDF + "first"), member))
            rest = heads[k + 1] if k + 1 < len(heads) else shared_iri(RDF + "nil")
            self.items.append(TriplePattern(head, shared_iri(RDF + "rest"), rest))
        return heads[0]

    def property_list(self, subject, node: Tree) -> None:
        for vo in node.children:
            verb_node, objects = vo.children
            predicate = self.verb(verb_node)
            for obj_node in objects.children:
                if isinstance(obj_node, Tree) and obj_node.data == "blank_node_property_list":
                    b = self.fresh_blank()
                    self.add_pattern(subject, predicate, b, verb_node)
                    self.property_list(b, obj_node.children[0])
                else:
                    self.add_pattern(subject, predicate, self.term(obj_node), verb_node)

    def add_pattern(self, subject, predicate, obj, verb_node) -> None:
        """A triple pattern, or the triples and path patterns a path makes (18.2.2.4)."""
        if not isinstance(predicate, (Link, Inverse, Sequence, Alternative, ZeroOrMore, OneOrMore,
                                      ZeroOrOne, NegatedSet)):
            self.items.append(TriplePattern(subject, predicate, obj))
            return
        if isinstance(predicate, Link):
            self.items.append(TriplePattern(subject, IRI(predicate.iri[1:-1]), obj))
        elif isinstance(predicate, Inverse) and isinstance(predicate.path, Link):
            self.items.append(TriplePattern(obj, IRI(predicate.path.iri[1:-1]), subject))
        elif isinstance(predicate, Sequence):
            ends = [subject] + [self.hidden_variable() for _ in predicate.parts[1:]] + [obj]
            for k, part in enumerate(predicate.parts):
                self.add_pattern(ends[k], part, ends[k + 1], verb_node)
        else:
            self.items.append(PathPattern(subject, predicate, obj))

    def hidden_variable(self) -> BlankNode:
        """A variable no query can name (a path's middle node): a blank node of its own."""
        return self.fresh_blank()

    def verb(self, node):
        if isinstance(node, Token):
            return WILDCARD
        kind = node.data
        if kind in ("var", "wildcard"):
            return super().verb(node)
        if self.in_template and kind not in ("iri", "rdf_type"):
            raise _syntax("a CONSTRUCT template holds triples: its predicates are IRIs, `a` or "
                          "variables, not property paths", node)
        if self.is_type_path(node):
            return TYPE_PATH
        return self.path(node)

    def path(self, node):
        """A property path's model (`rtf.algebra.model`)."""
        kind = node.data
        if kind == "iri":
            return Link(self.iri(node).key)
        if kind == "rdf_type":
            return Link(f"<{RDF_TYPE}>")
        if kind == "path_group":
            return self.path(node.children[0])
        if kind == "path_inverse":
            return Inverse(self.path(node.children[0]))
        if kind == "path_sequence":
            return Sequence(tuple(self.path(c) for c in node.children))
        if kind == "path_alternative":
            return Alternative(tuple(self.path(c) for c in node.children))
        if kind == "path_elt":
            inner, mod = node.children
            path = self.path(inner)
            return {"*": ZeroOrMore, "+": OneOrMore, "?": ZeroOrOne}[str(mod)](path)
        if kind == "path_negated_set":
            forward, backward = [], []
            for one in node.children[0].iter_subtrees_topdown():
                if one.data in ("path_one_in_set", "path_one_inverse"):
                    (backward if one.data == "path_one_inverse" else forward).append(self._set_member(one))
            return NegatedSet(tuple(forward), tuple(backward))
        raise _syntax(f"unexpected {kind} in a property path", node)

    def _set_member(self, one: Tree) -> str:
        child = one.children[0]
        if isinstance(child, Token):  # A
            return f"<{RDF_TYPE}>"
        return self.iri(child).key

    # ------------------------------------------------------------ expressions
    _CONDITIONS = QueryBuilder._CONDITIONS | {"exists_call", "not_exists_call"}

    def expression(self, node):
        if isinstance(node, Tree) and node.data in ("exists_call", "not_exists_call"):
            return Exists(self.group(node.children[-1]), node.data == "not_exists_call")
        return super().expression(node)

    def value(self, node):
        if isinstance(node, Tree):
            if node.data == "aggregate":
                return self.aggregate(node)
            if node.data in ("exists_call", "not_exists_call"):
                return self.expression(node)
            if node.data == "ftcontains_call":
                return FtContains(self.value(node.children[0]), fielded(self.ft(node.children[1])))
        return super().value(node)

    def aggregate(self, node: Tree):
        if self.aggregates is None:
            raise _syntax("an aggregate may only stand in SELECT, HAVING and ORDER BY", node)
        name = str(node.children[0]).lower()
        distinct = any(isinstance(c, Token) and c.type == "DISTINCT" for c in node.children)
        args = [c for c in node.children[1:] if not (isinstance(c, Token) and c.type == "DISTINCT")]
        separator = None
        if len(args) >= 4 and isinstance(args[-3], Token) and args[-3].type == "SEPARATOR":
            if name != "group_concat":
                raise _syntax("SEPARATOR belongs to GROUP_CONCAT", args[-3])
            if str(args[-2]) != "=":
                raise _syntax(f"expected SEPARATOR = \"...\", not {args[-2]!s}", args[-2])
            separator = string_value(args[-1])
            args = args[:-3]
        arg = args[0]
        if isinstance(arg, Token) and arg.type == "STAR":
            if name != "count":
                raise _syntax(f"{name.upper()}(*): only COUNT takes *", arg)
            expr = None
        else:
            saved, self.aggregates = self.aggregates, None  # no aggregate inside an aggregate
            try:
                expr = self.value(arg)
            finally:
                self.aggregates = saved
        agg = Aggregate(name, expr, distinct, separator)
        for hidden, known in self.aggregates:
            if known == agg:
                return Variable(hidden)
        self.hidden += 1
        hidden = f".agg{self.hidden}"
        self.aggregates.append((hidden, agg))
        return Variable(hidden)

    def builtin(self, node):
        name_tok, args_node = node.children
        name = str(name_tok).lower()
        if name in V2_FUNCTIONS or name == "isuri":
            return super().builtin(node)
        low, high = FUNCTION_ARITIES[name]
        args = tuple(self.value(a) for a in args_node.children)
        if len(args) < low or (high is not None and len(args) > high):
            want = str(low) if low == high else (f"{low} or more" if high is None else f"{low} to {high}")
            raise _syntax(f"{name_tok}() takes {want} argument{'s' if want != '1' else ''}, "
                          f"not {len(args)}", name_tok)
        if name == "if":
            return If(*args)
        if name == "coalesce":
            return Coalesce(args)
        if name in ("iri", "uri"):
            return IriCall(args[0], self.base)
        return Call(name, args)


_PATTERNS = (BGP, Join, LeftJoin, Filter, Union, Minus, Extend, Values, Group, OrderBy, Project,
             Distinct, Reduced, Slice, PathPattern)


def _interned(pattern):
    """`pattern` with every sub-pattern the shared object of its value (`shared`): queries
    that repeat a sub-pattern hold one object, evaluated once per publication for all of
    them (`rtf.algebra.evaluate`)."""
    if not isinstance(pattern, _PATTERNS) or isinstance(pattern, (BGP, Values, PathPattern)):
        return shared(pattern) if isinstance(pattern, (BGP, Values, PathPattern)) else pattern
    fields = [getattr(pattern, name) for name in type(pattern).__slots__]
    return shared(type(pattern)(*[_interned(f) if isinstance(f, _PATTERNS) else f for f in fields]))


def _join(left, right):
    """Join(left, right), with the empty group as the identity (18.2.2.8)."""
    if left == UNIT:
        return right
    if right == UNIT:
        return left
    return Join(left, right)


__all__ = ["AlgebraBuilder"]
