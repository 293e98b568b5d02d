"""Dates and times in SPARQL: YEAR ... SECONDS, TIMEZONE, TZ, NOW, and canonical lexical forms.

The parts of an xsd:dateTime are read from its lexical form, as XPath's
``fn:*-from-dateTime`` functions do: they are the *local* values, in the
literal's own timezone (``hours("2011-01-10T14:45:13-05:00")`` is 14). The
one normalisation is the end of a day, ``T24:00:00``, which XSD defines as
the first instant of the next day: ``year("2011-12-31T24:00:00")`` is 2012.

YEAR, MONTH and DAY also accept an xsd:date (an extension SPARQL 1.1 §17.6
allows; Oxigraph does the same); HOURS, MINUTES and SECONDS take an
xsd:dateTime only. TIMEZONE and TZ read the timezone of either. An
ill-typed literal (``"2011-02-30"^^xsd:date``) is an error everywhere.

>>> FUNCTIONS["timezone"]('"2011-01-10T14:45:13.815-05:00"^^<http://www.w3.org/2001/XMLSchema#dateTime>')
'"-PT5H"^^<http://www.w3.org/2001/XMLSchema#dayTimeDuration>'
"""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal

from rtf.query.memo import bounded_by_chars
from rtf.query.literals import XSD_DATE, XSD_DATETIME, integer_key, string_key, typed_key
from rtf.query.numerics import DECIMAL, number_key
from rtf.query.terms import XSD, literal_parts
from rtf.query.values import _DATE, _DATETIME, _PARSERS, ERROR, _valid_date

__all__ = ["FUNCTIONS", "now_key", "date_time_fields", "date_time_parts", "canonical_date_time",
           "canonical_date"]

_DAY_TIME_DURATION = XSD + "dayTimeDuration"


def _next_day(year: int, month: int, day: int) -> tuple[int, int, int]:
    if _valid_date(year, month, day + 1):
        return year, month, day + 1
    if month < 12:
        return year, month + 1, 1
    return year + 1, 1, 1


def date_time_fields(lexical: str, datatype: str):
    """``(year, month, day, hour, minute, seconds, tz)`` of a valid xsd:dateTime or xsd:date.

    None when the lexical form is not valid for `datatype`. `seconds` is
    the lexical seconds (``"05.250"``), `tz` the lexical timezone or None.
    ``T24:00:00`` is read as the next day's midnight. A date has ``hour``
    None (and is its midnight).
    """
    if datatype == XSD_DATETIME:
        match = _DATETIME.fullmatch(lexical)
    elif datatype == XSD_DATE:
        match = _DATE.fullmatch(lexical)
    else:
        return None
    if match is None or _PARSERS[datatype](lexical, datatype) is None:
        return None
    if datatype == XSD_DATE:
        year, month, day, tz = match.groups()
        return int(year), int(month), int(day), None, 0, "00", tz
    year, month, day, hour, minute, seconds, tz = match.groups()
    y, mo, d, h = int(year), int(month), int(day), int(hour)
    if h == 24:
        (y, mo, d), h = _next_day(y, mo, d), 0
    return y, mo, d, h, int(minute), seconds, tz


@bounded_by_chars(1 << 20, weight=2)
def date_time_parts(key: str, with_date: bool = False):
    """`date_time_fields` of a key: an xsd:dateTime (or with `with_date` an xsd:date), else None.

    Cached: the same dates come back solution after solution.
    """
    if key[0] != '"' or key[-1] == '"':
        return None
    parts = literal_parts(key)
    if parts.datatype == XSD_DATE and not with_date:
        return None
    return date_time_fields(parts.lexical, parts.datatype)


def _part(index: int, with_date: bool):
    def part(key):
        parts = date_time_parts(key, with_date)
        return ERROR if parts is None else integer_key(parts[index])
    return part


