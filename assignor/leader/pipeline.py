"""The group leader's ``assign()``, as one visible composition of small pure steps.

    decode_group        1. subscriptions -> clients keyed by process id (one consumer = one thread)
    screen_members      1b. refuse process-id clones and version liars (``assignor.leader.guard``)
    size_internal_topics 2. repartition topic counts, copartition groups
    plan_tasks          3. tasks and their partitions, stateful tasks, changelog partitions
    build_clients       +  previous tasks and lags per client (from changelog end offsets)
    run_task_assignor   4. tasks -> clients (high availability, legacy sticky or fallback)
    distribute_client_tasks 5. a client's tasks -> its consumers
    host_maps           6. which endpoint serves which partitions (interactive queries)
    encode_members      7. one AssignmentInfo per member, at the version every member reads
                        8. (member side: ``assignor.member``)

Nothing here raises for a problem of the group: a member whose bytes cannot be read, or that
``assignor.leader.guard`` refuses (a clone of another instance's process id, a version liar),
gets an error assignment of its own; missing topics, a shutdown request or a failing task
assignor become an error assignment for every member. Everything is logged with the member or
topic it concerns.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from assignor.config import AssignorConfig
from assignor.leader.guard import LeaderMemory, Screening, remember_upgrades, screen_members
from assignor.placement.client_state import ClientState, ConsumerReport, build_client_state
from assignor.placement.lags import end_offset_sum, unknown_end_offset_sums
from assignor.placement.task_assignor import TaskAssignment, TaskAssignor
from assignor.placement.threads import ThreadAssignment, distribute_client_tasks
from assignor.topology.internal_topics import InternalTopics, SizingFailure, size_internal_topics
from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout, plan_tasks
from protocol.codec import DEFAULT_CODEC, LATEST_VERSION, Codec
from protocol.errors import AssignorError, ProtocolError
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import NO_FOLLOWUP_REBALANCE, AssignmentInfo, SubscriptionInfo

log = logging.getLogger(__name__)

#: All members on a version newer than ours form one client under this id, as Kafka's FUTURE_ID.
FUTURE_PROCESS_ID = ProcessId(uuid.UUID("00000000-0000-0000-0000-00000000fffe"))


# --- inputs and outputs ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What the coordinator hands the leader for one member: its topics and user data."""

    topics: tuple[str, ...]
    user_data: bytes


@dataclass(frozen=True, slots=True)
class GroupInput:
    """Everything the leader's decision depends on; the same input gives the same output."""

    members: Mapping[str, MemberSubscription]
    #: cluster metadata: partitions per topic (source topics and existing internal topics)
    partition_counts: Mapping[str, int]
    #: end offsets of changelog partitions (committed offsets for source-topic changelogs);
    #: ``None`` when they could not be fetched, which makes the leader fall back
    changelog_end_offsets: Mapping[TopicPartition, int] | None
    now_ms: int
    #: the leader's own process: a probing rebalance is scheduled on it, as in Kafka
    leader_process_id: ProcessId | None = None
    #: what the leader noticed in earlier generations (clones, ignored upgrade instructions)
    memory: LeaderMemory = field(default_factory=LeaderMemory)


@dataclass(frozen=True, slots=True)
class MemberResult:
    """One member's answer: its partitions and the encoded ``AssignmentInfo`` for user data."""

    partitions: tuple[TopicPartition, ...]
    info: AssignmentInfo
    user_data: bytes


@dataclass(frozen=True, slots=True)
class DecodedGroup:
    """Step 1's result."""

    subscriptions: Mapping[str, SubscriptionInfo]
    #: members whose bytes could not be read, with the reason
    rejected: Mapping[str, str]
    #: process id of each decoded member (future members map to ``FUTURE_PROCESS_ID``)
    process_of: Mapping[str, ProcessId]
    min_used_version: int
    min_supported_version: int
    future_version: int | None
    shutdown_requested_by: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LeaderResult:
    """The leader's decision, with what explains it (for logs, ``--explain`` and tests)."""

    members: Mapping[str, MemberResult]
    error: AssignorError = AssignorError.NONE
    detail: str = ""
    rejected: Mapping[str, str] = field(default_factory=dict)
    used_version: int = LATEST_VERSION
    commonly_supported_version: int = LATEST_VERSION
    assignor: str = ""
    layout: TaskLayout | None = None
    clients_before: Mapping[ProcessId, ClientState] = field(default_factory=dict)
    task_assignment: TaskAssignment | None = None
    threads: Mapping[ProcessId, ThreadAssignment] = field(default_factory=dict)
    #: why a follow-up rebalance will happen, if one will
    followup: str = ""
    #: members refused by ``assignor.leader.guard`` (clones, version liars), with the reason
    refused: Mapping[str, str] = field(default_factory=dict)
    #: what the leader should remember for the next generation
    memory: LeaderMemory = field(default_factory=LeaderMemory)


