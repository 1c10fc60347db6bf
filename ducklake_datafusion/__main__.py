"""``python -m ducklake_datafusion``: the command-line tool (see ``cli``)."""

import sys

from .cli import main

sys.exit(main())
