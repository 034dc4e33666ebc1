"""``python -m simulator.spark``: see :mod:`simulator.spark.cli`."""

import sys

from simulator.spark.cli import main

sys.exit(main())
