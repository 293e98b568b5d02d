"""tests/warm_server.py: an ``rtf`` command forked from the warm zygote answers as the same
command started by `subprocess` -- exit status, stdout, stderr, environment, working folder,
signals -- so that the server tests that use it test the real thing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from rtf.server.process import ServerProcess
from tests import warm_server

pytestmark = pytest.mark.skipif(not warm_server.enabled(), reason="RTF_TEST_WARM_SERVERS=0")

RTF = [sys.executable, "-m", "rtf.cli"]


def both(args, **kw):
    """The command run cold (`subprocess`) and warm (forked): two CompletedProcess."""
    runs = []
    for start in (subprocess.Popen, warm_server.popen):
        with start([*RTF, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True, **kw) as p:
            try:
                out, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                raise
        runs.append((p.returncode, out, err))
    return runs


@pytest.mark.parametrize("args", [
    ["check", "ASK { ?s ?p ?o }"],
    ["check", "SELECT ?x WHERE { ?x <http://ex/p> }"],   # a syntax error: exit 1, line and column
    ["serve", "--port", "99999"],                          # a usage error: exit 2
    ["--version"],
])
def test_a_warm_command_answers_as_a_cold_one(args):
    cold, warm = both(args)
    assert warm == cold


def test_a_warm_command_gets_the_callers_environment_and_folder(tmp_path):
    (tmp_path / "serve.toml").write_text("max_body = -3\n")
    env = dict(os.environ, RTF_SERVE_OUTBOX_MAX_AGE="-1")
    for args in (["serve", "--config", "serve.toml"], ["serve", "--data", "d"]):
        cold, warm = both(args, env=env, cwd=tmp_path)
        assert warm == cold
        assert warm[0] == 2 and warm[2].count("\n") == 1, warm
    assert not (tmp_path / "d").exists()


def test_the_zygote_forks_the_command_and_not_another(tmp_path):
    """The fork is the server itself: its pid takes the signals, its status is the server's;
    a command with a pipe on stdin is started cold."""
    server = ServerProcess(tmp_path / "broker").start()
    try:
        assert isinstance(server.process, warm_server.WarmProcess)
        with open(f"/proc/{server.pid}/status") as f:
            assert f"PPid:\t{os.getpid()}" not in f.read()  # the zygote's child, not ours
        os.kill(server.pid, signal.SIGTERM)
        assert server.process.wait(30) == 0
        assert server.process.poll() == 0
    finally:
        server.stop()
    piped = warm_server.popen([*RTF, "--version"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert isinstance(piped, subprocess.Popen)
    piped.communicate(timeout=60)


def test_a_killed_warm_process_says_so(tmp_path):
    p = warm_server.popen([*RTF, "serve", "--data", str(tmp_path), "--port", "0"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(0.5)
    p.kill()
    assert p.wait(30) == -signal.SIGKILL == p.poll()
