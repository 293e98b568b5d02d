"""The run of `rtf match` around the matching: what it does once after registering
(the collector), and how it reads and writes."""

from __future__ import annotations

import gc

from rtf.cli import main
from tests.test_output_bytes import files  # noqa: F401 (a fixture)


def test_rtf_match_collects_once_after_registering_then_freezes(files, tmp_path):
    queries, pubs = files
    full = []

    def count(phase, info):
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    # The query parser built beforehand: building it allocates enough for an automatic
    # full collection of its own, in whichever test builds it first in this process.
    from rtf.parser import parse_query
    parse_query("ASK { ?s ?p ?o }")
    gc.collect()
    frozen = gc.get_freeze_count()
    gc.callbacks.append(count)
    try:
        assert main(["match", "--queries", str(queries), "--publications", str(pubs),
                     "--output", str(tmp_path / "out.jsonl"), "--stats"]) == 0
    finally:
        gc.callbacks.remove(count)
    # before and after registering (the index's RSS, current_rss_mb): no third
    # collection to freeze the index, which the one after registering was
    assert len(full) == 2
    assert gc.get_freeze_count() > frozen
