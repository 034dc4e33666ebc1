"""``python -m assignor``: see :mod:`assignor.cli.main`."""

from __future__ import annotations

import sys

from assignor.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
