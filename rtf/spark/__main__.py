"""``python -m rtf.spark stream|replay|queries-log ...``: the commands of ``rtf spark``."""

import sys

from rtf.spark.commands import main

sys.exit(main())
