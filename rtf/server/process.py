"""``rtf serve`` in a child process on loopback: for tests, benchmarks and scripts.

`ServerProcess` starts ``python -m rtf.cli serve --data DIR --port 0 ...``,
reads the port from the "rtf serve: listening on URL" line the server
prints on stderr once it serves, waits for ``/health``, and stops it with
SIGTERM (a clean shutdown) or SIGKILL (a crash). Everything the server
writes on stderr is kept (`stderr`), so a test can look for errors in the
log, and a failed start raises `ServerFailed` with that log::

    with ServerProcess(tmp_path / "broker", "--snapshot-every", "10") as server:
        with server.client() as http:
            http.put("/queries/q1", json={"query": "ASK { ?s ?p ?o }"})
        server.kill()                 # SIGKILL
        server.start()                # again, on the same --data

`run_serve` runs an ``rtf serve`` expected to exit by itself (refused
arguments, a busy data folder). Every process started here is killed at
interpreter exit if a test left it running.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import httpx

#: The line `rtf serve` prints on stderr once it accepts connections.
LISTENING = re.compile(r"^rtf serve: listening on (http://\S+) ")

#: Seconds allowed for a start (imports, loading or rebuilding the index) and a stop.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0

_running: "weakref.WeakSet[ServerProcess]" = weakref.WeakSet()


class ServerFailed(RuntimeError):
    """The server did not start (its stderr is in the message), or did not stop in time."""


def serve_command(data: str | os.PathLike, *args, python: str = sys.executable) -> list[str]:
    """The argv of ``rtf serve --data DATA --port 0 ARGS`` (a later ``--port`` in ARGS wins)."""
    return [python, "-m", "rtf.cli", "serve", "--data", str(data), "--port", "0",
            *(str(a) for a in args)]


def run_serve(data: str | os.PathLike, *args, timeout: float = START_TIMEOUT,
              env: dict | None = None) -> subprocess.CompletedProcess:
    """Run an ``rtf serve`` that is expected to exit by itself: its exit status,
    stdout and stderr (text). A server that keeps running is killed and
    `ServerFailed` raised."""
    try:
        return run_command(serve_command(data, *args), timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        raise ServerFailed(f"rtf serve {' '.join(map(str, args))} did not exit within {timeout} s; "
                           f"stderr: {e.stderr!r}") from None


def run_command(command: list[str], *, timeout: float, env: dict | None = None,
                cwd: str | os.PathLike | None = None) -> subprocess.CompletedProcess:
    """`subprocess.run` (text, both outputs captured, no stdin) of a command such as
    `serve_command`'s, started by `ServerProcess.launch`; killed after `timeout` s
    (`subprocess.TimeoutExpired`, with what it wrote)."""
    process = ServerProcess.launch(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=_env(env), cwd=cwd)
    with process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            raise subprocess.TimeoutExpired(command, timeout, stdout, stderr) from None
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _env(extra: dict | None) -> dict:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    if extra:
        env.update(extra)
    return env


class ServerProcess:
    """One ``rtf serve`` process on a free loopback port (started by `start`)."""

    #: How the process is started: `subprocess.Popen`'s signature and answers. (The test
    #: suite forks its servers from an interpreter that has imported them: tests/warm_server.py.)
    launch = staticmethod(subprocess.Popen)

    def __init__(self, data: str | os.PathLike, *args, token: str | None = None,
                 env: dict | None = None, start_timeout: float = START_TIMEOUT,
                 new_session: bool = False):
        """`new_session`: start the server in a session of its own, so that a Ctrl-C
        at the terminal reaches only the caller (which then stops the server)."""
        self.data = Path(data)
        self.new_session = new_session
        self.args = [str(a) for a in args]
        #: Sent as ``Authorization: Bearer TOKEN`` by `client` and `wait_healthy` unless told otherwise.
        self.token = token
        self.env = env
        self.start_timeout = start_timeout
        self.process: subprocess.Popen | None = None
        #: ``http://127.0.0.1:PORT`` once started.
        self.url: str | None = None
        #: The "listening on" line of the current run.
        self.banner = ""
        self._lines: list[str] = []
        self._listening = threading.Event()
        self._reader: threading.Thread | None = None
        #: Every run's stderr, oldest first (`stderr` is the current one's).
        self.logs: list[str] = []

    # ------------------------------------------------------------ running

    @property
    def command(self) -> list[str]:
        return serve_command(self.data, *self.args)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def stderr(self) -> str:
        """What the current (or last) run wrote on stderr so far."""
        return "".join(self._lines)

    def start(self) -> "ServerProcess":
        """Start the server (again, if it ran before: same --data, same arguments) and
        wait until ``/health`` answers. `ServerFailed` if it exits or times out first."""
        if self.running:
            raise RuntimeError("the server is already running")
        self._lines = []
        self._listening.clear()
        self.url = None
        self.process = self.launch(self.command, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, encoding="utf-8", errors="replace",
                                   env=_env(self.env), start_new_session=self.new_session)
        _running.add(self)
        self._reader = threading.Thread(target=self._read_stderr, args=(self.process,),
                                        name=f"rtf-serve-{self.process.pid}-stderr", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + self.start_timeout
        self._listening.wait(self.start_timeout)
        if self.url is None:
            code = self.process.poll()
            if code is None and not self._reader.is_alive():  # its stderr closed: it is exiting
                try:
                    code = self.process.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    pass
            if code is None:
                self._force_stop()
                raise ServerFailed(f"rtf serve did not start within {self.start_timeout} s; "
                                   f"stderr:\n{self.stderr}")
            self._finish()
            raise ServerFailed(f"rtf serve exited with status {code} before serving; "
                               f"stderr:\n{self.stderr}")
        try:
            self.wait_healthy(max(deadline - time.monotonic(), 1.0))
        except BaseException:
            self._force_stop()
            raise
        return self

    def restart(self) -> "ServerProcess":
        """SIGTERM, then `start` again on the same folder with the same arguments."""
        self.terminate()
        return self.start()

    def _read_stderr(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            self._lines.append(line)
            if self.url is None:
                m = LISTENING.match(line)
                if m:
                    self.url = m.group(1)
                    self.banner = line.strip()
                    self._listening.set()
        self._listening.set()  # EOF: the process is gone; start() stops waiting

    def wait_healthy(self, timeout: float = 30.0) -> dict:
        """Poll ``GET /health`` until it answers 200; its JSON."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if not self.running:
                break
            try:
                r = httpx.get(self.url + "/health", timeout=5)
                if r.status_code == 200:
                    return r.json()
                last = RuntimeError(f"/health answered {r.status_code}: {r.text}")
            except httpx.TransportError as e:
                last = e
            time.sleep(0.05)
        raise ServerFailed(f"rtf serve did not become healthy ({last}); stderr:\n{self.stderr}")

    def health(self) -> dict:
        r = httpx.get(self.url + "/health", timeout=10)
        r.raise_for_status()
        return r.json()

    def client(self, token: str | None = ..., timeout: float = 30.0, **kwargs) -> httpx.Client:
        """An `httpx.Client` on the server's URL (with the server's token unless
        `token` says otherwise; None: no Authorization header)."""
        token = self.token if token is ... else token
        headers = dict(kwargs.pop("headers", {}) or {})
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout, **kwargs)

    # ----------------------------------------------------------- stopping

    def terminate(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM (a clean shutdown: the server writes its snapshot) and wait: the exit status.
        `ServerFailed` (after a SIGKILL) if it does not exit within `timeout`."""
        return self._signal(signal.SIGTERM, timeout)

    def interrupt(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGINT (Ctrl-C: a clean shutdown too) and wait: the exit status (130)."""
        return self._signal(signal.SIGINT, timeout)

    def kill(self) -> int:
        """SIGKILL (a crash) and wait: the exit status (-9)."""
        return self._signal(signal.SIGKILL, STOP_TIMEOUT)

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM, then SIGKILL if it has not exited within `timeout` s; never raises.
        The exit status (None if not started)."""
        if self.process is None:
            return None
        if self.running:
            try:
                return self.terminate(timeout)
            except ServerFailed:
                pass
        self._finish()
        return self.process.returncode

    def _signal(self, sig: int, timeout: float) -> int:
        if self.process is None:
            raise RuntimeError("the server was never started")
        if self.running:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._force_stop()
            raise ServerFailed(f"rtf serve did not exit within {timeout} s of signal {sig}; "
                               f"stderr:\n{self.stderr}") from None
        self._finish()
        return code

    def _force_stop(self) -> None:
        if self.running:
            self.process.kill()
        self.process.wait()
        self._finish()

    def _finish(self) -> None:
        """After the process exited: read the rest of its stderr."""
        if self._reader is not None:
            self._reader.join(10)
            self._reader = None
            self.process.stderr.close()
            self.logs.append(self.stderr)
        _running.discard(self)

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.pid}, {self.url}" if self.running else "stopped"
        return f"<ServerProcess {self.data} {' '.join(self.args)} ({state})>"


@atexit.register
def _kill_leftovers() -> None:
    for server in list(_running):
        if server.running:
            server.process.kill()
