"""What a reader should see after a model is written at an older version: the spec, restated.

Written independently of the codec (from its documented version table) so tests compare the
codec against the documentation rather than against itself.
"""

from __future__ import annotations

from protocol import (
    NO_FOLLOWUP_REBALANCE,
    AssignmentInfo,
    AssignorError,
    SubscriptionInfo,
    VersionHeader,
)
from protocol.messages import HEADER_ERROR_CODE_VERSION


def subscription_as_read(info: SubscriptionInfo, version: int) -> SubscriptionInfo:
    """v1 carries process id, endpoint, offset sums; v2 adds unique field and error code."""
    update: dict[str, object] = {"version": version}
    if version < 3:
        update.update(client_tags={}, rack_id=None, group_instance_id=None)
    if version < 2:
        update.update(unique_field=0, error_code=AssignorError.NONE)
    return info.model_copy(update=update)


def assignment_as_read(info: AssignmentInfo, version: int) -> AssignmentInfo:
    """v1 carries tasks, partitions by host and error code; v2 adds standby hosts and next ms."""
    update: dict[str, object] = {"version": version}
    if version < 2:
        update.update(standby_partitions_by_host={}, next_rebalance_ms=NO_FOLLOWUP_REBALANCE)
    return info.model_copy(update=update)


def header_as_read(version: int, second: int, error_code: int) -> VersionHeader:
    """An older build's view of a newer payload: the two header ints, and from version 4 on
    the error code (the fourth field)."""
    return VersionHeader(
        version=version,
        latest_supported_version=second,
        error_code=error_code if version >= HEADER_ERROR_CODE_VERSION else None,
    )
