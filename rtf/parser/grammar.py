"""Loading `grammar/ftsparql.lark` into one LALR(1) parser, built once per process."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from lark import Lark


def grammar_text() -> str:
    """The text of the grammar as installed (``rtf.grammar/ftsparql.lark``)."""
    return resources.files("rtf.grammar").joinpath("ftsparql.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=2)
def lark_parser(positions: bool = True) -> Lark:
    """The LALR parser with the contextual lexer (about 20x faster than Earley here).

    With `positions` (``propagate_positions``) every subtree has the line and
    column of its first token, which the errors about unsupported constructs
    report; without, the tree costs about a fifth less to build. `rtf.parser`
    parses without positions, and again with them only when the query has
    an error to report.
    """
    return Lark(grammar_text(), parser="lalr", lexer="contextual", propagate_positions=positions,
                maybe_placeholders=False)


def builtin_names() -> tuple[str, ...]:
    """The names of the functions the grammar's BUILTIN_NAME terminal accepts, lower case."""
    import re
    found = re.search(r"^BUILTIN_NAME: /\(\?i:([^)]*)\)", grammar_text(), re.MULTILINE)
    return tuple(found.group(1).split("|")) if found else ()
