"""The group leader's ``assign()``, as one visible composition of small pure steps.

    decode_group        1. subscriptions -> clients keyed by process id (one consumer = one thread)
                           (``assignor.leader.decode``)
    screen_members      1b. refuse process-id clones and version liars (``assignor.leader.guard``)
    size_internal_topics 2. repartition topic counts, copartition groups
    plan_tasks          3. tasks and their partitions, stateful tasks, changelog partitions
    build_clients       +  previous tasks and lags per client (from changelog end offsets)
    run_task_assignor   4. tasks -> clients (high availability, legacy sticky or fallback)
    distribute_client_tasks 5. a client's tasks -> its consumers
    host_maps           6. which endpoint serves which partitions (interactive queries)
    encode_members      7. one AssignmentInfo per member, at the version every member reads
                           (``assignor.leader.encode``)
                        8. (member side: ``assignor.member``)

What goes in and comes out (``GroupInput``, ``LeaderResult``) is in ``assignor.leader.model``.
Nothing here raises for a problem of the group: a member whose bytes cannot be read, or that
``assignor.leader.guard`` refuses (a clone of another instance's process id, a version liar),
gets an error assignment of its own; missing topics, a shutdown request or a failing task
assignor become an error assignment for every member (``assignor.leader.error_answers``).
Everything is logged with the member or topic it concerns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from itertools import chain, compress, repeat
from operator import eq, itemgetter
from types import MappingProxyType
from typing import cast

from assignor.config import AssignorConfig
from assignor.leader.cache import LeaderCache
from assignor.leader.decode import decode_group, member_groups, without_refused
from assignor.leader.encode import encode_members, host_maps
from assignor.leader.error_answers import (
    answer_refused,
    error_for_all,
    rejected_members,
    sizing_failed,
)
from assignor.leader.explain import RebalanceSummary, explain, summarize
from assignor.leader.guard import screen_members
from assignor.leader.model import DecodedGroup, GroupInput, LeaderResult
from assignor.placement.client_state import ClientState
from assignor.placement.lags import LONG_MAX, TaskLags, end_offset_sum, unknown_end_offset_sums
from assignor.placement.target_cache import TargetCache
from assignor.placement.task_assignor import TaskAssignment, TaskAssignor
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout
from protocol.codec import DEFAULT_CODEC, Codec
from protocol.errors import AssignorError
from protocol.ids import ProcessId, TaskId, TopicPartition
from protocol.messages import LATEST_OFFSET, NO_FOLLOWUP_REBALANCE, SubscriptionInfo

log = logging.getLogger(__name__)

_NO_TASKS: frozenset[TaskId] = frozenset()
#: a client without tags (``build_client_state``'s own empty mapping, shared)
_NO_TAGS: Mapping[str, str] = MappingProxyType({})


# --- the composition -------------------------------------------------------------------------


def assign_group(
    topology: Topology,
    config: AssignorConfig,
    group: GroupInput,
    codec: Codec = DEFAULT_CODEC,
    cache: LeaderCache | None = None,
) -> LeaderResult:
    """Kafka Streams' leader-side ``assign()``: steps 1 to 7, composed.

    ``cache`` keeps the task plan and the changelog end sums between one leader's rebalances
    (``assignor.leader.cache``); without one, both are computed afresh, with the same result.
    """
    everyone = decode_group(group.members, codec)
    screening = screen_members(everyone.subscriptions, group.memory, everyone.groups or None)
    decoded = without_refused(everyone, screening.refused, codec)
    result = _assign_decoded(
        topology, config, group, decoded, codec, LeaderCache() if cache is None else cache
    )
    if screening.refused and not decoded.subscriptions and not decoded.rejected:
        result = replace(result, detail="every member was refused (process-id clones or "
                         "version liars; see the warnings of assignor.leader.guard)")
    return answer_refused(result, screening, decoded, codec)


def _assign_decoded(
    topology: Topology,
    config: AssignorConfig,
    group: GroupInput,
    decoded: DecodedGroup,
    codec: Codec,
    cache: LeaderCache,
) -> LeaderResult:
    """Steps 2 to 7 for the members the leader serves."""
    used = decoded.min_used_version
    common = decoded.min_supported_version
    if not decoded.subscriptions:
        detail = "no member sent a readable subscription"
        return error_for_all(decoded, codec, AssignorError.ASSIGNMENT_ERROR, detail)
    if decoded.shutdown_requested_by:
        detail = f"shutdown requested by member(s) {', '.join(decoded.shutdown_requested_by)}"
        log.warning("%s; telling every member", detail)
        return error_for_all(decoded, codec, AssignorError.SHUTDOWN_REQUESTED, detail)

    sizing = cache.sizing(topology, group.partition_counts, size_internal_topics)
    if not isinstance(sizing, InternalTopics):
        return sizing_failed(decoded, codec, sizing)
    unready = unready_repartition_topics(sizing, group.partition_counts)
    if unready:
        detail = (
            "repartition topics missing or of the wrong size (create them with "
            f"ensure_internal_topics): {unready}"
        )
        log.error("%s", detail)
        return error_for_all(
            decoded,
            codec,
            AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA,
            detail,
            followup_ms=_deadline(group.now_ms, config.probing_rebalance_interval_ms // 10),
        )

    planned = cache.plan(topology, sizing.source_partitions)
    layout = planned.layout
    end_sums = cache.end_sums(layout, group.changelog_end_offsets, changelog_end_sums)
    clients = build_clients(decoded, layout, end_sums)
    assignor_name = choose_task_assignor(config, lags_known=end_sums is not None)
    try:
        assignment = run_task_assignor(assignor_name, clients, layout, config, cache.targets)
        stateful = layout.stateful
        threads = cache.threads.split(
            assignment.clients, stateful, every_task_stateful=len(stateful) == len(layout.tasks)
        )
    except Exception as exc:  # an assignor bug must not take the group down
        detail = f"task assignment failed: {type(exc).__name__}: {exc}"
        log.exception("%s", detail)
        return error_for_all(decoded, codec, AssignorError.ASSIGNMENT_ERROR, detail)

    followup_owner = _followup_consumer(assignment, group.leader_process_id)
    followup = ""
    if followup_owner is not None:
        followup = f"probing rebalance in {config.probing_rebalance_interval_ms} ms"
    if decoded.future_version is not None:
        followup = followup or "version probing: members rejoin on the common version"
    hosts = host_maps(assignment.clients, layout, planned=planned)
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
            planned=planned,
        )
    except ValueError as exc:  # e.g. an assignment over the payload limit: tell, don't crash
        detail = f"assignment cannot be encoded: {exc}"
        log.exception("%s", detail)
        return error_for_all(decoded, codec, AssignorError.ASSIGNMENT_ERROR, detail)
    members.update(rejected_members(decoded, codec))
    result = LeaderResult(
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
    summary = summarize(result, config)
    _log_decision(result, summary, config, len(members))
    return replace(result, summary=summary)


def _log_decision(
    result: LeaderResult, summary: RebalanceSummary | None, config: AssignorConfig, members: int
) -> None:
    """One INFO line per rebalance (what moved), one WARNING for a standby shortfall, and at
    DEBUG the reason for every replica (``assignor.leader.explain``, never recomputed)."""
    if summary is None:
        return
    if log.isEnabledFor(logging.INFO):
        log.info(
            "%s; %d members, version %d (common %d)%s",
            summary.line(),
            members,
            result.used_version,
            result.commonly_supported_version,
            f"; follow-up: {result.followup}" if result.followup else "",
        )
    if summary.standbys_short:
        log.warning(
            "%d standby replicas of %d tasks could not be placed (num.standby.replicas %d, "
            "%d clients): add application instances to keep the requested replicas",
            summary.standbys_short,
            summary.short_tasks,
            config.num_standby_replicas,
            summary.clients,
        )
    if log.isEnabledFor(logging.DEBUG):
        for placement in explain(result, config):
            log.debug(
                "%s %s on %s (%s): %s",
                placement.task,
                placement.role,
                placement.process_id,
                placement.member,
                placement.reason,
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
    changelogs = layout.changelogs
    if len(changelogs) == len(layout.stateful) and set(map(len, changelogs.values())) == {1}:
        # One changelog partition per task, the usual plan: looked up in C, no loop.
        found = list(map(end_offsets.get, map(itemgetter(0), changelogs.values())))
        if None not in found:  # ints compared with None in C
            ends = cast(list[int], found)
            if (
                min(ends) >= 0
                and max(ends) <= LONG_MAX
                # the same tasks: sets made from a dict and a set keep their hashes, so no
                # ``TaskId.__hash__`` call (a Python function) per task
                and frozenset(changelogs) == layout.stateful
            ):
                # each task's sum is its one end offset
                return dict(zip(changelogs, ends, strict=True))
    sums: dict[TaskId, int] = {}
    changelogs_of = changelogs.get
    end_of = end_offsets.get
    no_partitions: tuple[TopicPartition, ...] = ()
    for task in layout.stateful:
        partitions = changelogs_of(task, no_partitions)
        if len(partitions) == 1:  # one changelog, the common case: no list, no loop
            offset = end_of(partitions[0])
            if offset is not None and 0 <= offset <= LONG_MAX:
                sums[task] = offset  # what end_offset_sum gives, without the call per task
                continue
        offsets = []
        for partition in partitions:
            offset = end_of(partition)
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
    decoded: DecodedGroup,
    layout: TaskLayout,
    end_sums: Mapping[TaskId, int] | None,
) -> dict[ProcessId, ClientState]:
    """Group consumers by process and derive each client's previous tasks and lags.

    ``build_client_state`` for consumers that own no partitions, which is what the leader gets:
    aiokafka's ``ConsumerProtocol`` v0 carries no owned partitions, so previous actives come
    from offset sums of ``-2`` alone. Built directly rather than through a ``ConsumerReport``
    per consumer: at 10,000 consumers that bookkeeping cost more than the clients' contents
    (``tests/assignor/leader/test_build_clients.py`` checks both give equal states).
    """
    sums = end_sums if end_sums is not None else unknown_end_offset_sums(layout.stateful)
    # Each process's groups of members that sent the same subscription object, in the order
    # of their first member: the consumers of a process that run no task share one, so the
    # bookkeeping below runs per group, not per consumer (10 groups for 8,000 consumers at
    # 1,000 threads per client).
    by_process: dict[ProcessId, list[tuple[SubscriptionInfo, tuple[str, ...]]]] = {}
    last: tuple[ProcessId | None, list[tuple[SubscriptionInfo, tuple[str, ...]]]] = (None, [])
    for info, member_ids in member_groups(decoded):
        process_id = info.process_id  # (the group's process: ``process_of`` of its members)
        if process_id is not last[0]:  # (a process's consecutive groups: no hash each)
            last = (process_id, by_process.setdefault(process_id, []))
        last[1].append((info, member_ids))
    clients: dict[ProcessId, ClientState] = {}
    for process_id, groups in by_process.items():
        first = groups[0][0]  # the group of the process's smallest member id
        if len(groups) == 1:
            consumers = groups[0][1]
        else:
            consumers = tuple(sorted(chain.from_iterable(ids for _, ids in groups)))
        # (only the consumers that reported: a table of every consumer touched each of them
        # for nothing, 8,000 of 10,000 at 1,000 threads per client)
        by_consumer: dict[str, frozenset[TaskId]] = {}
        reporting = [(info, ids) for info, ids in groups if info.task_offset_sums]
        offset_sums: dict[TaskId, int] = {}
        if len(reporting) == 1:
            reported = reporting[0][0].task_offset_sums
            offset_sums.update(reported)
            by_consumer.update(dict.fromkeys(reporting[0][1], frozenset(reported)))
        elif reporting:
            # A later consumer's report wins, as with Kafka's putAll: the reports in member
            # order (only the reporting members: the others add nothing).
            report_of = {m: info.task_offset_sums for info, ids in reporting for m in ids}
            for member_id in sorted(report_of):
                reported = report_of[member_id]
                offset_sums.update(reported)
                by_consumer[member_id] = frozenset(reported)
        if set(offset_sums.values()) <= {LATEST_OFFSET}:
            # all running (a client's own actives, no standbys): the set from the dict takes
            # its stored hashes, where picking the running ones hashes each task in Python
            previous_active, previous_standby = frozenset(offset_sums), _NO_TASKS
        else:  # the running ones picked in C (each still hashed once), the rest by set
            previous_active = frozenset(
                compress(offset_sums, map(eq, offset_sums.values(), repeat(LATEST_OFFSET)))
            )
            previous_standby = frozenset(offset_sums.keys() - previous_active)
        tags = first.client_tags
        clients[process_id] = ClientState(
            process_id=process_id,
            capacity=len(consumers),
            consumers=consumers,  # sorted
            previous_active=previous_active,
            previous_standby=previous_standby,
            task_lags=TaskLags(offset_sums, sums),
            previous_tasks_by_consumer=by_consumer,
            previous_active_by_consumer={},
            owned_partitions={},
            client_tags=dict(tags) if tags else _NO_TAGS,
            host_info=first.user_endpoint,
            rack=first.rack_id,
        )
    return clients


# --- step 4 ----------------------------------------------------------------------------------


def task_assignor(name: str, targets: TargetCache | None = None) -> TaskAssignor:
    """The task assignor called ``name`` (``AssignorConfig.task_assignor``'s values);
    ``targets``: the leader's kept balanced target, for the high-availability assignor."""
    if name == "high_availability":
        from assignor.placement.high_availability import HighAvailabilityTaskAssignor

        return HighAvailabilityTaskAssignor(targets)
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
    targets: TargetCache | None = None,
) -> TaskAssignment:
    return task_assignor(name, targets).place_tasks(
        clients, tuple(layout.tasks), layout.stateful, config
    )



# --- the follow-up rebalance -----------------------------------------------------------------


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



__all__ = [
    "assign_group",
    "build_clients",
    "changelog_end_sums",
    "choose_task_assignor",
    "run_task_assignor",
    "task_assignor",
    "unready_repartition_topics",
]