def _seconds(key):
    parts = date_time_parts(key)
    return ERROR if parts is None else number_key(DECIMAL, Decimal(parts[5]), False)


def _timezone_of(key):
    """The lexical timezone of a dateTime or date: ``""`` when it has none, None when not one."""
    parts = date_time_parts(key, True)
    if parts is None:
        return None
    return parts[6] or ""


def _timezone_duration(key):
    """TIMEZONE: the offset as an xsd:dayTimeDuration; an error without a timezone."""
    tz = _timezone_of(key)
    if not tz:
        return ERROR
    if tz == "Z":
        return typed_key("PT0S", _DAY_TIME_DURATION)
    hours, minutes = int(tz[1:3]), int(tz[4:6])
    if hours == minutes == 0:
        return typed_key("PT0S", _DAY_TIME_DURATION)
    duration = "PT" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    return typed_key(("-" if tz[0] == "-" else "") + duration, _DAY_TIME_DURATION)


def _tz(key):
    """TZ: the timezone as written, ``""`` without one."""
    tz = _timezone_of(key)
    return ERROR if tz is None else string_key(tz)


# ------------------------------------------------------------ canonical forms


def _canonical_timezone(tz: str | None) -> str:
    if tz is None:
        return ""
    return "Z" if tz in ("+00:00", "-00:00") else tz


def _year_text(year: int) -> str:
    return f"-{-year:04d}" if year < 0 else f"{year:04d}"


def canonical_date_time(lexical: str, datatype: str = XSD_DATETIME):
    """The canonical xsd:dateTime form (XSD 1.1) of a dateTime or date, or None when invalid.

    ``24:00:00`` becomes the next day's ``00:00:00``, trailing zeros of the
    fraction of a second go (with the point when nothing is left), a zero
    offset is written ``Z``; a date is its midnight.
    """
    fields = date_time_fields(lexical, datatype)
    if fields is None:
        return None
    year, month, day, hour, minute, seconds, tz = fields
    if "." in seconds:
        seconds = seconds.rstrip("0").rstrip(".")
    return (f"{_year_text(year)}-{month:02d}-{day:02d}T{hour or 0:02d}:{minute:02d}:{seconds}"
            + _canonical_timezone(tz))


def canonical_date(lexical: str, datatype: str = XSD_DATE):
    """The canonical xsd:date form of a date, or of a dateTime's day; None when invalid."""
    fields = date_time_fields(lexical, datatype)
    if fields is None:
        return None
    year, month, day, _, _, _, tz = fields
    return f"{_year_text(year)}-{month:02d}-{day:02d}" + _canonical_timezone(tz)


def now_key(instant: datetime) -> str:
    """NOW(): `instant` as an xsd:dateTime with its timezone (a naive instant is UTC).

    The fraction of a second keeps the microseconds Python has, without
    trailing zeros; a zero offset is written ``Z``.

    >>> from datetime import timezone, timedelta
    >>> now_key(datetime(2011, 1, 10, 14, 45, 13, 815000, timezone(timedelta(hours=-5))))
    '"2011-01-10T14:45:13.815-05:00"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
    """
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=timezone.utc)
    text = (f"{instant.year:04d}-{instant.month:02d}-{instant.day:02d}"
            f"T{instant.hour:02d}:{instant.minute:02d}:{instant.second:02d}")
    if instant.microsecond:
        text += f".{instant.microsecond:06d}".rstrip("0")
    offset = instant.utcoffset()
    minutes = int(offset.total_seconds()) // 60
    if minutes == 0:
        text += "Z"
    else:
        sign = "-" if minutes < 0 else "+"
        text += f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return typed_key(text, XSD_DATETIME)


FUNCTIONS = {
    "year": _part(0, True), "month": _part(1, True), "day": _part(2, True),
    "hours": _part(3, False), "minutes": _part(4, False), "seconds": _seconds,
    "timezone": _timezone_duration, "tz": _tz,
}
