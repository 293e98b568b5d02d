"""SPARQL functions, arithmetic and casts over term keys (language version 2).

Each function takes term keys and returns a term key or `ERROR` (SPARQL
1.1 §17.4, §17.5). Boolean results are xsd:boolean literals, so a function
reads the same as a condition (by its effective boolean value) and as a
value. Values, comparison and the effective boolean value are `rtf.query.values`.

>>> arithmetic("+", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
...            '"2"^^<http://www.w3.org/2001/XMLSchema#integer>')
'"3"^^<http://www.w3.org/2001/XMLSchema#integer>'
"""

from __future__ import annotations

import re
from decimal import Decimal

from rtf.query.terms import XSD, literal_parts

# The lexical-space machinery of the values module, shared rather than written twice.
from rtf.query.values import (
    _BOOLEAN_TYPE,
    _INF,
    _INTEGER_TYPES,
    _NUMERIC_TYPES,
    _PARSERS,
    BOOLEAN,
    DATETIME,
    DECIMAL,
    DOUBLE,
    ERROR,
    FLOAT,
    _integer,
    _promote,
    _to_double,
    _to_float32,
    typed_value,
)

__all__ = ["arithmetic", "boolean_key", "FUNCTIONS", "FUNCTION_ARITY", "XSD_CASTS", "TRUE_KEY", "FALSE_KEY"]


TRUE_KEY = '"true"^^<http://www.w3.org/2001/XMLSchema#boolean>'
FALSE_KEY = '"false"^^<http://www.w3.org/2001/XMLSchema#boolean>'
_XSD_INTEGER, _XSD_DECIMAL = XSD + "integer", XSD + "decimal"
_XSD_FLOAT, _XSD_DOUBLE = XSD + "float", XSD + "double"
_XSD_STRING = XSD + "string"
_RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


def boolean_key(value: bool) -> str:
    return TRUE_KEY if value else FALSE_KEY


def _literal(lexical: str, datatype: str | None = None, lang: str | None = None) -> str:
    from rtf.query.terms import literal_key
    return literal_key(lexical, datatype, lang)


def _string(key):
    """(lexical, lang) of a string literal (simple, xsd:string, tagged), else None."""
    if key[0] != '"':
        return None
    parts = literal_parts(key)
    if parts.datatype in (_XSD_STRING, _RDF_LANGSTRING) or parts.lang is not None:
        return parts.lexical, parts.lang
    return None


def _numeric(key):
    """(kind, value, is_integer) of a numeric literal, else None."""
    if key[0] != '"' or key[-1] == '"':
        return None
    parts = literal_parts(key)
    if parts.datatype not in _NUMERIC_TYPES:
        return None
    value = typed_value(key)
    if value is None:
        return None
    return value[0], value[1], parts.datatype in _INTEGER_TYPES


def _decimal_lexical(value: Decimal) -> str:
    """The canonical xsd:decimal form: no exponent, at least one fraction digit."""
    text = format(value.normalize(), "f")
    if "." not in text:
        text += ".0"
    return "0.0" if text in ("-0.0", "-0") else text


def _double_lexical(value: float) -> str:
    """The canonical xsd:double form: one digit before the point, shortest digits."""
    if value != value:
        return "NaN"
    if value in (_INF, -_INF):
        return "INF" if value > 0 else "-INF"
    if value == 0:
        return "-0.0E0" if str(value)[0] == "-" else "0.0E0"
    d = Decimal(repr(value))  # the shortest digits that read back as `value`
    sign, digits, exponent = d.as_tuple()
    digits = "".join(map(str, digits)).rstrip("0") or "0"
    exp = exponent + len(d.as_tuple().digits) - 1
    return f"{'-' if sign else ''}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _number_key(kind: int, value, integer: bool) -> str:
    if kind == DECIMAL:
        if integer:
            return _literal(str(int(value)), _XSD_INTEGER)
        return _literal(_decimal_lexical(Decimal(value)), _XSD_DECIMAL)
    return _literal(_double_lexical(value), _XSD_FLOAT if kind == FLOAT else _XSD_DOUBLE)


