"""SubsetOrders: the once-computed bucket shortcut equals the general hash-set order.

``hash_set_order`` is checked against the JDK (tests/conformance/test_java_collections.py);
here every subset order the shortcut gives must equal it, for families whose buckets stay
small and for crowded ones (where the shortcut must step aside for subsets past eight keys).
"""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from assignor._java.hash_table import SubsetOrders, hash_set_order


@given(
    st.integers(1, 300),
    st.sampled_from(["random", "crowded", "one_bucket"]),
    st.randoms(use_true_random=False),
)
def test_subset_orders_equal_hash_set_order(n: int, kind: str, rng: random.Random) -> None:
    if kind == "random":
        spread_hashes = [rng.randrange(-(2**31), 2**31) for _ in range(n)]
    elif kind == "crowded":
        spread_hashes = [1024 * rng.randrange(4) + rng.randrange(3) for _ in range(n)]
    else:
        spread_hashes = [4096 * i for i in range(n)]
    orders = SubsetOrders(spread_hashes)
    for _ in range(5):
        subset = rng.sample(range(n), rng.randint(0, n))
        expected = [subset[i] for i in hash_set_order([spread_hashes[e] for e in subset], subset)]
        assert orders.order(subset) == expected
