"""``python -m assignor``: see :mod:`assignor.cli`."""

from __future__ import annotations

import sys

from assignor.cli import main

if __name__ == "__main__":
    sys.exit(main())
