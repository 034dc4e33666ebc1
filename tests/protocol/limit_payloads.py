"""Payloads at the decoder's limits and beyond them, built as raw msgpack (no model in between).

Shared by the behaviour tests (``test_codec_limits.py``: the largest accepted payloads decode,
anything beyond a limit is refused naming the field) and the benchmark that measures what the
largest accepted ones cost (``tests/bench/bench_protocol_limits.py``). Built by hand so that each
sits exactly at a limit and so that every id in it is distinct (nothing shared: the costliest
decode the limits allow).
"""

from __future__ import annotations

import msgpack

from protocol._limits import (
    MAX_CLIENT_TAGS,
    MAX_HOST_MAP_PARTITIONS,
    MAX_HOSTS,
    MAX_MEMBER_TASKS,
    MAX_NAMED_TOPOLOGIES,
    MAX_OFFSET_SUMS,
    MAX_STANDBY_PARTITIONS,
    MAX_STRING_BYTES,
    MAX_TOPICS,
)

PROCESS_ID = bytes(range(16))
SUBSCRIPTION = 0x53
ASSIGNMENT = 0x41


def pack(tree: object) -> bytes:
    packed: bytes = msgpack.packb(tree, use_bin_type=True)
    return packed


def subscription_tree(offset_sum_groups: list[list[object]], *, lean: bool = False) -> list[object]:
    """A version 3 subscription around the given offset-sum groups, every other field maximal
    (or, if ``lean``, empty)."""
    if lean:
        return [3, 3, SUBSCRIPTION, PROCESS_ID, None, offset_sum_groups, 0, 0, {}, None, None]
    long = "x" * MAX_STRING_BYTES
    tags = {f"{index:04d}{long}"[:MAX_STRING_BYTES]: long for index in range(MAX_CLIENT_TAGS)}
    return [
        3, 3, SUBSCRIPTION, PROCESS_ID, ["h" * 255, 65535], offset_sum_groups,
        255, 0, tags, long, "g" * 249,
    ]  # fmt: skip


def largest_subscription(tasks: int = MAX_OFFSET_SUMS) -> bytes:
    """``tasks`` offset sums, each in a subtopology group of its own (the costliest shape: one
    group per task), with int64 sums; client tags, rack id and endpoint at their longest."""
    groups: list[list[object]] = [[None, task, task, 2**62 + task] for task in range(tasks)]
    return pack(subscription_tree(groups))


def dense_subscription(tasks: int, per_group: int = 1000) -> bytes:
    """``tasks`` offset sums in groups of ``per_group`` consecutive partitions (2 bytes a sum):
    the shape that packs the most sums into the fewest bytes."""
    groups: list[list[object]] = []
    for subtopology in range(tasks // per_group):
        groups.append([None, subtopology, 0, 5, *([1, 5] * (per_group - 1))])
    return pack(subscription_tree(groups, lean=True))


def assignment_tree(
    *,
    topics: int = MAX_TOPICS,
    topologies: int = MAX_NAMED_TOPOLOGIES,
    active: int = MAX_MEMBER_TASKS // 2,
    standby: int = MAX_MEMBER_TASKS // 2,
    standby_partitions: int = MAX_STANDBY_PARTITIONS,
    hosts: int = MAX_HOSTS,
    host_partitions: int = MAX_HOST_MAP_PARTITIONS,
) -> list[object]:
    """A version 3 assignment with every count at the given value (by default, its limit).

    Every task, partition and host is distinct: active tasks use subtopology 0, standby tasks
    subtopology 1; standby partitions use topic 0 and host-map partitions the other topics, so
    nothing the decoder builds can be shared with anything else.
    """
    names = [f"topic-{index:05d}" for index in range(topics)]
    topology_names = [f"topology-{index:04d}" for index in range(topologies)]
    active_ints: list[int] = []
    for index in range(active):
        active_ints += [1 + index % topologies, 0, index]
    per_task = standby_partitions // standby if standby else 0
    standby_entries: list[list[int]] = []
    next_partition = 0
    for index in range(standby):
        entry = [1 + index % topologies, 1, index]
        for _ in range(per_task):
            entry += [0, next_partition]
            next_partition += 1
        standby_entries.append(entry)
    maps: list[list[list[object]]] = []
    per_map = host_partitions // 2
    for map_index in range(2):
        per_host = per_map // hosts
        entries: list[list[object]] = []
        for host in range(hosts):
            # Each host lists per_host partitions of its own topic: 1 + host % (topics - 1).
            topic = 1 + host % (topics - 1)
            first = (map_index * hosts + host) * per_host
            name = f"streams-{map_index}-{host:05d}.example.com"
            entries.append([name, 8080, [topic, first] + [1] * (per_host - 1)])
        maps.append(entries)
    return [
        3, 3, ASSIGNMENT, names, topology_names, active_ints, standby_entries,
        maps[0], maps[1], 0, 1_730_000_000_000,
    ]  # fmt: skip


def largest_assignment() -> bytes:
    return pack(assignment_tree())


#: 1,000 nested one-element arrays around a 1: msgpack parses this (its own stack is deeper),
#: and formatting it recursively (``repr``, as error messages once did) raises RecursionError.
DEEP = b"\x91" * 1000 + b"\x01"

#: The nesting where the format has a single value: case name -> (payload, kind, field named).
DEEPLY_NESTED = {
    "offset sum": (
        b"\x9b\x03\x03\x53" + pack(PROCESS_ID) + b"\xc0\x91\x94\xc0\x00\x00" + DEEP
        + b"\x00\x00\x80\xc0\xc0",
        "subscription",
        "task_offset_sums[0].offset_sum",
    ),
    "process id": (b"\x96\x01\x01\x53" + DEEP + b"\xc0\x90", "subscription", "process_id"),
    "client tag": (
        b"\x9b\x03\x03\x53" + pack(PROCESS_ID) + b"\xc0\x90\x00\x00\x81\xa1k" + DEEP + b"\xc0\xc0",
        "subscription",
        "client_tags['k']",
    ),
    "host map partition": (
        b"\x98\x01\x01\x41\x91\xa1t\x90\x90\x91\x93\xa1h\x01\x92\x00" + DEEP + b"\x00",
        "assignment",
        "partitions_by_host[0].partition",
    ),
    "error code": (b"\x98\x01\x01\x41\x90\x90\x90\x90" + DEEP, "assignment", "error_code"),
}  # fmt: skip
