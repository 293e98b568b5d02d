"""Turning a failed parse into an error a person can act on.

Lark reports *where* a parse failed and which terminals would have been
accepted there. Most failures on real queries, though, are valid SPARQL
that the spec leaves out (``MINUS``, ``BIND``, ``ORDER BY``, ``VALUES``
...): the grammar does not contain them, so the parse fails at or just
before them. `diagnose` looks for such a construct in the query's bare
words (outside strings, IRIs, comments, variables and prefixed names) and,
when it finds one, raises `UnsupportedQueryError` naming it at its own line
and column; otherwise a `QuerySyntaxError` says what was found and what was
expected.
"""

from __future__ import annotations

import re

from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from rtf.errors import QuerySyntaxError, UnsupportedQueryError, position
from rtf.parser.grammar import builtin_names
from rtf.query.functions import XSD_CASTS

BUILTIN_NAMES = builtin_names()

#: Bare SPARQL keywords outside the language, and the construct each starts: what the
#: contract still refuses (spec section 5). DESCRIBE, FROM, GRAPH and SERVICE parse, and the
#: builder refuses them by name; they are here for a query that also fails to parse.
UNSUPPORTED_KEYWORDS = {
    "GRAPH": "GRAPH", "SERVICE": "SERVICE", "DESCRIBE": "DESCRIBE",
    "FROM": "FROM (dataset clause)", "NAMED": "FROM NAMED (dataset clause)",
    "INSERT": "SPARQL Update (INSERT)", "DELETE": "SPARQL Update (DELETE)",
    "LOAD": "SPARQL Update (LOAD)", "CLEAR": "SPARQL Update (CLEAR)",
    "DROP": "SPARQL Update (DROP)", "CREATE": "SPARQL Update (CREATE)",
    "WITH": "SPARQL Update (WITH)", "ADD": "SPARQL Update (ADD)", "MOVE": "SPARQL Update (MOVE)",
    "COPY": "SPARQL Update (COPY)",
}

#: How SPARQL 1.1 spells the functions whose names the language knows in lower case.
_SPELLING = {"isiri": "isIRI", "isuri": "isURI", "isliteral": "isLiteral", "isblank": "isBlank",
             "isnumeric": "isNumeric", "sameterm": "sameTerm", "strstarts": "strStarts",
             "strends": "strEnds", "langmatches": "langMatches"}

#: The functions an expression may call, as the error about an unknown one lists them: made
#: from the grammar's own terminal, so that the message never falls behind the language.
FILTER_FUNCTIONS: tuple[str, ...] = (
    ("ftcontains", "regex", "langmatches", "exists")
    + tuple(sorted(BUILTIN_NAMES))
    + ("count", "sum", "min", "max", "avg", "sample", "group_concat")
    + tuple(sorted("xsd:" + iri.rpartition("#")[2] for iri in XSD_CASTS)))

#: Words that may stand before "(" in the language.
CALLABLE = frozenset({"FILTER", "FTNEAR", "FTNOT", "FTAND", "FTOR", "IN", "BIND", "VALUES", "AS",
                      "SELECT", "WHERE", "GROUP", "BY", "ORDER", "HAVING", "ASC", "DESC", "ISURI",
                      "URI", "NOT", "EXISTS", "UNION", "OPTIONAL", "MINUS", "CONSTRUCT"}
                     | {name.upper() for name in FILTER_FUNCTIONS if ":" not in name})


def _function_list() -> str:
    names = [_SPELLING.get(name, name) for name in FILTER_FUNCTIONS]
    return "the functions are " + ", ".join(names[:-1]) + " and " + names[-1]


# Lexical pieces of a query, in the order they must be tried: what is inside
# strings, IRIs and comments is never a keyword; neither are variables,
# prefixed names, language tags or blank node labels. Strings and IRIs repeat
# possessively (`*+`), as in the grammar, to scan long ones in constant memory.
_SCAN = re.compile(r'''
    (?P<skip>
        """(?:[^"\\]|\\.|"(?!""))*+(?:"""|$)
      | \'\'\'(?:[^'\\]|\\.|'(?!''))*+(?:\'\'\'|$)
      | "(?:[^"\\\n]|\\.)*+"?
      | '(?:[^'\\\n]|\\.)*+'?
      | <(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*+>
      | \#[^\n]*
      | [?$][\w]+
      | @[A-Za-z][\w-]*
      | _:[\w.-]*
      | [\w.-]*:[\w.:%\\-]*
    )
  | (?P<word>[A-Za-z_]\w*)
  | (?P<other>.)
''', re.VERBOSE | re.DOTALL)
_NEXT_WORD = re.compile(r"\s*(\w+)")
_OPENING = re.compile(r"\s*\(")
_SNIPPET = re.compile(r"\S{1,20}")


