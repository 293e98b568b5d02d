"""Value types for the command line's options, each with a one-line error.

>>> positive_int("3"), between(0, 1, "a probability")("0.25")
(3, 0.25)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def positive_int(text: str) -> int:
    """An integer of at least 1 (counts, sizes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def between(low: float, high: float, what: str) -> Callable[[str], float]:
    """A type for a number from `low` to `high`, named `what` in its errors."""
    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} is from {low:g} to {high:g}, got {text!r}")
        return value
    number.__name__ = what.split()[-1]  # argparse names the type in its own errors
    return number
