"""Paper cuts of the command line (issue 26, item 5): --index with --stats, the list of
filter functions in errors, `rtf check -f` in line order, one position for a .rq error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rtf.cli import main
from rtf.errors import UnsupportedQueryError
from rtf.parser import grammar_text, parse_query
from rtf.parser.diagnose import FILTER_FUNCTIONS
from rtf.query.functions import FUNCTION_ARITY, XSD_CASTS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_match_with_an_index_and_stats(tmp_path, capsys):
    index = tmp_path / "q.idx"
    assert run(capsys, "index", "build", "--queries", EXAMPLES / "news_queries.jsonl",
               "--output", index)[0] == 0
    code, out, err = run(capsys, "match", "--index", index, "--publications", EXAMPLES / "news.nt", "--stats")
    assert code == 0, err
    stats = json.loads(err.strip().splitlines()[-1])
    assert stats["skipped_queries"] == 0 and stats["queries"] == 3
    assert stats["matches"] == len(out.splitlines()) > 0


# ------------------------------------------------------------ the functions an error lists

def _unknown_function_message() -> str:
    with pytest.raises(UnsupportedQueryError) as e:
        parse_query("ASK { ?s ?p ?o FILTER(frobnicate(?o)) }")
    return e.value.message


def test_the_unknown_function_error_lists_every_function_the_language_has():
    listed = re.search(r"the functions are (.*)\)$", _unknown_function_message()).group(1)
    names = {n.lower() for n in re.split(r", | and ", listed)}
    grammar = re.search(r"BUILTIN_NAME: /\(\?i:([^)]*)\)", grammar_text()).group(1).split("|")
    assert set(grammar) <= names and set(FUNCTION_ARITY) <= names
    assert {"xsd:" + iri.rpartition("#")[2].lower() for iri in XSD_CASTS} <= names
    assert {"ftcontains", "regex", "langmatches"} <= names
    assert names == {n.lower() for n in FILTER_FUNCTIONS}


_AGGREGATES = {"count", "sum", "min", "max", "avg", "sample", "group_concat"}


@pytest.mark.parametrize("name", FILTER_FUNCTIONS)
def test_every_listed_function_can_be_called(name):
    from rtf.query.functions import FUNCTION_ARITIES
    arity = FUNCTION_ARITY.get(name) or FUNCTION_ARITIES.get(name, (1,))[0]
    args = {"ftcontains": '?o, "a"', "regex": '?o, "a"', "langmatches": 'lang(?o), "en"',
            "exists": ""}.get(name, ", ".join(["?o"] * arity))
    call = "EXISTS { ?o ?p ?s }" if name == "exists" else f"{name}({args})"
    if name in _AGGREGATES:
        parse_query(f"SELECT ({call} AS ?a) {{ ?s ?p ?o }}")
    else:
        parse_query(f"PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> "
                    f"ASK {{ ?s ?p ?o FILTER(bound(?o) && {call}) }}")


# ------------------------------------------------------------ rtf check -f

def test_check_file_reports_in_line_order(tmp_path, capsys):
    path = tmp_path / "q.jsonl"
    lines = [
        {"id": "a", "query": 'ASK { ?s ?p ?o FILTER ftcontains(?never, "a") }'},   # warning
        "not json",                                                                  # bad JSON
        {"id": "b", "query": "ASK {"},                                               # bad query
        {"id": "c", "query": 'ASK { ?s ?p ?o FILTER ftcontains(?nope, "a") }'},    # warning
        {"id": "a", "query": "ASK { ?s ?p ?o }"},                                    # duplicate id
        "[1]",                                                                       # not an object
    ]
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    code, out, err = run(capsys, "check", "-f", path)
    assert code == 1
    reported = [int(m.group(1)) for m in re.finditer(rf"^{re.escape(str(path))}:(\d+):", err, re.M)]
    assert reported == [1, 2, 3, 4, 5, 6]
    assert "2 warning(s)" in out and "4 invalid" in out


# ------------------------------------------------------------ a .rq file's error

def test_a_rq_error_names_one_position(tmp_path, capsys):
    rq = tmp_path / "bad.rq"
    rq.write_text("SELECT ?s\nWHERE {\n  ?s ?p ?o .\n  FILTER(frobnicate(?o)) }\n")
    code, _, err = run(capsys, "match", "--queries", rq, "--publications", EXAMPLES / "news.nt")
    assert code == 1
    assert f"{rq}:4:10: query 'bad': unsupported construct: function frobnicate" in err
    assert "line 4" not in err and f"{rq}:1:" not in err


def test_a_jsonl_error_keeps_file_line_and_query_position(tmp_path, capsys):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "x", "query": "ASK { ?s ?p ?o FILTER(frobnicate(?o)) }"}) + "\n")
    code, _, err = run(capsys, "match", "--queries", path, "--publications", EXAMPLES / "news.nt")
    assert code == 1 and f"{path}:1: query 'x': line 1, column 23: unsupported" in err
