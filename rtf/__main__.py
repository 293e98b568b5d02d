"""``python -m rtf``: the ``rtf`` command (`rtf.cli.main`)."""

import sys

from rtf.cli import main

sys.exit(main())
