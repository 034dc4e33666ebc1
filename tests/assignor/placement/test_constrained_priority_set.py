"""ConstrainedPrioritySet: the lazy steps equal Kafka's plain steps, answer for answer.

The reference below is Kafka's class done literally (a JDK-exact ``PriorityQueue`` plus a set,
every pop and re-offer). The set under test logs instead and answers from the keys while the
queue is provably in heap order; after every step both must give the same answer and the same
array (``layout``). Random sequences mix resets, polls, offers and key changes under the
queue, in the order task movement makes them (a polled client and a queued one change, then
both are re-offered) and in any order, with distinct, crowded (shared buckets, tree bins) and
random hashes. Exactness against Kafka itself is the high-availability conformance test.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor._java.hash_table import hash_set_order
from assignor._java.priority_queue import JavaPriorityQueue
from assignor.placement.constrained_priority_set import ConstrainedPrioritySet
from assignor.placement.kafka_poll import RankQueue, rank


class _Kafka:
    """Kafka's ``ConstrainedPrioritySet``, step for step, no shortcut."""

    def __init__(self, keys: list[Any], spread_hashes: list[int]) -> None:
        self.heap = JavaPriorityQueue(keys)
        self.present: set[int] = set()
        self.spread = spread_hashes

    def offer(self, client: int) -> None:
        if client in self.present:
            self.heap.remove(client)
        else:
            self.present.add(client)
        self.heap.offer(client)

    def poll(self, valid: Callable[[int], bool]) -> int | None:
        skipped: list[int] = []
        found = None
        while self.heap.queue:
            client = self.heap.poll()
            assert client is not None
            self.present.discard(client)
            if valid(client):
                found = client
                break
            skipped.append(client)
        for i in hash_set_order([self.spread[c] for c in skipped], skipped):
            self.offer(skipped[i])
        return found


def _queued(keys: list[Any], spread_hashes: list[int], order: Iterable[int]
            ) -> tuple[ConstrainedPrioritySet, _Kafka, list[int]]:
    """Ours and Kafka's queue over the same keys, each client of ``order`` offered to both;
    the list is where a test notes the clients whose keys it changed."""
    touched: list[int] = []
    lazy = ConstrainedPrioritySet(keys, spread_hashes, touched)
    kafka = _Kafka(keys, spread_hashes)
    for client in order:
        lazy.offer(client)
        kafka.offer(client)
    return lazy, kafka, touched


def _hashes(n: int, kind: str, rng: random.Random) -> list[int]:
    if kind == "distinct":
        return list(range(n))
    if kind == "crowded":
        return [256 * rng.randrange(n) + rng.choice([0, 0, 0, 1]) for _ in range(n)]
    return [rng.randrange(-(2**31), 2**31) for _ in range(n)]


_ops = st.lists(
    st.tuples(
        st.sampled_from(["load", "none", "offer", "poll", "pick", "move"]),
        st.integers(0, 79),
        st.integers(0, 6),
    ),
    max_size=80,
)


@given(
    st.integers(1, 80),
    st.sampled_from(["distinct", "crowded", "random"]),
    _ops,
    st.randoms(use_true_random=False),
)
def test_lazy_steps_equal_kafkas_steps(
    n: int, kind: str, ops: list[tuple[str, int, int]], rng: random.Random
) -> None:
    spread_hashes = _hashes(n, kind, rng)
    keys: list[Any] = [(float(rng.randrange(4)), c) for c in range(n)]
    lazy, kafka, touched = _queued(keys, spread_hashes, range(n))

    def set_load(client: int, load: float) -> None:
        keys[client] = (load, client)
        touched.append(client)

    for op, client, value in ops:
        client %= n
        if op == "load":  # a load changes under the queue, with no re-offer
            set_load(client, float(value))
        elif op == "none":
            lazy.poll_none_valid()
            assert kafka.poll(lambda c: False) is None
        elif op == "offer":
            lazy.offer(client)
            kafka.offer(client)
        elif op == "poll":
            assert lazy.poll(lambda c, v=value: c % 7 == v) == kafka.poll(
                lambda c, v=value: c % 7 == v
            )
        else:  # task movement: poll a caught-up client, move a task, re-offer both
            caught = [c for c in range(n) if (c * 31 + value) % 5 == 0]
            if op == "pick":
                found = lazy.poll(set(caught).__contains__, caught)
            else:
                found = lazy.poll(lambda c, v=value: (c * 31 + v) % 5 == 0)
            assert found == kafka.poll(lambda c, v=value: (c * 31 + v) % 5 == 0)
            if found is not None and found != client:
                set_load(found, keys[found][0] + 1.0)
                set_load(client, keys[client][0] - rng.choice([0.0, 1.0]))
                for c in (found, client):
                    lazy.offer(c)
                    kafka.offer(c)
        assert lazy.layout() == list(kafka.heap)


