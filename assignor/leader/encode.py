"""Steps 6 and 7 of the pipeline: which endpoint serves which partitions, and one encoded
``AssignmentInfo`` per member at the version every member reads."""

from __future__ import annotations

from collections.abc import Mapping

from assignor.leader.model import DecodedGroup, MemberResult
from assignor.placement.client_state import ClientState
from assignor.placement.threads import ThreadAssignment
from assignor.topology.tasks import TaskLayout
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import HostInfo, ProcessId, TopicPartition
from protocol.messages import NO_FOLLOWUP_REBALANCE, AssignmentInfo

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


__all__ = ["HostMaps", "PartitionsByHost", "encode_members", "host_maps"]
