"""Step 2 of the leader's pipeline: how many partitions each repartition topic gets.

A repartition topic has no partition count of its own until the leader gives it one: Kafka sizes
it like the busiest input of the subtopologies that write it, then lets joins (copartition
groups) override that, because a join's inputs must agree partition for partition. The rules,
the order they are applied in and the error messages are those of Kafka 4.1.2's
``RepartitionTopics`` and ``CopartitionedTopicsEnforcer``; the order matters because a count
computed early in a pass is already used by the topics sized after it, so it is replayed with
Java's hash table layout (proven against Kafka's own classes in
``tests/conformance/test_topology_sizing.py``).

Nothing here raises for a problem of the cluster or of the topology: :func:`size_internal_topics`
returns :class:`InternalTopics` or one of the failure values, each with the ``AssignorError``
code the pipeline sends to every member and a ``message`` for the leader's log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from assignor.topology._java_order import JavaHashSet, int32, string_hash
from assignor.topology.copartition import INVALID_TOPOLOGY as _INVALID
from assignor.topology.copartition import java_map, kafka_copartition_groups
from assignor.topology.model import Subtopology, Topology
from protocol.errors import AssignorError


@dataclass(frozen=True, slots=True)
class InternalTopics:
    """Sizing succeeded.

    ``repartition_partitions``: every repartition topic's count (create or check the topics
    with it). ``source_partitions``: the count of every source topic of the topology, external
    and repartition alike, which is what the partition grouper reads.
    """

    repartition_partitions: Mapping[str, int]
    source_partitions: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class MissingSourceTopics:
    """External source topics absent from the cluster metadata (Kafka's
    ``MissingSourceTopicException``): no task can be made until they exist."""

    code: ClassVar[AssignorError] = AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA
    topics: tuple[str, ...]
    by_subtopology: tuple[tuple[int, tuple[str, ...]], ...]

    @property
    def message(self) -> str:
        return f"Missing source topics. [{', '.join(self.topics)}]"


@dataclass(frozen=True, slots=True)
class RepartitionSizingFailed:
    """Some repartition topics could not be sized: nothing upstream of them has a known count
    (a cycle of repartition topics with no input topic and no enforced count).

    ``message`` is Kafka's, word for word; ``unsized_topics`` (which Kafka only logs) names the
    topics for whoever reads the leader's log.
    """

    code: ClassVar[AssignorError] = AssignorError.ASSIGNMENT_ERROR
    unsized_topics: tuple[str, ...]

    @property
    def message(self) -> str:
        return (
            "Failed to compute number of partitions for all repartition topics, make sure all "
            "user input topics are created and all Pattern subscriptions match at least one "
            "topic in the cluster"
        )


CopartitionProblem = Literal[
    "enforced_counts_differ", "external_counts_differ", "repartition_count_mismatch"
]


@dataclass(frozen=True, slots=True)
class CopartitionFailure:
    """A copartition group whose topics cannot be given one partition count.

    Kafka raises this as a ``TopologyException`` that escapes ``assign()`` and stops the leader;
    here it is a value with code ``ASSIGNMENT_ERROR`` so the pipeline can tell every member
    (and the log says why). ``group`` is the merged group as Kafka enforces it (see
    :func:`~assignor.topology.copartition.kafka_copartition_groups`), in its set order;
    ``topics`` holds the counts the message quotes.
    """

    code: ClassVar[AssignorError] = AssignorError.ASSIGNMENT_ERROR
    problem: CopartitionProblem
    group: tuple[str, ...]
    topics: tuple[tuple[str, int], ...]
    expected: int | None = None

    @property
    def message(self) -> str:
        counts = dict(self.topics)
        if self.problem == "enforced_counts_differ":
            return (
                f"{_INVALID}Following topics do not have the same number of partitions: "
                f"[{java_map(counts)}]"
            )
        if self.problem == "external_counts_differ":
            return f"{_INVALID}Topics not co-partitioned: [{java_map(counts)}]"
        ((topic, count),) = self.topics
        return (
            f"{_INVALID}Number of partitions [{count}] of repartition topic [{topic}] doesn't "
            f"match number of partitions [{self.expected}] of the source topic."
        )


SizingFailure = MissingSourceTopics | RepartitionSizingFailed | CopartitionFailure
SizingOutcome = InternalTopics | SizingFailure


def size_internal_topics(
    topology: Topology, partition_counts: Mapping[str, int], *, strict: bool = False
) -> SizingOutcome:
    """Give every repartition topic a partition count, then enforce copartition groups.

    ``partition_counts`` is the cluster metadata (topic -> partitions; a count below 1 counts
    as missing). Kafka checks copartition groups only when the topology has repartition topics;
    ``strict=True`` checks them always, so two external topics a join reads must agree too.
    """
    missing = _missing_source_topics(topology, partition_counts)
    if missing is not None:
        return missing
    enforced = topology.enforced_partitions
    counts: dict[str, int] = {t: n for t, n in enforced.items() if n is not None}
    sized = _fixed_point(topology, partition_counts, counts)
    if sized is not None:
        return sized
    if enforced or strict:
        for group in kafka_copartition_groups(topology.copartition_groups):
            failure = _enforce_group(tuple(group), enforced, counts, partition_counts)
            if failure is not None:
                return failure
    sources: dict[str, int] = {}
    for sub in topology.subtopologies:
        for topic in sub.source_topics:
            sources[topic] = counts[topic] if topic in enforced else partition_counts[topic]
    return InternalTopics(repartition_partitions=counts, source_partitions=sources)


def _missing_source_topics(
    topology: Topology, partition_counts: Mapping[str, int]
) -> MissingSourceTopics | None:
    enforced = topology.enforced_partitions
    by_sub = []
    for sub in topology.subtopologies:
        missing = tuple(
            t for t in sub.source_topics if t not in enforced and partition_counts.get(t, 0) < 1
        )
        if missing:
            by_sub.append((sub.id, missing))
    if not by_sub:
        return None
    topics = tuple(sorted({t for _, ts in by_sub for t in ts}))
    return MissingSourceTopics(topics=topics, by_subtopology=tuple(by_sub))


def _changelog_config_hash(topic: str) -> int:
    """``hashCode`` of the ``InternalTopicConfig`` Kafka makes for a key-value store's changelog:
    ``Objects.hash(name, topicConfigs, enforceNumberOfPartitions)`` with no log configs (an
    empty map hashes to 0) and ``false`` (``Boolean.hashCode`` = 1237)."""
    return int32(31 * (31 * (31 + string_hash(topic)) + 0) + 1237)


def topics_info_hash(sub: Subtopology) -> int:
    """``InternalTopologyBuilder.TopicsInfo.hashCode`` of ``sub``: the source topics' set hash in
    the high word, the changelog map's hash in the low one (sign-extended, as Java's ``long``
    cast does), reduced modulo ``0xFFFFFFFF`` with Java's signed remainder, then cut to an int."""
    sources = int32(sum(string_hash(t) for t in sub.source_topics))
    changelogs = int32(
        sum(string_hash(t) ^ _changelog_config_hash(t) for t in sub.changelog_topics)
    )
    packed = (sources << 32) | changelogs
    modulus = 0xFFFFFFFF
    remainder = abs(packed) % modulus
    return int32(remainder if packed >= 0 else -remainder)


