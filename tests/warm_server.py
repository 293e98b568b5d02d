"""``rtf serve`` started from a warm interpreter, for the test suite.

The suite starts ``rtf serve`` about 150 times (damaged databases, swapped files,
restarts, settings...), and 85 % of each start is importing what the server needs
before it listens: ~0.55 s of CPU a start, ~90 s of the suite's ~750. Here one
*zygote* per test process imports all of it once; each start is then a fork of it.

The child is what ``python -m rtf.cli serve ...`` would be, from the moment its imports
are done: its stdin, stdout and stderr are the ones asked for, its environment and
working folder are the caller's, a session of its own if asked, ``rtf.cli`` run as
``__main__``, and at the end non-daemon threads joined, ``atexit`` run and the exit
status of `SystemExit` (uncaught errors: a traceback and 1). The caller gets a
`WarmProcess`, which answers as a `subprocess.Popen` does: ``pid`` (signals go to the
server itself), ``poll``, ``wait``, ``communicate``, ``returncode``, ``stderr``.

The zygote forks and reaps; it sends each child's wait status down a pipe the caller
gave it, so ``wait`` is a read. Only ``python -m rtf.cli`` commands with the zygote's
own interpreter settings (``PYTHON*``, ``LANG``, ``LC_*``) are started warm; anything
else starts as ``subprocess.Popen`` would. ``RTF_TEST_WARM_SERVERS=0`` turns it off.

Tests about the start itself (timing, signals while importing) use ``subprocess``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

#: What a server imports before it listens (the zygote imports it once).
WARM_MODULES = ("rtf.cli", "rtf.cli.serve", "rtf.server.command", "rtf.server.app",
                "rtf.server.broker", "rtf.server.auth", "uvicorn", "uvicorn.config",
                "uvicorn.server", "uvicorn.lifespan.on", "uvicorn.protocols.http.h11_impl",
                "uvicorn.protocols.http.httptools_impl", "uvicorn.protocols.websockets.auto",
                "uvicorn.loops.asyncio", "uvicorn.loops.auto", "uvicorn.protocols.http.auto")

_STATUS = struct.Struct("=i")


def _startup_settings(env: dict) -> dict:
    """The variables an interpreter reads as it starts: a child can only be forked from a
    zygote started with the same."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_", "LANG"))}


# ----------------------------------------------------------------- the caller's side

