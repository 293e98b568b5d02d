"""Running a W3C test (`rtf.bench.w3c`) against an rtf engine, or against pyoxigraph or rdflib.

An rtf engine runs a test as a subscriber would: a fresh ``Engine(algorithm)``
registers the query text (with its BASE), the test's data is one
publication (empty when the test has none), and ``engine.match`` answers:
no match is the empty result (false for ASK); a match's ``bindings`` are
the rows (in their order for an ``ORDER BY`` query), its ``triples`` the
constructed graph. pyoxigraph and rdflib answer the same query text over
the same data as anchors: pyoxigraph should pass nearly every test, and
when it does not the harness is the first suspect.

Each run ends in an `Outcome`: passed; failed (with the difference);
refused (the query was not registered: rtf's `QueryError`, or the
anchor's syntax error, with its message); error (anything else: a bug,
with the last lines of its traceback).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from functools import cache

import pyoxigraph as ox

from rtf.bench.w3c import Answer, W3CTest, as_row, by_value, compare, data_quads, expected_answer, results_answer
from rtf.engine import ALGORITHMS, Engine
from rtf.errors import QueryError, UnsupportedQueryError
from rtf.io.publication import Publication
from rtf.query.terms import rdflib_key

ENGINES: tuple[str, ...] = ALGORITHMS
ANCHORS = ("pyoxigraph", "rdflib")

PASSED, FAILED, REFUSED, ERROR = "passed", "failed", "refused", "error"
STATUSES = (PASSED, FAILED, REFUSED, ERROR)


@dataclass(frozen=True)
class Outcome:
    """How one run of one test ended."""

    status: str       #: passed, failed, refused or error
    reason: str = ""  #: short, and the same for like outcomes: the refused construct, the exception type
    detail: str = ""  #: the difference, the refusal's message, the traceback's last lines

    def __str__(self) -> str:
        return f"{self.status}: {self.reason}" + (f" -- {self.detail}" if self.detail else "")


class Refused(Exception):
    """The runner did not take the query: rtf's `QueryError`, an anchor's syntax error."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def run(test: W3CTest, runner: str) -> Outcome:
    """Run `test` on `runner` (one of `ENGINES` or `ANCHORS`) and compare its answer with the expected one."""
    if runner not in ENGINES + ANCHORS:
        raise ValueError(f"unknown runner {runner!r}; choose one of {', '.join(ENGINES + ANCHORS)}")
    expected = expected_answer(test)  # a harness error, not the runner's: raised
    try:
        actual = answer(test, runner)
    except Refused as refused:
        return Outcome(REFUSED, refused.reason, refused.detail)
    except Exception as e:  # noqa: BLE001 - a bug of the runner: recorded, the run goes on
        return _error(e)
    difference = compare(expected, actual, test.shape.ordered)
    if difference is None:
        return Outcome(PASSED)
    if compare(by_value(expected), by_value(actual), test.shape.ordered) is None:
        return Outcome(PASSED, "by value", "the same numbers, written otherwise (w3c.by_value)")
    return Outcome(FAILED, "wrong answer" + (f" (mf:requires {', '.join(test.requires)})" if test.requires else ""),
                   difference)


def answer(test: W3CTest, runner: str) -> Answer:
    """What `runner` answers to `test`'s query over its data (raises when the query is refused)."""
    if runner == "pyoxigraph":
        return _oxigraph_answer(test)
    if runner == "rdflib":
        return _rdflib_answer(test)
    return _rtf_answer(test, runner)


def _error(e: BaseException) -> Outcome:
    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {frames[-1].filename.rpartition('/')[2]}:{frames[-1].lineno}" if frames else ""
    message = str(e).splitlines()[0][:200] if str(e) else ""
    return Outcome(ERROR, type(e).__name__, f"{message}{where}")


@cache
def publication(test: W3CTest) -> Publication:
    """The test's default graph as one publication (shared by every engine: it is immutable)."""
    return Publication.from_oxigraph(test.id, data_quads(test))


def _rtf_answer(test: W3CTest, algorithm: str) -> Answer:
    engine = Engine(algorithm)
    try:
        engine.register(test.query_text(), "q")
    except QueryError as e:
        reason = (f"unsupported: {e.construct}" if isinstance(e, UnsupportedQueryError)
                  else f"{type(e).__name__}: {e.message.split(';')[0][:60]}")
        raise Refused(reason, str(e).splitlines()[0]) from None
    matches = engine.match(publication(test))
    match = matches[0] if matches else None
    if test.form == "ASK":
        return match is not None
    if test.form == "CONSTRUCT":
        return frozenset(match.triples) if match is not None else frozenset()
    if match is None:
        return []
    if match.truncated:
        raise RuntimeError(f"the solutions were cut at the engine's max_solutions ({engine.max_solutions})")
    return [as_row(b.items()) for b in match.bindings]


