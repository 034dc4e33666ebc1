"""The tasks and the cluster metadata a scenario's partition counts make.

Internal topics are sized as ``ensure_internal_topics`` would. If the counts cannot be sized (a
copartitioned topic grew alone) the cluster gets the new counts and the old internal topics, and
the task layout stays: the leader meets the problem itself, as Kafka's would.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiokafka.cluster import ClusterMetadata

from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout, plan_tasks
from simulator.shim import make_cluster

#: The last sized layout: the topology and partition counts it was planned for, the layout and
#: the topic counts of its cluster. A bench or a Spark worker replays one shape again and again,
#: and sizing and planning 1,280 partitions was 0.35 ms of a 400-member cold start's engine time
#: (the layout is frozen and nothing of a replay writes into its maps, so replays can share it).
#: The key holds each subtopology's ``source_topic_order`` too: sizing reads it, and the
#: topology's equality leaves it out.
_KEPT: list[tuple[tuple[Topology, tuple[tuple[str, ...], ...], tuple[tuple[str, int], ...]],
                  TaskLayout, dict[str, int]]] = []


def cluster_layout(
    topology: Topology,
    partitions: Mapping[str, int],
    previous: TaskLayout | None,
    *,
    scenario: str,
) -> tuple[TaskLayout, ClusterMetadata, str]:
    """The task layout, the cluster, and why the counts could not be sized ("" if they could).

    ``ValueError`` if they cannot be sized and there is no ``previous`` layout to keep."""
    key = (topology, tuple(sub.source_topic_order for sub in topology.subtopologies),
           tuple(partitions.items()))
    if _KEPT and _KEPT[0][0] == key:
        return _KEPT[0][1], make_cluster(dict(_KEPT[0][2])), ""
    sizing = size_internal_topics(topology, partitions)
    if not isinstance(sizing, InternalTopics):
        if previous is None:
            raise ValueError(f"scenario {scenario}: {sizing.message}")
        problem = f"partitions {partitions} cannot be sized: {sizing.message}"
        topics = {tp.topic: 0 for tps in previous.tasks.values() for tp in tps}
        for tps in previous.tasks.values():
            for tp in tps:
                topics[tp.topic] = max(topics[tp.topic], tp.partition + 1)
        topics.update(partitions)
        topics.update(previous.changelog_counts)
        return previous, make_cluster(topics), problem
    layout = plan_tasks(topology, sizing.source_partitions)
    topics = dict(sizing.source_partitions)
    topics.update(layout.changelog_counts)
    _KEPT[:] = [(key, layout, dict(topics))]
    return layout, make_cluster(topics), ""


__all__ = ["cluster_layout"]
