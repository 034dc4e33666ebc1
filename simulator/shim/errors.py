"""Kafka's error codes for the group APIs, and the aiokafka exception class for each.

Responses of the shim carry the same numeric codes a broker sends, so a member reacts to them
through ``aiokafka.errors.for_code`` exactly as aiokafka does. aiokafka 0.14 has no class for
codes 81 and 82; the two are defined here with aiokafka's base class so they print Kafka's names.
"""

from __future__ import annotations

from enum import IntEnum

import aiokafka.errors as aiokafka_errors


class ErrorCode(IntEnum):
    """The codes the classic group coordinator answers with (Kafka's names and numbers)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    COORDINATOR_NOT_AVAILABLE = 15
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82


class GroupMaxSizeReachedError(aiokafka_errors.BrokerResponseError):  # type: ignore[misc]
    errno = 81
    message = "GROUP_MAX_SIZE_REACHED"
    description = "The consumer group has reached its maximum number of members."


class FencedInstanceIdError(aiokafka_errors.BrokerResponseError):  # type: ignore[misc]
    errno = 82
    message = "FENCED_INSTANCE_ID"
    description = (
        "A newer incarnation with the same group.instance.id has joined; this one is fenced."
    )


_LOCAL = {81: GroupMaxSizeReachedError, 82: FencedInstanceIdError}


def error_class(code: int) -> type[aiokafka_errors.BrokerResponseError]:
    """aiokafka's exception class for a Kafka error code (ours for 81 and 82)."""
    local = _LOCAL.get(code)
    return local if local is not None else aiokafka_errors.for_code(code)


class MemberFailed(RuntimeError):
    """A shim member stopped for good; ``__cause__`` or the message says why."""


class RequestTimedOut(Exception):
    """No answer within ``request_timeout_ms`` (aiokafka's ``RequestTimedOutError``)."""
