"""Property paths over a publication (SPARQL 1.1, sections 9 and 18.5, "Property Path Patterns").

A path pattern ``X path Y`` is evaluated as the (start, end) pairs the path
connects, with X and Y each a term, a bound variable (a constant then) or a
free variable. The operators keep SPARQL's multiplicities: a predicate is its
triples, a sequence ``p/q`` a join through a middle node (one pair per
middle), an alternative ``p|q`` the union of both; ``p*``, ``p+`` and ``p?``
are sets (section 18.5's ALP: each node reached once), and a zero-length
path connects a term to itself, even a constant that is not in the graph.
"""

from __future__ import annotations

from rtf.algebra.graph import Graph
from rtf.algebra.model import (
    Alternative,
    Inverse,
    Link,
    NegatedSet,
    OneOrMore,
    PathPattern,
    Sequence,
    ZeroOrMore,
    ZeroOrOne,
)
from rtf.query.terms import is_variable

Pair = tuple[str, str]


def path_solutions(pattern: PathPattern, graph: Graph, bound: dict) -> list[dict]:
    """The solutions of a path pattern, extending `bound`."""
    s_name, s_key = _end(pattern.subject, bound)
    o_name, o_key = _end(pattern.object, bound)
    out = []
    for start, end in pairs(pattern.path, graph, s_key, o_key):
        if s_name is not None and s_name == o_name and start != end:
            continue
        solution = dict(bound)
        if s_name is not None:
            solution[s_name] = start
        if o_name is not None:
            solution[o_name] = end
        out.append(solution)
    return out


def _end(term, bound: dict) -> tuple[str | None, str | None]:
    """(name of a free variable, or None; the key of a fixed end, or None)."""
    if is_variable(term):
        key = bound.get(term.name)
        return (None, key) if key is not None else (term.name, None)
    try:
        return None, term.key
    except (ValueError, AttributeError):
        return None, "\0"  # not a valid term: connected to nothing


def pairs(path, graph: Graph, start: str | None, end: str | None) -> list[Pair]:
    """The (start, end) pairs `path` connects, with each end fixed where given."""
    kind = type(path)
    if kind is Link:
        return [(t[0], t[2]) for t in graph.match(start, path.iri, end)]
    if kind is Inverse:
        return [(a, b) for b, a in pairs(path.path, graph, end, start)]
    if kind is Sequence:
        return _sequence(path.parts, graph, start, end)
    if kind is Alternative:
        out: list[Pair] = []
        for part in path.parts:
            out += pairs(part, graph, start, end)
        return out
    if kind is NegatedSet:
        return _negated(path, graph, start, end)
    if kind is ZeroOrOne:
        found = dict.fromkeys(pairs(path.path, graph, start, end))
        for node in _zero_length(graph, start, end):
            found.setdefault((node, node))
        return list(found)
    if kind in (ZeroOrMore, OneOrMore):
        return _closure(path.path, graph, start, end, kind is ZeroOrMore)
    raise TypeError(f"not a path: {path!r}")


def _sequence(parts, graph: Graph, start, end) -> list[Pair]:
    first, rest = parts[0], parts[1:]
    if not rest:
        return pairs(first, graph, start, end)
    if start is None and end is not None:
        # Evaluate from the fixed end: the inverse of the reversed sequence.
        reversed_path = Sequence(tuple(Inverse(p) for p in reversed(parts)))
        return [(a, b) for b, a in _sequence(reversed_path.parts, graph, end, None)]
    out: list[Pair] = []
    steps: dict[str, list[Pair]] = {}
    for a, middle in pairs(first, graph, start, None):
        following = steps.get(middle)
        if following is None:
            following = steps[middle] = _sequence(rest, graph, middle, end)
        out += [(a, b) for _, b in following]
    return out


def _negated(path: NegatedSet, graph: Graph, start, end) -> list[Pair]:
    out: list[Pair] = []
    forward = set(path.forward)
    if path.forward or not path.backward:
        out += [(t[0], t[2]) for t in graph.match(start, None, end) if t[1] not in forward]
    if path.backward:
        backward = set(path.backward)
        out += [(t[2], t[0]) for t in graph.match(end, None, start) if t[1] not in backward]
    return out


def _zero_length(graph: Graph, start, end) -> list[str]:
    """The nodes a zero-length path connects to themselves under these ends."""
    if start is not None:
        return [start] if end is None or end == start else []
    if end is not None:
        return [end]
    return graph.nodes()


def _reach(path, graph: Graph, node: str, forward: bool, zero: bool) -> list[str]:
    """The nodes reached from `node` by one or more steps of `path` (and `node`
    itself with `zero`), each once, in the order found (breadth first)."""
    seen = dict.fromkeys([node]) if zero else {}
    frontier = [node]
    while frontier:
        following = []
        for n in frontier:
            steps = pairs(path, graph, n, None) if forward else pairs(path, graph, None, n)
            for a, b in steps:
                reached = b if forward else a
                if reached not in seen:
                    seen[reached] = None
                    following.append(reached)
        frontier = following
    return list(seen)


def _closure(path, graph: Graph, start, end, zero: bool) -> list[Pair]:
    if start is not None:
        reached = _reach(path, graph, start, True, zero)
        return [(start, b) for b in reached if end is None or b == end]
    if end is not None:
        return [(a, end) for a in _reach(path, graph, end, False, zero)]
    out: list[Pair] = []
    starts = graph.nodes() if zero else dict.fromkeys(a for a, _ in pairs(path, graph, None, None))
    for node in starts:
        out += [(node, b) for b in _reach(path, graph, node, True, zero)]
    return out
