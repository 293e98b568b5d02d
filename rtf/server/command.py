"""Running ``rtf serve``: lock the data folder, listen, start the broker and the HTTP app.

The command line itself (options, help) is `rtf.cli.serve`. SIGTERM and
Ctrl-C stop the server cleanly (a last snapshot is written): SIGTERM exits
0, Ctrl-C 130, as the other commands do.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
from pathlib import Path

from rtf.errors import RtfError
from rtf.io.files import lock_folder


class DataFolderBusyError(RtfError):
    """Another server uses the data folder."""


class _Stopped(BaseException):
    """SIGTERM arrived (before uvicorn listens, or raised again by it once it has
    shut down): the server stops, and exits 0."""


def _stop(signum, frame) -> None:
    raise _Stopped()


def serve(args) -> int:
    """Run the broker that the ``rtf serve`` options `args` describe, until SIGTERM or Ctrl-C."""
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        return _serve(args)
    except _Stopped:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)


def _serve(args) -> int:
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
                          args.outbox_max_age, args.snapshot_every,
                          Path(args.import_index) if args.import_index else None, args.text_analysis)
    broker = Broker(config)
    host, port = sock.getsockname()[:2]
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}"

    def ready() -> None:
        s = broker.registry.startup
        print(f"rtf serve: listening on {url} ({len(broker.engine)} queries, {args.algorithm}, "
              f"index {s['from']} + {s['replayed']} replayed in {s['seconds']} s"
              f"{', auth on' if tokens else ', no auth'}; data {data})", file=sys.stderr, flush=True)
        print(f"rtf serve: the console is at {url}/ (docs/console.md)", file=sys.stderr, flush=True)

    class Server(uvicorn.Server):
        """uvicorn's server, remembering the signals that stopped it."""

        signals: list[int] = []

        def handle_exit(self, sig, frame) -> None:
            self.signals = [*self.signals, sig]
            broker.begin_stop()  # what is under way finishes or rolls back: rtf.server.stopping
            super().handle_exit(sig, frame)

    app = create_app(broker, tokens, on_ready=ready)
    server = Server(uvicorn.Config(
        app, log_level=args.log_level, access_log=args.log_level in ("info", "debug"),
        timeout_graceful_shutdown=5, lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        os.close(lock)
    if signal.SIGINT in server.signals:
        # uvicorn raises Ctrl-C again once it has shut down, but asyncio's runner turns
        # that into a cancel of a task that may have ended already: then run() returns
        # normally, and the exit status would be 0 by chance. It is 130, always.
        raise KeyboardInterrupt
    return 0


#: The file that names the process serving a data folder (for people; the lock is
#: on the folder itself).
PID_FILE = "serve.lock"


def _lock_folder(data: Path) -> int:
    """Lock the data folder itself for the server's life (one server per folder;
    `rtf.io.files.lock_folder`): unlike a lock file, it cannot be deleted from under
    a running server. The process id is written to ``DIR/serve.lock`` for people."""
    try:
        fd = lock_folder(data, wait=False)
    except BlockingIOError:
        raise DataFolderBusyError(f"another rtf serve uses {data}{_holder(data)}; one server "
                                  "per data folder") from None
    try:
        (data / PID_FILE).write_text(f"{os.getpid()}\n")
    except OSError:  # only a note: a full disk does not stop the server
        pass
    return fd


def _holder(data: Path) -> str:
    try:
        pid = (data / PID_FILE).read_text().strip()
    except OSError:
        return ""
    return f" (process {pid}, says {data / PID_FILE})" if pid.isdigit() else ""


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
