#!/usr/bin/env python
"""``rtf spark queries-log`` as a file, for checkouts (rtf/spark/queries_log_command.py)."""

import functools
import sys

from rtf.spark.queries_log_command import build_parser  # noqa: F401 (tests and readers find it here)
from rtf.spark.queries_log_command import main as _main

main = functools.partial(_main, prog="queries_log.py")

if __name__ == "__main__":
    sys.exit(main())
