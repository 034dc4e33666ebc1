"""Step 3 of the leader's pipeline: from subtopologies and partition counts to tasks.

A task is one partition number of one subtopology. Task ``<s>_<i>`` reads partition ``i`` of
every source topic of subtopology ``s`` that has more than ``i`` partitions, and owns partition
``i`` of each of its changelogs; so a subtopology has as many tasks as its largest source topic
has partitions (Kafka's ``PartitionGrouper`` and ``ChangelogTopics``).

This runs inside aiokafka's event loop for every rebalance, on thousands of partitions, so the
loops build ids without pydantic validation (the inputs were validated once, upstream).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assignor.topology.model import Topology
from protocol.ids import TaskId, TopicPartition, trusted_task_id, trusted_topic_partition
from protocol.shared_ids import shared_task_ids, shared_topic_partition, shared_topic_partitions

TaskPartitions = Mapping[TaskId, tuple[TopicPartition, ...]]


def create_tasks(topology: Topology, source_partitions: Mapping[str, int]) -> TaskPartitions:
    """Task id -> its source partitions, ordered by task id; partitions ordered by topic.

    ``source_partitions`` must hold every source topic's count, repartition topics included
    (``InternalTopics.source_partitions``); a missing or empty topic is a caller's mistake and
    raises ``ValueError`` (Kafka: "Empty partitions for topic").
    """
    tasks: dict[TaskId, tuple[TopicPartition, ...]] = {}
    for sub in topology.subtopologies:
        sized = _sized_sources(sub.source_topics, source_partitions)
        widest = max(count for _, count in sized)
        sub_id = sub.id
        if all(count == widest for _, count in sized):
            topics = [topic for topic, _ in sized]
            for partition in range(widest):
                tasks[trusted_task_id(sub_id, partition)] = tuple(
                    [trusted_topic_partition(topic, partition) for topic in topics]
                )
        else:
            for partition in range(widest):
                tasks[trusted_task_id(sub_id, partition)] = tuple(
                    [trusted_topic_partition(t, partition) for t, n in sized if n > partition]
                )
    return tasks


def _sized_sources(
    topics: tuple[str, ...], source_partitions: Mapping[str, int]
) -> list[tuple[str, int]]:
    """Each source topic with its partition count; ``ValueError`` for a missing or empty one."""
    sized = []
    for topic in topics:
        count = source_partitions.get(topic, 0)
        if count < 1:
            raise ValueError(
                f"Empty partitions for topic {topic}: size the topology's internal topics "
                f"and check for missing source topics before creating tasks"
            )
        sized.append((topic, count))
    return sized


def stateful_tasks(topology: Topology, tasks: TaskPartitions) -> frozenset[TaskId]:
    """Tasks whose subtopology logs at least one store: the ones with state to place and to
    keep warm on standbys. An unlogged store does not make a task stateful, as in Kafka."""
    stateful = {sub.id for sub in topology.subtopologies if sub.is_stateful}
    return frozenset(task for task in tasks if task.subtopology in stateful)


def changelog_partitions(topology: Topology, tasks: TaskPartitions) -> TaskPartitions:
    """Stateful task -> the changelog partitions it restores from (source changelogs too)."""
    logs = {sub.id: sub.changelog_topics for sub in topology.subtopologies if sub.is_stateful}
    result: dict[TaskId, tuple[TopicPartition, ...]] = {}
    for task in tasks:
        topics = logs.get(task.subtopology)
        if topics:
            result[task] = tuple([trusted_topic_partition(t, task.partition) for t in topics])
    return result


def changelog_partition_counts(topology: Topology, tasks: TaskPartitions) -> dict[str, int]:
    """Changelog topic -> partitions it needs: its subtopology's highest task partition + 1.

    Source topics reused as changelogs are left out: they exist with their own count.
    """
    highest: dict[int, int] = {}
    for task in tasks:
        if task.partition >= highest.get(task.subtopology, -1):
            highest[task.subtopology] = task.partition
    counts: dict[str, int] = {}
    for sub in topology.subtopologies:
        if sub.id in highest:
            for topic in sub.created_changelog_topics:
                counts[topic] = highest[sub.id] + 1
    return counts


@dataclass(frozen=True, slots=True)
class PlanColumns:
    """A plan's tasks in plan order as columns of plain lists, when every task has the same
    number of partitions (one per source topic: every topic of a subtopology as wide as its
    widest, and as many source topics in every subtopology). ``partitions[j][i]`` is the
    ``i``-th task's ``j``-th partition, ``codes[j][i]`` the same as ``rank << 32 | partition``
    with ``rank`` the topic's place in ``topics`` (sorted), so sorting codes sorts partitions
    by (topic, partition); ``ranks[i]`` is the task's ``TaskId._rank``. Made from the lists
    the plan is built from, so the leader reads its host maps and partition orders from ints
    and lists (``assignor.leader.task_table``) without touching a task or a partition."""

    partitions: list[list[TopicPartition]]
    codes: list[list[int]]
    ranks: list[int]
    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TaskLayout:
    """Everything step 3 hands to the task assignor."""

    tasks: TaskPartitions
    stateful: frozenset[TaskId]
    changelogs: TaskPartitions
    changelog_counts: Mapping[str, int]
    #: the tasks' partitions as columns, when :func:`plan_tasks` made every task of one width
    columns: PlanColumns | None = field(default=None, compare=False, repr=False)

    @property
    def stateless(self) -> frozenset[TaskId]:
        return frozenset(t for t in self.tasks if t not in self.stateful)


def plan_tasks(topology: Topology, source_partitions: Mapping[str, int]) -> TaskLayout:
    """:func:`create_tasks` and the stateful views of its result, in one call.

    The same result as calling the four functions in turn, built in one pass per subtopology
    (each task id made once, the views filled a subtopology at a time in task order): the leader
    plans every rebalance that changes partition counts, inside aiokafka's event loop. Its ids
    are the decoder's shared instances (``protocol.shared_ids``), so the tasks and partitions
    the members' subscriptions name are these very objects and lookups end at identity.
    """
    tasks: dict[TaskId, tuple[TopicPartition, ...]] = {}
    changelogs: dict[TaskId, tuple[TopicPartition, ...]] = {}
    counts: dict[str, int] = {}
    sources = sorted({topic for sub in topology.subtopologies for topic in sub.source_topics})
    shifted = {topic: rank << 32 for rank, topic in enumerate(sources)}
    columns: PlanColumns | None = None
    uniform = True  # every subtopology's topics as wide as its widest, and as many of them
    for sub in topology.subtopologies:
        sized = _sized_sources(sub.source_topics, source_partitions)
        widest = max(count for _, count in sized)
        ids = shared_task_ids(sub.id, widest)
        if all(count == widest for _, count in sized):
            # ``_partition_tuples``' tuples, zipped from the lists the columns keep
            lists = [shared_topic_partitions(topic, widest) for topic, _ in sized]
            tasks.update(zip(ids, zip(*lists, strict=True), strict=True))  # in C
            if columns is None:
                columns = PlanColumns([[] for _ in lists], [[] for _ in lists], [], tuple(sources))
            if uniform and len(columns.partitions) == len(lists):
                for column, made in zip(columns.partitions, lists, strict=True):
                    column += made
                for codes, (topic, _) in zip(columns.codes, sized, strict=True):
                    codes += range(shifted[topic], shifted[topic] + widest)
                columns.ranks.extend(range(sub.id << 31, (sub.id << 31) + widest))
            else:
                uniform = False
        else:
            uniform = False
            tasks.update(zip(ids, _partition_tuples(sized, widest), strict=True))
        logs = sub.changelog_topics
        if logs:  # a stateful subtopology (Subtopology.is_stateful)
            changelogs.update(
                zip(ids, _partition_tuples([(t, widest) for t in logs], widest), strict=True)
            )
        for topic in sub.created_changelog_topics:
            counts[topic] = widest  # the highest task partition + 1
    # The stateful tasks are exactly the changelog map's keys: a set made from a dict takes
    # the hashes the dict stored (``TaskId.__hash__`` is a Python call, 6,000 per plan).
    return TaskLayout(
        tasks=tasks,
        stateful=frozenset(changelogs),
        changelogs=changelogs,
        changelog_counts=counts,
        columns=columns if uniform and columns is not None and len(columns.ranks) == len(tasks)
        else None,
    )


def _partition_tuples(
    sized: list[tuple[str, int]], widest: int
) -> list[tuple[TopicPartition, ...]]:
    """Partition ``p``'s tuple of each topic with more than ``p`` partitions, in topic order,
    for every ``p`` below ``widest``: the shared instances, and for topics of ``widest``
    partitions the tuples made in C (``zip``)."""
    if all(count == widest for _, count in sized):
        return list(
            zip(*[shared_topic_partitions(topic, widest) for topic, _ in sized], strict=True)
        )
    return [
        tuple([shared_topic_partition(t, p) for t, n in sized if n > p]) for p in range(widest)
    ]


__all__ = [
    "PlanColumns",
    "TaskLayout",
    "TaskPartitions",
    "changelog_partition_counts",
    "changelog_partitions",
    "create_tasks",
    "plan_tasks",
    "stateful_tasks",
]
