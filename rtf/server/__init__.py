"""`rtf serve`: rtf as a continuous-query broker over HTTP (docs/server.md).

The pieces, in the order a request meets them: `app` (the HTTP API, FastAPI
on uvicorn), `auth` (bearer tokens and roles), `broker` (publishing, the
outbox, snapshots), `registry` (the engine and the SQLite query table, kept
equal), `querystore` and `outbox` (the two SQLite files), `streams` (live
Server-Sent Events connections), `metrics` (Prometheus), `command` (the
``rtf serve`` command line), `process` (a server in a child process, for tests,
benchmarks and scripts). `rtf.server.client` is the Python client.
"""
