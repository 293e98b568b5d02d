"""Numbers in SPARQL: arithmetic, ABS, ROUND, CEIL, FLOOR and the lexical forms of results.

A numeric argument is read by `numeric` into ``(kind, value, integer)``:
the kind of `rtf.query.values` (``DECIMAL``, ``FLOAT``, ``DOUBLE``), the
Python value (int or Decimal, float) and whether the datatype is xsd:integer
or one derived from it. Operations follow XPath's numeric operators (SPARQL
1.1 §17.3): operands are promoted (integer -> decimal -> float -> double),
an integer operation stays integer except division, which is decimal.

Results are written in their canonical lexical forms (XSD 1.1, as Oxigraph
writes them): xsd:integer without leading zeros, xsd:decimal without exponent
nor trailing zeros, a whole number without a point (``"2"``, ``"2.5"``),
xsd:double and xsd:float in scientific notation with the
fewest digits that read back as the same value (``"1.0E-1"``; a float's
digits are those of its single-precision value, not of the double that
holds it).

>>> arithmetic("/", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
...            '"4"^^<http://www.w3.org/2001/XMLSchema#integer>')
'"0.25"^^<http://www.w3.org/2001/XMLSchema#decimal>'
>>> FUNCTIONS["round"]('"-2.5"^^<http://www.w3.org/2001/XMLSchema#decimal>')
'"-2"^^<http://www.w3.org/2001/XMLSchema#decimal>'
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_DOWN, ROUND_HALF_UP, Decimal

from rtf.query.literals import XSD_DECIMAL, XSD_DOUBLE, XSD_FLOAT, integer_key, typed_key
from rtf.query.terms import literal_parts

# The lexical-space machinery of the values module, shared rather than written twice.
from rtf.query.values import (
    _INF,
    _INTEGER_TYPES,
    _NUMERIC_TYPES,
    DECIMAL,
    DOUBLE,
    ERROR,
    FLOAT,
    _promote,
    _to_float32,
    typed_value,
)

__all__ = ["numeric", "numeric_op", "number_key", "arithmetic", "xpath_number_string",
           "FUNCTIONS", "DECIMAL", "FLOAT", "DOUBLE"]


def numeric(key: str):
    """``(kind, value, integer)`` of a numeric literal with a valid lexical form, else None."""
    if key[0] != '"' or key[-1] == '"':
        return None
    parts = literal_parts(key)
    if parts.datatype not in _NUMERIC_TYPES:
        return None
    value = typed_value(key)
    if value is None:
        return None
    return value[0], value[1], parts.datatype in _INTEGER_TYPES


# ------------------------------------------------------------- lexical forms


def _plain_decimal(value: Decimal) -> str:
    """`value` without exponent nor trailing fraction zeros, every digit kept.

    (``Decimal.normalize`` would round to the context's 28 digits.)
    """
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _decimal_lexical(value: Decimal) -> str:
    """The canonical xsd:decimal form of XSD 1.1 (as Oxigraph writes it): no exponent, no
    trailing zero in the fraction, and no decimal point at all for a whole number (``2``,
    ``2.5``, ``-0.25``)."""
    return _plain_decimal(value)


def _shortest(kind: int, value: float) -> Decimal:
    """The decimal with the fewest digits that reads back as `value` (finite, non-zero).

    A double's is Python's ``repr``; a float's is searched among the 1 to 9
    significant digits a single-precision value can need.
    """
    if kind == FLOAT:
        for digits in range(1, 10):
            text = format(value, f".{digits - 1}e")
            if _to_float32(float(text)) == value:
                return Decimal(text)
    return Decimal(repr(value))


def _scientific(kind: int, value: float) -> str:
    """The canonical xsd:double / xsd:float form: one digit before the point, shortest digits."""
    if value != value:
        return "NaN"
    if value in (_INF, -_INF):
        return "INF" if value > 0 else "-INF"
    if value == 0:
        return "-0.0E0" if math.copysign(1.0, value) < 0 else "0.0E0"
    sign, digits, exponent = _shortest(kind, value).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def number_key(kind: int, value, integer: bool) -> str:
    """The canonical key of a number of `kind` (an integer when `integer`)."""
    if kind == DECIMAL:
        if integer:
            return integer_key(int(value))
        return typed_key(_decimal_lexical(Decimal(value)), XSD_DECIMAL)
    return typed_key(_scientific(kind, value), XSD_FLOAT if kind == FLOAT else XSD_DOUBLE)


def xpath_number_string(kind: int, value, integer: bool) -> str:
    """The string XPath casts a number to (``xs:string``), F&O 3.1 §19.1.2.2.

    Integers and integral decimals lose their point (``1.0`` is ``"1"``),
    other decimals their trailing zeros; a float or double between 1e-6
    and 1e6 is written as a decimal with its shortest digits (``"1.25"``),
    others in canonical scientific notation (``"1.0E7"``), zeros as ``"0"``
    and ``"-0"``.
    """
    if kind == DECIMAL:
        return str(int(value)) if integer else _plain_decimal(Decimal(value))
    if value != value or value in (_INF, -_INF):
        return _scientific(kind, value)
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    if 1e-6 <= abs(value) < 1e6:
        return _plain_decimal(_shortest(kind, value))
    return _scientific(kind, value)


# ---------------------------------------------------------------- arithmetic


def numeric_op(op: str, a, b):
    """``a op b`` for op in ``+ - * /`` on ``(kind, value, integer)`` numbers, or `ERROR`.

    Integer and decimal division by zero is an error; float and double
    division by zero is ±INF or NaN (IEEE 754), as XPath says.
    """
    (ka, va, ia), (kb, vb, ib) = a, b
    kind = max(ka, kb)
    if kind != DECIMAL:
        va, vb = _promote(ka, va, kind), _promote(kb, vb, kind)
    try:
        if op == "+":
            result = va + vb
        elif op == "-":
            result = va - vb
        elif op == "*":
            result = va * vb
        elif kind == DECIMAL:
            if vb == 0:
                return ERROR
            result = Decimal(va) / Decimal(vb)
        elif vb == 0:
            positive = (va > 0) == (math.copysign(1.0, vb) > 0)
            result = float("nan") if va == 0 or va != va else (_INF if positive else -_INF)
        else:
            result = va / vb
    except ArithmeticError:  # a decimal beyond the context's exponent range
        return ERROR
    if kind == FLOAT:
        result = _to_float32(result)
    return (kind, result, ia and ib and op != "/")


def arithmetic(op: str, left_key: str, right_key: str):
    """``left op right`` for op in ``+ - * /`` on numeric literals (XPath numeric operators)."""
    a, b = numeric(left_key), numeric(right_key)
    if a is None or b is None:
        return ERROR
    result = numeric_op(op, a, b)
    return result if result is ERROR else number_key(*result)


# ------------------------------------------------------------------ functions


def _unary(compute):
    """A function of one numeric argument: `compute` maps (kind, value, integer) to a value."""
    def function(key):
        n = numeric(key)
        if n is None:
            return ERROR
        kind, value, integer = n
        return number_key(kind, compute(kind, value, integer), integer)
    return function


def _float_round(x: float) -> float:
    """XPath's fn:round of a double: the nearest integer, ties toward positive infinity."""
    if x != x or abs(x) >= 2.0 ** 52:  # NaN, ±INF, and doubles with no fraction bits
        return x
    whole = math.floor(x)
    result = float(whole + 1 if x - whole >= 0.5 else whole)  # x - whole is exact here
    return math.copysign(0.0, x) if result == 0 else result  # round(-0.3) is -0


def _float_integral(function):
    """fn:ceiling / fn:floor of a double: `function` on finite values, keeping -0."""
    def compute(x: float) -> float:
        if x != x or x in (_INF, -_INF):
            return x
        result = float(function(x))
        return math.copysign(0.0, x) if result == 0 else result
    return compute


def _rounding(for_float, for_decimal):
    """ROUND, CEIL or FLOOR: integers unchanged, decimals exactly, floats and doubles by `for_float`."""
    def compute(kind, value, integer):
        if integer:
            return value
        if kind == DECIMAL:
            value = Decimal(value)
            return value.to_integral_value(rounding=for_decimal(value))
        return for_float(value)
    return _unary(compute)


def _abs(kind, value, integer):
    # Decimal's abs() and - round to the context's 28 digits; copy_abs and copy_negate do not.
    return value.copy_abs() if isinstance(value, Decimal) else abs(value)


def _negate(kind, value, integer):
    return value.copy_negate() if isinstance(value, Decimal) else -value


FUNCTIONS = {
    "abs": _unary(_abs),
    # Ties go toward positive infinity: half up above zero, half down below.
    "round": _rounding(_float_round, lambda d: ROUND_HALF_UP if d >= 0 else ROUND_HALF_DOWN),
    "ceil": _rounding(_float_integral(math.ceil), lambda d: ROUND_CEILING),
    "floor": _rounding(_float_integral(math.floor), lambda d: ROUND_FLOOR),
    "-": _unary(_negate),
    "+": lambda key: key if numeric(key) is not None else ERROR,
}
