"""A real aiokafka ``ClusterMetadata`` filled from a topic -> partition-count map.

Assignors read ``cluster.partitions_for_topic`` (and, for rack awareness, ``brokers()`` and the
private ``_partitions``), so the shim hands them aiokafka's own class, fed through the same
``update_metadata`` path a MetadataResponse takes, rather than a look-alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aiokafka.cluster import ClusterMetadata
from aiokafka.protocol.metadata import MetadataResponse_v1


def make_cluster(
    topics: Mapping[str, int],
    *,
    brokers: int = 1,
    racks: Sequence[str | None] | None = None,
    replication: int = 1,
) -> ClusterMetadata:
    """Cluster metadata with ``topics`` (name -> partition count) spread over ``brokers``.

    Partition ``p`` of every topic is led by broker ``p % brokers`` with the next
    ``replication - 1`` brokers as followers; ``racks[i]`` is broker ``i``'s rack.
    """
    if brokers < 1:
        raise ValueError("a cluster needs at least one broker")
    racks = list(racks) if racks is not None else [None] * brokers
    if len(racks) != brokers:
        raise ValueError(f"{len(racks)} racks given for {brokers} brokers")
    replication = max(1, min(replication, brokers))
    broker_rows = [(node, "127.0.0.1", 9092 + node, racks[node]) for node in range(brokers)]
    # partition p's replica list depends only on p % brokers: one list per broker, shared by
    # its partitions (as each partition's replicas and isr already were); aiokafka keeps them
    # as given and nothing changes them. A cold start's 1,280 partitions built one each.
    placements = [(replicas[0], replicas) for replicas in (
        [(b + r) % brokers for r in range(replication)] for b in range(brokers))]
    topic_rows = []
    for topic, count in topics.items():
        partitions = [(0, p, *placements[p % brokers], placements[p % brokers][1])
                      for p in range(count)]
        topic_rows.append((0, topic, False, partitions))
    cluster = ClusterMetadata()
    cluster.update_metadata(MetadataResponse_v1(broker_rows, 0, topic_rows))
    return cluster
