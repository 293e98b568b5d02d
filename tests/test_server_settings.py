"""Issue 40, item 5: every ``rtf serve`` option from the environment (``RTF_SERVE_*``)
and from a TOML file (``--config FILE``), the command line winning over the
environment, the environment over the file, the file over the defaults -- tried on
real processes -- and anything not understood refused in one line before the
server starts (a typo in a variable's name or a key is not ignored silently).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("pydantic_settings")

from rtf.server.process import ServerProcess, run_command  # noqa: E402
from rtf.server.settings import NAMES, ServeSettings, SettingsError, serve_settings  # noqa: E402

NT = "application/n-triples"


class Configured(ServerProcess):
    """``rtf serve`` with only the arguments given (ServerProcess's own command line
    would set --data and --port, which would win over the environment and the file)."""

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "rtf.cli", "serve", *self.args]


def body_limit(server: ServerProcess) -> int | None:
    """The --max-body the server runs with, as its 413 says (None: over 5,000 bytes)."""
    with server.client() as http:
        r = http.post("/publications", content=b"x" * 5000, headers={"Content-Type": NT})
    if r.status_code != 413:
        return None
    return int(re.search(r"limit of (\d+) bytes", r.json()["error"]).group(1))


def serve(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_command([sys.executable, "-m", "rtf.cli", "serve", *args], timeout=60, env=env)


@pytest.mark.slow
def test_command_line_wins_over_environment_over_file_over_defaults(tmp_path):
    config = tmp_path / "serve.toml"
    config.write_text(f'data = "{tmp_path / "from-file"}"\nport = 0\nmax_body = 2000\n'
                      'log_level = "warning"\n')
    env = {"RTF_SERVE_MAX_BODY": "3000"}
    cases = [((), None, 2000, "from-file"),
             ((), env, 3000, "from-file"),
             (("--max-body", "4000"), env, 4000, "from-file"),
             (("--data", str(tmp_path / "from-cli")), {**env, "RTF_SERVE_DATA": str(tmp_path / "env")},
              3000, "from-cli")]
    other = tmp_path / "other.toml"  # named by RTF_SERVE_CONFIG, which --config overrides
    other.write_text(f'data = "{tmp_path / "from-other"}"\nport = 0\nmax_body = 1000\n')
    cases.append(((), {"RTF_SERVE_CONFIG": str(other)}, 2000, "from-file"))
    for args, environ, limit, data in cases:
        with Configured(tmp_path / "unused", "--config", config, *args, env=environ) as server:
            assert body_limit(server) == limit, (args, environ)
            assert server.banner.endswith(f"data {tmp_path / data})"), server.banner
    with Configured(tmp_path / "unused", env={"RTF_SERVE_CONFIG": str(other)}) as server:
        assert body_limit(server) == 1000
        assert server.banner.endswith(f"data {tmp_path / 'from-other'})"), server.banner
    # no file: the environment alone, then the defaults
    env = {"RTF_SERVE_DATA": str(tmp_path / "env"), "RTF_SERVE_PORT": "0",
           "RTF_SERVE_SNAPSHOT_EVERY": "1", "RTF_SERVE_LOG_LEVEL": "INFO"}
    with Configured(tmp_path / "unused", env=env) as server:
        assert body_limit(server) is None  # 16 MiB
        with server.client() as http:
            assert http.put("/queries/q", json={"query": "ASK { ?s ?p ?o }"}).status_code == 201
        # --snapshot-every 1: a snapshot after one registration, logged once it is in place
        # (the file can be there a moment before its line: wait for both, a bound on a hang)
        logged = "rtf serve: INFO: snapshot: 1 queries"  # info, not warning
        deadline = time.monotonic() + 60
        while not ((tmp_path / "env" / "snapshot.idx").exists() and logged in server.stderr) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "env" / "snapshot.idx").exists()
        assert logged in server.stderr
    assert not (tmp_path / "unused").exists()


@pytest.mark.parametrize("args, env, says", [
    ((), {}, "rtf: error: rtf serve needs a setting 'data': --data or RTF_SERVE_DATA"),
    (("--data", "d"), {"RTF_SERVE_PORT": "http"},
     "rtf: error: setting 'port' (--port or RTF_SERVE_PORT): Input should be a valid integer, "
     "unable to parse string as an integer, not 'http'"),
    (("--data", "d"), {"RTF_SERVE_MAX_BODDY": "1"},
     "rtf: error: environment variable RTF_SERVE_MAX_BODDY: 'max_boddy' is not a setting of "
     "rtf serve (did you mean 'max_body'? "),
    (("--data", "d"), {"RTF_SERVE_ALGORITHM": "fast"},
     "rtf: error: setting 'algorithm' (--algorithm or RTF_SERVE_ALGORITHM): one of "),
    (("--config", "missing.toml"), {}, "rtf: error: --config missing.toml: cannot read it: "),
    (("--config", "{bad}"), {}, "rtf: error: --config {bad}: not TOML: "),
    (("--config", "{typo}"), {}, "rtf: error: {typo}: 'max-body' is not a setting of rtf serve "
                                 "(did you mean 'max_body'? "),
    (("--config", "{negative}"), {},
     "rtf: error: setting 'outbox_max_age' (--outbox-max-age, RTF_SERVE_OUTBOX_MAX_AGE or "
     "outbox_max_age in {negative}): Input should be greater than 0, not -1"),
])
def test_a_setting_not_understood_is_one_line_and_exit_2(tmp_path, args, env, says):
    files = {"bad": "max_body = \n", "typo": 'data = "d"\nmax-body = 10\n',
             "negative": 'data = "d"\noutbox_max_age = -1\n'}
    for name, text in files.items():
        (tmp_path / f"{name}.toml").write_text(text)
    fill = {name: str(tmp_path / f"{name}.toml") for name in files}
    done = run_command([sys.executable, "-m", "rtf.cli", "serve", *(a.format(**fill) for a in args)],
                       timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(says.format(**fill)), done.stderr
    assert not (tmp_path / "d").exists()  # nothing started


def test_every_option_of_rtf_serve_is_a_setting():
    """The command line's options (but --config) are the settings, one for one."""
    done = serve("--help")
    options = set(re.findall(r"^  --([a-z-]+)", done.stdout, re.M)) - {"help", "config"}
    assert options == {name.replace("_", "-") for name in NAMES}
    assert set(ServeSettings.model_fields) == set(NAMES)


