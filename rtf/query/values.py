"""SPARQL 1.1 value semantics over term keys: comparison and effective boolean value.

Filters compare RDF terms, and the terms are canonical N-Triples keys
(`rtf.query.terms`). A literal key is first read into a *value* -- a kind and a
Python object that orders the way SPARQL says -- by `typed_value`, which is
cached because the same literals are compared again and again:

=================================  ===========  ==============================
datatype                           kind         Python value
=================================  ===========  ==============================
xsd:integer and its derived types  `DECIMAL`    int (exact)
xsd:decimal                        `DECIMAL`    decimal.Decimal (exact)
xsd:float                          `FLOAT`      float rounded to 32 bits
xsd:double                         `DOUBLE`     float
simple literal, xsd:string         `STRING`     str (code-point order)
xsd:boolean                        `BOOLEAN`    bool (false < true)
xsd:dateTime                       `DATETIME`   (whole seconds since 1970-01-01T00:00Z,
                                                fraction of a second as a Decimal)
xsd:date                           `DATE`       whole seconds of its first instant
=================================  ===========  ==============================

Anything else -- IRIs, blank nodes, language-tagged strings, unknown
datatypes, and *ill-typed* literals whose lexical form is not in the
datatype's lexical space (``"abc"^^xsd:integer``, ``"300"^^xsd:byte``) --
has no value.

`compare` then follows SPARQL 1.1 §17.3 (operator mapping): two values of
one kind compare by value; numerics of different kinds are promoted first
(XPath §1.2 numeric type promotion: integer/decimal -> float -> double);
otherwise ``=`` falls back to RDFterm-equal (§17.4.1.7) -- the same term is
equal, different non-literals are unequal, and two different literals that
cannot be compared by value are a type error -- and the orderings are a
type error. ``!=`` is the negation of ``=``, with the same errors.

>>> compare("=", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
...         '"1.0"^^<http://www.w3.org/2001/XMLSchema#decimal>')
True
>>> compare("<", '"chat"@fr', '"chien"@fr')
ERROR
>>> effective_boolean('""')
False

Choices where SPARQL leaves one:

- A date or dateTime without a timezone is compared with one that has a
  timezone using an *implicit timezone of UTC* (XPath compares through the
  implicit timezone of its dynamic context; ours is fixed to UTC so that
  answers never depend on the machine's clock settings).
- Lexical forms are checked strictly against XSD 1.1: no surrounding
  whitespace, ``+INF`` allowed, year ``0000`` allowed, the range of every
  derived integer type enforced. A value outside its type is ill-typed.
- xsd:float values are rounded to single precision, as the XSD value space
  says (so ``"1.1"^^xsd:float != "1.1"^^xsd:double``, as in Oxigraph).
"""

from __future__ import annotations

import operator
import re
import struct
from decimal import Decimal

from rtf.query.memo import bounded_by_chars
from rtf.query.terms import XSD, literal_parts

__all__ = [
    "ERROR", "compare", "comparator", "effective_boolean", "typed_value",
    "DECIMAL", "FLOAT", "DOUBLE", "STRING", "BOOLEAN", "DATETIME", "DATE",
]


class _Error:
    """The result of a SPARQL expression that raised an error (a type error).

    A value, not an exception: three-valued logic (`rtf.query.expressions`) has to
    combine it with true and false, and returning it is cheaper than raising.
    """

    __slots__ = ()
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ERROR"

    def __reduce__(self):  # a pickled ERROR is still the singleton
        return (_Error, ())

    def __bool__(self) -> bool:
        # `if result:` on an error would silently read it as true or false.
        raise TypeError("ERROR has no truth value; test `result is True`")


#: The one SPARQL evaluation error value.
ERROR = _Error()

# Kinds of values. The numeric kinds are ordered by XPath type promotion, so
# the target kind of a mixed comparison is simply the larger one.
DECIMAL, FLOAT, DOUBLE = 0, 1, 2
STRING, BOOLEAN, DATETIME, DATE = 10, 11, 12, 13

# ------------------------------------------------------------- lexical forms

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_FLOATING = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?INF|NaN")
_YEAR_MONTH_DAY = r"(-?(?:[1-9][0-9]{4,}|[0-9]{4}))-([0-9]{2})-([0-9]{2})"
_TIMEZONE = r"(Z|[+-][0-9]{2}:[0-9]{2})?"
_TIME = r"T([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]+)?)"
_DATETIME = re.compile(_YEAR_MONTH_DAY + _TIME + _TIMEZONE)
_DATE = re.compile(_YEAR_MONTH_DAY + _TIMEZONE)

