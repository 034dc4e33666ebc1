"""The Spark sweep: thousands of scenarios replayed in executors, Parquet out, a report.

``python -m simulator.spark sweep ...`` and ``python -m simulator.spark report DIR`` (see
:mod:`simulator.spark.cli`). Only the modules of this package import pyspark, and
``simulator/__init__`` never imports this package, so the engine works without Spark installed.
"""
