"""From Lark's parse tree to the query model (`rtf.model`).

One pass over the tree, in document order, so that ``BASE`` and ``PREFIX``
apply to what follows them. Everything the grammar lets through but the
spec does not accept is rejected here, with the position of the offending
part: property paths other than ``a/rdfs:subClassOf*``, literal subjects,
undefined prefixes, bad full-text strings, ``ftnear`` bounds and operands,
a group without triple patterns.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from lark import Token, Tree

from rtf.decompose import decompose
from rtf.errors import QueryError, QuerySyntaxError, UnsupportedQueryError
from rtf.model import (And, Compare, Contains, EffectiveBoolean, FTAnd, FTNear, FTNot, FTOr,
                       FTTerm, FtContains, Lang, LangMatches, Not, Or, Query, Regex, TriplePattern)
from rtf.terms import (IRI, RDF_TYPE, RDFS_SUBCLASSOF, TYPE_PATH, WILDCARD, XSD, BlankNode,
                       Literal, Variable)
from rtf.text import FullTextError, parse_ft_string

#: Prefixes known without a PREFIX declaration (as DBpedia's endpoint does);
#: a declaration in the query overrides them.
BUILTIN_PREFIXES = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": XSD,
    "owl": "http://www.w3.org/2002/07/owl#",
}

_ECHAR = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[tbnrf\"'\\])")
_ECHARS = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
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


def unescape_string(token: str) -> str:
    """The value of a SPARQL string token (quotes removed, escapes decoded)."""
    quote = 3 if token[:3] in ('"""', "'''") else 1
    body = token[quote:-quote]
    if "\\" not in body:
        return body

    def repl(m):
        e = m.group(1)
        if e[0] in "uU":
            return chr(int(e[1:], 16))
        return _ECHARS[e]
    return _ECHAR.sub(repl, body)