def test_movement_pattern_stays_lazy_and_exact() -> None:
    """Resets, polls and re-offers as in a rebalance where a member left: answers equal
    Kafka's, and the lazy set never rebuilds the queue (the layout is checked at the end)."""
    rng = random.Random(7)
    n = 40
    keys: list[Any] = [(float(rng.randrange(20)), c) for c in range(n)]
    spread_hashes = list(range(n))
    lazy, kafka, touched = _queued(keys, spread_hashes, range(n))
    for _ in range(300):
        lazy.poll_none_valid()
        kafka.poll(lambda c: False)
        caught = rng.sample(range(n), 3)
        source = lazy.poll(set(caught).__contains__, caught)
        assert source == kafka.poll(set(caught).__contains__)
        assert source is not None
        destination = rng.choice([c for c in range(n) if c != source])
        keys[source] = (keys[source][0] + 1.0, source)
        keys[destination] = (keys[destination][0] - 1.0, destination)
        touched.extend((source, destination))
        for c in (source, destination):
            lazy.offer(c)
            kafka.offer(c)
        assert lazy._log is not None  # never rebuilt: the point of the lazy steps
    assert lazy.layout() == list(kafka.heap)


def test_standby_movement_pattern_with_a_queued_source_equals_kafka() -> None:
    """Standby movement after a reset: the most caught-up client takes a standby while still
    queued (it was never polled), the destination gives one away, both are re-offered (the
    source's removal compares the others, the destination's changed key among them). Small
    groups with spread loads, large ones with crowded loads: every answer and every layout
    equals Kafka's, whether the lazy set keeps going or replays."""
    cases = [(n, loads, seed) for seed, (n, loads) in enumerate([(4, 2), (6, 3), (9, 3)] * 12)]
    for n, spread_loads, seed in [(9, 30, 1), (40, 2, 3), (120, 2, 4), *cases]:
        rng = random.Random(seed)
        keys: list[Any] = [(float(100 + rng.randrange(spread_loads)), c) for c in range(n)]
        spread_hashes = _hashes(n, "crowded" if seed % 2 else "random", rng)
        lazy, kafka, touched = _queued(keys, spread_hashes, range(n))
        for _ in range(200):
            lazy.poll_none_valid()
            assert kafka.poll(lambda c: False) is None
            source, destination = rng.sample(range(n), 2)
            keys[source] = (keys[source][0] + 1.0, source)
            fall = rng.choice([0.0, 1.0, 2.0])
            keys[destination] = (keys[destination][0] - fall, destination)
            touched.extend((source, destination))
            for c in (source, destination):
                lazy.offer(c)
                kafka.offer(c)
            caught = rng.sample(range(n), 2)
            found = lazy.poll(set(caught).__contains__, caught)
            assert found == kafka.poll(set(caught).__contains__)
            if found is not None:
                lazy.offer(found)
                kafka.offer(found)
            assert lazy.layout() == list(kafka.heap)