def arithmetic(op: str, left_key: str, right_key: str):
    """``left op right`` for op in ``+ - * /`` on numeric literals (XPath numeric operators).

    >>> arithmetic("/", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
    ...            '"4"^^<http://www.w3.org/2001/XMLSchema#integer>')
    '"0.25"^^<http://www.w3.org/2001/XMLSchema#decimal>'
    """
    a, b = _numeric(left_key), _numeric(right_key)
    if a is None or b is None:
        return ERROR
    (ka, va, ia), (kb, vb, ib) = a, b
    kind = max(ka, kb)
    if kind != DECIMAL:
        va, vb = _promote(ka, va, kind), _promote(kb, vb, kind)
    integer = ia and ib and op != "/"
    if op == "+":
        result = va + vb
    elif op == "-":
        result = va - vb
    elif op == "*":
        result = va * vb
    elif kind == DECIMAL:
        if vb == 0:
            return ERROR  # integer and decimal division by zero is an error
        result = Decimal(va) / Decimal(vb)
    elif vb == 0:
        result = float("nan") if va == 0 or va != va else (_INF if (va > 0) == (str(vb)[0] != "-") else -_INF)
    else:
        result = va / vb
    if kind == FLOAT:
        result = _to_float32(result)
    return _number_key(kind, result, integer)


def _unary_minus(key):
    n = _numeric(key)
    if n is None:
        return ERROR
    kind, value, integer = n
    return _number_key(kind, -value, integer)


def _unary_plus(key):
    return key if _numeric(key) is not None else ERROR


def _abs(key):
    n = _numeric(key)
    if n is None:
        return ERROR
    kind, value, integer = n
    return _number_key(kind, abs(value), integer)


def _str(key):
    if key[0] == "<":
        return _literal(key[1:-1])
    if key[0] == '"':
        return _literal(literal_parts(key).lexical)
    return ERROR


def _lang(key):
    if key[0] != '"':
        return ERROR
    return '"' + (literal_parts(key).lang or "") + '"'


def _datatype(key):
    if key[0] != '"':
        return ERROR
    parts = literal_parts(key)
    if parts.lang is not None:
        return f"<{_RDF_LANGSTRING}>"
    return f"<{parts.datatype or _XSD_STRING}>"


def _is_numeric(key):
    return boolean_key(_numeric(key) is not None)


def _same_term(a, b):
    return boolean_key(a == b)


def _case(convert):
    def change(key):
        s = _string(key)
        if s is None:
            return ERROR
        return _same_type(key, convert(s[0]))
    return change


def _same_type(key: str, lexical: str) -> str:
    """A literal like `key` (same datatype) with another lexical form."""
    parts = literal_parts(key)
    return _literal(lexical, parts.datatype if key[-1] != '"' else None, parts.lang)


def _strlen(key):
    s = _string(key)
    return ERROR if s is None else _literal(str(len(s[0])), _XSD_INTEGER)


def _string_test(test):
    def check(a, b):
        sa, sb = _string(a), _string(b)
        if sa is None or sb is None:
            return ERROR
        if sb[1] is not None and sb[1] != sa[1]:
            return ERROR  # not argument-compatible (§17.4.3.1.1)
        return boolean_key(test(sa[0], sb[0]))
    return check


_DATE_PARTS = re.compile(r"(-?[0-9]{4,})-([0-9]{2})-([0-9]{2})")


def _date_part(index: int):
    def part(key):
        if key[0] != '"' or key[-1] == '"':
            return ERROR
        parts = literal_parts(key)
        if parts.datatype not in (XSD + "dateTime", XSD + "date") or typed_value(key) is None:
            return ERROR
        m = _DATE_PARTS.match(parts.lexical)
        return _literal(str(int(m.group(index))), _XSD_INTEGER)
    return part


# ------------------------------------------------------------------ casts (§17.5)

