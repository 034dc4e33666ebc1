"""Many rebalances, replayed through the coordinator shim and measured (not built yet)."""
