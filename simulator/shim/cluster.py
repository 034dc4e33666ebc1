"""A real aiokafka ``ClusterMetadata`` filled from a topic -> partition-count map.

Assignors read ``cluster.partitions_for_topic`` (and, for rack awareness, ``brokers()`` and the
private ``_partitions``), so the shim hands them aiokafka's own class, fed through the same
``update_metadata`` path a MetadataResponse takes, rather than a look-alike.

A sweep replays the same cluster shape many times in one process (a bench run replays a cold
start of 1,280 partitions again and again), and ``update_metadata`` builds two namedtuples and
a set entry per partition: 1.6 ms of a 400-member cold start's shim. So the first cluster of a
shape is built that way and kept; the next one of that shape gets fresh containers holding the
same immutable entries, in the same order (see :func:`_copy`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from aiokafka.cluster import ClusterMetadata
from aiokafka.protocol.metadata import MetadataResponse_v1
from aiokafka.structs import PartitionMetadata, TopicPartition

#: the key of a cluster's shape: topics with their counts in order, brokers' rows, replication
_Shape = tuple[tuple[tuple[str, int], ...], tuple[tuple[int, str, int, str | None], ...], int]
#: what ``update_metadata`` made of a shape: each topic's partition entries in order, and each
#: broker's led partitions in the order ``update_metadata`` added them to its set (topic by
#: topic, partition by partition), not the set's iteration order
_Built = tuple[dict[str, dict[int, PartitionMetadata]], dict[int, tuple[TopicPartition, ...]]]
#: shapes kept (the oldest goes first): a sweep's jobs use a few dozen shapes at most, and one
#: cold start's shape is some 1,280 entries
_KEEP = 32
_built: dict[_Shape, _Built] = {}


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
    shape = (tuple(topics.items()), tuple(broker_rows), replication)
    built = _built.get(shape)
    if built is not None:
        return _copy(broker_rows, built)
    topic_rows = []
    for topic, count in topics.items():
        partitions = [(0, p, *placements[p % brokers], placements[p % brokers][1])
                      for p in range(count)]
        topic_rows.append((0, topic, False, partitions))
    cluster = ClusterMetadata()
    cluster.update_metadata(MetadataResponse_v1(broker_rows, 0, topic_rows))
    if len(_built) >= _KEEP:
        del _built[next(iter(_built))]
    # the entries are immutable namedtuples (the replica lists in them nothing changes, see
    # above); the containers are the cluster's own and are copied for each later cluster
    _built[shape] = (
        {topic: dict(entries) for topic, entries in cluster._partitions.items()},
        _led_in_insertion_order(cluster),
    )
    return cluster


def _led_in_insertion_order(cluster: ClusterMetadata) -> dict[int, tuple[TopicPartition, ...]]:
    """Each broker's led partitions in the order ``update_metadata`` added them. A set's
    table depends on the order its items went in (a collision puts the later one elsewhere),
    so a refill in the set's own iteration order can iterate differently under some hash seeds;
    the same adds in the same order rebuild the very same table."""
    led: dict[int, list[TopicPartition]] = {broker: [] for broker in cluster._broker_partitions}
    for topic, entries in cluster._partitions.items():
        for partition, entry in entries.items():
            if entry.leader in led:
                led[entry.leader].append(TopicPartition(topic, partition))
    return {broker: tuple(tps) for broker, tps in led.items()}


def _copy(broker_rows: list[tuple[int, str, int, str | None]], built: _Built) -> ClusterMetadata:
    """A cluster equal to the one ``update_metadata`` built for this shape: the brokers' rows go
    through ``update_metadata`` itself (so the controller, the refresh times and every other
    field it sets are set by aiokafka), then the topic-level containers are filled with the kept
    entries. A set filled from a sequence adds its items one by one, and the kept sequence is
    the order of the full build's adds, so each broker's set gets the same table, and iterates
    in the same order, as the one built partition by partition.
    No topic is internal, unauthorized or in error here, as in the full build."""
    cluster = ClusterMetadata()
    cluster.update_metadata(MetadataResponse_v1(broker_rows, 0, []))
    partitions, led = built
    cluster._partitions = {topic: dict(entries) for topic, entries in partitions.items()}
    cluster._broker_partitions = defaultdict(
        set, {broker: set(tps) for broker, tps in led.items()})
    return cluster
