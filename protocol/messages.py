"""What a member tells the leader (``SubscriptionInfo``) and the answer (``AssignmentInfo``).

These are the decoded forms; ``protocol.codec`` turns them into versioned msgpack bytes and back.
Fields that a given wire version does not carry take their defaults when decoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Final, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from protocol.errors import AssignorError
from protocol.ids import INT32_MAX, INT64_MAX, HostInfo, ProcessId, TaskId, TopicPartition

#: Kafka's ``Task.LATEST_OFFSET``: the member runs this task as active right now.
LATEST_OFFSET: Final = -2
#: Kafka's ``SubscriptionInfo.UNKNOWN_OFFSET_SUM``: the member has state of unknown position.
UNKNOWN_OFFSET_SUM: Final = -3
#: Kafka's ``Long.MAX_VALUE`` in ``nextRebalanceMs``: no follow-up rebalance is scheduled.
NO_FOLLOWUP_REBALANCE: Final = INT64_MAX
#: The first version (of both messages) that carries tasks of named topologies.
NAMED_TOPOLOGY_VERSION: Final = 3
#: The first assignment version that may carry only the receiving member's own host-map entry.
HOST_SCOPE_VERSION: Final = 4

_FROZEN = ConfigDict(frozen=True, extra="forbid")

Version = Annotated[int, Field(ge=1, le=INT32_MAX)]
OffsetSum = Annotated[int, Field(ge=UNKNOWN_OFFSET_SUM, le=INT64_MAX)]


#: First version that keeps its error code right after the kind marker (see ``VersionHeader``).
HEADER_ERROR_CODE_VERSION: Final = 4


class VersionHeader(BaseModel):
    """What a reader can know of a version newer than its own.

    The two integers every encoding starts with, and from version ``HEADER_ERROR_CODE_VERSION``
    on the error code, which those versions keep right after the kind marker so that a reader of
    any older build sees a shutdown request (or an error) at once instead of one rebalance later.
    Versions 1 to 3 keep their error code further in, where an older reader cannot look.
    """

    model_config = _FROZEN

    version: Version
    latest_supported_version: Version
    #: the payload's error code as sent: a newer build may know codes this one does not, so it
    #: stays an int (compare with ``AssignorError`` members); None below version 4 (not carried)
    error_code: int | None = Field(default=None, ge=0, le=INT32_MAX)


class SubscriptionInfo(BaseModel):
    """A member's user data in its JoinGroup: who it is and what local state it holds."""

    model_config = _FROZEN

    version: Version
    latest_supported_version: Version
    process_id: ProcessId
    user_endpoint: HostInfo | None = None
    task_offset_sums: Mapping[TaskId, OffsetSum] = Field(default_factory=dict)
    unique_field: int = Field(default=0, ge=0, le=255)
    error_code: AssignorError = AssignorError.NONE
    client_tags: Mapping[str, str] = Field(default_factory=dict)
    rack_id: str | None = Field(default=None, min_length=1)
    #: the consumer's ``group.instance.id``; aiokafka drops it before ``assign()``
    group_instance_id: str | None = Field(default=None, min_length=1, max_length=249)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.latest_supported_version < self.version:
            raise ValueError(
                f"latest_supported_version {self.latest_supported_version} is older than the "
                f"version {self.version} this subscription is written in"
            )
        if any(not key for key in self.client_tags):
            raise ValueError("client_tags: a tag key must not be empty")
        for task, offset_sum in self.task_offset_sums.items():
            if offset_sum == -1:
                raise ValueError(
                    f"task_offset_sums[{task}]: -1 is not an offset sum; use -2 (running as "
                    "active), -3 (unknown) or a non-negative sum"
                )
        return self


class AssignmentInfo(BaseModel):
    """The leader's answer to one member: its tasks, everyone's endpoints, and what to do next.

    ``active_tasks`` is aligned one-to-one with the member's assigned partitions sorted by
    (topic, partition), as in Kafka: a task appears once per partition it brings.
    """

    model_config = _FROZEN

    version: Version
    commonly_supported_version: Version
    active_tasks: tuple[TaskId, ...] = ()
    standby_tasks: Mapping[TaskId, tuple[TopicPartition, ...]] = Field(default_factory=dict)
    partitions_by_host: Mapping[HostInfo, frozenset[TopicPartition]] = Field(default_factory=dict)
    standby_partitions_by_host: Mapping[HostInfo, frozenset[TopicPartition]] = Field(
        default_factory=dict
    )
    error_code: AssignorError = AssignorError.NONE
    next_rebalance_ms: int = Field(default=NO_FOLLOWUP_REBALANCE, ge=0, le=INT64_MAX)
    #: True: the host maps are the whole group's. False (version 4 on): they hold only the
    #: entry of the receiving member's own endpoint, because every member carrying every
    #: endpoint would not fit the broker's group record (see ``docs/wire-format.md``); the
    #: group's full maps are then the union of all members' entries.
    host_maps_complete: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.commonly_supported_version < self.version:
            raise ValueError(
                f"commonly_supported_version {self.commonly_supported_version} is older than "
                f"the version {self.version} this assignment is written in"
            )
        both = set(self.active_tasks) & set(self.standby_tasks)
        if both:
            raise ValueError(
                f"tasks {sorted(both)} are assigned to this member both as active and standby"
            )
        if not self.host_maps_complete and (
            self.version < HOST_SCOPE_VERSION
            or len(self.partitions_by_host) > 1
            or len(self.standby_partitions_by_host) > 1
        ):
            raise ValueError(
                "host maps of the member's own endpoint only hold at most one endpoint and need "
                f"version {HOST_SCOPE_VERSION} or later"
            )
        return self

    @classmethod
    def error(cls, code: AssignorError, version: int) -> AssignmentInfo:
        """Kafka's ``errorAssignment``: no tasks, only the code."""
        return cls(version=version, commonly_supported_version=version, error_code=code)
