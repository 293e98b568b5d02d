#!/usr/bin/env python
"""``rtf spark replay`` as a file, for spark-submit and checkouts (rtf/spark/replay_command.py)."""

import functools
import sys

from rtf.spark.replay_command import build_parser  # noqa: F401 (tests and readers find it here)
from rtf.spark.replay_command import main as _main

main = functools.partial(_main, prog="dbpedia_eval")

if __name__ == "__main__":
    sys.exit(main())