# --- the composition -------------------------------------------------------------------------


def assign_group(
    topology: Topology,
    config: AssignorConfig,
    group: GroupInput,
    codec: Codec = DEFAULT_CODEC,
) -> LeaderResult:
    """Kafka Streams' leader-side ``assign()``: steps 1 to 7, composed."""
    everyone = decode_group(group.members, codec)
    screening = screen_members(everyone.subscriptions, group.memory)
    decoded = without_refused(everyone, screening.refused, codec)
    result = _assign_decoded(topology, config, group, decoded, codec)
    if screening.refused and not decoded.subscriptions and not decoded.rejected:
        result = replace(result, detail="every member was refused (process-id clones or "
                         "version liars; see the warnings of assignor.leader.guard)")
    return _answer_refused(result, screening, decoded, codec)


def _assign_decoded(
    topology: Topology,
    config: AssignorConfig,
    group: GroupInput,
    decoded: DecodedGroup,
    codec: Codec,
) -> LeaderResult:
    """Steps 2 to 7 for the members the leader serves."""
    used = decoded.min_used_version
    common = decoded.min_supported_version
    if not decoded.subscriptions:
        detail = "no member sent a readable subscription"
        return _error_for_all(decoded, codec, AssignorError.ASSIGNMENT_ERROR, detail)
    if decoded.shutdown_requested_by:
        detail = f"shutdown requested by member(s) {', '.join(decoded.shutdown_requested_by)}"
        log.warning("%s; telling every member", detail)
        return _error_for_all(decoded, codec, AssignorError.SHUTDOWN_REQUESTED, detail)

    sizing = size_internal_topics(topology, group.partition_counts)
    if not isinstance(sizing, InternalTopics):
        return _sizing_failed(decoded, codec, sizing)
    unready = unready_repartition_topics(sizing, group.partition_counts)
    if unready:
        detail = (
            "repartition topics missing or of the wrong size (create them with "
            f"ensure_internal_topics): {unready}"
        )
        log.error("%s", detail)
        return _error_for_all(
            decoded,
            codec,
            AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA,
            detail,
            followup_ms=_deadline(group.now_ms, config.probing_rebalance_interval_ms // 10),
        )

    layout = plan_tasks(topology, sizing.source_partitions)
    end_sums = changelog_end_sums(layout, group.changelog_end_offsets)
    clients = build_clients(decoded, layout, end_sums)
    assignor_name = choose_task_assignor(config, lags_known=end_sums is not None)
    try:
        assignment = run_task_assignor(assignor_name, clients, layout, config)
        threads = {pid: distribute_client_tasks(c) for pid, c in assignment.clients.items()}
    except Exception as exc:  # an assignor bug must not take the group down
        detail = f"task assignment failed: {type(exc).__name__}: {exc}"
        log.exception("%s", detail)
        return _error_for_all(decoded, codec, AssignorError.ASSIGNMENT_ERROR, detail)

    followup_owner = _followup_consumer(assignment, group.leader_process_id)
    followup = ""
    if followup_owner is not None:
        followup = f"probing rebalance in {config.probing_rebalance_interval_ms} ms"
    if decoded.future_version is not None:
        followup = followup or "version probing: members rejoin on the common version"
    hosts = host_maps(assignment.clients, layout)
    try:
        members = encode_members(
            decoded,
            threads,
            layout,
            hosts,
            codec,
            used_version=used,
            commonly_supported=common,
            followup_consumer=followup_owner,
            followup_at_ms=_deadline(group.now_ms, config.probing_rebalance_interval_ms),
        )
    except ValueError as exc:  # e.g. an assignment over the payload limit: tell, don't crash
        detail = f"assignment cannot be encoded: {exc}"
        log.exception("%s", detail)
        return _error_for_all(decoded, codec, AssignorError.ASSIGNMENT_ERROR, detail)
    members.update(_rejected_members(decoded, codec))
    log.info(
        "assigned %d tasks over %d clients and %d members with %s at version %d (common %d)%s",
        len(layout.tasks),
        len(clients),
        len(members),
        assignor_name,
        used,
        common,
        f"; follow-up: {followup}" if followup else "; stable",
    )
    return LeaderResult(
        members=members,
        rejected=decoded.rejected,
        used_version=used,
        commonly_supported_version=common,
        assignor=assignor_name,
        layout=layout,
        clients_before=clients,
        task_assignment=assignment,
        threads=threads,
        followup=followup,
    )


# --- step 1 ----------------------------------------------------------------------------------


def decode_group(members: Mapping[str, MemberSubscription], codec: Codec) -> DecodedGroup:
    """Read every member's user data; a member that cannot be read is set aside, not fatal."""
    subscriptions: dict[str, SubscriptionInfo] = {}
    rejected: dict[str, str] = {}
    process_of: dict[str, ProcessId] = {}
    used = supported = codec.latest_supported
    future: int | None = None
    shutdown: list[str] = []
    for member_id in sorted(members):
        try:
            decoded = codec.decode_subscription(members[member_id].user_data)
        except ProtocolError as exc:
            rejected[member_id] = str(exc)
            log.error("member %s sent a subscription that cannot be read: %s", member_id, exc)
            continue
        used = min(used, decoded.version)
        supported = min(supported, decoded.latest_supported_version)
        if not isinstance(decoded, SubscriptionInfo):
            future = max(future or 0, decoded.version)
            log.info(
                "member %s sent a future subscription (version %d, newer than this leader's "
                "%d); it is served at the lowest version in use (version probing)",
                member_id,
                decoded.version,
                codec.latest_supported,
            )
            subscriptions[member_id] = SubscriptionInfo(
                version=codec.latest_supported,
                latest_supported_version=codec.latest_supported,
                process_id=FUTURE_PROCESS_ID,
            )
            process_of[member_id] = FUTURE_PROCESS_ID
            continue
        subscriptions[member_id] = decoded
        process_of[member_id] = decoded.process_id
        if decoded.error_code is AssignorError.SHUTDOWN_REQUESTED:
            shutdown.append(member_id)
    return DecodedGroup(
        subscriptions=subscriptions,
        rejected=rejected,
        process_of=process_of,
        min_used_version=used,
        min_supported_version=supported,
        future_version=future,
        shutdown_requested_by=tuple(shutdown),
    )


def without_refused(
    decoded: DecodedGroup, refused: Mapping[str, str], codec: Codec
) -> DecodedGroup:
    """Step 1b: the group without the refused members, whose versions no longer count."""
    if not refused:
        return decoded
    kept = {m: s for m, s in decoded.subscriptions.items() if m not in refused}
    return replace(
        decoded,
        subscriptions=kept,
        process_of={m: p for m, p in decoded.process_of.items() if m not in refused},
        min_used_version=min([codec.latest_supported, *(s.version for s in kept.values())]),
        min_supported_version=min(
            [codec.latest_supported, *(s.latest_supported_version for s in kept.values())]
        ),
    )


# --- step 2 / 3 helpers ----------------------------------------------------------------------


def unready_repartition_topics(
    sizing: InternalTopics, partition_counts: Mapping[str, int]
) -> dict[str, str]:
    """Repartition topics the cluster does not have with the count the topology needs."""
    problems: dict[str, str] = {}
    for topic, wanted in sorted(sizing.repartition_partitions.items()):
        actual = partition_counts.get(topic)
        if actual is None or actual < 1:
            problems[topic] = f"missing (needs {wanted} partitions)"
        elif actual != wanted:
            problems[topic] = f"has {actual} partitions, needs {wanted}"
    return problems


def changelog_end_sums(
    layout: TaskLayout, end_offsets: Mapping[TopicPartition, int] | None
) -> dict[TaskId, int] | None:
    """Each stateful task's changelog end-offset sum; None if any is unknown (then fall back)."""
    if end_offsets is None:
        return None
    sums: dict[TaskId, int] = {}
    for task in layout.stateful:
        offsets = []
        for partition in layout.changelogs.get(task, ()):
            offset = end_offsets.get(partition)
            if offset is None:
                log.warning(
                    "no end offset for changelog partition %s; lags are unknown this rebalance",
                    partition,
                )
                return None
            offsets.append(offset)
        sums[task] = end_offset_sum(offsets)
    return sums


def build_clients(
    decoded: DecodedGroup, layout: TaskLayout, end_sums: Mapping[TaskId, int] | None
) -> dict[ProcessId, ClientState]:
    """Group consumers by process and derive each client's previous tasks and lags."""
    sums = end_sums if end_sums is not None else unknown_end_offset_sums(layout.stateful)
    task_for_partition = {tp: task for task, parts in layout.tasks.items() for tp in parts}
    by_process: dict[ProcessId, list[str]] = {}
    for member_id in sorted(decoded.subscriptions):
        by_process.setdefault(decoded.process_of[member_id], []).append(member_id)
    clients: dict[ProcessId, ClientState] = {}
    for process_id, member_ids in by_process.items():
        first = decoded.subscriptions[member_ids[0]]
        reports = [
            ConsumerReport.from_subscription(m, decoded.subscriptions[m]) for m in member_ids
        ]
        clients[process_id] = build_client_state(
            process_id,
            reports,
            task_for_partition,
            sums,
            client_tags=first.client_tags,
            host_info=first.user_endpoint,
            rack=first.rack_id,
        )
    return clients


# --- step 4 ----------------------------------------------------------------------------------


def task_assignor(name: str) -> TaskAssignor:
    """The task assignor called ``name`` (``AssignorConfig.task_assignor``'s values)."""
    if name == "high_availability":
        from assignor.placement.high_availability import HighAvailabilityTaskAssignor

        return HighAvailabilityTaskAssignor()
    if name == "legacy_sticky":
        from assignor.placement.legacy_sticky import LegacyStickyTaskAssignor

        return LegacyStickyTaskAssignor()
    if name == "fallback_prior":
        from assignor.placement.fallback_prior import FallbackPriorTaskAssignor

        return FallbackPriorTaskAssignor()
    raise ValueError(f"unknown task assignor {name!r}")


def choose_task_assignor(config: AssignorConfig, *, lags_known: bool) -> str:
    """Kafka's ``createTaskAssignor``: legacy sticky if configured, else HA, else fallback."""
    if config.task_assignor == "legacy_sticky":
        return "legacy_sticky"
    if lags_known:
        return config.task_assignor
    log.warning(
        "Failed to fetch end offsets for changelogs, will return previous assignment to "
        "clients and trigger another rebalance to retry."
    )
    return "fallback_prior"


def run_task_assignor(
    name: str,
    clients: Mapping[ProcessId, ClientState],
    layout: TaskLayout,
    config: AssignorConfig,
) -> TaskAssignment:
    return task_assignor(name).place_tasks(clients, tuple(layout.tasks), layout.stateful, config)


# --- steps 6 and 7 ---------------------------------------------------------------------------

PartitionsByHost = dict[HostInfo, frozenset[TopicPartition]]
HostMaps = tuple[PartitionsByHost, PartitionsByHost]


def host_maps(clients: Mapping[ProcessId, ClientState], layout: TaskLayout) -> HostMaps:
    """Source partitions of each endpoint's active and standby tasks (clients with an endpoint)."""
    active: dict[HostInfo, frozenset[TopicPartition]] = {}
    standby: dict[HostInfo, frozenset[TopicPartition]] = {}
    for client in clients.values():
        if client.host_info is None:
            continue
        active[client.host_info] = frozenset(
            tp for task in client.active for tp in layout.tasks[task]
        )
        standby[client.host_info] = frozenset(
            tp for task in client.standby for tp in layout.tasks[task]
        )
    return active, standby


def encode_members(
    decoded: DecodedGroup,
    threads: Mapping[ProcessId, ThreadAssignment],
    layout: TaskLayout,
    hosts: HostMaps,
    codec: Codec,
    *,
    used_version: int,
    commonly_supported: int,
    followup_consumer: str | None,
    followup_at_ms: int,
) -> dict[str, MemberResult]:
    """One ``AssignmentInfo`` per member, its active tasks aligned with its sorted partitions."""
    results: dict[str, MemberResult] = {}
    for member_id, process_id in decoded.process_of.items():
        thread = threads[process_id]
        pairs = sorted(
            (tp, task) for task in thread.active.get(member_id, ()) for tp in layout.tasks[task]
        )
        standby = {
            task: tuple(sorted(layout.tasks[task])) for task in thread.standby.get(member_id, ())
        }
        info = AssignmentInfo.model_construct(
            version=used_version,
            commonly_supported_version=commonly_supported,
            active_tasks=tuple(task for _, task in pairs),
            standby_tasks=standby,
            partitions_by_host=hosts[0],
            standby_partitions_by_host=hosts[1],
            error_code=AssignorError.NONE,
            next_rebalance_ms=(
                followup_at_ms if member_id == followup_consumer else NO_FOLLOWUP_REBALANCE
            ),
        )
        partitions = tuple(tp for tp, _ in pairs)
        results[member_id] = MemberResult(
            partitions, info, codec.encode_assignment(info, version=used_version)
        )
    return results


# --- outcomes other than a normal assignment -------------------------------------------------


def _deadline(now_ms: int, delay_ms: int) -> int:
    """``now + delay``, saturated at "no follow-up": an interval near ``Long.MAX_VALUE`` (a
    way to turn probing off) must not produce a time no member can decode."""
    return min(now_ms + delay_ms, NO_FOLLOWUP_REBALANCE)


def _followup_consumer(assignment: TaskAssignment, leader: ProcessId | None) -> str | None:
    """The consumer that carries the probing deadline: the leader process's first consumer."""
    if not assignment.probing_rebalance_needed:
        return None
    clients = assignment.clients
    owner = clients.get(leader) if leader is not None else None
    if owner is None:
        owner = clients[min(clients, key=lambda p: p.sort_key)]
    return min(owner.consumers) if owner.consumers else None


def _rejected_members(decoded: DecodedGroup, codec: Codec) -> dict[str, MemberResult]:
    """An error assignment for every member whose subscription could not be read.

    Written at version 1, which every build of this codec reads.
    """
    results = {}
    for member_id in decoded.rejected:
        info = AssignmentInfo.error(AssignorError.ASSIGNMENT_ERROR, 1)
        results[member_id] = MemberResult((), info, codec.encode_assignment(info, version=1))
    return results


def _error_for_all(
    decoded: DecodedGroup,
    codec: Codec,
    code: AssignorError,
    detail: str,
    followup_ms: int | None = None,
) -> LeaderResult:
    """Kafka's ``errorAssignment``: every readable member gets the code and no partitions."""
    version = codec.latest_supported
    members: dict[str, MemberResult] = {}
    for member_id in decoded.subscriptions:
        info = AssignmentInfo(
            version=min(version, decoded.min_used_version),
            commonly_supported_version=min(version, decoded.min_supported_version),
            error_code=code,
            next_rebalance_ms=NO_FOLLOWUP_REBALANCE if followup_ms is None else followup_ms,
        )
        members[member_id] = MemberResult(
            (), info, codec.encode_assignment(info, version=info.version)
        )
    members.update(_rejected_members(decoded, codec))
    return LeaderResult(
        members=members,
        error=code,
        detail=detail,
        rejected=decoded.rejected,
        used_version=decoded.min_used_version,
        commonly_supported_version=decoded.min_supported_version,
        followup="retry after the error" if followup_ms is not None else "",
    )


def _answer_refused(
    result: LeaderResult, screening: Screening, decoded: DecodedGroup, codec: Codec
) -> LeaderResult:
    """Give each refused member its own error assignment (version 1, which every build reads,
    and no follow-up, so nothing tells it to rejoin) and the memory for the next generation."""
    members = dict(result.members)
    for member_id, reason in screening.refused.items():
        info = AssignmentInfo.error(AssignorError.ASSIGNMENT_ERROR, 1)
        members[member_id] = MemberResult((), info, codec.encode_assignment(info, version=1))
        log.debug("member %s refused: %s", member_id, reason)
    if result.error is AssignorError.NONE:
        memory = remember_upgrades(
            screening, decoded.subscriptions, result.commonly_supported_version
        )
    else:  # an error answer tells nobody to upgrade
        memory = replace(screening.memory, upgrade_told={})
    return replace(result, members=members, refused=dict(screening.refused), memory=memory)


def _sizing_failed(decoded: DecodedGroup, codec: Codec, failure: SizingFailure) -> LeaderResult:
    log.error("%s", failure.message)
    return _error_for_all(decoded, codec, failure.code, failure.message)


__all__ = [
    "FUTURE_PROCESS_ID",
    "DecodedGroup",
    "GroupInput",
    "LeaderResult",
    "MemberResult",
    "MemberSubscription",
    "assign_group",
    "decode_group",
]