def sizing_order(topology: Topology) -> list[tuple[int, list[str]]]:
    """The order Kafka visits repartition source topics in while sizing them.

    ``RepartitionTopics`` walks a ``HashSet`` of ``TopicsInfo`` (one per subtopology, added in
    id order) and, in each, the key set of a ``HashMap`` of its repartition source topics (added
    in the order the builder registers them). Returns (subtopology id, topics) pairs.
    """
    hashes = {sub.id: topics_info_hash(sub) for sub in topology.subtopologies}
    infos = JavaHashSet(hashes.__getitem__, (sub.id for sub in topology.subtopologies))
    repartition = topology.enforced_partitions
    order = []
    for sub_id in infos:
        sub = topology.subtopology(sub_id)
        topics = [t for t in sub.ordered_source_topics if t in repartition]
        order.append((sub_id, list(JavaHashSet(string_hash, topics))))
    return order


def _fixed_point(
    topology: Topology, partition_counts: Mapping[str, int], counts: dict[str, int]
) -> RepartitionSizingFailed | None:
    """Kafka's loop: each unsized repartition topic takes the largest count *known so far*
    among the source topics of the subtopologies writing it; repeat until all are sized or a
    pass makes no progress. ``counts`` is filled in place (it starts with the enforced counts).

    A count found early in a pass is used by the topics visited after it, so the visiting order
    (:func:`sizing_order`, Kafka's) decides results when repartition topics feed each other.
    """
    enforced = topology.enforced_partitions
    writers: dict[str, list[tuple[str, ...]]] = {}
    for sub in topology.subtopologies:
        for topic in sub.repartition_sink_topics:
            writers.setdefault(topic, []).append(sub.source_topics)
    order = sizing_order(topology)
    # Each pass that does not fail sizes at least one topic: at most len(enforced) + 1 passes.
    for _ in range(len(enforced) + 1):
        needed = progress = False
        for _sub_id, topics in order:
            for topic in topics:
                if topic in counts:
                    continue
                candidate: int | None = None
                for upstream_sources in writers.get(topic, ()):
                    for upstream in upstream_sources:
                        count = (
                            counts.get(upstream)
                            if upstream in enforced
                            else partition_counts[upstream]
                        )
                        if count is not None and (candidate is None or count > candidate):
                            candidate = count
                if candidate is None:
                    needed = True
                else:
                    counts[topic] = candidate
                    progress = True
        if not needed:
            return None
        if not progress:
            break
    unsized = sorted(t for t in enforced if t not in counts)
    return RepartitionSizingFailed(unsized_topics=tuple(unsized))


