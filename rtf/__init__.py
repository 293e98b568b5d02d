"""rtf: continuous full-text SPARQL queries over streams of RDF publications.

Register queries once; for each publication, learn which queries it
satisfies and with which bindings::

    from rtf import Engine, Publication

    engine = Engine()                           # "rtfs"; or "naive", "rtfm", "ibroker"
    engine.register('''
        PREFIX dbo: <http://dbpedia.org/ontology/>
        SELECT ?a WHERE { ?a dbo:abstract ?t FILTER ftcontains(?t, "olympic" ftand "rio") }
    ''', query_id="q1", subscriber="alice")
    for match in engine.match(publication):     # Publication, rdflib Graph or triples
        print(match.query_id, match.subscriber, match.bindings)

The pieces, in the order data flows through them (each a folder or module,
docs/architecture.md): `rtf.query` (what a query means), `rtf.parser` (text
to the query model), `rtf.io` (publications in, saved indexes, output),
the indexes (`rtf.naive`, `rtf.trieforest`, `rtf.ibroker_baseline`),
`rtf.filter` and `rtf.matching` (the shared filtering algorithm and its
parts), `rtf.engine` (the facade); then the applications: `rtf.bench`,
`rtf.spark`, `rtf.server` (and its client), `rtf.cli`.

The client of `rtf serve` (``pip install 'rtf[server]'``) is here too::

    from rtf import Client                      # or AsyncClient, for asyncio

    with Client("http://127.0.0.1:8750") as broker:
        broker.register(query, "q1", subscriber="alice")
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # what a type checker sees: the real names (at run time, __getattr__ below)
    from rtf.engine import ALGORITHMS as ALGORITHMS
    from rtf.engine import Algorithm as Algorithm
    from rtf.engine import Engine as Engine
    from rtf.engine import Match as Match
    from rtf.engine import RegisteredQuery as RegisteredQuery
    from rtf.errors import IndexFileError as IndexFileError
    from rtf.errors import PublicationError as PublicationError
    from rtf.errors import QueryError as QueryError
    from rtf.errors import QuerySyntaxError as QuerySyntaxError
    from rtf.errors import QueryTooComplexError as QueryTooComplexError
    from rtf.errors import QueryTooLargeError as QueryTooLargeError
    from rtf.errors import RtfError as RtfError
    from rtf.errors import TaxonomyError as TaxonomyError
    from rtf.errors import UnsupportedQueryError as UnsupportedQueryError
    from rtf.errors import WorkerLostError as WorkerLostError
    from rtf.io.publication import Publication as Publication
    from rtf.io.reader import read_publications as read_publications
    from rtf.io.taxonomy import Taxonomy as Taxonomy
    from rtf.parser import parse_query as parse_query
    from rtf.query.analysis import FieldAnalysis as FieldAnalysis
    from rtf.query.analysis import FieldRule as FieldRule
    from rtf.query.analysis import TextAnalysis as TextAnalysis
    from rtf.query.analysis import TextAnalysisError as TextAnalysisError
    from rtf.query.regex import InvalidRegexError as InvalidRegexError
    from rtf.server.async_client import AsyncClient as AsyncClient
    from rtf.server.client import Client as Client
    from rtf.server.client import GapEvent as GapEvent
    from rtf.server.client import MatchEvent as MatchEvent

# The public API, imported on first use (PEP 562) so that `import rtf.query.text`
# in a Spark executor does not pay for the parser and every engine.
_API = {
    "ALGORITHMS": "rtf.engine", "Algorithm": "rtf.engine", "Engine": "rtf.engine",
    "Match": "rtf.engine", "RegisteredQuery": "rtf.engine",
    "Publication": "rtf.io.publication", "Taxonomy": "rtf.io.taxonomy",
    "parse_query": "rtf.parser", "read_publications": "rtf.io.reader",
    "RtfError": "rtf.errors", "QueryError": "rtf.errors", "QuerySyntaxError": "rtf.errors",
    "UnsupportedQueryError": "rtf.errors", "QueryTooComplexError": "rtf.errors",
    "PublicationError": "rtf.errors", "TaxonomyError": "rtf.errors",
    "QueryTooLargeError": "rtf.errors", "IndexFileError": "rtf.errors", "WorkerLostError": "rtf.errors",
    "InvalidRegexError": "rtf.query.regex",
    "TextAnalysis": "rtf.query.analysis", "TextAnalysisError": "rtf.query.analysis",
    "FieldAnalysis": "rtf.query.analysis", "FieldRule": "rtf.query.analysis",
    "Client": "rtf.server.client", "AsyncClient": "rtf.server.async_client",
    "MatchEvent": "rtf.server.client", "GapEvent": "rtf.server.client",
}

#: The extra that the modules of some names need: importing one without it is one
#: line saying what to install, not a traceback ending in httpx.
_EXTRAS = {"rtf.server.client": "server", "rtf.server.async_client": "server"}

__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'rtf' has no attribute {name!r}")
    import importlib

    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as e:
        extra = _EXTRAS.get(module)
        if extra is None or (e.name or "").startswith("rtf"):
            raise
        raise ModuleNotFoundError(f"rtf.{name} needs the {extra!r} extra: pip install "
                                  f"'rtf[{extra}]' (no module named {e.name!r})", name=e.name) from None
    value = getattr(imported, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))  # (a name used once is in both)
