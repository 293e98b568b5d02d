"""`rtf match --workers`: a pool stopped early (a bad line at once) never waits forever for a worker.

The workers are forked with the parent's SIGTERM handler (`rtf.cli.Terminated`);
a SIGTERM from the pool's terminate() that reached a worker before it set the
default action was dropped, and terminate() then waited for that worker
forever. Seen under load: 400 early stops hung within 40 s while three busy
loops ran; the workers now hold SIGTERM until they have the default action.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    from rtf import Engine
    from rtf.cli import _on_sigterm, _terminate
    from rtf.cli.match import match_in_processes

    def failing():
        raise ValueError("a bad line at once")
        yield

    engine = Engine()
    with _on_sigterm(_terminate):
        for _ in range(150):
            try:
                list(match_in_processes(engine, None, failing(), 2))
            except ValueError:
                pass
    print("done")
""")


@pytest.mark.slow
def test_early_stops_of_the_worker_pool_never_hang_under_load():
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr[-2000:]
