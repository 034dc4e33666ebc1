"""RankQueue against the plain JDK emulation, in the one sequence its order tracking must see.

Task movement's step: a queued client's load falls in place (the destination gives a task
away), another client is offered (the source), then the first is re-offered. If the offer's
climb compared the changed client, the array may be out of heap order even after the re-offer
mends the changed client itself, and the next poll must then not pop with ``heapq`` without a
check. The random cases below must produce such arrays (checked); RankQueue must never claim
order where there is none, and must equal Java's steps (``JavaPriorityQueue``, checked against
the JDK in the conformance suite) op by op.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from assignor._java.hash_table import SubsetOrders
from assignor._java.priority_queue import JavaPriorityQueue
from assignor.placement.kafka_poll import RankQueue, rank


def heap_offer(heap: JavaPriorityQueue, present: set[int], client: int) -> None:
    """Kafka's ``offer`` on the plain JDK emulation: a client already queued is removed first."""
    if client in present:
        heap.remove(client)
    else:
        present.add(client)
    heap.offer(client)


def heap_poll(
    heap: JavaPriorityQueue, present: set[int], valid: Callable[[int], bool], orders: SubsetOrders
) -> int | None:
    """Kafka's ``poll``, every step: pop until a client passes, re-offer the passed-over ones
    from a new ``HashSet``."""
    skipped: list[int] = []
    found: int | None = None
    while heap.queue:
        client = heap.poll()
        assert client is not None
        present.discard(client)
        if valid(client):
            found = client
            break
        skipped.append(client)
    for client in orders.order(skipped):
        heap_offer(heap, present, client)
    return found


def test_an_offer_that_climbs_past_a_changed_client_is_not_trusted() -> None:
    disordered = 0
    for seed in range(4000):
        rng = random.Random(seed)
        n = rng.randint(4, 40)
        keys: list[Any] = [(float(rng.randrange(6)), c) for c in range(n)]
        ranks = [rank(k) for k in keys]
        java = JavaPriorityQueue(keys)
        ours = RankQueue(ranks)
        present: set[int] = set()
        orders = SubsetOrders([0] * n)
        queued = rng.sample(range(n), rng.randint(3, n - 1))
        for c in queued:
            java.offer(c)
            ours.offer(c, present)
        assert java.poll() == ours.poll(present, lambda c: True, orders)  # order now known
        changed = rng.choice(sorted(present))
        keys[changed] = (keys[changed][0] - rng.choice([1.0, 2.0]), changed)
        ours.rekey(changed, rank(keys[changed]), True)
        source = rng.choice([c for c in range(n) if c not in present])
        keys[source] = (keys[source][0] + rng.choice([0.0, 1.0]), source)
        ours.rekey(source, rank(keys[source]), False)
        for c in (source, changed):
            if c in present:
                java.remove(c)
            java.offer(c)
            ours.offer(c, present)
            assert list(ours) == list(java)
        if ours.ordered and not ours.changed:  # order claimed without a check: it must hold
            assert java.is_heap_ordered(), f"seed {seed}: order claimed, array out of order"
        disordered += not java.is_heap_ordered()
        while java.queue:
            assert ours.poll(present, lambda c: True, orders) == java.poll()
            assert list(ours) == list(java)
    assert disordered > 0


def test_polls_that_read_the_passed_over_clients_off_the_sorted_ranks_equal_javas_steps() -> None:
    """Random moves (a poll, loads changed in place, re-offers), polled with and without the
    candidates: each answer and the array after it equal the JDK emulation's, and the sorted
    copy of the queued ranks stays the queue's ranks in order."""
    for seed in range(600):
        rng = random.Random(seed)
        n = rng.randint(2, 40)
        keys: list[Any] = [(rng.randrange(8) / 2, c) for c in range(n)]
        ranks = [rank(k) for k in keys]
        java = JavaPriorityQueue(keys)
        java_present: set[int] = set()
        ours = RankQueue(ranks)
        present: set[int] = set()
        orders = SubsetOrders([rng.randrange(-(2**31), 2**31) for _ in range(n)])
        for c in range(n):
            heap_offer(java, java_present, c)
            ours.offer(c, present)
        for _ in range(12):
            candidates = rng.sample(range(n), rng.randint(0, min(n, 3)))
            passing = set(rng.sample(candidates, rng.randint(0, len(candidates))))
            given = candidates if rng.random() < 0.5 else None
            found = ours.poll(present, passing.__contains__, orders, given)
            assert found == heap_poll(java, java_present, passing.__contains__, orders)
            assert list(ours) == list(java) and present == java_present
            assert ours.by_rank == sorted(ours.arr)
            moved = [c for c in (found, rng.randrange(n)) if c is not None]
            for c in moved:  # loads change in place, queued or not, then the re-offers
                keys[c] = (max(keys[c][0] + rng.choice([-0.5, 0.5]), 0.0), c)
                ours.rekey(c, rank(keys[c]), c in present)
            for c in moved:
                heap_offer(java, java_present, c)
                ours.offer(c, present)
                assert list(ours) == list(java)
                assert ours.by_rank == sorted(ours.arr)
