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