def _cast_source(key):
    """(lexical, kind of source) for a cast: an IRI only casts to xsd:string."""
    if key[0] == "<":
        return key[1:-1], "iri"
    if key[0] != '"':
        return None, None
    parts = literal_parts(key)
    if parts.lang is not None:
        return None, None
    if key[-1] == '"' or parts.datatype == _XSD_STRING:
        return parts.lexical, "string"
    value = typed_value(key)
    if value is None:
        return None, None  # an ill-typed literal casts to nothing
    return parts.lexical, value


def _cast_to(target: str):
    def cast(key):
        lexical, source = _cast_source(key)
        if lexical is None:
            return ERROR
        if target == _XSD_STRING:
            return _literal(lexical)
        if source == "iri":
            return ERROR
        if source == "string":
            lexical = lexical.strip(" \t\r\n")  # XPath: casting from a string collapses whitespace
            parse = _PARSERS.get(target)
            if target == _XSD_INTEGER:
                parsed = _integer(lexical, target)
            else:
                parsed = parse(lexical, target) if parse is not None else None
            if parsed is None:
                return ERROR
            if target in (_XSD_INTEGER, _XSD_DECIMAL, _BOOLEAN_TYPE):
                kind, value = parsed
                if target == _BOOLEAN_TYPE:
                    return boolean_key(value)
                return _number_key(DECIMAL, value, target == _XSD_INTEGER)
            return _literal(lexical, target)
        kind, value = source
        if target == _BOOLEAN_TYPE:
            if kind <= DOUBLE:
                return boolean_key(not (value == 0 or value != value))
            return boolean_key(value) if kind == BOOLEAN else ERROR
        if target in (_XSD_INTEGER, _XSD_DECIMAL, _XSD_FLOAT, _XSD_DOUBLE):
            if kind == BOOLEAN:
                value, kind = int(value), DECIMAL
            if kind > DOUBLE:
                return ERROR
            if target in (_XSD_INTEGER, _XSD_DECIMAL):
                if kind != DECIMAL and (value != value or value in (_INF, -_INF)):
                    return ERROR
                exact = Decimal(value) if kind != DECIMAL else value
                if target == _XSD_INTEGER:
                    return _number_key(DECIMAL, int(exact), True)
                return _number_key(DECIMAL, Decimal(exact), False)
            as_float = _to_double(value) if kind == DECIMAL else value
            if target == _XSD_FLOAT:
                return _number_key(FLOAT, _to_float32(as_float), False)
            return _number_key(DOUBLE, as_float, False)
        if target == XSD + "dateTime":
            return key if kind == DATETIME else ERROR
        return ERROR
    return cast


#: The XSD casts of SPARQL 1.1 §17.5, by target datatype IRI.
XSD_CASTS = {XSD + t: _cast_to(XSD + t)
             for t in ("string", "integer", "decimal", "float", "double", "boolean", "dateTime")}

#: Built-in functions of language version 2: name -> function of term keys
#: (``bound`` is evaluated by the caller, which knows what is unbound).
FUNCTIONS = {
    "str": _str, "lang": _lang, "datatype": _datatype,
    "isiri": lambda k: boolean_key(k[0] == "<"),
    "isliteral": lambda k: boolean_key(k[0] == '"'),
    "isblank": lambda k: boolean_key(k.startswith("_:")),
    "isnumeric": _is_numeric, "sameterm": _same_term,
    "lcase": _case(str.lower), "ucase": _case(str.upper), "strlen": _strlen,
    "strstarts": _string_test(str.startswith), "strends": _string_test(str.endswith),
    "contains": _string_test(lambda a, b: b in a),
    "year": _date_part(1), "month": _date_part(2), "day": _date_part(3), "abs": _abs,
    "-": _unary_minus, "+": _unary_plus,
}

#: Number of arguments of each function written by name.
FUNCTION_ARITY = {name: (2 if name in ("sameterm", "strstarts", "strends", "contains") else 1)
                  for name in FUNCTIONS if name not in "+-"}
FUNCTION_ARITY["bound"] = 1
FUNCTION_ARITY["isuri"] = 1