def _oxigraph_answer(test: W3CTest) -> Answer:
    store = ox.Store()
    store.extend(data_quads(test))
    try:
        results = store.query(test.query_text())
    except SyntaxError as e:
        raise Refused("syntax error", str(e).splitlines()[0]) from None
    return results_answer(results)


_RDFLIB_FORMATS = {".ttl": "turtle", ".nt": "nt", ".rdf": "xml"}


def _rdflib_answer(test: W3CTest) -> Answer:
    import rdflib
    from pyparsing import ParseException

    normalize = rdflib.NORMALIZE_LITERALS
    rdflib.NORMALIZE_LITERALS = False  # keep lexical forms as written ("01"^^xsd:integer), as rtf does
    try:
        graph = rdflib.Graph()
        for f in test.data_files:
            graph.parse(str(f), format=_RDFLIB_FORMATS[f.suffix], publicID=test.file_iri(f))
        try:
            result = graph.query(test.query_text())
        except ParseException as e:
            raise Refused("syntax error", str(e).splitlines()[0]) from None
        if result.type == "ASK":
            return bool(result.askAnswer)
        if result.type == "SELECT":
            # its bindings, not its rows: iterating skips the empty solution ({} of `SELECT * {}`)
            return [as_row((str(v), rdflib_key(t)) for v, t in b.items() if t is not None)
                    for b in result.bindings]
        return frozenset((rdflib_key(s), rdflib_key(p), rdflib_key(o)) for s, p, o in result.graph)
    finally:
        rdflib.NORMALIZE_LITERALS = normalize


def check(test: W3CTest, algorithm: str) -> Outcome:
    """Hold an rtf engine to `test` (see `W3CTest.check`): its answer, or its refusal of the query."""
    if test.check == "refusal":
        return _refusal(test, algorithm)
    return run(test, algorithm)


def _refusal(test: W3CTest, algorithm: str) -> Outcome:
    """Passed when the engine refuses the query and names one of its refused constructs."""
    named = ", ".join(sorted(test.refused_constructs))
    try:
        Engine(algorithm).register(test.query_text(), "q")
    except UnsupportedQueryError as e:
        if any(c in e.construct.upper() for c in test.refused_constructs):
            return Outcome(PASSED)
        return Outcome(FAILED, f"refused for {e.construct}, not {named}", str(e))
    except QueryError as e:
        return Outcome(FAILED, f"refused ({type(e).__name__}), not for {named}", str(e))
    except Exception as e:  # noqa: BLE001 - a bug: recorded, the run goes on
        return _error(e)
    return Outcome(FAILED, "registered", f"registered a query with {named}: it should be refused")


# --- the expectations file: the tests an engine is allowed not to pass ------------------------

def read_expectations(text: str) -> dict[tuple[str, str], str]:
    """(engine, test id) -> reason, from an expectations file's text.

    A line is ``<test id> [engine,engine]  # <reason>``; without engines it
    holds for every engine. Blank lines and ``#`` comments are skipped.
    """
    found = {}
    for number, line in enumerate(text.splitlines(), 1):
        body, _, reason = line.partition("#")
        fields = body.split()
        if not fields:
            continue
        if len(fields) > 2:
            raise ValueError(f"line {number}: expected '<test id> [engines]  # reason', got {line!r}")
        engines = fields[1].split(",") if len(fields) == 2 else list(ENGINES)
        unknown = set(engines) - set(ENGINES)
        if unknown:
            raise ValueError(f"line {number}: unknown engine {', '.join(sorted(unknown))}")
        for engine in engines:
            found[engine, fields[0]] = reason.strip()
    return found


def expectations_text(outcomes: dict[tuple[str, str], Outcome], header: str = "") -> str:
    """The expectations file for `outcomes` ((engine, test id) -> Outcome): every test some
    engine does not pass, grouped by the first such engine's outcome, largest group first."""
    failing: dict[str, list[str]] = {}
    for (engine, test_id), outcome in sorted(outcomes.items(), key=lambda o: ENGINES.index(o[0][0])):
        if outcome.status != PASSED:
            failing.setdefault(test_id, []).append(engine)
    groups: dict[str, list[str]] = {}
    for test_id, engines in failing.items():
        first = outcomes[engines[0], test_id]
        label = f"{first.status}: {first.reason}" if first.reason else first.status
        who = "" if set(engines) >= set(ENGINES) else " " + ",".join(e for e in ENGINES if e in engines)
        groups.setdefault(label, []).append(f"{test_id}{who}  # {label}")
    lines = [header.rstrip("\n")] if header else []
    for label, entries in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        lines += ["", f"## {label} ({len(entries)})", *sorted(entries)]
    return "\n".join(lines) + "\n"