_INF = float("inf")
# xsd:integer and the types derived from it, with their value ranges.
_INTEGER_RANGES = {
    "integer": (None, None),
    "long": (-2**63, 2**63 - 1),
    "int": (-2**31, 2**31 - 1),
    "short": (-2**15, 2**15 - 1),
    "byte": (-2**7, 2**7 - 1),
    "nonNegativeInteger": (0, None),
    "positiveInteger": (1, None),
    "nonPositiveInteger": (None, 0),
    "negativeInteger": (None, -1),
    "unsignedLong": (0, 2**64 - 1),
    "unsignedInt": (0, 2**32 - 1),
    "unsignedShort": (0, 2**16 - 1),
    "unsignedByte": (0, 2**8 - 1),
}
_INTEGER_TYPES = {XSD + name: bounds for name, bounds in _INTEGER_RANGES.items()}
_NUMERIC_TYPES = frozenset(_INTEGER_TYPES) | {XSD + "decimal", XSD + "float", XSD + "double"}
_BOOLEAN_TYPE = XSD + "boolean"


def _to_float32(x: float) -> float:
    """Round a double to the nearest single-precision value (overflow -> ±INF)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def _to_double(x) -> float:
    """An exact number as a double; ints too large for a double become ±INF."""
    try:
        return float(x)
    except OverflowError:
        return _INF if x > 0 else -_INF


def _integer(lexical: str, datatype: str):
    if not _INTEGER.fullmatch(lexical):
        return None
    try:
        value = int(lexical)
    except ValueError:  # more digits than int() converts by default
        value = Decimal(lexical)
    low, high = _INTEGER_TYPES[datatype]
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    return (DECIMAL, value)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar.

    Any integer year (XSD 1.1 numbers years astronomically: 0000 is 1 BCE),
    which Python's `datetime` (years 1..9999) cannot hold.
    """
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _valid_date(y: int, m: int, d: int) -> bool:
    if not 1 <= m <= 12 or d < 1:
        return False
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return d <= _MONTH_DAYS[m - 1] + (m == 2 and leap)


def _timezone_seconds(tz: str | None):
    """Offset of a timezone in seconds; None when invalid. No timezone is UTC."""
    if tz is None or tz == "Z":
        return 0
    hours, minutes = int(tz[1:3]), int(tz[4:6])
    if minutes > 59 or hours > 14 or (hours == 14 and minutes):
        return None
    offset = hours * 3600 + minutes * 60
    return -offset if tz[0] == "-" else offset


def _date_time(lexical: str, _datatype=None):
    m = _DATETIME.fullmatch(lexical)
    if m is None:
        return None
    year, month, day, hour, minute, second, tz = m.groups()
    y, mo, d, h, mi, sec = int(year), int(month), int(day), int(hour), int(minute), int(second[:2])
    # The fraction stays apart from the whole seconds, so that no Decimal
    # arithmetic (28 digits by default) can round it away.
    fraction = Decimal("0" + second[2:]) if len(second) > 2 else 0
    offset = _timezone_seconds(tz)
    if not _valid_date(y, mo, d) or mi > 59 or sec > 59 or offset is None:
        return None
    if h > 23 and not (h == 24 and mi == 0 and sec == 0 and fraction == 0):
        return None  # hour 24 only as 24:00:00, the next day's midnight
    whole = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset
    return (DATETIME, (whole, fraction))


def _date(lexical: str, _datatype=None):
    m = _DATE.fullmatch(lexical)
    if m is None:
        return None
    year, month, day, tz = m.groups()
    y, mo, d = int(year), int(month), int(day)
    offset = _timezone_seconds(tz)
    if not _valid_date(y, mo, d) or offset is None:
        return None
    return (DATE, _days_from_civil(y, mo, d) * 86400 - offset)


def _decimal(lexical: str, _datatype=None):
    return (DECIMAL, Decimal(lexical)) if _DECIMAL.fullmatch(lexical) else None


def _double(lexical: str, _datatype=None):
    return (DOUBLE, float(lexical)) if _FLOATING.fullmatch(lexical) else None


def _float(lexical: str, _datatype=None):
    return (FLOAT, _to_float32(float(lexical))) if _FLOATING.fullmatch(lexical) else None


def _boolean(lexical: str, _datatype=None):
    if lexical in ("true", "1"):
        return (BOOLEAN, True)
    if lexical in ("false", "0"):
        return (BOOLEAN, False)
    return None


# Each parser takes (lexical form, datatype IRI) and returns (kind, value),
# or None for a lexical form outside the datatype (an ill-typed literal).
_PARSERS = {
    XSD + "decimal": _decimal,
    XSD + "float": _float,
    XSD + "double": _double,
    _BOOLEAN_TYPE: _boolean,
    XSD + "dateTime": _date_time,
    XSD + "date": _date,
    **{t: _integer for t in _INTEGER_TYPES},
}


