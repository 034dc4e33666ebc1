"""Kafka Streams' version 11 byte sizes, field by field, and the contents they are measured on.

Shared by ``test_codec_size.py`` (our encoding is never larger; the formula equals Kafka's own
encoder, asked through the conformance harness's ``wire_size`` op) and by the size benchmark
(``tests/bench/bench_protocol_size.py``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from uuid import UUID

from protocol import (
    LATEST_OFFSET,
    UNKNOWN_OFFSET_SUM,
    AssignmentInfo,
    HostInfo,
    ProcessId,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
)
from protocol.codec import LATEST_VERSION

# --- Kafka Streams v11 sizes, field by field ------------------------------------------------


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def _modified_utf8(text: str) -> int:
    """``DataOutputStream.writeUTF`` payload: NUL takes 2 bytes, a supplementary char 6."""
    size = 0
    for ch in text:
        code = ord(ch)
        if 0 < code < 0x80:
            size += 1
        elif code < 0x800:
            size += 2
        elif code < 0x10000:
            size += 3
        else:
            size += 6  # two surrogates, 3 bytes each
    return size


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-be")) // 2


def java_subscription_v11_size(info: SubscriptionInfo) -> int:
    """``SubscriptionInfoData`` at version 11 (generated, non-flexible, big-endian)."""
    size = 4 + 4  # int32 version, int32 latestSupportedVersion
    size += 16  # uuid processId
    endpoint = "" if info.user_endpoint is None else str(info.user_endpoint)
    size += 4 + _utf8(endpoint)  # bytes userEndPoint (length 0 when absent)
    size += 4  # int32 count of taskOffsetSums
    for task in info.task_offset_sums:
        # int32 topicGroupId, int32 partition, int64 offsetSum, nullable string namedTopology
        size += 4 + 4 + 8 + 2 + (0 if task.topology is None else _utf8(task.topology))
    size += 1  # int8 uniqueField
    size += 4  # int32 errorCode
    size += 4  # int32 count of clientTags
    for key, value in info.client_tags.items():
        size += 4 + _utf8(key) + 4 + _utf8(value)  # bytes key, bytes value
    return size


def _java_task_id_v11(task: TaskId) -> int:
    # int32 subtopology, int32 partition, int32 nChars (0 = unnamed), UTF-16 chars
    return 4 + 4 + 4 + (0 if task.topology is None else 2 * _utf16_units(task.topology))


def _java_host_map(
    host_map: Mapping[HostInfo, frozenset[TopicPartition]],
) -> int:
    size = 4  # int32 number of hosts
    for host, partitions in host_map.items():
        size += 2 + _modified_utf8(host.host) + 4  # writeUTF host, int32 port
        size += 4 + 8 * len(partitions)  # int32 count, then int32 topic index + int32 partition
    return size


def java_assignment_v11_size(info: AssignmentInfo) -> int:
    """``AssignmentInfo.encode()`` at version 11 (hand-written ``DataOutputStream``)."""
    size = 4 + 4  # int32 version, int32 commonlySupportedVersion
    size += 4 + sum(_java_task_id_v11(task) for task in info.active_tasks)
    size += 4  # int32 number of standby tasks
    for task, partitions in info.standby_tasks.items():
        size += _java_task_id_v11(task) + 4  # task id, int32 number of partitions
        size += sum(2 + _modified_utf8(tp.topic) + 4 for tp in partitions)  # writeUTF, int32
    topics = {
        tp.topic
        for host_map in (info.partitions_by_host, info.standby_partitions_by_host)
        for partitions in host_map.values()
        for tp in partitions
    }
    size += 4 + sum(4 + 2 + _modified_utf8(topic) for topic in topics)  # topic dictionary
    size += _java_host_map(info.partitions_by_host)
    size += _java_host_map(info.standby_partitions_by_host)
    size += 4  # int32 errCode
    size += 8  # int64 nextRebalanceMs
    return size


# --- the content -----------------------------------------------------------------------------

SUBTOPOLOGIES = 10
STATEFUL = 5


def _topic(subtopology: int) -> str:
    return f"shop-orders-enriched-{subtopology:02d}-source"


def _host(index: int) -> HostInfo:
    return HostInfo(f"streams-{index:03d}.prod.example.com", 8080)


def subscription_content() -> SubscriptionInfo:
    rng = random.Random(7)
    sums: dict[TaskId, int] = {}
    for subtopology in range(SUBTOPOLOGIES):
        for partition in range(0, 100 * 3, 3):  # 100 tasks per subtopology, not contiguous
            roll = rng.random()
            if roll < 0.25:
                value = LATEST_OFFSET
            elif roll < 0.30:
                value = UNKNOWN_OFFSET_SUM
            else:
                value = rng.randrange(0, 5 * 10**9)
            sums[TaskId(subtopology, partition)] = value
    return SubscriptionInfo(
        version=LATEST_VERSION,
        latest_supported_version=LATEST_VERSION,
        process_id=ProcessId(UUID(int=rng.getrandbits(128))),
        user_endpoint=_host(42),
        task_offset_sums=sums,
        unique_field=17,
        client_tags={"zone": "eu-west-1a", "cluster": "blue"},
    )


def assignment_content(partitions_per_topic: int, hosts: int) -> AssignmentInfo:
    """Task (s, p) is active on host p % hosts and, for stateful s, standby on the next host.

    The member is host 0. ``partitions_per_topic`` 7,500 gives it 750 active + 250 standby tasks
    (standbys only for the first two thirds of the partitions of the 5 stateful subtopologies).
    """
    active_by_host: dict[HostInfo, set[TopicPartition]] = {_host(h): set() for h in range(hosts)}
    standby_by_host: dict[HostInfo, set[TopicPartition]] = {_host(h): set() for h in range(hosts)}
    member_active: list[tuple[TopicPartition, TaskId]] = []
    member_standby: dict[TaskId, tuple[TopicPartition, ...]] = {}
    standby_limit = partitions_per_topic * 2 // 3
    for subtopology in range(SUBTOPOLOGIES):
        for partition in range(partitions_per_topic):
            tp = TopicPartition(_topic(subtopology), partition)
            task = TaskId(subtopology, partition)
            owner = partition % hosts
            active_by_host[_host(owner)].add(tp)
            if owner == 0:
                member_active.append((tp, task))
            if subtopology < STATEFUL and partition < standby_limit:
                standby_host = (owner + 1) % hosts
                standby_by_host[_host(standby_host)].add(tp)
                if standby_host == 0:
                    member_standby[task] = (tp,)
    member_active.sort()
    return AssignmentInfo(
        version=LATEST_VERSION,
        commonly_supported_version=LATEST_VERSION,
        active_tasks=tuple(task for _, task in member_active),
        standby_tasks=member_standby,
        partitions_by_host={h: frozenset(tps) for h, tps in active_by_host.items()},
        standby_partitions_by_host={h: frozenset(tps) for h, tps in standby_by_host.items()},
        next_rebalance_ms=1_730_000_000_000,
    )