def test_reoffers_after_a_reset_equal_kafka_in_many_small_queues() -> None:
    """Many small queues right after a reset, each given one task movement's re-offers
    (a queued or a polled source, a destination whose load fell by 0-2) and a poll: the
    cases where a third client's load lies between the destination's old and new load, and
    the queue may really lose heap order, are common here; layouts must equal Kafka's."""
    rng = random.Random(11)
    for _ in range(5000):
        n = rng.randint(3, 9)
        keys: list[Any] = [(float(rng.randrange(5)), c) for c in range(n)]
        spread_hashes = [16 * c for c in range(n)]  # one bucket: refills follow pop order
        lazy, kafka, touched = _queued(keys, spread_hashes, rng.sample(range(n), n))
        lazy.poll_none_valid()
        kafka.poll(lambda c: False)
        source, destination = rng.sample(range(n), 2)
        if rng.random() < 0.5:
            assert lazy.poll({source}.__contains__, [source]) == kafka.poll({source}.__contains__)
        keys[source] = (keys[source][0] + rng.choice([-1.0, 1.0, 2.0]), source)
        keys[destination] = (keys[destination][0] - rng.choice([0.0, 1.0, 2.0]), destination)
        touched.extend((source, destination))
        for c in (source, destination):
            lazy.offer(c)
            kafka.offer(c)
        lazy.poll_none_valid()
        kafka.poll(lambda c: False)
        assert lazy.layout() == list(kafka.heap)


def test_a_source_landing_between_the_destinations_loads_keeps_the_queue_lazy() -> None:
    """Active movement: the polled source's new key falls between the queued destination's
    new and old keys, and no other client's key lies between: re-offering the source, then
    the destination, leaves the queue in heap order, so the set keeps answering from keys
    (no replay) and still answers as Kafka does."""
    keys: list[Any] = [(float(load), c) for c, load in enumerate((0, 10, 11, 20, 30))]
    spread_hashes = [0, 16, 32, 48, 64]  # one bucket while the set is small: pop order counts
    lazy, kafka, touched = _queued(keys, spread_hashes, range(5))
    lazy.poll_none_valid()
    assert kafka.poll(lambda c: False) is None
    assert lazy.poll({1}.__contains__, [1]) == kafka.poll({1}.__contains__) == 1
    keys[1], keys[2] = (11.0, 1), (10.0, 2)  # source 10 -> 11, destination (11, 2) -> (10, 2)
    touched.extend((1, 2))
    for c in (1, 2):
        lazy.offer(c)
        kafka.offer(c)
    assert lazy._log is not None and lazy._ordered
    assert lazy.poll({1, 2, 3}.__contains__, [1, 2, 3]) == kafka.poll({1, 2, 3}.__contains__)
    assert lazy.layout() == list(kafka.heap)


def test_polls_after_loads_changed_under_the_queue_follow_the_array() -> None:
    """Without a reset in between, a client that gave a task away (its load fell while queued)
    and one re-offered before it can leave the array out of heap order; Kafka's next poll then
    answers by the array, and so must ours (the case a plain sorted set gets wrong)."""
    rng = random.Random(11)
    disordered = 0
    for n in (5, 9, 17, 40):
        keys: list[Any] = [(float(rng.randrange(2 * n)), c) for c in range(n)]
        spread_hashes = _hashes(n, "random", rng)
        lazy, kafka, touched = _queued(keys, spread_hashes, range(n))
        for _ in range(400):
            if rng.random() < 0.3:
                lazy.poll_none_valid()
                kafka.poll(lambda c: False)
            caught = rng.sample(range(n), min(n, 3))
            source = lazy.poll(set(caught).__contains__, caught)
            assert source == kafka.poll(set(caught).__contains__)
            assert source is not None
            destination = rng.choice([c for c in range(n) if c != source] or [source])
            keys[source] = (keys[source][0] + 1.0, source)
            keys[destination] = (keys[destination][0] - 1.0, destination)
            touched.extend((source, destination))
            for c in (source, destination):
                lazy.offer(c)
                kafka.offer(c)
            disordered += not kafka.heap.is_heap_ordered()
            assert lazy.layout() == list(kafka.heap)
    assert disordered > 0  # the case this test is about did occur


