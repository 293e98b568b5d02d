"""Errors raised to users of rtf.

Every error about a query carries the line and column (1-based) where the
problem is, so that a command line or a service can point at it.
"""

from __future__ import annotations


class RtfError(Exception):
    """Base class of every error rtf raises on purpose."""


class QueryError(RtfError, ValueError):
    """A query that cannot be registered; `line`/`column` locate the problem."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 text: str | None = None, expected: tuple[str, ...] = ()):
        self.message = message
        self.line = line
        self.column = column
        self.text = text
        self.expected = tuple(expected)
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(where + message)


class QuerySyntaxError(QueryError):
    """The text is not a query of the language (spec sections 1 and 2)."""


class UnsupportedQueryError(QueryError):
    """Valid SPARQL, but a construct outside the spec (OPTIONAL, UNION, ...)."""

    def __init__(self, construct: str, line: int | None = None, column: int | None = None,
                 detail: str = ""):
        self.construct = construct
        message = f"unsupported construct: {construct}"
        if detail:
            message += f" ({detail})"
        super().__init__(message, line, column, text=construct)


class QueryTooComplexError(QueryError):
    """The filter's disjunctive normal form has more branches than the cap, or the
    query nests deeper than `rtf.parser.MAX_NESTING_DEPTH`."""


class QueryTooLargeError(QueryError):
    """The query text is longer than `rtf.parser.MAX_QUERY_BYTES` (UTF-8)."""


class PublicationError(RtfError, ValueError):
    """Malformed RDF input; names the file and line when they are known."""

    def __init__(self, message: str, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(where + message)


class TaxonomyError(RtfError, ValueError):
    """A class taxonomy that cannot be used (a cycle, an unreadable file)."""


class IndexFileError(RtfError, ValueError):
    """A saved query index that cannot be loaded: not an index, truncated, corrupt
    (checksum), of another format version, or with content this rtf refuses.
    Nothing is loaded when it is raised."""


class WorkerLostError(RtfError, RuntimeError):
    """A forked worker process (``--workers``) ended abruptly: killed, for instance by
    the system when memory ran out. The results it was computing are lost; the
    command stops instead of waiting for them."""


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
