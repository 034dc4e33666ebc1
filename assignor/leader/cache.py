"""What a leader derives from the topology and the cluster, kept between its rebalances.

The repartition topics' sizing depends only on the topology and the cluster's partition counts,
the task plan (tasks, their partitions, stateful tasks, changelog partitions) only on the
topology and the source topics' partition counts, and each task's changelog end-offset sum only
on the plan and the end offsets; none of them changes from one rebalance to the next while the
cluster's metadata stays the same, yet rebuilding them costs several microseconds per task in
aiokafka's event loop. A :class:`LeaderCache` keeps the last of each, keyed by exactly what it
was computed from: the topology object, the partition counts (by value) and the end-offsets
mapping object. The leader's process replaces that mapping on every refresh
(``StreamsProcess.set_changelog_end_offsets``) and never changes it in place, so "the same
object" means "the same offsets". A miss recomputes with the same pure functions, so a cached
answer is always the answer the functions would give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, rshift

from assignor.leader.task_table import TaskTable
from assignor.leader.thread_cache import ThreadCache
from assignor.placement.target_cache import TargetCache
from assignor.topology.internal_topics import InternalTopics, SizingOutcome
from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout, plan_tasks
from protocol.ids import TaskId, TopicPartition

_RANK = attrgetter("_rank")  # unnamed tasks only


@dataclass(frozen=True, slots=True)
class PlannedTasks:
    """Step 3's result, with each task's partitions by the task object's ``id``.

    Why by ``id``: ``TaskId`` hashes in Python, and the host maps and answers look up every
    assigned task's partitions (24,000 hashes per rebalance at 6,000 tasks over 2 clients);
    the assigned tasks are the layout's own objects (shared instances), so ``id`` finds them
    with C-level hashing. Valid as long as this object holds the layout (the ids cannot be
    reused meanwhile); a task that is another object misses, and callers then look it up by
    value (:func:`assignor.leader.encode.partitions_of`).
    """

    layout: TaskLayout
    partitions_by_id: Mapping[int, tuple[TopicPartition, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: the plan's tasks by their place in it (``None`` for a plan of named topologies)
    table: TaskTable | None = field(default=None, compare=False, repr=False)
    #: each task's partitions sorted (as a member's standby map lists them), by the task
    #: object's ``id``, for a plan of several partitions per task (``None`` otherwise)
    sorted_by_id: Mapping[int, tuple[TopicPartition, ...]] | None = field(
        default=None, compare=False, repr=False
    )
    #: each task's packed standby entry by place, per topic dictionary and naming
    #: (``assignor.leader.packed_standby``, filled on first use)
    packed_standby: dict[tuple[tuple[tuple[str, int], ...], bool], list[bytes | None]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: each unnamed task's packed ints as an active task (``[subtopology, partition]``, ``0``
    #: first when named), by the task object's ``id``, per naming (``packed_standby``'s
    #: ``active_packed``, filled on first use)
    packed_active: dict[bool, dict[int, bytes]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: the last rebalance's busy answers and what they were written under
    #: (``assignor.leader.answer_memo.AnswerMemo``; at most one, replaced each rebalance)
    answer_memo: list[object] = field(default_factory=list, compare=False, repr=False)


def planned_tasks(topology: Topology, source_partitions: Mapping[str, int]) -> PlannedTasks:
    """:func:`plan_tasks`, computed afresh."""
    layout = plan_tasks(topology, source_partitions)
    tasks = layout.tasks
    table = TaskTable.of(layout)
    by_id = dict(zip(map(id, tasks), tasks.values(), strict=True))  # in C
    return PlannedTasks(layout, by_id, table, _sorted_by_id(layout, table, by_id))


def _sorted_by_id(
    layout: TaskLayout, table: TaskTable | None, by_id: dict[int, tuple[TopicPartition, ...]]
) -> Mapping[int, tuple[TopicPartition, ...]] | None:
    """Each task's partitions in (topic, partition) order, by the task object's ``id``, for a
    plan of several partitions per task (``None`` for any other). A task of the table holds
    one partition of each of its columns' topics (distinct, one per column), so sorting every
    task's tuple is one permutation of the columns, the same for all: applied in C once per
    plan instead of a ``TopicPartition`` comparison sort per task and member (2,000 standby
    tasks per rebalance over two copartitioned topics, 1.3 ms)."""
    columns = layout.columns
    if table is None or columns is None or len(table.codes) < 2:
        return None
    if columns.ranks != list(map(_RANK, layout.tasks)):
        return None  # (the columns are in the tasks' order, as plan_tasks makes them)
    column_topics = []
    for codes in table.codes:
        ranks = set(map(rshift, codes, repeat(32)))
        if len(ranks) != 1:
            return None
        column_topics.append(table.topics[ranks.pop()])
    if len(set(column_topics)) != len(column_topics):
        return None
    order = sorted(range(len(column_topics)), key=column_topics.__getitem__)
    if order == list(range(len(order))):
        return by_id  # the plan's own tuples are in order already
    rows = zip(*(table.partitions[j] for j in order), strict=True)
    return dict(zip(map(id, layout.tasks), rows, strict=True))


EndSums = Callable[[TaskLayout, Mapping[TopicPartition, int] | None], "dict[TaskId, int] | None"]


class LeaderCache:
    """The last task plan and changelog end sums of one leader (one per process or assignor).

    Not shared between threads: aiokafka calls ``assign()`` from one event loop.
    """

    __slots__ = (
        "_end_sums",
        "_offsets",
        "_offsets_layout",
        "_plan",
        "_plan_key",
        "_sized",
        "_topology",
        "targets",
        "threads",
    )

    def __init__(self) -> None:
        self._topology: Topology | None = None
        self._plan_key: tuple[tuple[str, int], ...] = ()
        self._plan: PlannedTasks | None = None
        self._offsets: Mapping[TopicPartition, int] | None = None
        self._offsets_layout: TaskLayout | None = None
        self._end_sums: dict[TaskId, int] | None = None
        #: the last successful sizing: (topology, partition counts as items, the sizing)
        self._sized: tuple[Topology, tuple[tuple[str, int], ...], InternalTopics] | None = None
        #: each client's last split of its tasks over its threads
        self.threads = ThreadCache()
        #: the high-availability assignor's last balanced target
        self.targets = TargetCache()

    def sizing(
        self,
        topology: Topology,
        partition_counts: Mapping[str, int],
        compute: Callable[[Topology, Mapping[str, int]], SizingOutcome],
    ) -> SizingOutcome:
        """``compute(topology, partition_counts)``, reused while the topology object and the
        counts (by value) stay. Only a success is kept: a failure is logged by the pipeline
        every rebalance it happens, and is recomputed each time.

        Why: repartition sizing walks the topology to a fixed point and hashes topic names
        the Java way, a tenth of a millisecond that came out the same at every rebalance."""
        key = tuple(partition_counts.items())
        kept = self._sized
        if kept is not None and kept[0] is topology and kept[1] == key:
            return kept[2]
        outcome = compute(topology, partition_counts)
        self._sized = (topology, key, outcome) if isinstance(outcome, InternalTopics) else None
        return outcome

    def plan(self, topology: Topology, source_partitions: Mapping[str, int]) -> PlannedTasks:
        """The task plan for these partition counts, reused while topology and counts stay."""
        key = tuple(source_partitions.items())
        if self._plan is None or self._topology is not topology or self._plan_key != key:
            self._plan = planned_tasks(topology, source_partitions)
            self._topology, self._plan_key = topology, key
            self._offsets_layout = None
        return self._plan

    def end_sums(
        self,
        layout: TaskLayout,
        end_offsets: Mapping[TopicPartition, int] | None,
        compute: EndSums,
    ) -> dict[TaskId, int] | None:
        """``compute(layout, end_offsets)``, reused for the same layout and offsets objects.

        An unknown result (``None``) is never kept: ``compute`` logs which partition lacks an
        end offset, and that warning belongs to every rebalance that falls back.
        """
        if (
            end_offsets is not None
            and self._end_sums is not None
            and self._offsets_layout is layout
            and self._offsets is end_offsets
        ):
            return self._end_sums
        sums = compute(layout, end_offsets)
        if sums is None:
            self._offsets_layout = None
        else:
            self._offsets, self._offsets_layout, self._end_sums = end_offsets, layout, sums
        return sums


__all__ = ["LeaderCache", "PlannedTasks", "planned_tasks"]
