"""What confirming version-3 queries costs: candidates, matches and time, per publication.

An index finds a version-3 query by the triple patterns it requires
(`rtf.algebra.presearch`); every query so found is a *candidate*, whose
algebra is then evaluated on the publication (`rtf.matching.confirm`). The
cost of version 3 follows the candidates, so the bench counts them, next to
the matches they give and the time their evaluation takes. `ConfirmCensus`
watches `Confirmation.answers` (where every engine confirms) while it is
active, and counts per query, so the workload's kinds can be told apart.

>>> from rtf.engine import Engine
>>> engine = Engine("rtfs")
>>> engine.register("SELECT ?s { ?s <http://ex/p> ?o } GROUP BY ?s HAVING (COUNT(*) > 1)", "q")
'q'
>>> x, y = ("<http://ex/a>", "<http://ex/p>", '"x"'), ("<http://ex/a>", "<http://ex/p>", '"y"')
>>> with ConfirmCensus() as census:
...     _ = engine.match([x])     # a candidate that does not match
...     _ = engine.match([x, y])  # a candidate that matches
...     _ = engine.match([("<http://ex/a>", "<http://ex/q>", '"x"')])  # not a candidate
>>> census.candidates, census.matches, dict(census.per_query)
(2, 1, {'q': [2, 1]})
"""

from __future__ import annotations

import time
from collections import defaultdict

from rtf.matching.confirm import Confirmation


class ConfirmCensus:
    """While active (a context manager): `candidates` confirmed, `matches` among them,
    `seconds` spent confirming, and `per_query`: id -> [candidate times, matches]."""

    def __init__(self) -> None:
        self.candidates = 0
        self.matches = 0
        self.seconds = 0.0
        self.per_query: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self._original = None

    def __enter__(self) -> "ConfirmCensus":
        original = self._original = Confirmation.answers
        census = self

        def answers(confirmation, candidates, limit, out, truncated):
            candidates = list(candidates)
            before = set(out)
            t = time.perf_counter()
            try:
                return original(confirmation, candidates, limit, out, truncated)
            finally:
                census.seconds += time.perf_counter() - t
                census.candidates += len(candidates)
                for qid, _ in candidates:
                    census.per_query[qid][0] += 1
                for qid in out.keys() - before:
                    census.per_query[qid][1] += 1
                    census.matches += 1

        Confirmation.answers = answers
        return self

    def __exit__(self, *exc) -> None:
        Confirmation.answers = self._original
