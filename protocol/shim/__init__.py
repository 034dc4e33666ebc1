"""Kafka's classic consumer-group protocol in one asyncio process, on real or virtual time.

``GroupCoordinator`` plays the broker's group coordinator; ``ShimMember`` plays an aiokafka
consumer around any aiokafka-style assignor; ``VirtualClock`` runs hours of rebalancing in
milliseconds, deterministically for a seed; every generation leaves a ``RebalanceRecord`` in the
shared ``Journal``. Knows nothing of Kafka Streams.
"""

from protocol.shim.clock import Clock, RealClock, VirtualClock, VirtualTimeDeadlock
from protocol.shim.cluster import make_cluster
from protocol.shim.coordinator import CoordinatorConfig, GroupCoordinator, GroupState
from protocol.shim.errors import ErrorCode, FencedInstanceIdError, GroupMaxSizeReachedError
from protocol.shim.member import Assignor, MemberFailed, ShimMember, settle
from protocol.shim.records import Event, Journal, RebalanceRecord
from protocol.shim.requests import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = [
    "Assignor",
    "Clock",
    "CoordinatorConfig",
    "ErrorCode",
    "Event",
    "FencedInstanceIdError",
    "GroupCoordinator",
    "GroupMaxSizeReachedError",
    "GroupState",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "Journal",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "MemberFailed",
    "RealClock",
    "RebalanceRecord",
    "ShimMember",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "VirtualClock",
    "VirtualTimeDeadlock",
    "make_cluster",
    "settle",
]