def test_a_poll_of_a_disordered_queue_answers_as_kafka_not_by_the_minimum() -> None:
    """Reset, poll a source, the source takes a task and a queued client gives one away, both
    re-offered (source first), then a poll: where Kafka's array is out of order its answer is
    not the lightest qualifying client, and ours must still be Kafka's."""
    not_the_minimum = 0
    for seed in range(3000):
        rng = random.Random(seed)
        n = rng.randint(3, 12)
        keys: list[Any] = [(float(rng.randrange(6)), c) for c in range(n)]
        spread_hashes = list(range(n))
        lazy, kafka, touched = _queued(keys, spread_hashes, range(n))
        lazy.poll_none_valid()
        kafka.poll(lambda c: False)
        source = lazy.poll(lambda c: True)
        assert source is not None and source == kafka.poll(lambda c: True)
        destination = rng.choice([c for c in range(n) if c != source])
        keys[source] = (keys[source][0] + 1.0, source)
        keys[destination] = (keys[destination][0] - 1.0, destination)
        touched.extend((source, destination))
        for c in (source, destination):
            lazy.offer(c)
            kafka.offer(c)
        caught = rng.sample(range(n), rng.randint(1, n))
        answer = kafka.poll(set(caught).__contains__)
        assert lazy.poll(set(caught).__contains__, caught) == answer
        not_the_minimum += answer != min(caught, key=keys.__getitem__)
        assert lazy.layout() == list(kafka.heap)
    assert not_the_minimum > 0


def test_large_queues_polled_in_c_equal_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    """Queues of 48 clients and more, the standby movement's steady pattern (a poll that finds
    a client, the found client takes a task, a queued one gives one away, both re-offered)
    mixed with loads changing under the queue, plain offers and resets: the real queue's
    polls with ``heapq`` on an ordered array (and without the order check while no queued key
    changed) answer and lay out the array as Kafka's steps do, and both cases they are for
    occur (order known without a check, and a queue out of order popped by Java's steps)."""
    seen = {"known": 0, "disordered": 0}
    real_poll = RankQueue.poll

    def counted(self: RankQueue, *args: Any, **kwargs: Any) -> int | None:
        seen["known"] += self.ordered and not self.changed
        seen["disordered"] += not self.is_heap_ordered()
        return real_poll(self, *args, **kwargs)

    monkeypatch.setattr(RankQueue, "poll", counted)
    for seed in range(12):
        rng = random.Random(seed)
        n = rng.choice([48, 60, 100, 257])
        keys: list[Any] = [(float(100 + rng.randrange(3)), c) for c in range(n)]
        spread_hashes = _hashes(n, ["distinct", "crowded", "random"][seed % 3], rng)
        lazy, kafka, touched = _queued(keys, spread_hashes, rng.sample(range(n), n))
        for _ in range(300):
            roll = rng.random()
            if roll < 0.05:
                lazy.poll_none_valid()
                assert kafka.poll(lambda c: False) is None
            elif roll < 0.12:  # a load changes under the queue
                c = rng.randrange(n)
                keys[c] = (keys[c][0] + rng.choice([-1.0, 1.0]), c)
                touched.append(c)
            elif roll < 0.17:
                c = rng.randrange(n)
                lazy.offer(c)
                kafka.offer(c)
            else:
                caught = rng.sample(range(n), 2)
                if roll < 0.3:
                    found = lazy.poll(set(caught).__contains__)
                else:
                    found = lazy.poll(set(caught).__contains__, caught)
                assert found == kafka.poll(set(caught).__contains__)
                if found is None:
                    continue
                destination = rng.choice([c for c in range(n) if c != found])
                keys[found] = (keys[found][0] + 1.0, found)
                keys[destination] = (keys[destination][0] - 1.0, destination)
                touched.extend((found, destination))
                for c in (found, destination):
                    lazy.offer(c)
                    kafka.offer(c)
            assert lazy.layout() == list(kafka.heap)
    assert seen["known"] > 100 and seen["disordered"] > 0


def test_ranks_order_as_keys() -> None:
    """A rank orders as its (load, client) key, negative and zero loads included."""
    loads = [-2.5, -1.0, -0.0, 0.0, 1e-300, 0.5, 1.0, 2.0 / 3.0, 200.0, 1e300]
    keys = [(load, c) for load in loads for c in (0, 1, 7, 2**31)]
    for a in keys:
        for b in keys:
            assert (rank(a) < rank(b)) == (a < b)
            assert (rank(a) == rank(b)) == (a == b)
