"""A version-3 query as a person reads it: its algebra as an indented tree (``rtf check``).

>>> from rtf.parser import parse_query
>>> print("\\n".join(algebra_lines(parse_query("ASK { ?s <http://x/p> ?o MINUS { ?s <http://x/q> ?o } }").algebra.pattern)))
Minus
  BGP
    ?s <http://x/p> ?o
  BGP
    ?s <http://x/q> ?o
"""

from __future__ import annotations

def algebra_lines(pattern, indent: str = "") -> list[str]:
    """`pattern` as lines, each operator above its operands, indented by two spaces."""
    inner = indent + "  "
    kind = type(pattern).__name__  # (by name: rtf.algebra.model calls this module)
    if kind == "BGP":
        if not pattern.triples:
            return [f"{indent}the empty group (one solution that binds nothing)"]
        return [f"{indent}BGP"] + [f"{inner}{t}" for t in pattern.triples]
    if kind == "PathPattern":
        return [f"{indent}path {pattern.subject} {pattern.path} {pattern.object}"]
    if kind in ("Join", "Union", "Minus"):
        return ([f"{indent}{kind}"] + algebra_lines(pattern.left, inner)
                + algebra_lines(pattern.right, inner))
    if kind == "LeftJoin":
        cond = f" (condition {pattern.expr})" if pattern.expr is not None else ""
        return ([f"{indent}LeftJoin (OPTIONAL){cond}"] + algebra_lines(pattern.left, inner)
                + algebra_lines(pattern.right, inner))
    if kind == "Filter":
        return [f"{indent}Filter {pattern.expr}"] + algebra_lines(pattern.pattern, inner)
    if kind == "Extend":
        return [f"{indent}Extend ?{pattern.var} := {pattern.expr}"] + algebra_lines(pattern.pattern, inner)
    if kind == "Values":
        return [f"{indent}Values {' '.join('?' + v for v in pattern.vars)} ({len(pattern.rows)} rows)"]
    if kind == "Group":
        keys = ", ".join(str(e) + (f" AS ?{v}" if v else "") for e, v in pattern.keys) or "(one group)"
        lines = [f"{indent}Group by {keys}"]
        lines += [f"{inner}?{v} := {a}" for v, a in pattern.aggregates]
        return lines + algebra_lines(pattern.pattern, inner)
    if kind == "OrderBy":
        conds = ", ".join(("DESC(" + str(e) + ")") if d else str(e) for e, d in pattern.conditions)
        return [f"{indent}OrderBy {conds}"] + algebra_lines(pattern.pattern, inner)
    if kind == "Project":
        return ([f"{indent}Project {' '.join('?' + v for v in pattern.vars) or '(nothing)'}"]
                + algebra_lines(pattern.pattern, inner))
    if kind in ("Distinct", "Reduced"):
        return [f"{indent}{kind}"] + algebra_lines(pattern.pattern, inner)
    if kind == "Slice":
        return ([f"{indent}Slice offset {pattern.start}, limit {pattern.length}"]
                + algebra_lines(pattern.pattern, inner))
    return [f"{indent}{pattern}"]
