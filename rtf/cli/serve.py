"""``rtf serve``: the broker's command line (the broker itself is `rtf.server`).

The server stack (FastAPI, uvicorn, ...) is the ``server`` extra: this module
reads only `rtf.server.config`, so ``rtf --help`` and the other commands never
import it, and ``rtf serve`` without it says in one line what to install.
"""

from __future__ import annotations

import argparse
import importlib.util

from rtf.cli import summary
from rtf.cli.arguments import EXIT_INPUT, positive_float, positive_int
from rtf.cli.logs import add_logging_options, log

#: The modules ``rtf serve`` needs, and the distributions that bring them.
SERVER_MODULES = {"fastapi": "fastapi", "fastapi_offline": "fastapi-offline", "uvicorn": "uvicorn",
                  "sse_starlette": "sse-starlette", "prometheus_client": "prometheus-client",
                  "httpx": "httpx", "httpx_sse": "httpx-sse",
                  "pydantic_settings": "pydantic-settings"}

EPILOG = """\
data folder (--data DIR, created if missing):
  queries.sqlite3   the registered queries, the source of truth (a 201 means on disk)
  outbox.sqlite3    the matches pushed to subscribers, for those who reconnect
  snapshot.idx      the saved index, so that a restart does not parse every query
                    (used only if it was made from this very queries.sqlite3)
  serve.lock        names the serving process (the folder itself is locked:
                    one server per folder)

API (JSON; docs/server.md has every detail, /docs the OpenAPI pages, offline):
  PUT    /queries/{id}              {"query": "...", "subscriber": "alice"} -> 201
  POST   /queries[?atomic=false]    many queries, JSON Lines (application/x-ndjson,
                                    application/jsonl: the lines of a query file),
                                    one transaction, all or nothing by default
  GET    /queries[?subscriber=]     GET|DELETE /queries/{id}
  POST   /publications              an RDF body (application/n-triples, text/plain,
                                    text/turtle, application/x-turtle,
                                    application/n-quads, application/trig,
                                    application/rdf+xml without a DTD)
                                    -> the matches, as rtf match lines (application/
                                    x-ndjson), or with Accept: application/sparql-
                                    results+json one SPARQL JSON results document
  GET    /subscribers/{name}/matches  Server-Sent Events; reconnect with Last-Event-ID
  POST   /subscribers/{name}/tickets  a short-lived ?ticket= for a browser's EventSource
  POST   /check, /match             rtf check of a query; the matches of an RDF body
                                    (?explain=true), published to no one
  GET    /health, /metrics (Prometheus)
  GET    /                          the console, a page for a browser (docs/console.md)

tokens file (--tokens FILE; without it, anyone who reaches the port is admin):
  one "TOKEN ROLE" per line; ROLE is admin, publisher, metrics (reads /metrics)
  or subscriber:NAME; a token has at least 16 characters (a shorter one is
  refused at start, exit 1)

errors are {"error": "..."} JSON: 400 bad request (ids and subscriber names
are 1 to 1024 characters), 401/403 tokens, 406 Accept, 413 body too large
(gzip bodies: once decompressed too), 415 Content-Type or a Content-Encoding
other than gzip, 507 the data folder is full (nothing changed). SIGTERM and
Ctrl-C stop cleanly (exit 0, 130).

settings (docs/server.md, "Configuration"): every option is also an environment
variable RTF_SERVE_<OPTION> (RTF_SERVE_MAX_BODY=1048576) and a key of a TOML file
given with --config FILE or RTF_SERVE_CONFIG (max_body = 1048576); the command
line wins over the environment, the environment over the file, the file over
the defaults. An unknown RTF_SERVE_ variable or key is refused.

needs the server extra: pip install 'rtf[server]'

examples:
  rtf serve --data ./broker
  rtf serve --data ./big --import-index queries.idx     # start from rtf index build's file
  curl -X PUT localhost:8750/queries/rio -H 'Content-Type: application/json' \\
       -d '{"query": "ASK { ?a <http://ex/p> ?t FILTER ftcontains(?t, \\"rio\\") }", "subscriber": "alice"}'
  curl -X POST localhost:8750/queries -H 'Content-Type: application/x-ndjson' \\
       --data-binary @examples/news_queries.jsonl
  curl -N localhost:8750/subscribers/alice/matches &
  curl -X POST localhost:8750/publications -H 'Content-Type: application/n-triples' \\
       --data-binary '<http://ex/a> <http://ex/p> "Games in Rio" .'
"""