def test_the_docs_config_file_and_environment_are_accepted(tmp_path, monkeypatch):
    """docs/server.md's TOML file and the variables of its systemd unit and Kubernetes
    example are read as they are written."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "server.md").read_text(encoding="utf-8")
    section = docs[docs.index("### Configuration"):docs.index("## The API")]
    toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
    (tmp_path / "serve.toml").write_text(toml)
    variables = dict(re.findall(r"^Environment=(RTF_SERVE_\w+)=(\S+)$", section, re.M))
    kubernetes = re.findall(r"- name: (RTF_SERVE_\w+)\n\s+value: \"([^\"]*)\"", section)
    assert variables and kubernetes
    for name, value in [*variables.items(), *kubernetes]:
        monkeypatch.setenv(name, value)
    settings = serve_settings({}, tmp_path / "serve.toml")
    assert settings.data and settings.host
    with pytest.raises(SettingsError, match="'max-body' is not a setting"):
        (tmp_path / "serve.toml").write_text(toml + "max-body = 1\n")
        serve_settings({}, tmp_path / "serve.toml")


def test_the_module_docstring_example(monkeypatch):
    import doctest

    from rtf.server import settings
    for name in [k for k in __import__("os").environ if k.upper().startswith("RTF_SERVE_")]:
        monkeypatch.delenv(name)
    result = doctest.testmod(settings)
    assert result.failed == 0 and result.attempted > 0
