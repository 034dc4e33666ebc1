"""The four group APIs as plain values: what a member asks and what the coordinator answers.

Fields follow Kafka's JoinGroup v5, SyncGroup v3, Heartbeat v1 and LeaveGroup, the versions
aiokafka 0.14 speaks to a 4.x broker. They are frozen slotted dataclasses rather than pydantic
models because a simulation builds millions of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import aiokafka.errors as aiokafka_errors

from simulator.shim.errors import ErrorCode, error_class

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    protocols: Protocols
    protocol_type: str = "consumer"
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 30_000
    group_instance_id: str | None = None
    client_id: str = "shim"


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error_code: int
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = NO_GENERATION
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()

    @property
    def error(self) -> type[aiokafka_errors.BrokerResponseError]:
        return error_class(self.error_code)


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: int
    member_assignment: bytes = b""

    @property
    def error(self) -> type[aiokafka_errors.BrokerResponseError]:
        return error_class(self.error_code)


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: int

    @property
    def error(self) -> type[aiokafka_errors.BrokerResponseError]:
        return error_class(self.error_code)


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    """Leave for each ``(member_id, group_instance_id)``; an admin may name only the instance."""

    group_id: str
    members: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error_code: int
    members: tuple[tuple[str, str | None, int], ...] = ()

    @property
    def error(self) -> type[aiokafka_errors.BrokerResponseError]:
        return error_class(self.error_code)


def ok(code: int) -> bool:
    return code == ErrorCode.NONE
