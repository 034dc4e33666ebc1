"""Plain-data views shared by the commands, so ``assign`` and ``describe`` print the same fields."""

from __future__ import annotations

from typing import Any

from assignor.config import AssignorConfig
from assignor.leader.explain import explain
from assignor.leader.model import LeaderResult, MemberResult
from protocol.jsonview import assignment_view


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
    """A member's answer: :func:`protocol.jsonview.assignment_view` (the fields
    ``python -m protocol decode`` prints too) and the bytes sent."""
    return assignment_view(result.info, result.partitions) | {
        "user_data_hex": result.user_data.hex(),
    }


__all__ = ["member_to_data", "placements_to_data"]
