"""The four group APIs as plain values: what a member asks and what the coordinator answers.

Fields follow Kafka's JoinGroup v5, SyncGroup v3, Heartbeat v1 and LeaveGroup, the versions
aiokafka 0.14 speaks to a 4.x broker. They are frozen slotted dataclasses rather than pydantic
models because a simulation builds millions of them.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import TypeVar

import aiokafka.errors as aiokafka_errors

from simulator.shim.errors import ErrorCode, error_class

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1

Protocols = tuple[tuple[str, bytes], ...]

T = TypeVar("T")


def _stored_by_slots(cls: type[T]) -> type[T]:
    """Give a frozen slotted dataclass an ``__init__`` that stores each field through its slot's
    descriptor: what the generated one's ``object.__setattr__(self, name, value)`` ends in,
    without looking the name up each time (same parameters, same defaults, same values stored;
    the requests and answers of a 400-member rebalance are some 3,000 objects, and this makes
    their construction a quarter cheaper). Only for fields with plain defaults, as all of
    this module's are."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    namespace: dict[str, object] = {}
    params = []
    for f in fields(cls):  # type: ignore[arg-type]
        if f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: a default factory is not supported")
        namespace[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is MISSING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    body = "".join(f"    _set_{name}(self, {name})\n" for name in names)
    exec(f"def __init__(self, {', '.join(params)}):\n{body}", namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    init.__annotations__ = dict(cls.__init__.__annotations__)
    setattr(cls, "__init__", init)  # noqa: B010  # a class attribute mypy would check as a method
    return cls


@_stored_by_slots
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


@_stored_by_slots
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


@_stored_by_slots
@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()
    group_instance_id: str | None = None


@_stored_by_slots
@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: int
    member_assignment: bytes = b""

    @property
    def error(self) -> type[aiokafka_errors.BrokerResponseError]:
        return error_class(self.error_code)


@_stored_by_slots
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
