"""What members and the group leader say to each other: ids, messages, the versioned codec.

This module is the public API (underscore modules are private). It imports nothing else of the
project's; the assignor and the simulator build on it.

- ids: :class:`TaskId`, :class:`ProcessId`, :class:`HostInfo`, :class:`TopicPartition`;
- messages: :class:`SubscriptionInfo` (what a member reports), :class:`AssignmentInfo` (what the
  leader answers), :class:`VersionHeader` (what a reader learns of a version newer than its own);
- the codec: :class:`Codec` (one per build and leader: ``Codec(latest_supported=...)``) and the
  module-level ``encode_*`` / ``decode_*`` functions of the default codec;
- errors: :class:`ProtocolError` (bytes that cannot be trusted, naming the field) and
  :class:`AssignorError` (Kafka's assignment error codes).
"""

from importlib.metadata import PackageNotFoundError, version

from protocol.codec import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    Codec,
    decode,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
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

try:
    __version__ = version("streams-assignor")
except PackageNotFoundError:  # pragma: no cover - run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "LATEST_OFFSET",
    "LATEST_VERSION",
    "NO_FOLLOWUP_REBALANCE",
    "SUPPORTED_VERSIONS",
    "UNKNOWN_OFFSET_SUM",
    "AssignmentInfo",
    "AssignorError",
    "Codec",
    "HostInfo",
    "ProcessId",
    "ProtocolError",
    "SubscriptionInfo",
    "TaskId",
    "TopicPartition",
    "VersionHeader",
    "__version__",
    "decode",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]
