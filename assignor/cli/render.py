"""Plain-data views shared by the commands, so ``assign`` and ``describe`` print the same fields."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assignor.config import AssignorConfig
from assignor.leader.explain import explain
from assignor.leader.model import LeaderResult, MemberResult
from assignor.member import align_active_tasks
from protocol.ids import HostInfo, TopicPartition
from protocol.messages import NO_FOLLOWUP_REBALANCE


def placements_to_data(result: LeaderResult, config: AssignorConfig) -> list[dict[str, Any]]:
    """``assignor.explain``'s placements: task, role, process, member, reason."""
    return [
        {
            "task": str(p.task),
            "role": p.role,
            "process_id": str(p.process_id),
            "member": p.member,
            "reason": p.reason,
        }
        for p in explain(result, config)
    ]


def member_to_data(result: MemberResult) -> dict[str, Any]:
    info = result.info
    active = align_active_tasks(info.active_tasks, result.partitions) or {}
    return {
        "error": info.error_code.name,
        "version": info.version,
        "commonly_supported_version": info.commonly_supported_version,
        "partitions": [str(tp) for tp in sorted(result.partitions)],
        "active_tasks": {str(t): partitions_to_data(p) for t, p in sorted(active.items())},
        "standby_tasks": {
            str(t): partitions_to_data(p) for t, p in sorted(info.standby_tasks.items())
        },
        "partitions_by_host": hosts_to_data(info.partitions_by_host),
        "standby_partitions_by_host": hosts_to_data(info.standby_partitions_by_host),
        "next_rebalance_ms": (
            None if info.next_rebalance_ms == NO_FOLLOWUP_REBALANCE else info.next_rebalance_ms
        ),
        "user_data_hex": result.user_data.hex(),
    }


def partitions_to_data(
    partitions: Sequence[TopicPartition] | frozenset[TopicPartition],
) -> list[str]:
    return [str(tp) for tp in sorted(partitions)]


def hosts_to_data(by_host: Mapping[HostInfo, frozenset[TopicPartition]]) -> dict[str, list[str]]:
    return {
        f"{host.host}:{host.port}": partitions_to_data(parts)
        for host, parts in sorted(by_host.items(), key=lambda item: (item[0].host, item[0].port))
    }


__all__ = ["hosts_to_data", "member_to_data", "partitions_to_data", "placements_to_data"]