def find_unsupported(text: str) -> UnsupportedQueryError | None:
    """The first construct outside the language written in `text`, if any."""
    for m in _SCAN.finditer(text):
        kind = m.lastgroup
        if kind != "word":
            continue
        word = m.group().upper()
        # Positions and look-aheads only where needed, never a slice of the
        # rest of the text: per word, either made a long query quadratic.
        if word in UNSUPPORTED_KEYWORDS:
            return UnsupportedQueryError(UNSUPPORTED_KEYWORDS[word], *position(text, m.start()))
        if word not in CALLABLE and _OPENING.match(text, m.end()):
            line, col = position(text, m.start())
            return UnsupportedQueryError(f"function {m.group()}", line, col,
                                         _function_list())
    return None


# Readable names of the grammar's terminals, for "expected ..." messages.
_TERMINAL_NAMES = {
    "VAR1": "a variable", "VAR2": "a variable", "IRIREF": "an IRI", "PNAME_LN": "a prefixed name",
    "PNAME_NS": "a prefix", "STRING": "a string", "NUMBER": "a number", "SIGNED_NUMBER": "a number", "ADD_OP": "+ or -",
    "BUILTIN_NAME": "a function (str, lang, year, ...)", "AGGREGATE_NAME": "an aggregate (COUNT, SUM, ...)", "DIV_OP": "/", "IN": "IN", "NOT": "NOT IN", "LANGTAG": "a language tag",
    "BLANK_NODE_LABEL": "a blank node", "ANON": '"[]"', "COMP_OP": "a comparison (= != < <= > >=)",
    "PATH_MOD": "a path modifier", "STAR": '"*"', "A": '"a"', "TRUE": "true", "FALSE": "false",
    "DISTINCT": "DISTINCT", "REDUCED": "REDUCED", "FTOR": "ftor", "FTAND": "ftand",
    "FTNOT": "ftnot", "FTNEAR": "ftnear", "UNORDERED": "unordered", "$END": "end of query",
}


def _expected(names, parser) -> tuple[str, ...]:
    out = set()
    by_name = {t.name: t for t in parser.terminals}
    for name in names:
        if name in _TERMINAL_NAMES:
            out.add(_TERMINAL_NAMES[name])
            continue
        term = by_name.get(name)
        if term is not None and term.pattern.type == "str":
            out.add('"' + term.pattern.value + '"')
        else:
            out.add(name)
    return tuple(sorted(out))


def _accepted(error: UnexpectedInput) -> set[str]:
    """Terminals the parser would have accepted where it failed."""
    ip = getattr(error, "interactive_parser", None)
    if ip is not None:
        try:
            return set(ip.accepts())
        except Exception:  # pragma: no cover - accepts() replays the parser state
            pass
    return set(getattr(error, "expected", None) or getattr(error, "allowed", None) or ())


def diagnose(text: str, error: UnexpectedInput, parser) -> Exception:
    """The error to raise for a failed parse of `text`."""
    unsupported = find_unsupported(text)
    if unsupported is not None:
        return unsupported
    accepted = _accepted(error)
    offset = getattr(error, "pos_in_stream", None)
    if offset is not None and 0 <= offset < len(text) and text[offset] in "+-*/" and (
            "COMP_OP" in accepted or "RPAR" in accepted):
        line, col = position(text, offset)
        return UnsupportedQueryError("arithmetic expression", line, col)
    if isinstance(error, UnexpectedEOF) or (
            isinstance(error, UnexpectedToken) and error.token.type == "$END"):
        line, col = position(text, len(text.rstrip()))
        expected = _expected(accepted, parser)
        return QuerySyntaxError(
            "unexpected end of query; expected " + _one_of(expected), line, col, "", expected)
    if isinstance(error, UnexpectedToken):
        found = str(error.token)
        expected = _expected(accepted, parser)
        return QuerySyntaxError(f"unexpected {found!r}; expected " + _one_of(expected),
                                error.line, error.column, found, expected)
    if isinstance(error, UnexpectedCharacters):
        found = text[error.pos_in_stream:error.pos_in_stream + 1]
        snippet = _SNIPPET.match(text, error.pos_in_stream)
        shown = snippet.group() if snippet else found
        expected = _expected(accepted, parser)
        msg = f"unexpected {shown!r}"
        if expected:
            msg += "; expected " + _one_of(expected)
        return QuerySyntaxError(msg, error.line, error.column, shown, expected)
    line, col = getattr(error, "line", None), getattr(error, "column", None)
    return QuerySyntaxError(str(error), line, col)


def _one_of(expected: tuple[str, ...]) -> str:
    if not expected:
        return "something else"
    if len(expected) == 1:
        return expected[0]
    return "one of " + ", ".join(expected)
