"""``python -m rtf.cli``: the ``rtf`` command."""

import sys

from rtf.cli import main

sys.exit(main())
