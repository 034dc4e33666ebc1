"""Kafka's classic consumer-group protocol in one asyncio process, on real or virtual time.

``GroupCoordinator`` plays the broker's group coordinator; ``ShimMember`` plays an aiokafka
consumer around any aiokafka-style assignor; ``VirtualClock`` runs hours of rebalancing in
milliseconds, deterministically for a seed; every generation leaves a ``RebalanceRecord`` in the
shared ``Journal``. Knows nothing of Kafka Streams.
"""

from simulator.shim.clock import (
    Clock,
    RealClock,
    Timer,
    VirtualClock,
    VirtualTimeDeadlock,
    VirtualTimeLivelock,
)
from simulator.shim.cluster import make_cluster
from simulator.shim.coordinator import CoordinatorConfig, GroupCoordinator, GroupState
from simulator.shim.errors import (
    ErrorCode,
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    MemberFailed,
)
from simulator.shim.member import Assignor, ShimMember, settle
from simulator.shim.records import Event, Journal, RebalanceRecord
from simulator.shim.requests import (
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
    "Timer",
    "VirtualClock",
    "VirtualTimeDeadlock",
    "VirtualTimeLivelock",
    "make_cluster",
    "settle",
]
