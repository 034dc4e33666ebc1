"""Builders and invariant checks shared by the pipeline tests (``test_pipeline*.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assignor.leader.decode import FUTURE_PROCESS_ID
from assignor.leader.model import GroupInput, LeaderResult, MemberSubscription
from assignor.member import interpret_assignment
from assignor.topology.data_form import topology_from_data
from assignor.topology.model import Topology
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import AssignmentInfo, SubscriptionInfo

#: orders -> (repartition) -> join with users and a logged store; clicks, stateless.
SHOP: dict[str, Any] = {
    "application_id": "shop",
    "subtopologies": [
        {"id": 0, "source_topics": ["orders"], "sink_topics": ["shop-by-user-repartition"]},
        {
            "id": 1,
            "source_topics": ["shop-by-user-repartition", "users"],
            "changelog_topics": ["shop-totals-changelog"],
            "stores": ["totals"],
        },
        {"id": 2, "source_topics": ["clicks"]},
    ],
    "repartition_topics": {"shop-by-user-repartition": None},
    "copartition_groups": [["shop-by-user-repartition", "users"]],
}
SHOP_COUNTS = {"orders": 4, "users": 3, "clicks": 2, "shop-by-user-repartition": 3}
CHANGELOG = "shop-totals-changelog"


def shop() -> Topology:
    return topology_from_data(SHOP)


def shop_end_offsets(*offsets: int) -> dict[TopicPartition, int]:
    offsets = offsets or (1000, 1000, 1000)
    return {TopicPartition(CHANGELOG, p): o for p, o in enumerate(offsets)}


def subscription(
    pid: int,
    *,
    build: int = 3,
    version: int | None = None,
    sums: Mapping[str, int] | None = None,
    endpoint: HostInfo | None = None,
    error: AssignorError = AssignorError.NONE,
) -> bytes:
    """A member's user data as a build whose codec reads up to ``build`` would send it."""
    info = SubscriptionInfo(
        version=version or build,
        latest_supported_version=build,
        process_id=ProcessId.for_int(pid),
        user_endpoint=endpoint,
        task_offset_sums={TaskId.parse(t): s for t, s in (sums or {}).items()},
        error_code=error,
    )
    return Codec(build).encode_subscription(info)


def group(
    members: Mapping[str, bytes],
    *,
    counts: Mapping[str, int] | None = None,
    end_offsets: Mapping[TopicPartition, int] | str | None = "default",
    now_ms: int = 1_000,
    leader: int | None = None,
) -> GroupInput:
    offsets = shop_end_offsets() if end_offsets == "default" else end_offsets
    assert not isinstance(offsets, str)
    return GroupInput(
        members={m: MemberSubscription(("orders",), data) for m, data in members.items()},
        partition_counts=dict(SHOP_COUNTS if counts is None else counts),
        changelog_end_offsets=offsets,
        now_ms=now_ms,
        leader_process_id=None if leader is None else ProcessId.for_int(leader),
    )


def decoded(result: LeaderResult, member: str, codec: Codec) -> AssignmentInfo:
    info = codec.decode_assignment(result.members[member].user_data)
    assert isinstance(info, AssignmentInfo), f"{member} cannot read its assignment: {info}"
    return info


def check_served(
    result: LeaderResult,
    *,
    process_of: Mapping[str, ProcessId],
    builds: Mapping[str, int],
    used: Mapping[str, int],
    endpoints: Mapping[str, HostInfo | None] | None = None,
) -> None:
    """Every invariant of a normal (no group error) assignment, checked from the bytes up."""
    assert result.error is AssignorError.NONE, result.detail
    layout = result.layout
    assert layout is not None
    served = [m for m in result.members if m not in result.rejected]
    active_owner: dict[TaskId, str] = {}
    partition_owner: dict[TopicPartition, str] = {}
    standby_processes: dict[TaskId, set[ProcessId]] = {}
    for member in served:
        mine = result.members[member]
        # the bytes, read by the member's own build, say what the leader decided
        info = decoded(result, member, Codec(builds[member]))
        assert info == Codec().decode_assignment(mine.user_data)
        assert info.version == result.used_version
        assert info.commonly_supported_version == result.commonly_supported_version
        assert info.error_code is AssignorError.NONE
        assert info.active_tasks == mine.info.active_tasks
        assert set(info.standby_tasks) == set(mine.info.standby_tasks)
        # active tasks aligned one-to-one with the sorted partitions
        assert list(mine.partitions) == sorted(mine.partitions)
        assert len(info.active_tasks) == len(mine.partitions)
        for task, tp in zip(info.active_tasks, mine.partitions, strict=True):
            assert tp in layout.tasks[task], f"{member}: {tp} is not a partition of {task}"
        for task in set(info.active_tasks):
            assert task not in active_owner, f"{task} active on {active_owner[task]}, {member}"
            active_owner[task] = member
            assert set(layout.tasks[task]) <= set(mine.partitions)
        for tp in mine.partitions:
            assert tp not in partition_owner, f"{tp} on {partition_owner[tp]} and {member}"
            partition_owner[tp] = member
        for task, parts in info.standby_tasks.items():
            assert task in layout.stateful, f"stateless {task} as standby on {member}"
            assert set(parts) == set(layout.tasks[task])
            standby_processes.setdefault(task, set()).add(process_of[member])
        # the member side gives back exactly these tasks
        endpoint = (endpoints or {}).get(member)
        decision = interpret_assignment(
            info,
            list(reversed(mine.partitions)),
            used_version=used[member],
            latest_supported_version=builds[member],
            endpoint=endpoint,
            previous=None,
        )
        assert decision.assignment.error is AssignorError.NONE, decision.reason
        assert set(decision.assignment.active_tasks) == set(info.active_tasks)
        for task, parts in decision.assignment.active_tasks.items():
            assert set(parts) == set(layout.tasks[task])
        assert set(decision.assignment.standby_tasks) == set(info.standby_tasks)
    if served:
        assert set(active_owner) == set(layout.tasks), "some task is active nowhere"
        every_partition = {tp for parts in layout.tasks.values() for tp in parts}
        assert set(partition_owner) == every_partition
    for task, processes in standby_processes.items():
        assert process_of[active_owner[task]] not in processes, f"{task}: standby beside active"
    _check_host_maps(result, served, process_of, endpoints or {})


def _check_host_maps(
    result: LeaderResult,
    served: list[str],
    process_of: Mapping[str, ProcessId],
    endpoints: Mapping[str, HostInfo | None],
) -> None:
    """Each endpoint maps to the partitions of its process's members, the same for everyone."""
    expected: dict[HostInfo, set[TopicPartition]] = {}
    expected_standby: dict[HostInfo, set[TopicPartition]] = {}
    for member in served:
        endpoint = endpoints.get(member)
        if endpoint is None or process_of[member] == FUTURE_PROCESS_ID:
            continue
        mine = result.members[member]
        expected.setdefault(endpoint, set()).update(mine.partitions)
        standby = expected_standby.setdefault(endpoint, set())
        for parts in mine.info.standby_tasks.values():
            standby.update(parts)
    for member in served:
        info = result.members[member].info
        want, want_standby = expected, expected_standby
        if not info.host_maps_complete:  # version 4 past the budget: the own endpoint only
            own = endpoints.get(member)
            want = {h: p for h, p in expected.items() if h == own}
            want_standby = {h: p for h, p in expected_standby.items() if h == own}
        assert {h: set(p) for h, p in info.partitions_by_host.items()} == want
        assert {h: set(p) for h, p in info.standby_partitions_by_host.items()} == want_standby
