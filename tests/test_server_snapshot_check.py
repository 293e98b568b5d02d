"""The start of a server from its snapshot: the snapshot's queries compared with the
table's rows in bulk (`rtf.server.snapshot_check`), and what must still be caught --
a row changed under the snapshot, a row that is not text, another snapshot file, a
note written by an older rtf."""

from __future__ import annotations

import json
import shutil
import sqlite3

from rtf.engine import Engine
from rtf.server import snapshot_check
from rtf.server.querystore import QueryStore
from rtf.server.registry import Registry, _digest, _query_rows
from tests.test_server_units import WORDS, query


def _stopped(folder, n: int = 6) -> None:
    registry = Registry(folder)
    for i in range(n):
        registry.put(f"q{i}", query(WORDS[i % 4]), "alice" if i % 2 else None)
    registry.snapshot()
    registry.close()


def _compared(folder) -> list | None:
    store = QueryStore(folder)
    try:
        scan = snapshot_check.TableScan(store, json.loads(store.setting("snapshot"))["through"])
        scan.start()
        return snapshot_check.compare(store, Engine.load(folder / "snapshot.idx"), scan)
    finally:
        store.close()


def test_a_clean_restart_is_compared_in_bulk_and_a_changed_row_is_not(tmp_path):
    _stopped(tmp_path)
    assert _compared(tmp_path) == []  # every query equal to its row
    with sqlite3.connect(tmp_path / "queries.sqlite3") as db:
        db.execute("UPDATE queries SET query = ? WHERE id = 'q2'", (query("gold", select=True),))
    assert _compared(tmp_path) is None  # a text changed under the snapshot: told row by row


def test_rows_changed_by_hand_under_the_snapshot_are_registered_from_the_table(tmp_path):
    _stopped(tmp_path)
    with sqlite3.connect(tmp_path / "queries.sqlite3") as db:
        db.execute("UPDATE queries SET query = ? WHERE id = 'q2'", (query("gold", select=True),))
        db.execute("UPDATE queries SET subscriber = 'bob' WHERE id = 'q4'")
        db.execute("UPDATE queries SET query = CAST(query AS BLOB) WHERE id = 'q5'")  # not text
    again = Registry(tmp_path)
    assert again.startup == {"from": "snapshot", "replayed": 2, "removed": 3, "failed": 1, "queries": 5}
    assert again.engine.get("q2").text == query("gold", select=True)
    assert again.engine.get("q4").subscriber == "bob" and "q5" not in again.engine
    again.close()


def test_removed_replaced_and_added_rows_after_the_snapshot(tmp_path):
    _stopped(tmp_path, 8)
    registry = Registry(tmp_path)
    registry.delete("q1")
    registry.delete("q6")
    registry.put("q3", query("gold"), "bob")  # replaced: a new row, above the snapshot's
    registry.put("q9", query(None), None)
    registry.close()  # no snapshot: as after a crash
    again = Registry(tmp_path)
    assert again.startup == {"from": "snapshot", "replayed": 2, "removed": 3, "failed": 0, "queries": 7}
    assert sorted(again.engine._queries) == ["q0", "q2", "q3", "q4", "q5", "q7", "q9"]
    assert again.engine.get("q3").subscriber == "bob"
    again.close()


def test_another_snapshot_file_of_the_same_table_is_not_used(tmp_path):
    _stopped(tmp_path)
    shutil.copy(tmp_path / "snapshot.idx", tmp_path / "old.idx")
    registry = Registry(tmp_path)
    registry.put("q9", query("gold"), None)
    registry.snapshot()
    registry.close()
    shutil.copy(tmp_path / "old.idx", tmp_path / "snapshot.idx")  # an older file under the newer note
    again = Registry(tmp_path)
    assert again.startup["from"] == "rebuilt" and "q9" in again.engine and len(again.engine) == 7
    again.close()


def test_a_note_of_an_older_rtf_still_starts_from_the_snapshot(tmp_path):
    _stopped(tmp_path)
    registry = Registry(tmp_path)
    note = json.loads(registry.store.setting("snapshot"))
    del note["file"]  # as written before notes named their file: the digest of its queries
    note["queries"] = _digest(_query_rows(Engine.load(tmp_path / "snapshot.idx").queries()))
    registry.store.set_setting("snapshot", json.dumps(note))
    registry.close()
    again = Registry(tmp_path)
    assert again.startup == {"from": "snapshot", "replayed": 0, "removed": 0, "failed": 0, "queries": 6}
    again.close()
    store = QueryStore(tmp_path)
    note["queries"] = "0" * 64  # not these queries
    store.set_setting("snapshot", json.dumps(note))
    store.close()
    last = Registry(tmp_path)
    assert last.startup["from"] == "rebuilt" and len(last.engine) == 6
    last.close()