def _enforce_group(
    group: tuple[str, ...],
    enforced: Mapping[str, int | None],
    counts: dict[str, int],
    partition_counts: Mapping[str, int],
) -> CopartitionFailure | None:
    """Kafka's three outcomes for one group; ``counts`` of unenforced topics are overridden.

    ``group`` is in its ``HashSet`` order; Kafka collects its repartition topics into a
    ``HashMap`` and walks that, so the first mismatching enforced topic in that order is the one
    reported.
    """
    repartition = list(JavaHashSet(string_hash, (t for t in group if t in enforced)))
    external = {t: partition_counts[t] for t in group if t not in enforced}
    if not external:
        fixed = [t for t in repartition if enforced[t] is not None]
        if fixed:
            target = counts[fixed[0]]
            if any(counts[t] != target for t in fixed):
                return CopartitionFailure(
                    problem="enforced_counts_differ",
                    group=group,
                    topics=tuple((t, counts[t]) for t in repartition),
                )
        else:
            target = max(counts[t] for t in repartition)
    else:
        values = set(external.values())
        if len(values) > 1:
            return CopartitionFailure(
                problem="external_counts_differ",
                group=group,
                topics=tuple(sorted(external.items())),
            )
        (target,) = values
    for topic in repartition:
        if enforced[topic] is None:
            counts[topic] = target
        elif counts[topic] != target:
            return CopartitionFailure(
                problem="repartition_count_mismatch",
                group=group,
                topics=((topic, counts[topic]),),
                expected=target,
            )
    return None


__all__ = [
    "CopartitionFailure",
    "InternalTopics",
    "MissingSourceTopics",
    "RepartitionSizingFailed",
    "SizingFailure",
    "SizingOutcome",
    "size_internal_topics",
    "sizing_order",
    "topics_info_hash",
]
