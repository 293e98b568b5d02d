"""Star plans: branches answered by intersecting one variable's values, with no join.

Most registered branches are stars about one variable (``?s p1 o1 ; p2
?o2``): once complete, their solutions are the intersection of that
variable's values over the tuples that keep it (`rtf.matching.solutions`).
`star_plan` decides at registration whether a branch is one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from rtf.matching.query_table import RegisteredBranch, TupleShape


class StarPlan(NamedTuple):
    """A branch answered by intersecting one variable's values across its tuples.

    `var` is that variable (None when no tuple keeps a column: the branch
    only asks whether it matches); `projected` says whether `var` is in the
    projection; `on_subject` that `var` is every keeping tuple's subject.
    Plans are shared between branches (a handful of distinct ones exist):
    the (shape, position) columns to intersect are read off the branch's
    own `keep` when needed (`star_columns`).
    """

    var: str | None
    projected: bool
    on_subject: bool


#: The distinct plans by their fields (a handful: (variable, projected, on the subject)).
_PLANS: dict[tuple, StarPlan] = {}


def star_columns(rb: RegisteredBranch) -> list[tuple[TupleShape, int]]:
    """The distinct (shape, triple position) pairs of a star branch's variable."""
    columns = []
    for shape, keep in zip(rb.shapes, rb.keep):
        if keep:
            column = (shape, shape.row_positions[keep[0]])
            if column not in columns:
                columns.append(column)
    return columns


def star_plan(rb: RegisteredBranch, tested: frozenset = frozenset()) -> StarPlan | None:
    """The branch's `StarPlan`, or None when it needs a real join.

    With `tested` (the variables of a residual that the value index decides
    exactly, `rtf.matching.value_tests.exact_star`), those variables and the
    residual are left out: the plan answers the branch once it is complete.
    """
    if rb.branch.residual and not tested:
        return None
    var = None
    on_subject = True  # every tuple's first column of the star variable is its subject
    for shape, keep, names in zip(rb.shapes, rb.keep, rb.keep_names):
        if tested:
            kept = [(k, n) for k, n in zip(keep, names) if n not in tested]
            keep, names = [k for k, _ in kept], [n for _, n in kept]
        if not names:
            continue
        if var is None:
            var = names[0]
        for name in names:
            if name != var:
                return None
        if on_subject and shape.row_positions[keep[0]] != 0:
            on_subject = False
    key = (var, var in rb.projection, on_subject)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = StarPlan(*key)
    return plan
