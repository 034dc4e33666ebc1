"""Step 8 of the pipeline: what one member makes of the assignment the leader sent it.

Pure: the aiokafka adapter calls :func:`interpret_assignment` from ``on_assignment`` and acts on
the returned :class:`MemberDecision` (hand the tasks to the application, switch the subscription
version, schedule a follow-up rebalance). Kafka Streams does the same in
``StreamsPartitionAssignor.onAssignment``; the rules below follow it, with our codec's versions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Final

from assignor.topology.model import Topology
from assignor.topology.tasks import TaskPartitions, changelog_partitions
from protocol.errors import AssignorError
from protocol.ids import HostInfo, TaskId, TopicPartition
from protocol.messages import NO_FOLLOWUP_REBALANCE, AssignmentInfo, VersionHeader
from protocol.task_partitions import align_active_tasks

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TaskChanges:
    """What changed since the previous assignment, so the application keeps state it still owns.

    aiokafka's protocol is eager: every rebalance revokes every partition. A task that is *kept*
    did not really move, and its local state (stores, caches) should be kept warm.
    """

    kept_active: frozenset[TaskId] = frozenset()
    added_active: frozenset[TaskId] = frozenset()
    removed_active: frozenset[TaskId] = frozenset()
    kept_standby: frozenset[TaskId] = frozenset()
    added_standby: frozenset[TaskId] = frozenset()
    removed_standby: frozenset[TaskId] = frozenset()


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """The application's view of one rebalance's outcome for one consumer (thread).

    What a task runtime needs, per task:

    - ``active_tasks``: task -> the source partitions this consumer now reads for it;
    - ``standby_tasks``: task -> that task's source partitions (not assigned to this consumer:
      they tell which partitions the task covers, e.g. for interactive queries);
    - ``changelogs``: every stateful active *and* standby task -> its changelog partitions (one
      per logged store, source-topic changelogs included), computed from the topology the
      member runs. An active task restores its stores from them before processing, a standby
      follows them for as long as it is assigned; the state directory's checkpoint records the
      next offset to apply in each. Stateless tasks have no entry.

    **Warm-ups cannot be told apart here.** A warm-up replica (KIP-441) is a standby the leader
    placed only so this client catches up before a probing rebalance moves the active to it.
    The assignment on the wire carries standby tasks only (as in Kafka, whose
    ``AssignmentInfo`` has no warm-up field), and the standby host map lists warm-ups as
    standbys, so a member cannot know which of its standbys are warm-ups; nor does it need to:
    a warm-up restores and follows its changelogs exactly as a standby does. The leader knows:
    it logs the count (``assignor.leader.pipeline``), counts them in
    ``StreamsProcess.metrics()``, and :func:`assignor.explain` names them.
    """

    active_tasks: TaskPartitions = field(default_factory=dict)
    standby_tasks: TaskPartitions = field(default_factory=dict)
    partitions_by_host: Mapping[HostInfo, frozenset[TopicPartition]] = field(default_factory=dict)
    standby_partitions_by_host: Mapping[HostInfo, frozenset[TopicPartition]] = field(
        default_factory=dict
    )
    changes: TaskChanges = field(default_factory=TaskChanges)
    error: AssignorError = AssignorError.NONE
    error_detail: str = ""
    changelogs: TaskPartitions = field(default_factory=dict)
    #: False when the leader sent only this member's own endpoint entry in the host maps (a
    #: group too large for every member to carry every endpoint, see ``docs/wire-format.md``):
    #: the group's maps are then the union of every member's, :func:`merge_host_maps`.
    host_maps_complete: bool = True

    @property
    def restore_partitions(self) -> frozenset[TopicPartition]:
        """Changelog partitions of the active tasks: restore them before processing."""
        return frozenset(tp for t in self.active_tasks for tp in self.changelogs.get(t, ()))

    @property
    def standby_changelog_partitions(self) -> frozenset[TopicPartition]:
        """Changelog partitions of the standby tasks: follow them while assigned."""
        return frozenset(tp for t in self.standby_tasks for tp in self.changelogs.get(t, ()))


@dataclass(frozen=True, slots=True)
class MemberDecision:
    """What the adapter must do after an assignment arrives."""

    assignment: MemberAssignment
    #: the subscription version to send at the next join
    next_used_version: int
    #: wall-clock ms at which to rejoin (0 = now), or None for no follow-up rebalance
    rebalance_at_ms: int | None
    reason: str = ""


def interpret_assignment(
    info: AssignmentInfo | VersionHeader,
    partitions: Sequence[TopicPartition],
    *,
    used_version: int,
    latest_supported_version: int,
    endpoint: HostInfo | None,
    previous: MemberAssignment | None,
    topology: Topology | None = None,
) -> MemberDecision:
    """Check the leader's answer, align tasks with partitions, and decide on follow-ups.

    Errors never raise: a wrong answer becomes an error assignment with a reason, which the
    adapter reports to the application just as Kafka's rebalance listener does. With the
    ``topology`` the member runs, the assignment also lists each task's changelog partitions.
    """
    previous = previous or MemberAssignment()
    if isinstance(info, VersionHeader):
        return _failed(
            previous,
            AssignorError.ASSIGNMENT_ERROR,
            f"received an assignment of version {info.version}, newer than the latest this "
            f"member reads ({latest_supported_version})",
            used_version,
        )
    if info.error_code is not AssignorError.NONE:
        failed = _failed(previous, info.error_code, info.error_code.description, used_version)
        if info.next_rebalance_ms < NO_FOLLOWUP_REBALANCE:
            # The leader wants a retry (e.g. internal topics were missing and are being made).
            return replace(failed, rebalance_at_ms=info.next_rebalance_ms)
        return failed
    if info.version > used_version:
        return _failed(
            previous,
            AssignorError.ASSIGNMENT_ERROR,
            f"sent a version {used_version} subscription but got an assignment with higher "
            f"version {info.version}",
            used_version,
        )
    if info.commonly_supported_version > latest_supported_version:
        return _failed(
            previous,
            AssignorError.ASSIGNMENT_ERROR,
            f"the group's commonly supported version {info.commonly_supported_version} is "
            f"newer than this member's latest {latest_supported_version}",
            used_version,
        )
    active = align_active_tasks(info.active_tasks, partitions)
    if active is None:
        return _failed(
            previous,
            AssignorError.ASSIGNMENT_ERROR,
            f"number of assigned partitions {len(partitions)} is not equal to the number of "
            f"active task ids {len(info.active_tasks)}",
            used_version,
        )
    assignment = MemberAssignment(
        active_tasks=active,
        standby_tasks=dict(info.standby_tasks),
        partitions_by_host=dict(info.partitions_by_host),
        standby_partitions_by_host=dict(info.standby_partitions_by_host),
        host_maps_complete=info.host_maps_complete,
        changes=diff_tasks(previous, active, info.standby_tasks),
        changelogs=(
            _changelogs(topology, chain(active, info.standby_tasks))
            if topology is not None
            else {}
        ),
    )
    next_version, version_changed = _next_subscription_version(info, used_version)
    if version_changed:
        return MemberDecision(assignment, next_version, 0, _version_reason(info, used_version))
    if endpoint is not None and endpoint not in info.partitions_by_host:
        return MemberDecision(
            assignment, next_version, 0, "own endpoint missing from the host map; rejoin"
        )
    if info.next_rebalance_ms == 0:
        return MemberDecision(
            assignment, next_version, 0, "leader asked for an immediate rebalance"
        )
    if info.next_rebalance_ms < NO_FOLLOWUP_REBALANCE:
        return MemberDecision(
            assignment, next_version, info.next_rebalance_ms, "probing rebalance scheduled"
        )
    return MemberDecision(assignment, next_version, None)


def repeat_decision(decision: MemberDecision) -> MemberDecision:
    """What :func:`interpret_assignment` decides when it is called again with an equal message,
    the same partitions, version, endpoint and topology as for ``decision``, and
    ``previous=decision.assignment``; ``decision`` must be one without error.

    Why: in a probing round most members receive the same answer as the round before, and the
    adapter then skips reading it again. Only the changes differ (everything is kept now); the
    maps are fresh copies in the same order, as a new interpretation builds them.
    """
    done = decision.assignment
    # (positional, in the fields' order: a frozen dataclass's keywords cost a dict per call;
    # the error fields are their defaults, as ``decision`` has no error)
    assignment = MemberAssignment(
        dict(done.active_tasks),
        dict(done.standby_tasks),
        dict(done.partitions_by_host),
        dict(done.standby_partitions_by_host),
        _all_kept(done),
        AssignorError.NONE,
        "",
        dict(done.changelogs),
        done.host_maps_complete,
    )
    return MemberDecision(
        assignment, decision.next_used_version, decision.rebalance_at_ms, decision.reason
    )


def _all_kept(done: MemberAssignment) -> TaskChanges:
    """``diff_tasks(done, done.active_tasks, done.standby_tasks)``: every task kept, none added
    or removed (most members of every probing round come here). The kept sets are made by the
    same intersection of two equal sets, so they iterate in the same order (a set intersected
    with itself is copied instead, in another order); the four differences, empty, are not
    computed."""
    active, standby = done.active_tasks, done.standby_tasks
    return TaskChanges(
        frozenset(set(active) & set(active)), _NO_TASKS, _NO_TASKS,
        frozenset(set(standby) & set(standby)), _NO_TASKS, _NO_TASKS,
    )


_NO_TASKS: frozenset[TaskId] = frozenset()


#: Topologies (by identity, kept alive so that an id is not reused) -> task -> its changelog
#: partitions, or None for a stateless task. A member's topology and its tasks' changelogs do
#: not change between rebalances, yet rebuilding them was a third of ``interpret_assignment``.
_CHANGELOGS: dict[int, tuple[Topology, dict[TaskId, tuple[TopicPartition, ...] | None]]] = {}
#: bounds of that table: topologies kept, and tasks kept per topology (emptied when reached)
_MAX_TOPOLOGIES: Final = 16
_MAX_TASKS: Final = 100_000


def _changelogs(topology: Topology, tasks: Iterable[TaskId]) -> TaskPartitions:
    """``changelog_partitions(topology, tasks)``, each task's answer computed once per topology
    (the same values, in the same order, as equal instances shared between rebalances)."""
    kept = _CHANGELOGS.get(id(topology))
    if kept is None or kept[0] is not topology:
        if len(_CHANGELOGS) >= _MAX_TOPOLOGIES:
            _CHANGELOGS.clear()
        kept = _CHANGELOGS[id(topology)] = (topology, {})
    known = kept[1]
    result: dict[TaskId, tuple[TopicPartition, ...]] = {}
    for task in tasks:
        partitions = known.get(task, ())
        if partitions == ():  # not met yet (a task always has a changelog partition or None)
            if len(known) >= _MAX_TASKS:
                known.clear()
            partitions = known[task] = changelog_partitions(topology, {task: ()}).get(task)
        if partitions is not None:
            result[task] = partitions
    return result


def merge_host_maps(
    assignments: Iterable[AssignmentInfo],
) -> tuple[dict[HostInfo, frozenset[TopicPartition]], dict[HostInfo, frozenset[TopicPartition]]]:
    """The group's host maps (active, standby) from its members' assignments of one generation.

    A complete assignment already holds them; otherwise each member holds its own endpoint's
    entry and the group's maps are their union (what ``DescribeGroups`` returns is enough).
    """
    active: dict[HostInfo, frozenset[TopicPartition]] = {}
    standby: dict[HostInfo, frozenset[TopicPartition]] = {}
    for info in assignments:
        if info.host_maps_complete:
            return dict(info.partitions_by_host), dict(info.standby_partitions_by_host)
        active.update(info.partitions_by_host)
        standby.update(info.standby_partitions_by_host)
    return active, standby


def diff_tasks(
    previous: MemberAssignment, active: TaskPartitions, standby: TaskPartitions
) -> TaskChanges:
    """Kept, added and removed tasks since ``previous`` (aiokafka revokes everything anyway)."""
    before_active, after_active = set(previous.active_tasks), set(active)
    before_standby, after_standby = set(previous.standby_tasks), set(standby)
    return TaskChanges(  # kept, added, removed actives; the same of standbys (positional)
        frozenset(before_active & after_active),
        frozenset(after_active - before_active),
        frozenset(before_active - after_active),
        frozenset(before_standby & after_standby),
        frozenset(after_standby - before_standby),
        frozenset(before_standby - after_standby),
    )


def _next_subscription_version(info: AssignmentInfo, used_version: int) -> tuple[int, bool]:
    """Kafka's ``maybeUpdateSubscriptionVersion``: upgrade to, or fall back to, the common one."""
    if info.commonly_supported_version > used_version:
        return info.commonly_supported_version, True
    if info.version < used_version:
        return info.commonly_supported_version, True
    return used_version, False


def _version_reason(info: AssignmentInfo, used_version: int) -> str:
    if info.commonly_supported_version > used_version:
        return (
            f"whole group supports version {info.commonly_supported_version}: upgrading the "
            f"subscription from version {used_version} and rebalancing (end of rolling upgrade)"
        )
    return (
        f"sent a version {used_version} subscription and got a version {info.version} "
        f"assignment: downgrading to the commonly supported version "
        f"{info.commonly_supported_version} and rebalancing (version probing)"
    )


def _failed(
    previous: MemberAssignment, code: AssignorError, detail: str, used_version: int
) -> MemberDecision:
    log.error("assignment error %s: %s", code.name, detail)
    assignment = MemberAssignment(
        error=code,
        error_detail=detail,
        changes=diff_tasks(previous, {}, {}),
    )
    return MemberDecision(assignment, used_version, None, detail)