class QueryBuilder:
    """Builds one `Query` from one parse tree."""

    def __init__(self, text: str):
        self.text = text
        self.base: str | None = None
        self.prefixes = dict(BUILTIN_PREFIXES)
        self.patterns: list[TriplePattern] = []
        self.filters: list = []
        self.anon = 0
        self.pattern_vars: list[str] = []

    # ------------------------------------------------------------ entry
    def build(self, tree: Tree) -> Query:
        prologue, query = tree.children
        for decl in prologue.children:
            if decl.data == "base_decl":
                self.base = self.resolve(decl.children[0][1:-1])
            else:
                ns, iri = decl.children
                self.prefixes[str(ns)[:-1]] = self.resolve(iri[1:-1])
        if query.data == "ask_query":
            form, distinct, projection_node = "ASK", False, None
            where = query.children[0]
        else:
            form = "SELECT"
            children = list(query.children)
            distinct = False
            if children[0].data == "select_modifier":
                distinct = children.pop(0).children[0].upper() == "DISTINCT"
            projection_node, where = children
        group = where.children[0]
        for part in group.children:
            if part.data == "triples_block":
                for tss in part.children:
                    self.triples_same_subject(tss)
            else:  # filter
                self.filters.append(self.expression(part.children[0]))
        if not self.patterns:
            raise _syntax("a query needs at least one triple pattern in its WHERE group", group)
        projection: tuple[str, ...] = ()
        if projection_node is not None:
            first = projection_node.children[0]
            if isinstance(first, Token) and first.type == "STAR":
                projection = tuple(self.pattern_vars)
            else:
                names = [self.variable(v).name for v in projection_node.children]
                projection = tuple(dict.fromkeys(names))
        patterns = tuple(self.patterns)
        filters = tuple(self.filters)
        try:
            branches = decompose(patterns, filters)
        except QueryError as e:
            if e.line is None:
                e.line, e.column = _where(group)
                e.args = (f"line {e.line}, column {e.column}: {e.message}",)
            raise
        return Query(form, projection, distinct, patterns, filters, branches, self.text)

    # ------------------------------------------------------------ terms
    def resolve(self, iri: str) -> str:
        iri = _ECHAR.sub(lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] in "uU"
                         else m.group(0), iri)
        if self.base is not None and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", iri):
            joined = urljoin(self.base, iri)
            # urljoin drops an empty fragment ("ns#"), which namespaces end with.
            return joined + "#" if iri.endswith("#") and not joined.endswith("#") else joined
        return iri

    def iri(self, node: Tree) -> IRI:
        tok = node.children[0]
        if tok.type == "IRIREF":
            return IRI(self.resolve(tok[1:-1]))
        prefix, _, local = str(tok).partition(":")
        if prefix not in self.prefixes:
            raise _syntax(f"undefined prefix {prefix + ':'!r}; declare it with "
                          f"PREFIX {prefix}: <...>", tok)
        return IRI(self.prefixes[prefix] + _LOCAL_ESC.sub(r"\1", local))

    def variable(self, node: Tree) -> Variable:
        return Variable(str(node.children[0])[1:])

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
        value = unescape_string(str(node.children[0]))
        if len(node.children) == 1:
            return Literal(value)
        extra = node.children[1]
        if isinstance(extra, Token):  # LANGTAG
            return Literal(value, lang=str(extra)[1:].lower())
        return Literal(value, datatype=self.iri(extra).value)

    def term(self, node):
        """A subject or object: variable, constant, blank node or wildcard."""
        if isinstance(node, Token):  # STAR inlined
            return WILDCARD
        kind = node.data
        if kind == "var":
            v = self.variable(node)
            if v.name not in self.pattern_vars:
                self.pattern_vars.append(v.name)
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
        raise _syntax(f"unexpected {kind}", node)

    def fresh_blank(self) -> BlankNode:
        self.anon += 1
        return BlankNode(f"[]{self.anon}")  # '[' never occurs in a written label

    # ---------------------------------------------------------- triples
    def triples_same_subject(self, node: Tree) -> None:
        first = node.children[0]
        if isinstance(first, Tree) and first.data in ("rdf_literal", "numeric_literal",
                                                      "boolean_literal"):
            raise _unsupported("literal as subject", first,
                               "RDF data has no literal subjects, so the pattern could never match")
        subject = self.term(first)
        if len(node.children) > 1:
            self.property_list(subject, node.children[1])

    def property_list(self, subject, node: Tree) -> None:
        for vo in node.children:
            verb_node, objects = vo.children
            predicate = self.verb(verb_node)
            for obj_node in objects.children:
                if isinstance(obj_node, Tree) and obj_node.data == "blank_node_property_list":
                    b = self.fresh_blank()
                    self.patterns.append(TriplePattern(subject, predicate, b))
                    self.property_list(b, obj_node.children[0])
                else:
                    self.patterns.append(TriplePattern(subject, predicate, self.term(obj_node)))

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
        start, end = node.meta.start_pos, node.meta.end_pos
        return self._raise_path(node, self.text[start:end])

    def _raise_path(self, node, written: str):
        raise _unsupported("property path", node,
                           f"{written!r}; the only path supported is a/rdfs:subClassOf*")

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
    def expression(self, node):
        kind = node.data
        if kind == "or_expr":
            return Or(tuple(self.expression(c) for c in node.children))
        if kind == "and_expr":
            return And(tuple(self.expression(c) for c in node.children))
        if kind == "negation":
            return Not(self.expression(node.children[0]))
        if kind == "compare":
            left, op, right = node.children
            return Compare(str(op), self.operand(left), self.operand(right))
        if kind == "ebv":
            return EffectiveBoolean(self.operand(node.children[0]))
        if kind == "ftcontains_call":
            return FtContains(self.operand(node.children[0]), self.ft(node.children[1]))
        if kind == "regex_call":
            args = [self.operand(c) for c in node.children]
            return Regex(*args)
        if kind == "contains_call":
            return Contains(*(self.operand(c) for c in node.children))
        if kind == "langmatches_call":
            return LangMatches(*(self.operand(c) for c in node.children))
        raise _syntax(f"unexpected {kind} in FILTER", node)

    def operand(self, node):
        kind = node.data
        if kind == "var":
            return self.variable(node)
        if kind == "iri":
            return self.iri(node)
        if kind == "lang_call":
            return Lang(self.operand(node.children[0]))
        return self.literal(node)

    # ------------------------------------------------------- full text
    def ft(self, node):
        kind = node.data
        if kind == "ft_string":
            tok = node.children[0]
            try:
                return parse_ft_string(unescape_string(str(tok)))
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
        numbers = [t for t in tokens if t.type == "NUMBER"]
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
