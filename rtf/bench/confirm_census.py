"""What confirming version-3 queries costs: candidates, matches and time, per publication.

An index finds a version-3 query by the triple patterns it requires
(`rtf.algebra.presearch`); every query so found is a *candidate*, whose
algebra is then evaluated on the publication (`rtf.matching.confirm`). The
cost of version 3 follows the candidates, so the bench counts them, next to
the matches they give and the time their evaluation takes. `ConfirmCensus`
watches `Confirmation.answers` (where every engine confirms) while it is
active; it adds a few microseconds a publication (a count and a clock
reading per call, not per candidate).

>>> from rtf.engine import Engine
>>> engine = Engine("rtfs")
>>> engine.register("SELECT ?s { ?s <http://ex/p> ?o } GROUP BY ?s HAVING (COUNT(*) > 1)", "q")
'q'
>>> x, y = ("<http://ex/a>", "<http://ex/p>", '"x"'), ("<http://ex/a>", "<http://ex/p>", '"y"')
>>> with ConfirmCensus() as census:
...     _ = engine.match([x])     # a candidate that does not match
...     _ = engine.match([x, y])  # a candidate that matches
...     _ = engine.match([("<http://ex/a>", "<http://ex/q>", '"x"')])  # not a candidate
>>> census.candidates, census.matches
(2, 1)
"""

from __future__ import annotations

import time

from rtf.matching.confirm import Confirmation


class ConfirmCensus:
    """While active (a context manager): `candidates` confirmed, `matches` among them and
    `seconds` spent confirming them, over all publications matched."""

    def __init__(self) -> None:
        self.candidates = 0
        self.matches = 0
        self.seconds = 0.0
        self._original = None

    def __enter__(self) -> "ConfirmCensus":
        original = self._original = Confirmation.answers
        census = self

        def answers(confirmation, candidates, limit, out, truncated):
            candidates = list(candidates)
            before = len(out)  # (a query is confirmed once: its answer is a new key)
            t = time.perf_counter()
            try:
                return original(confirmation, candidates, limit, out, truncated)
            finally:
                census.seconds += time.perf_counter() - t
                census.candidates += len(candidates)
                census.matches += len(out) - before

        Confirmation.answers = answers
        return self

    def __exit__(self, *exc) -> None:
        Confirmation.answers = self._original
