"""Running ``rtf serve``: lock the data folder, listen, start the broker and the HTTP app.

The command line itself (options, help) is `rtf.cli.serve`.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import sys
from pathlib import Path

from rtf.errors import RtfError

DEFAULT_PORT = 8750


class DataFolderBusyError(RtfError):
    """Another server uses the data folder."""


def serve(args) -> int:
    """Run the broker that the ``rtf serve`` options `args` describe, until SIGTERM or Ctrl-C."""
    import uvicorn

    from rtf.server.app import create_app
    from rtf.server.auth import Tokens
    from rtf.server.broker import Broker, BrokerConfig

    logging.basicConfig(level=args.log_level.upper(), format="rtf serve: %(levelname)s: %(message)s")
    tokens = Tokens.from_file(args.tokens) if args.tokens else None
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    lock = _lock_folder(data)
    sock = _listen(args.host, args.port)
    config = BrokerConfig(data, args.algorithm, Path(args.taxonomy) if args.taxonomy else None,
                          args.max_body, args.stream_queue, args.outbox_max_events,
                          args.outbox_max_age, args.snapshot_every)
    broker = Broker(config)
    host, port = sock.getsockname()[:2]
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}"

    def ready() -> None:
        s = broker.registry.startup
        print(f"rtf serve: listening on {url} ({len(broker.engine)} queries, {args.algorithm}, "
              f"index {s['from']} + {s['replayed']} replayed in {s['seconds']} s"
              f"{', auth on' if tokens else ', no auth'}; data {data})", file=sys.stderr, flush=True)

    app = create_app(broker, tokens, on_ready=ready)
    server = uvicorn.Server(uvicorn.Config(
        app, log_level=args.log_level, access_log=args.log_level in ("info", "debug"),
        timeout_graceful_shutdown=5, lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        lock.close()
    return 0


def _lock_folder(data: Path):
    """Hold ``DIR/serve.lock`` for the server's life (one server per folder)."""
    f = open(data / "serve.lock", "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise DataFolderBusyError(f"another rtf serve uses {data} (it holds {data / 'serve.lock'})") from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port` (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on connections whose socket
    # says TCP, and without it every answer waited ~40 ms (Nagle + delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise RtfError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
