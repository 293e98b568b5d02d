"""Star plans: branches answered by intersecting one variable's values, with no join.

Most registered branches are stars about one variable (``?s p1 o1 ; p2
?o2``): once complete, their solutions are the intersection of that
variable's values over the tuples that keep it (`rtf.matching.solutions`).
`star_plan` decides at registration whether a branch is one.

A star that projects its tuples' objects too (``SELECT ?x ?v WHERE { ?x a C ; p ?v
FILTER(?v > 3) }``) has, on a publication of one subject, the product of those
tuples' values for solutions: `projected_star` decides at registration whether a
branch is one, and its answer is made once per publication for all the branches
of one `ProjectedStar` (`rtf.matching.solutions`), as the stars on ?s are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from rtf.matching.structures import grown
from rtf.query.terms import is_variable

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


# ------------------------------------------------------------ projected stars


#: In a `ProjectedStar`'s columns: the star's own variable (the publication's subject).
SUBJECT = None


class ProjectedStar(NamedTuple):
    """A star about one subject that projects the objects of its tuples (issue 43): on a
    publication of one subject, its solutions are the product of those tuples' values.

    `names` are the projected variables in projection order; `columns` for each either
    `SUBJECT` or (shape, triple position, tested): a tested variable is one the branch's
    FILTERs compare, which the value index decides exactly.
    """

    names: tuple[str, ...]
    columns: tuple


def projected_star(rb: RegisteredBranch, tested: frozenset, exact: bool) -> ProjectedStar | None:
    """The branch's `ProjectedStar`, or None unless it is one: every tuple about one subject
    variable, constant predicates, every object variable bound once (no join but on the subject), nothing projected
    but those, and its residual decided exactly by the value index (`exact`)."""
    branch = rb.branch
    if branch.residual and not exact:
        return None
    subject = branch.tuples[0].subject
    if not is_variable(subject):
        return None
    where: dict[str, tuple] = {}
    for shape, t in zip(rb.shapes, branch.tuples):
        if t.subject != subject or is_variable(t.terms[1]):
            return None  # (a variable predicate pairs with its object: the general path)
        term = t.terms[2]
        if is_variable(term):
            if term.name in where or term.name == subject.name:
                return None
            where[term.name] = (shape, 2, term.name in tested)
    columns = []
    for name in rb.projection:
        if name == subject.name:
            columns.append(SUBJECT)
        elif name in where:
            columns.append(where[name])
        else:
            return None  # (a projected variable the star does not bind: the general path)
    return ProjectedStar(rb.projection, tuple(columns))


#: A star's columns past this one share its bit in `ProjectedStars.tested` (a conservative
#: test: a shared bit may only send a star to the slower paths).
LAST_COLUMN_BIT = 62


def column_bits(flags) -> int:
    """The bits of the columns whose flag is true (column i: bit i, at most `LAST_COLUMN_BIT`)."""
    bits = 0
    for i, flag in enumerate(flags):
        if flag:
            bits |= 1 << min(i, LAST_COLUMN_BIT)
    return bits


class ProjectedStars:
    """The distinct `ProjectedStar` s of the registered branches, by a small code each,
    counted so that a code goes when its last branch does (its shapes with it).

    Stars that differ only in which of their columns are tested have one *product*
    (``product[code]``, a small code too; ``products[p]``: its names and columns, each
    `SUBJECT` or (shape, position)): on a publication it is one answer for all of them,
    made once (`rtf.matching.projected_answers.answers_by_code`), each code's `tested`
    bits saying which columns must have one value for it to be that answer. Made at
    registration, so a restored table (which registers these branches again) has them.
    """

    def __init__(self) -> None:
        self.by_code: dict[int, ProjectedStar] = {}
        self._codes: dict[tuple, int] = {}
        self._count: dict[int, int] = {}
        self._next = 0
        #: code -> its product's code, and the bits of its tested columns (`column_bits`)
        self.product = np.full(64, -1, dtype=np.int32)
        self.tested = np.zeros(64, dtype=np.int64)
        #: product code -> (names, columns)
        self.products: dict[int, tuple] = {}
        self._product_codes: dict[tuple, int] = {}
        self._product_count: dict[int, int] = {}
        self._free_products: list[int] = []

    @staticmethod
    def _key(star: ProjectedStar) -> tuple:
        return (star.names, tuple(c if c is SUBJECT else (id(c[0]), c[1], c[2]) for c in star.columns))

    @staticmethod
    def _product_key(star: ProjectedStar) -> tuple:
        return (star.names, tuple(c if c is SUBJECT else (id(c[0]), c[1]) for c in star.columns))

    def code(self, star: ProjectedStar) -> int:
        key = self._key(star)
        code = self._codes.get(key)
        if code is None:
            code = self._codes[key] = self._next
            self._next += 1
            self.by_code[code] = star
            self._count[code] = 0
            if code >= len(self.product):
                self.product = grown(self.product, code + 1, -1)
                self.tested = grown(self.tested, code + 1, 0)
            self.product[code] = self._product(star)
            self.tested[code] = column_bits(c is not SUBJECT and c[2] for c in star.columns)
        self._count[code] += 1
        return code

    def _product(self, star: ProjectedStar) -> int:
        key = self._product_key(star)
        found = self._product_codes.get(key)
        if found is None:
            free = self._free_products
            found = self._product_codes[key] = free.pop() if free else len(self.products)
            self.products[found] = (star.names, tuple(c if c is SUBJECT else c[:2] for c in star.columns))
            self._product_count[found] = 0
        self._product_count[found] += 1
        return found

    def __setstate__(self, state: dict) -> None:
        # The keys hold the shapes' id()s, which an unpickled copy's shapes do not have:
        # made again from the stars themselves (else a removal after a pickle fails).
        self.__dict__.update(state)
        self._codes = {self._key(star): code for code, star in self.by_code.items()}
        self._product_codes = {self._product_key(self.by_code[code]): int(self.product[code])
                               for code in self.by_code}

    def release(self, code: int) -> None:
        self._count[code] -= 1
        if not self._count[code]:
            star = self.by_code.pop(code)
            del self._count[code], self._codes[self._key(star)]
            product = int(self.product[code])
            self.product[code] = -1
            self._product_count[product] -= 1
            if not self._product_count[product]:
                del self._product_count[product], self.products[product]
                del self._product_codes[self._product_key(star)]
                self._free_products.append(product)

