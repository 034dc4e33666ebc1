"""ConstrainedPrioritySet: the shortcuts equal Kafka's plain steps.

``poll_none_valid`` must leave the queue exactly as ``poll`` with a constraint nobody meets
(Kafka's only way): checked on random loads, random offers and crowded hash buckets (tree bins
in the set of passed-over clients). Exactness against Kafka itself is the high-availability
conformance test.
"""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from assignor.placement.constrained_priority_set import ConstrainedPrioritySet


def _pair(
    n: int, loads: list[int], spread_hashes: list[int]
) -> tuple[list[tuple[float, int]], ConstrainedPrioritySet, ConstrainedPrioritySet]:
    keys = [(float(loads[c]), c) for c in range(n)]
    return keys, ConstrainedPrioritySet(keys, spread_hashes), ConstrainedPrioritySet(
        keys, spread_hashes
    )


_ops = st.lists(
    st.tuples(
        st.sampled_from(["load", "none", "offer", "poll"]), st.integers(0, 79), st.integers(0, 6)
    ),
    max_size=60,
)


@given(
    st.integers(1, 80),
    st.sampled_from(["distinct", "crowded", "random"]),
    _ops,
    st.randoms(use_true_random=False),
)
def test_poll_none_valid_equals_a_poll_nobody_passes(
    n: int, kind: str, ops: list[tuple[str, int, int]], rng: random.Random
) -> None:
    if kind == "distinct":
        spread_hashes = list(range(n))
    elif kind == "crowded":
        spread_hashes = [256 * rng.randrange(n) + rng.choice([0, 0, 0, 1]) for _ in range(n)]
    else:
        spread_hashes = [rng.randrange(-(2**31), 2**31) for _ in range(n)]
    keys, fast, plain = _pair(n, [rng.randrange(4) for _ in range(n)], spread_hashes)
    for client in range(n):
        fast.offer(client)
        plain.offer(client)
    for op, client, value in ops:
        client %= n
        if op == "load":
            keys[client] = (float(value), client)  # loads change under the queue
        elif op == "none":
            fast.poll_none_valid()
            assert plain.poll(lambda c: False) is None
        elif op == "offer":
            fast.offer(client)
            plain.offer(client)
        else:
            assert fast.poll(lambda c, v=value: c % 7 == v) == plain.poll(
                lambda c, v=value: c % 7 == v
            )
        assert list(fast._heap) == list(plain._heap)


def test_repeated_poll_none_valid_is_stable_and_sees_new_loads() -> None:
    keys = [(float(c % 3), c) for c in range(20)]
    cps = ConstrainedPrioritySet(keys, [7 * c for c in range(20)])
    cps.offer_all(list(range(20)))
    cps.poll_none_valid()
    first = list(cps._heap)
    cps.poll_none_valid()
    assert list(cps._heap) == first
    keys[first[0]] = (9.0, first[0])
    reference = ConstrainedPrioritySet(keys, [7 * c for c in range(20)])
    reference._heap.refill(first)
    reference._present = set(range(20))
    assert reference.poll(lambda c: False) is None
    cps.poll_none_valid()
    assert list(cps._heap) == list(reference._heap)
