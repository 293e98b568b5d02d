"""benchmarks/serve_load.py, run tiny: its report holds the issue's invariants.

Not a timed test: whatever the rates, a load run must end with no errors,
every POST answered with the matches a local engine finds, and every
expected match delivered to its subscriber's stream exactly once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rtf.io import datasets

#: Spark, rtf serve processes or a browser: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow

pytest.importorskip("httpx")
pytest.importorskip("httpx_sse")

PROGRAM = Path(__file__).resolve().parents[1] / "benchmarks" / "serve_load.py"
#: The smallest typed file of the sample (98 publications): posted in turn, it wraps
#: around within the run, so renamed second rounds are exercised too.
SMALL = "nordlys_dbpedia-2015-10_sample.nt.gz"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    source = datasets.dbpedia_dir() / SMALL
    if not source.exists():
        pytest.skip(datasets.missing_message())
    out = tmp_path_factory.mktemp("serve-load") / "load.json"
    run = subprocess.run(
        [sys.executable, str(PROGRAM), "--queries", "300", "--subscribers", "3",
         "--publishers", "2", "--duration", "2", "--max-publications", "400",
         "--publications", str(source), "--drain-timeout", "30", "--timeout", "240",
         "--json", str(out)],
        capture_output=True, text=True, timeout=300)
    assert out.exists(), f"no report (status {run.returncode}):\n{run.stderr[-3000:]}"
    doc = json.loads(out.read_text())
    doc["_status"], doc["_stdout"] = run.returncode, run.stdout
    return doc


def test_no_errors_and_exit_status_zero(report):
    assert report["errors"] == 0, report["error_samples"]
    assert report["ok"] and report["_status"] == 0


def test_every_expected_match_delivered_exactly_once(report):
    events = report["events"]
    assert events["expected"] > 0, "the run matched nothing: it checks nothing"
    assert events["delivered"] == events["expected"]
    assert events["duplicates"] == events["missed"] == events["unexpected"] == 0
    assert events["out_of_order"] == 0 and events["gaps"] == 0
    for name, sub in report["per_subscriber"].items():
        assert sub["delivered"] == sub["expected"], name


def test_post_answers_equal_the_local_engine(report):
    answers, publishing = report["answers"], report["publishing"]
    assert answers["posts"] == publishing["posts"] > 0
    assert answers["equal"] == answers["posts"]
    assert answers["matches_expected"] == publishing["matches"]
    assert report["registration"]["queries"] + report["registration"]["refused"] == 300


def test_report_is_bounded_and_printed(report):
    publishing = report["publishing"]
    assert publishing["publications"] <= 400
    assert sum(publishing["per_second"]) == publishing["publications"]
    for key in ("p50_ms", "p99_ms", "max_ms"):
        assert report["publish_to_delivery"][key] is not None
        assert publishing["post_round_trip"][key] is not None
    assert "publish-to-delivery p50 / p99 / max" in report["_stdout"]
    rss = report["rss"]
    assert rss["start_mb"] > 0 and rss["end_mb"] > 0 and len(rss["samples"]) >= 1
    assert publishing["server_cpu_ms_per_publication"] > 0