def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is from 0 to 65535, got {text!r}")
    return value


def add_command(sub) -> None:
    from rtf.engine import ALGORITHMS, DEFAULT_ALGORITHM
    from rtf.server.config import (DEFAULT_PORT, MAX_AGE_S, MAX_BODY, MAX_EVENTS, SNAPSHOT_EVERY,
                                   STREAM_QUEUE)

    p = sub.add_parser("serve", help=summary("serve"),
                       description="Serve the registered queries over HTTP: subscribers register "
                                   "queries, publishers post RDF, matches are answered and pushed "
                                   "to subscribers as Server-Sent Events. Queries and pushed "
                                   "matches survive restarts (SQLite under --data).",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
                       # an option not given is not set: the environment or --config may set it
                       argument_default=argparse.SUPPRESS)
    p.add_argument("--config", metavar="FILE",
                   help="a TOML file of settings, named as the options (max_body = 1048576)")
    p.add_argument("--data", metavar="DIR",
                   help="the broker's data folder (required: here, RTF_SERVE_DATA or --config)")
    p.add_argument("--algorithm", choices=ALGORITHMS,
                   help=f"engine (default: {DEFAULT_ALGORITHM})")
    p.add_argument("--taxonomy", metavar="ONTO",
                   help="ontology whose rdfs:subClassOf answers a/rdfs:subClassOf*")
    p.add_argument("--host",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=port,
                   help=f"port (default {DEFAULT_PORT}; 0: any free port, printed at start)")
    p.add_argument("--tokens", metavar="FILE", help="bearer tokens and their roles (see below)")
    p.add_argument("--max-body", type=positive_int, metavar="BYTES",
                   help=f"largest request body (default {MAX_BODY}); larger ones get 413")
    p.add_argument("--stream-queue", type=positive_int, metavar="N",
                   help=f"events a stream may fall behind before it is cut (default {STREAM_QUEUE})")
    p.add_argument("--outbox-max-events", type=positive_int, metavar="N",
                   help=f"matches kept per subscriber for reconnection (default {MAX_EVENTS})")
    p.add_argument("--outbox-max-age", type=positive_float, metavar="S",
                   help=f"seconds a match is kept for reconnection (default {MAX_AGE_S:.0f}: 7 days)")
    p.add_argument("--snapshot-every", type=positive_int, metavar="N",
                   help=f"save the index after N registrations or removals (default {SNAPSHOT_EVERY}; "
                        "and always at shutdown)")
    p.add_argument("--import-index", metavar="IDX",
                   help="start an empty data folder from a saved index (rtf index build, "
                        "Engine.save) without parsing its queries; it must have been built with "
                        "--algorithm and --taxonomy (a folder already started from IDX is served "
                        "as it is)")
    p.add_argument("--text-analysis", metavar="FILE",
                   help="text analysis options, per field too (a JSON or TOML file, or a JSON object; "
                        "as rtf index build's --text-analysis): every query and publication")
    # the server's log (rtf.server.command sets it up): warnings by default, -v every request
    add_logging_options(p, default="warning")
    p.set_defaults(func=cmd_serve, own_logging=True)




def cmd_serve(args) -> int:
    missing = [dist for module, dist in SERVER_MODULES.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        log.error(f"rtf: error: rtf serve needs the server extra ({', '.join(missing)} missing): "
                  "pip install 'rtf[server]'")
        return EXIT_INPUT
    from rtf.cli.arguments import UsageError
    from rtf.server.command import serve
    from rtf.server.settings import SettingsError, serve_settings
    try:
        given = {name: value for name, value in vars(args).items() if value is not None}
        settings = serve_settings(given, getattr(args, "config", None))
    except SettingsError as e:
        raise UsageError(str(e)) from None
    return serve(settings)
