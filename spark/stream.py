#!/usr/bin/env python
"""``rtf spark stream`` as a file, for spark-submit and checkouts (rtf/spark/stream_command.py)."""

import functools
import sys

from rtf.spark.stream_command import build_parser  # noqa: F401 (tests and readers find it here)
from rtf.spark.stream_command import main as _main

main = functools.partial(_main, prog="stream.py")

if __name__ == "__main__":
    sys.exit(main())
