"""Many rebalances, replayed through the coordinator shim in virtual time, and measured.

``simulator.scenarios`` (a scenario as data, in a file), ``simulator.families`` (seeded
generators), ``simulator.replay`` (one scenario through the shim with the real assignor objects),
``simulator.state`` (local state per process), ``simulator.metrics`` (rows, invariants) and
``python -m simulator``. Importing this package imports nothing heavy (never pyspark).
"""
