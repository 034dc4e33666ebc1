"""The sweep's report, rendered from the plain summary data Spark computed (no Spark here).

``render(summary, folder)`` writes, into ``folder``:

- ``index.html``: one page that opens from disk (no script, no network; its only references are
  the PNGs beside it): what was run, the headline comparison of assignors per family, violations
  and errors with their replay commands, the plots;
- PNG plots (matplotlib, Agg): distributions of task unavailability, restored records,
  rebalances until stable, movements per membership change and final balance per assignor and
  family, and ``assign()`` wall time against group size (log-log);
- ``summary.md`` and ``summary.json``: the same numbers, for people and for comparing two runs.

``violations.csv`` is written by the Spark side (it can be long), into the same folder.

The input is the dictionary :func:`simulator.spark.summary.summarize` returns; this package does
no aggregation of its own beyond picking rows out of it.
"""

from __future__ import annotations

from simulator.report.render import PLOTS, render

__all__ = ["PLOTS", "render"]
