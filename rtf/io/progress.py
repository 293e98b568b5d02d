"""Progress bars on long reads and registrations: on a terminal only, with a total where it is known."""

from __future__ import annotations

import sys
from collections.abc import Iterable


def progress(iterable: Iterable, desc: str, total: int | None = None, unit: str = "it") -> Iterable:
    """A tqdm progress bar on stderr when stderr is a terminal; the iterable otherwise."""
    if not sys.stderr.isatty():
        return iterable
    from tqdm import tqdm
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    return tqdm(iterable, desc=desc, total=total, unit=unit, file=sys.stderr, leave=False)
