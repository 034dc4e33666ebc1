"""Steps 2-3 of a rebalance: the topology, repartition sizing, copartitioning, tasks."""
