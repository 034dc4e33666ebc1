"""What the simulator measures: one row per rebalance, one per scenario, and the violations.

The schema is stable and documented field by field (unit and meaning), because the Spark sweep and
the report read these rows by name. Fields that depend on the machine rather than the scenario
(wall-clock times) end in ``_wall_ms`` / ``_wall_s`` and are left out of determinism comparisons
(:func:`deterministic_view`).

Ownership is the leader's decision as the members receive it. For our assignors a task is owned by
the thread whose assignment lists it as active; for partition-level assignors (aiokafka's) a task
is owned by the member holding *all* of its partitions, and a task whose partitions are spread
over several members is a copartition split: a violation, and unowned.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from protocol.ids import TaskId, TopicPartition, sorted_tasks

#: A thread of a simulated process: (process name, thread index).
Thread = tuple[str, int]
#: A consumer's member id, as the coordinator hands it out.
MemberId = str


@dataclass(frozen=True, slots=True)
class Ownership:
    """One generation's decision: what every member got (partition-level view included).

    Keyed by member id, as aiokafka's assignments are: one thread can have two members in one
    generation (an incarnation that left without a LeaveGroup stays until its session times out,
    next to the one that replaced it), and keyed by thread they overwrote each other.
    ``threads`` names the thread behind each member."""

    active: Mapping[MemberId, frozenset[TaskId]]
    standby: Mapping[MemberId, frozenset[TaskId]]
    partitions: Mapping[MemberId, frozenset[TopicPartition]]
    threads: Mapping[MemberId, Thread]
    #: tasks whose partitions are spread over several members (partition-level assignors)
    split: frozenset[TaskId] = frozenset()
    #: the views below, each computed once: a generation's decision reading, its history row
    #: and its invariants each asked for them, a sort of every task each time. Shared: read only.
    _views: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def thread(self, member: MemberId) -> Thread:
        thread = self.threads.get(member)  # (the unknown member's text only when unknown)
        return thread if thread is not None else (f"?{member}", 0)

    def process(self, member: MemberId) -> str:
        thread = self.threads.get(member)  # ``thread(member)[0]`` inline: once a member, twice
        return thread[0] if thread is not None else f"?{member}"

    def active_owners(self) -> dict[TaskId, list[MemberId]]:
        """Task -> its active members, in thread order (then member id). Shared: read only."""
        owners: dict[TaskId, list[MemberId]] | None = self._views.get("owners")
        if owners is None:
            owners = self._views["owners"] = {}
            for member in sorted(self.active, key=lambda m: (self.thread(m), m)):
                for task in sorted_tasks(self.active[member]):
                    owners.setdefault(task, []).append(member)
        return owners

    def active_process(self) -> dict[TaskId, str]:
        """Task -> the process that runs it (the first, if a violation put it on two).
        Shared: read only."""
        processes: dict[TaskId, str] | None = self._views.get("processes")
        if processes is None:
            names = {member: self.process(member) for member in self.active}  # once a member
            processes = self._views["processes"] = {
                task: names[members[0]] for task, members in self.active_owners().items()
            }
        return processes

    def standby_pairs(self) -> set[tuple[TaskId, str]]:
        """(task, process) of every standby. Shared: read only."""
        pairs: set[tuple[TaskId, str]] | None = self._views.get("pairs")
        if pairs is None:
            pairs = self._views["pairs"] = {
                (task, name)  # the member's process looked up once, not once a task
                for member, tasks in self.standby.items()
                for name in (self.process(member),) for task in tasks
            }
        return pairs


def held_tasks(
    partitions: Iterable[tuple[str, int]],
    tasks: Mapping[TaskId, tuple[TopicPartition, ...]],
    by_partition: Mapping[tuple[str, int], tuple[TaskId, ...]],
) -> frozenset[TaskId]:
    """The tasks one member owns by holding every partition of each: what
    :func:`ownership_from_partitions` says for a single member, found through ``by_partition``
    (:func:`tasks_by_partition` of ``tasks``) instead of a pass over every task of the group,
    which made each member's ``on_assignment`` cost O(tasks)."""
    held = frozenset(partitions)
    candidates = {task for tp in held for task in by_partition.get((tp[0], tp[1]), ())}
    return frozenset(task for task in candidates
                     if all(tp in held for tp in tasks[task]))


