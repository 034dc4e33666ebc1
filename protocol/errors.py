"""Error codes carried in assignments, and the one exception the decoders raise."""

from __future__ import annotations

from enum import IntEnum


class AssignorError(IntEnum):
    """Kafka Streams' ``AssignorError`` codes, with Kafka's descriptions."""

    NONE = 0
    INCOMPLETE_SOURCE_TOPIC_METADATA = 1
    VERSION_PROBING = 2
    ASSIGNMENT_ERROR = 3
    SHUTDOWN_REQUESTED = 4

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    AssignorError.NONE: "NONE",
    AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA: (
        "Missing metadata for source topics. Check the group leader logs for details."
    ),
    AssignorError.VERSION_PROBING: (
        "Could not read internal rebalance metadata due to unknown encoding version."
    ),
    AssignorError.ASSIGNMENT_ERROR: (
        "Internal task assignment error. Check the group leader logs for details."
    ),
    AssignorError.SHUTDOWN_REQUESTED: (
        "A KafkaStreams instance encountered a fatal error and requested a shutdown for the "
        "entire application."
    ),
}


#: Longest ``field`` and ``problem`` a ``ProtocolError`` keeps, in characters. Both may quote
#: what a member sent, and a leader logs them: a crafted payload must not become a huge log line.
MAX_FIELD_CHARS = 200
MAX_PROBLEM_CHARS = 400


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more)"


class ProtocolError(ValueError):
    """Bytes that cannot be read as a subscription or an assignment.

    ``field`` names where decoding stopped (a dotted path such as ``task_offset_sums[3].partition``)
    and ``problem`` says what was wrong there, so a leader can log which member sent what. Both are
    capped (``MAX_FIELD_CHARS``, ``MAX_PROBLEM_CHARS``) whatever the caller passes.
    """

    def __init__(self, field: str, problem: str) -> None:
        field = shorten(field, MAX_FIELD_CHARS)
        problem = shorten(problem, MAX_PROBLEM_CHARS)
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
