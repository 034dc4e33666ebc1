"""What members and the group coordinator say to each other: ids, messages, the versioned codec.

This package imports nothing else of the project's; the assignor and the simulator build on it.
"""

from protocol.errors import AssignorError, ProtocolError
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import (
    LATEST_OFFSET,
    NO_FOLLOWUP_REBALANCE,
    UNKNOWN_OFFSET_SUM,
    AssignmentInfo,
    SubscriptionInfo,
    VersionHeader,
)

__all__ = [
    "LATEST_OFFSET",
    "NO_FOLLOWUP_REBALANCE",
    "UNKNOWN_OFFSET_SUM",
    "AssignmentInfo",
    "AssignorError",
    "HostInfo",
    "ProcessId",
    "ProtocolError",
    "SubscriptionInfo",
    "TaskId",
    "TopicPartition",
    "VersionHeader",
]