def tasks_by_partition(
    tasks: Mapping[TaskId, tuple[TopicPartition, ...]],
) -> dict[tuple[str, int], tuple[TaskId, ...]]:
    """(topic, partition) -> the tasks that read it."""
    index: dict[tuple[str, int], list[TaskId]] = {}
    for task, task_partitions in tasks.items():
        for tp in task_partitions:
            index.setdefault((tp.topic, tp.partition), []).append(task)
    return {key: tuple(found) for key, found in index.items()}


def ownership_from_partitions(
    partitions: Mapping[MemberId, Iterable[TopicPartition]],
    tasks: Mapping[TaskId, tuple[TopicPartition, ...]],
    threads: Mapping[MemberId, Thread],
) -> Ownership:
    """A partition-level assignment read as tasks: owned when one member holds all partitions."""
    holder: dict[TopicPartition, MemberId] = {}
    held: dict[MemberId, frozenset[TopicPartition]] = {}
    for member in sorted(partitions, key=lambda m: (threads.get(m, ("", 0)), m)):
        held[member] = frozenset(partitions[member])
        for tp in held[member]:
            holder.setdefault(tp, member)
    active: dict[MemberId, set[TaskId]] = {member: set() for member in held}
    split: set[TaskId] = set()
    for task, task_partitions in tasks.items():
        owners = {holder.get(tp) for tp in task_partitions}
        if len(owners) == 1:
            (owner,) = owners
            if owner is not None:
                active[owner].add(task)
        elif len(owners - {None}) > 1:
            split.add(task)
    return Ownership(
        active={m: frozenset(s) for m, s in active.items()},
        standby={m: frozenset() for m in held},
        partitions=held,
        threads=dict(threads),
        split=frozenset(split),
    )


@dataclass(frozen=True, slots=True)
class Violation:
    """An invariant broken by a stable generation, with the command that replays it."""

    #: ``active_twice`` | ``unowned`` | ``standby_on_active_process`` | ``copartition_split``
    #: | ``partition_twice``
    kind: str
    generation: int
    #: virtual seconds at which the generation became stable
    time_s: float
    detail: str
    replay: str


def check_invariants(
    ownership: Ownership,
    tasks: Iterable[TaskId],
    *,
    generation: int,
    time_s: float,
    replay: str,
) -> list[Violation]:
    """Every invariant of one stable generation; an empty list when all hold."""
    found: list[Violation] = []

    def add(kind: str, detail: str) -> None:
        found.append(Violation(kind, generation, round(time_s, 6), detail, replay))

    # Each check finds its cases first and sorts only those (for the messages' order).
    owners = ownership.active_owners()
    for task in sorted(task for task, members in owners.items() if len(members) > 1):
        add("active_twice", f"task {task} is active on "
                            f"{_threads(ownership.thread(m) for m in owners[task])}")
    unowned = sorted(task for task in tasks if task not in owners)
    if unowned:
        add("unowned", f"{len(unowned)} task(s) have no active owner: {_tasks(unowned)}")
    processes = ownership.active_process()
    for task, process in sorted(pair for pair in ownership.standby_pairs()
                                if processes.get(pair[0]) == pair[1]):
        add("standby_on_active_process", f"task {task} has its standby on {process}, which "
                                         "runs it as active")
    if ownership.split:
        add("copartition_split", f"{len(ownership.split)} task(s) have their partitions on "
                                 f"several members: {_tasks(sorted(ownership.split))}")
    held = ownership.partitions.values()
    if sum(map(len, held)) == len(frozenset().union(*held)):
        return found  # no partition on two members
    seen: dict[TopicPartition, Thread] = {}
    for member in sorted(ownership.partitions, key=lambda m: (ownership.thread(m), m)):
        thread = ownership.thread(member)
        for tp in sorted(ownership.partitions[member]):
            if tp in seen:
                add("partition_twice", f"partition {tp} is on {_threads([seen[tp], thread])}")
            seen[tp] = thread
    return found


def _threads(threads: Iterable[Thread]) -> str:
    return ", ".join(f"{process}/{index}" for process, index in threads)


def _tasks(tasks: Sequence[TaskId], limit: int = 10) -> str:
    shown = ", ".join(str(t) for t in tasks[:limit])
    return shown + (f" and {len(tasks) - limit} more" if len(tasks) > limit else "")


