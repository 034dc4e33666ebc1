"""Copartition groups as Kafka 4.1.2 handles them: checked one by one when the topology is built,
merged (in its own order-dependent way) only when the leader assigns.

A copartition group is what a join declares: its source topics must have equal partition counts.
Kafka keeps the groups as declared (``InternalTopologyBuilder.copartitionSources``) and uses
them twice:

1. When the topology is built (``validateCopartition``), each declared group on its own: if
   *every* topic of the group is a repartition topic with an enforced count and the counts
   differ, the topology is invalid. Groups that merely share a topic are not merged here.
2. When the leader assigns (``copartitionGroups``), the declared groups are merged, but not
   into a true transitive closure: a group joins the set of the *first* of its topics (in its
   ``HashSet`` order) that already belongs to one, so a group bridging two earlier groups leaves
   two overlapping sets. The sets are then deduplicated through a ``HashSet`` of sets, whose
   order is the order the enforcer walks them in, and so decides which failure is reported.

:func:`kafka_copartition_groups` replays step 2 exactly, with Java's hash codes and table
layout (see :mod:`assignor.topology._java_order`); :func:`check_declared_groups` is step 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from assignor.topology._java_order import JavaHashSet, int32, string_hash
from assignor.topology.model import TopologyError

INVALID_TOPOLOGY = "Invalid topology: "


def java_map(counts: Mapping[str, Any]) -> str:
    """A sorted map printed as Java's ``TreeMap.toString`` does: ``{a=1, b=2}``."""
    return "{" + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)) + "}"


def raw_topic_name(application_id: str, topic: str) -> str:
    """The name Kafka's builder knows a repartition topic by before it adds the
    ``<application.id>-`` prefix; its build-time messages quote this short name."""
    prefix = f"{application_id}-"
    return topic[len(prefix) :] if topic.startswith(prefix) else topic


def check_declared_groups(
    application_id: str,
    groups: Iterable[Sequence[str]],
    repartition: Mapping[str, int | None],
) -> None:
    """Kafka's ``validateCopartition``: raise for the first declared group made only of
    repartition topics with enforced counts that do not all agree.

    A group with an external topic, or a repartition topic whose count the leader computes, is
    left to the assignment: only then are all its counts known.
    """
    for group in groups:
        counts = {t: repartition.get(t) for t in group}
        if any(c is None for c in counts.values()):
            continue
        if len(set(counts.values())) > 1:
            quoted = {raw_topic_name(application_id, t): c for t, c in counts.items()}
            raise TopologyError(
                f"{INVALID_TOPOLOGY}Following topics do not have the same number of partitions: "
                f"[{java_map(quoted)}]",
                group[0],
            )


class _Group:
    """One merged group: a Java ``HashSet<String>`` that compares by content, as Java's sets do.

    Ordering (only consulted if nine groups ever share a bucket of a 64-slot table, where Java
    itself breaks ties by identity hash) falls back to the sorted content.
    """

    __slots__ = ("topics",)

    def __init__(self) -> None:
        self.topics: JavaHashSet[str] = JavaHashSet(string_hash)

    def _content(self) -> frozenset[str]:
        return frozenset(self.topics)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Group) and self._content() == other._content()

    def __hash__(self) -> int:
        return hash(self._content())

    def __lt__(self, other: _Group) -> bool:
        return sorted(self.topics) < sorted(other.topics)

    def java_hash(self) -> int:
        """``AbstractSet.hashCode``: the sum of the members' hash codes."""
        return int32(sum(string_hash(t) for t in self.topics))


def _group_hash(group: _Group) -> int:
    return group.java_hash()


def declared_group_order(groups: Iterable[Sequence[str]]) -> list[list[str]]:
    """Each declared group in its ``HashSet`` order (Kafka collects a group's topics with
    ``Collectors.toSet``); the input order of a group's topics is the order they are added."""
    return [list(JavaHashSet(string_hash, group)) for group in groups]


def kafka_copartition_groups(groups: Iterable[Sequence[str]]) -> list[list[str]]:
    """Kafka's ``copartitionGroups()``: the merged groups, in the order the enforcer visits them,
    each listing its topics in its ``HashSet`` order.

    Replays: for each declared group (in declaration order), take the set of the first topic
    already placed, else a new set; add the group's topics to it and point them all at it. The
    distinct sets, in the order their topics were first placed, are copied into a ``HashSet``.
    """
    placed: dict[str, _Group] = {}  # a LinkedHashMap: re-pointing a topic keeps its position
    for topics in declared_group_order(groups):
        target = next((placed[t] for t in topics if t in placed), None)
        if target is None:
            target = _Group()
        for topic in topics:
            target.topics.add(topic)
        for topic in topics:
            placed[topic] = target
    unique = JavaHashSet.copy_of(_group_hash, placed.values())
    return [list(group.topics) for group in unique]


def source_node_group(
    nodes: Iterable[str], topics_of: Mapping[str, Sequence[str]]
) -> tuple[str, ...]:
    """The topics of a group declared by source node names, in the order Kafka adds them:
    the nodes as ``new HashSet<>(nodes)`` iterates them, each node's topics in its list order."""
    return tuple(t for node in JavaHashSet.copy_of(string_hash, nodes) for t in topics_of[node])


__all__ = [
    "INVALID_TOPOLOGY",
    "check_declared_groups",
    "declared_group_order",
    "java_map",
    "kafka_copartition_groups",
    "raw_topic_name",
    "source_node_group",
]