@bounded_by_chars(4 << 20, weight=2)
def typed_value(key: str) -> tuple[int, object] | None:
    """``(kind, value)`` of a term key, or None when it has no comparable value.

    >>> typed_value('"01"^^<http://www.w3.org/2001/XMLSchema#integer>')
    (0, 1)
    >>> typed_value('"abc"^^<http://www.w3.org/2001/XMLSchema#integer>') is None
    True
    """
    if key[0] != '"':
        return None
    if key[-1] == '"':  # a simple literal (the most common case): no datatype to look up
        return (STRING, literal_parts(key).lexical)
    parts = literal_parts(key)
    parse = _PARSERS.get(parts.datatype)
    return parse(parts.lexical, parts.datatype) if parse is not None else None


# ---------------------------------------------------------------- comparison

def _promote(kind: int, value, target: int):
    """XPath numeric type promotion of `value` from `kind` up to `target`.

    An exact number goes to float through double; the two roundings differ
    from one direct rounding only for numbers within a double's precision
    of a half-way point between two floats.
    """
    if kind == DECIMAL:
        value = _to_double(value)
    return _to_float32(value) if target == FLOAT else value


def _compare_values(test, left_key: str, right_key: str):
    """`test` applied to the values of two keys; None when they are not comparable."""
    if left_key[0] != '"' or right_key[0] != '"':
        return None  # IRIs and blank nodes: keep them out of the value cache
    a = typed_value(left_key)
    if a is None:
        return None
    b = typed_value(right_key)
    if b is None:
        return None
    ka, va = a
    kb, vb = b
    if ka == kb:
        return test(va, vb)
    if ka <= DOUBLE and kb <= DOUBLE:
        target = max(ka, kb)
        return test(_promote(ka, va, target), _promote(kb, vb, target))
    return None


def _equal(left_key: str, right_key: str):
    result = _compare_values(operator.eq, left_key, right_key)
    if result is not None:
        return result
    # RDFterm-equal: only two literals that differ and cannot be compared are an error.
    if left_key == right_key:
        return True
    if left_key[0] == '"' and right_key[0] == '"':
        return ERROR
    return False


def _not_equal(left_key: str, right_key: str):
    result = _equal(left_key, right_key)
    return result if result is ERROR else not result


def _ordering(test):
    def order(left_key: str, right_key: str):
        result = _compare_values(test, left_key, right_key)
        return ERROR if result is None else result
    return order


_COMPARATORS = {
    "=": _equal,
    "!=": _not_equal,
    "<": _ordering(operator.lt),
    "<=": _ordering(operator.le),
    ">": _ordering(operator.gt),
    ">=": _ordering(operator.ge),
}


def comparator(op: str):
    """The function ``(left_key, right_key) -> True | False | ERROR`` of `op`.

    For callers that apply one operator many times (a compiled filter): it
    saves looking the operator up on every call.
    """
    try:
        return _COMPARATORS[op]
    except KeyError:
        raise ValueError(f"not a comparison operator: {op!r}") from None


def compare(op: str, left_key: str, right_key: str):
    """``left op right`` under SPARQL 1.1: True, False or `ERROR`.

    `op` is one of ``= != < <= > >=``. NaN is unequal to everything,
    itself included, and unordered (so ``NaN != NaN`` is true and every
    ordering of NaN false), as XPath says.

    >>> compare("<", '"abc"', '"abd"')
    True
    >>> compare("=", '<http://x>', '"x"')
    False
    >>> compare("=", '"a"@en', '"a"@fr')
    ERROR
    """
    return comparator(op)(left_key, right_key)


# ----------------------------------------------------- effective boolean value


@bounded_by_chars(2 << 20, weight=2)
def effective_boolean(key: str):
    """Effective boolean value of a term (SPARQL 1.1 §17.2.2): True, False or `ERROR`.

    Booleans are their value; numbers are false when zero or NaN; strings
    (simple, xsd:string, language-tagged) are false when empty; a boolean or
    number with an invalid lexical form is false; anything else -- IRIs,
    blank nodes, dates, unknown datatypes -- is an error.

    >>> effective_boolean('"0.0"^^<http://www.w3.org/2001/XMLSchema#double>')
    False
    >>> effective_boolean('<http://x>')
    ERROR
    """
    if key[0] != '"':
        return ERROR
    parts = literal_parts(key)
    if parts.lang is not None:
        return parts.lexical != ""
    value = typed_value(key)
    if value is None:
        invalid_lexical = parts.datatype in _NUMERIC_TYPES or parts.datatype == _BOOLEAN_TYPE
        return False if invalid_lexical else ERROR
    kind, v = value
    if kind <= DOUBLE:
        return not (v == 0 or v != v)  # v != v: NaN
    if kind == STRING:
        return v != ""
    if kind == BOOLEAN:
        return v
    return ERROR