@dataclass(frozen=True, slots=True)
class RebalanceRow:
    """One generation of the group (the journal's record joined with the leader's decision)."""

    scenario: str
    #: the group generation (Kafka's generation id)
    generation: int
    #: ``stable`` (the assignment reached the members) or ``aborted`` (a new rebalance began first)
    outcome: str
    #: virtual seconds from the start of the run at which the rebalance began / ended
    started_s: float
    ended_s: float
    #: group members (consumers, one per stream thread) and distinct processes in the generation
    members: int
    processes: int
    #: the leader as ``process/thread``
    leader: str
    #: the task assignor the leader ran (``high_availability``, ...), or the peer's name
    assignor: str
    #: the subscription/assignment version the leader answered with (ours; ``None`` for peers)
    protocol_version: int | None
    #: JoinGroup metadata bytes the leader received, summed over members (bytes)
    join_bytes: int
    #: SyncGroup assignment bytes the members received, summed (bytes)
    sync_bytes: int
    #: stateful and stateless tasks whose active process changed from the previous stable
    #: generation (tasks that had no owner before do not count)
    active_moved: int
    #: (task, process) standby placements that are new since the previous stable generation
    standby_moved: int
    #: standbys placed only to warm a process up (high-availability assignor)
    warmups: int
    #: why another rebalance will follow (probing, version probing), empty when none
    followup: str
    #: records the new active owners must restore before processing, as of the decision (records)
    restore_records: int
    #: why the coordinator started the rebalance
    reasons: str
    #: wall-clock time inside the leader's ``assign()`` (milliseconds; machine-dependent)
    assign_wall_ms: float


@dataclass(frozen=True, slots=True)
class ScenarioRow:
    """One scenario's outcome."""

    scenario: str
    #: the family that generated it, or ``file``
    family: str
    seed: int
    assignor: str
    #: stable generations in the whole run / generations aborted before they were stable
    rebalances: int
    aborted: int
    #: stable generations after the last timeline event (the convergence phase)
    rebalances_after_last_event: int
    #: the group became stable (no rebalance pending, every task processed) within the bounds
    converged: bool
    #: Kafka's bound on probing rounds for ours: ``2 x (stateful + stateful x standbys)``
    kafka_bound: int | None
    #: ``rebalances_after_last_event <= kafka_bound`` and converged (None for peers)
    within_kafka_bound: bool | None
    #: virtual seconds from the last timeline event to the stable state (None: not converged)
    time_to_stable_s: float | None
    #: virtual seconds the run lasted
    end_s: float
    tasks: int
    stateful_tasks: int
    #: task-seconds with no caught-up active owner: sum over tasks, 99th percentile task, worst
    unavailable_task_s: float
    unavailable_p99_s: float
    unavailable_max_s: float
    worst_task: str
    #: records restored by active tasks / replayed by standbys and warm-ups (records)
    restored_records: int
    standby_records: int
    #: active and standby movements summed over all stable generations
    active_moves: int
    standby_moves: int
    #: final spread of active tasks: max - min per thread, and per process per thread
    balance_thread: int
    balance_process: float
    #: share of the wanted standbys (stateful tasks x ``num.standby.replicas``, at most one per
    #: other process) present at the end (1.0 when none are wanted)
    standby_coverage: float
    #: share of final standbys whose process differs in every rack-aware tag from the active's
    #: (None when no rack-aware tags are configured)
    tag_spread: float | None
    violations: int
    #: ``PYTHONHASHSEED`` of the run (aiokafka's sticky assignor iterates sets of strings)
    hash_seed: str
    #: why it did not converge, or other remarks
    note: str
    #: wall-clock seconds for the whole replay (machine-dependent)
    replay_wall_s: float


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 1) of ``values``; 0.0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def row_dict(row: RebalanceRow | ScenarioRow | Violation) -> dict[str, Any]:
    return asdict(row)


def deterministic_view(row: RebalanceRow | ScenarioRow | Violation) -> dict[str, Any]:
    """The fields that must be identical between two runs of one scenario and seed."""
    return {
        f.name: getattr(row, f.name)
        for f in fields(row)
        if not f.name.endswith(("_wall_ms", "_wall_s")) and f.name != "hash_seed"
    }


__all__ = [
    "Ownership",
    "RebalanceRow",
    "ScenarioRow",
    "Thread",
    "Violation",
    "check_invariants",
    "deterministic_view",
    "held_tasks",
    "ownership_from_partitions",
    "percentile",
    "row_dict",
    "tasks_by_partition",
]
