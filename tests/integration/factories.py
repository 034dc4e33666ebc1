"""Assignor factories for ``member_proc --assignor module:factory`` (one call per consumer)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from tests.integration.member_proc import MemberContext


def roundrobin(ctx: MemberContext) -> Any:
    """aiokafka's own round-robin assignor (its methods are classmethods; an instance works)."""
    return RoundRobinPartitionAssignor()


def range_(ctx: MemberContext) -> Any:
    return RangePartitionAssignor()


class DescribingRoundRobin:
    """Round-robin that can say which instance and process it is, to test the factory contract."""

    name = RoundRobinPartitionAssignor.name
    version = RoundRobinPartitionAssignor.version

    def __init__(self, ctx: MemberContext) -> None:
        self._ctx = ctx
        self._process_token = ctx.shared.setdefault("process_token", uuid.uuid4().hex)
        self._instance_token = uuid.uuid4().hex
        self._assignments = 0

    def metadata(self, topics: Iterable[str]) -> Any:
        return RoundRobinPartitionAssignor.metadata(topics)

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> Any:
        return RoundRobinPartitionAssignor.assign(cluster, members)

    def on_assignment(self, assignment: Any) -> None:
        self._assignments += 1

    def describe_last_assignment(self) -> dict[str, Any]:
        return {
            "consumer_index": self._ctx.consumer_index,
            "process_token": self._process_token,
            "instance_token": self._instance_token,
            "assignments_seen": self._assignments,
            "config": dict(self._ctx.config),
        }


def describing_roundrobin(ctx: MemberContext) -> Any:
    return DescribingRoundRobin(ctx)
