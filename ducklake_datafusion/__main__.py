"""``python -m ducklake_datafusion``: the command-line tool (see ``cli``)."""

import sys

from .provider.cli import main

sys.exit(main())
