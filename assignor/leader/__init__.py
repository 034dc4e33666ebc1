"""The group leader's side of a rebalance: decode, compose the pipeline's steps, encode, explain."""