class WarmProcess:
    """A forked ``rtf serve``, answering as `subprocess.Popen`."""

    def __init__(self, args, pid: int, status_fd: int, stdout, stderr):
        self.args = args
        self.pid = pid
        self.stdin = None
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._status_fd = status_fd
        self._lock = threading.Lock()

    def _read_status(self, timeout: float | None) -> bool:
        with self._lock:
            if self.returncode is not None:
                return True
            ready, _, _ = select.select([self._status_fd], [], [], timeout)
            if not ready:
                return False
            data = os.read(self._status_fd, _STATUS.size)
            os.close(self._status_fd)
            # the zygote gone without a word: nobody can wait for the child any more
            self.returncode = (os.waitstatus_to_exitcode(_STATUS.unpack(data)[0])
                               if len(data) == _STATUS.size else -signal.SIGKILL)
            return True

    def poll(self) -> int | None:
        self._read_status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._read_status(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, input=None, timeout: float | None = None):
        """Both pipes read to their end (in threads, as Popen does with a timeout)."""
        if input:
            raise ValueError("a warm process has no stdin")
        got: dict[str, object] = {}
        readers = [threading.Thread(target=lambda n=name, f=f: got.__setitem__(n, f.read()),
                                    daemon=True)
                   for name, f in (("out", self.stdout), ("err", self.stderr)) if f is not None]
        for reader in readers:
            reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.join(None if deadline is None else max(deadline - time.monotonic(), 0))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(deadline - time.monotonic(), 0.01))
        return got.get("out"), got.get("err")

    def __del__(self):
        if self.returncode is None:  # never waited for: the pipe is not left open
            os.close(self._status_fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for f in (self.stdout, self.stderr):
            if f is not None:
                f.close()
        self.wait()


class Zygote:
    """The caller's handle on one zygote process (started on first use)."""

    def __init__(self):
        self._sock: socket.socket | None = None
        self._process: subprocess.Popen | None = None
        self._settings: dict | None = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            env=env)
        theirs.close()
        self._sock, self._settings = ours, _startup_settings(env)
        if ours.recv(16) != b"ready":
            raise RuntimeError("the warm server zygote did not start")

    def popen(self, args, *, stdin=None, stdout=None, stderr=None, text=False, encoding=None,
              errors=None, env=None, cwd=None, start_new_session=False, **rest):
        env = dict(os.environ if env is None else env)
        warm = (not rest and stdin in (None, subprocess.DEVNULL)
                and list(args[:3]) == [sys.executable, "-m", "rtf.cli"])
        with self._lock:
            if warm and self._sock is None:
                self._start()
            if not warm or _startup_settings(dict(env, PYTHONUNBUFFERED="1")) != self._settings:
                return subprocess.Popen(args, stdin=stdin, stdout=stdout, stderr=stderr, text=text,
                                        encoding=encoding, errors=errors, env=env, cwd=cwd,
                                        start_new_session=start_new_session, **rest)
            return self._fork(args, stdout, stderr, text or encoding or errors, encoding, errors,
                              env, os.path.abspath(cwd or os.getcwd()), start_new_session)

    def _fork(self, args, stdout, stderr, text, encoding, errors, env, cwd, new_session):
        opened, ours = [], {}
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            opened.append(devnull)
            fds = [devnull]
            for name, how in (("stdout", stdout), ("stderr", stderr)):
                if how == subprocess.PIPE:
                    r, w = os.pipe()
                    opened.append(w)
                    ours[name] = r
                    fds.append(w)
                elif how == subprocess.STDOUT:
                    fds.append(fds[1])
                elif how is None:  # the caller's own
                    fds.append(1 if name == "stdout" else 2)
                elif how == subprocess.DEVNULL:
                    fds.append(devnull)
                else:
                    fds.append(how if isinstance(how, int) else how.fileno())
            status_r, status_w = os.pipe()
            opened.append(status_w)
            request = {"argv": list(args[3:]), "env": env, "cwd": cwd,
                       "new_session": bool(new_session)}
            socket.send_fds(self._sock, [json.dumps(request).encode()], [*fds, status_w])
            reply = self._sock.recv(64)
            if not reply:
                raise RuntimeError("the warm server zygote is gone")
            pid = int(reply)
        except BaseException:
            for fd in ours.values():
                os.close(fd)
            raise
        finally:
            for fd in opened:
                os.close(fd)

        def wrap(fd):
            if fd is None:
                return None
            if text:
                return open(fd, "r", encoding=encoding or "utf-8", errors=errors or "strict")
            return open(fd, "rb")

        return WarmProcess(args, pid, status_r, wrap(ours.get("stdout")), wrap(ours.get("stderr")))


_ZYGOTE = Zygote()


def popen(args, **kwargs):
    """`subprocess.Popen` for ``python -m rtf.cli ...``, forked from a warm zygote."""
    return _ZYGOTE.popen(args, **kwargs)


def enabled() -> bool:
    return os.environ.get("RTF_TEST_WARM_SERVERS", "1") != "0" and hasattr(socket, "send_fds")


# ------------------------------------------------------------------ the zygote's side

def _child(request: dict, fds: list[int]) -> None:
    """In the forked child: become ``python -m rtf.cli ARGV``; never returns."""
    import atexit
    import runpy
    import traceback

    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if request["new_session"]:
            os.setsid()
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.closerange(3, 4096)  # the zygote's socket and every other child's status pipe
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = request["cwd"]  # as `python -m` puts it
        sys.argv = ["-m", *request["argv"]]
        try:
            runpy.run_module("rtf.cli", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            traceback.print_exc()
            code = -signal.SIGINT
        except BaseException:
            traceback.print_exc()
            code = 1
        threading._shutdown()
        atexit._run_exitfuncs()
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
    finally:
        if code == -signal.SIGINT:  # as Python does after an uncaught Ctrl-C
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code)


def _zygote_main(sock: socket.socket) -> None:
    import importlib

    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    children: dict[int, int] = {}
    sock.send(b"ready")
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            fd = children.pop(pid, None)
            if fd is not None:
                try:
                    os.write(fd, _STATUS.pack(status))
                except OSError:
                    pass
                os.close(fd)
        if sock in ready:
            try:
                message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 8)
            except (ConnectionError, OSError):
                message, fds = b"", []
            if not message:  # the caller is gone; its servers are its to stop
                return
            request = json.loads(message)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                sock.close()
                _child(request, fds)
            for fd in fds[:-1]:
                os.close(fd)
            children[pid] = fds[-1]
            sock.send(str(pid).encode())


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # not tests/: as the caller's `python -m` would have it
    _zygote_main(socket.socket(fileno=int(sys.argv[1])))
