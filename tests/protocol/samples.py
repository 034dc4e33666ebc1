"""Fixed messages that exercise every field; the golden files are these, written per version."""

from __future__ import annotations

from uuid import UUID

import msgpack

from protocol import (
    LATEST_OFFSET,
    UNKNOWN_OFFSET_SUM,
    AssignmentInfo,
    AssignorError,
    HostInfo,
    ProcessId,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
)
from protocol.codec import SUPPORTED_VERSIONS

_PROCESS = ProcessId(UUID("f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d"))  # top bit set: signed order
_HOST_A = HostInfo("streams-a.example.com", 8080)
_HOST_B = HostInfo("10.0.0.7", 7070)
_HOST_C = HostInfo("::1", 9090)


def _tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def subscription(version: int) -> SubscriptionInfo:
    """A member of a version-``version`` build that has heard of version 3 (or its own, later)."""
    sums = {
        TaskId(0, 0): LATEST_OFFSET,
        TaskId(0, 1): 1_234_567,
        TaskId(0, 130): 0,
        TaskId(1, 2): UNKNOWN_OFFSET_SUM,
        TaskId(2, 5): 2**63 - 1,
    }
    if version >= 3:
        sums[TaskId(0, 3, topology="billing")] = 42
    return SubscriptionInfo(
        version=version,
        latest_supported_version=max(3, version),
        process_id=_PROCESS,
        user_endpoint=_HOST_A,
        task_offset_sums=sums,
        unique_field=7,
        error_code=AssignorError.SHUTDOWN_REQUESTED,
        client_tags={"zone": "eu-west-1a", "cluster": "k1"},
        rack_id="rack-2",
        group_instance_id="streams-a-1",
    )


def assignment(version: int, *, own_host_only: bool = False) -> AssignmentInfo:
    """Every field set; ``own_host_only`` (version 4 on): the host maps of ``_HOST_A`` alone."""
    active = [TaskId(0, 1), TaskId(1, 1), TaskId(0, 4), TaskId(0, 1)]
    if version >= 3:
        active.append(TaskId(0, 3, topology="billing"))
    by_host = {
        _HOST_A: frozenset({_tp("orders", 1), _tp("orders", 4), _tp("payments", 1)}),
        _HOST_B: frozenset({_tp("orders", 0), _tp("orders", 200), _tp("orders", 3)}),
        _HOST_C: frozenset(),
    }
    if own_host_only:
        by_host = {_HOST_A: by_host[_HOST_A]}
    return AssignmentInfo(
        version=version,
        commonly_supported_version=max(3, version),
        active_tasks=tuple(active),
        standby_tasks={
            TaskId(0, 2): (_tp("orders", 2), _tp("payments", 2)),
            TaskId(2, 0): (_tp("app-store-changelog", 0),),
        },
        partitions_by_host=by_host,
        standby_partitions_by_host={_HOST_A: frozenset({_tp("orders", 2), _tp("payments", 2)})},
        error_code=AssignorError.NONE,
        next_rebalance_ms=1_730_000_000_000,
        host_maps_complete=not own_host_only,
    )


#: Golden file name -> (kind, version, the message written at that version).
GOLDEN = {
    **{f"subscription_v{v}.bin": ("subscription", v, subscription(v)) for v in SUPPORTED_VERSIONS},
    **{f"assignment_v{v}.bin": ("assignment", v, assignment(v)) for v in SUPPORTED_VERSIONS},
    "assignment_v4_own_host.bin": ("assignment", 4, assignment(4, own_host_only=True)),
}

#: Payloads of a version 9 nobody has written yet: the same header, the error code right after
#: it (as every version from 4 keeps it), then fields (an extension type, a map with integer
#: keys, a long array) that today's reader could not parse. The subscription asks for a
#: shutdown; the assignment carries a code this build does not know.
FUTURE_ERROR_CODES = {"future_subscription_v9.bin": 4, "future_assignment_v9.bin": 77}
FUTURE = {
    "future_subscription_v9.bin": msgpack.packb(
        [9, 12, 0x53, 4, msgpack.ExtType(42, b"new"), {1: "x"}, list(range(300))]
    ),
    "future_assignment_v9.bin": msgpack.packb(
        [9, 9, 0x41, 77, msgpack.ExtType(7, b"\x00" * 32), {2: [b"raw"]}, None]
    ),
}
