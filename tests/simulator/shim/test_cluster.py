"""``make_cluster``: partition p of every topic is led by broker ``p % brokers``, with the next
``replication - 1`` brokers as followers, all in sync (the rows share one replica list per
broker; what aiokafka keeps must be what a list per partition gave)."""

from __future__ import annotations

import pytest
from aiokafka.structs import TopicPartition

from simulator.shim import make_cluster


@pytest.mark.parametrize(("brokers", "replication"), [(1, 1), (3, 2), (4, 4), (2, 9), (5, 0)])
def test_every_partition_is_placed_as_documented(brokers: int, replication: int) -> None:
    racks = [f"r{b % 2}" if b % 3 else None for b in range(brokers)]
    topics = {"a": 7, "b": 1, "c": 0}
    cluster = make_cluster(topics, brokers=brokers, racks=racks, replication=replication)
    copies = max(1, min(replication, brokers))
    for topic, count in topics.items():
        assert cluster.partitions_for_topic(topic) == set(range(count))
        for p in range(count):
            meta = cluster._partitions[topic][p]
            replicas = [(p + r) % brokers for r in range(copies)]
            assert (meta.leader, meta.replicas, meta.isr, meta.error) == (
                replicas[0], replicas, replicas, 0)
            assert cluster.leader_for_partition(TopicPartition(topic, p)) == replicas[0]
            assert TopicPartition(topic, p) in cluster.partitions_for_broker(replicas[0])
    assert sorted((b.nodeId, b.rack) for b in cluster.brokers()) == list(
        enumerate(racks))


def test_a_shape_built_again_equals_the_first_in_order_and_is_its_own() -> None:
    """The second cluster of a shape is copied from the kept build: it must hold what
    ``update_metadata`` would give, iterate in the same order, and share no container."""
    topics = {"x": 300, "y": 5, "z": 0}
    racks = ["r0", "r1", None]
    first = make_cluster(topics, brokers=3, racks=racks, replication=2)
    second = make_cluster(topics, brokers=3, racks=racks, replication=2)
    assert second is not first
    assert list(second._partitions.items()) == list(first._partitions.items())
    assert [list(p) for p in second._partitions.values()] == [
        list(p) for p in first._partitions.values()]
    assert list(second._broker_partitions) == list(first._broker_partitions)
    for broker, led in first._broker_partitions.items():
        # same members in the same iteration order: the refill repeats the full build's adds
        # in their order (a refill in the set's own iteration order differed under some seeds)
        assert list(second._broker_partitions[broker]) == list(led)
    assert sorted(second.brokers()) == sorted(first.brokers())
    assert second.controller == first.controller
    assert second.topics() == first.topics()
    assert second.internal_topics == first.internal_topics == set()
    second._partitions["x"].pop(0)
    second._broker_partitions[0].clear()
    assert 0 in first._partitions["x"] and first._broker_partitions[0]
    third = make_cluster(topics, brokers=3, racks=racks, replication=2)
    assert 0 in third._partitions["x"] and third._broker_partitions[0]
    other = make_cluster({"x": 300, "y": 6}, brokers=3, racks=racks, replication=2)
    assert other.partitions_for_topic("y") == set(range(6))
