"""Read a live consumer group's members as the coordinator holds them (DescribeGroups).

The broker keeps, for the current generation, each member's JoinGroup metadata and the
assignment the leader sent it, both wrapped in the consumer protocol's envelope (a version, the
subscribed topics or assigned partitions, and ``user_data``: our own subscription or
assignment bytes). This module fetches them with aiokafka's admin client and unwraps the
envelope with aiokafka's own structs; decoding ``user_data`` is the codec's job
(``python -m assignor describe`` does both).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka.errors import for_code

from assignor.adapter.admin import topic_partition_counts
from protocol.ids import TopicPartition


class GroupDescriptionError(RuntimeError):
    """The group cannot be described (broker unreachable, an error code for the group)."""


@dataclass(frozen=True, slots=True)
class LiveMember:
    """One member as the coordinator holds it; an envelope that cannot be read says why."""

    member_id: str
    client_id: str
    client_host: str
    topics: tuple[str, ...] = ()
    subscription: bytes = b""
    partitions: tuple[TopicPartition, ...] = ()
    assignment: bytes = b""
    #: why the consumer-protocol envelope of the metadata or assignment could not be read
    envelope_error: str = ""


@dataclass(frozen=True, slots=True)
class LiveGroup:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[LiveMember, ...]
    #: partitions per existing topic among those the members subscribe to
    partition_counts: dict[str, int]


async def describe_live_group(
    bootstrap_servers: str, group_id: str, *, timeout_s: float = 30.0
) -> LiveGroup:
    """DescribeGroups for ``group_id``, envelopes unwrapped; bounded by ``timeout_s``."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        try:
            await asyncio.wait_for(admin.start(), timeout_s)
        except Exception as exc:
            raise GroupDescriptionError(
                f"cannot reach Kafka at {bootstrap_servers} within {timeout_s:g} s "
                f"({type(exc).__name__}: {exc or 'no answer'})"
            ) from exc
        try:
            return await asyncio.wait_for(_describe(admin, group_id), timeout_s)
        except TimeoutError as exc:
            raise GroupDescriptionError(
                f"describing group {group_id!r} took longer than {timeout_s:g} s"
            ) from exc
    finally:
        await admin.close()


async def _describe(admin: AIOKafkaAdminClient, group_id: str) -> LiveGroup:
    responses = await admin.describe_consumer_groups([group_id])
    groups = [g for response in responses for g in response.to_object()["groups"]]
    found = [g for g in groups if g["group"] == group_id]
    if not found:
        raise GroupDescriptionError(f"the broker did not describe group {group_id!r}")
    group = found[0]
    if group["error_code"]:
        error = for_code(group["error_code"])
        raise GroupDescriptionError(
            f"group {group_id!r}: error {group['error_code']} {error.__name__}"
        )
    members = tuple(
        unwrap_member(
            m["member_id"],
            m["client_id"],
            m["client_host"],
            bytes(m["member_metadata"] or b""),
            bytes(m["member_assignment"] or b""),
        )
        for m in group["members"]
    )
    topics = {t for m in members for t in m.topics}
    counts = await topic_partition_counts(admin, topics) if topics else {}
    return LiveGroup(
        group_id=group_id,
        state=group["state"],
        protocol_type=group["protocol_type"],
        protocol=group["protocol"],
        members=members,
        partition_counts=counts,
    )


def unwrap_member(
    member_id: str, client_id: str, client_host: str, metadata: bytes, assignment: bytes
) -> LiveMember:
    """Take the consumer protocol's envelopes off one member's metadata and assignment."""
    problems: list[str] = []
    topics: tuple[str, ...] = ()
    subscription = b""
    partitions: tuple[TopicPartition, ...] = ()
    answer = b""
    try:
        meta = ConsumerProtocolMemberMetadata.decode(metadata)
        topics = tuple(meta.subscription)
        subscription = bytes(meta.user_data or b"")
    except Exception as exc:  # aiokafka raises struct/index errors on short input
        problems.append(f"metadata ({len(metadata)} bytes) is not a consumer-protocol "
                        f"subscription: {type(exc).__name__}: {exc}")
    if assignment:  # empty while the group rebalances
        try:
            decoded = ConsumerProtocolMemberAssignment.decode(assignment)
            partitions = tuple(
                TopicPartition(topic, p) for topic, numbers in decoded.assignment for p in numbers
            )
            answer = bytes(decoded.user_data or b"")
        except Exception as exc:
            problems.append(f"assignment ({len(assignment)} bytes) is not a consumer-protocol "
                            f"assignment: {type(exc).__name__}: {exc}")
    return LiveMember(
        member_id=member_id,
        client_id=client_id,
        client_host=client_host,
        topics=topics,
        subscription=subscription,
        partitions=partitions,
        assignment=answer,
        envelope_error="; ".join(problems),
    )


__all__ = [
    "GroupDescriptionError",
    "LiveGroup",
    "LiveMember",
    "describe_live_group",
    "unwrap_member",
]
