"""The subscription's wire layout in each version, and its checked reader.

Top level is one msgpack array; ``S`` is the kind marker (0x53)::

    v1  [1, latest, S, process_id, endpoint, offset_sums]
    v2  [2, latest, S, process_id, endpoint, offset_sums, unique_field, error_code]
    v3  [3, latest, S, process_id, endpoint, offset_sums_named, unique_field, error_code,
         client_tags, rack_id, group_instance_id]
    v4  [4, latest, S, error_code, process_id, endpoint, offset_sums_named, unique_field,
         client_tags, rack_id, group_instance_id]

``process_id`` is 16 raw bytes; ``endpoint`` is nil or ``[host, port]``. Offset sums are grouped
by subtopology, partitions sorted and delta-coded, sums inline, so a task costs 2-10 bytes
instead of Kafka's 18: ``[[subtopology, p0, sum0, p1 - p0, sum1, ...], ...]``. Version 3 puts the
named topology (nil or a string) in front of each group. Version 3 also carries what Kafka sends
outside the Streams user data and aiokafka drops: the rack id and ``group.instance.id``.
Version 4 only moves the error code to the fourth field, where any older reader finds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Final

from protocol._limits import (
    MAX_CLIENT_TAGS,
    MAX_OFFSET_SUMS,
    MAX_STRING_BYTES,
    check_count,
    check_wire_str,
)
from protocol._read import (
    KIND_SUBSCRIPTION,
    Reader,
    error_code,
    fail,
    host_info,
    interned_tasks,
    process_id,
    quote,
    task_id,
)
from protocol.errors import AssignorError
from protocol.ids import INT32_MAX, INT64_MAX, HostInfo, TaskId, java_string_key, trusted_model
from protocol.messages import HEADER_ERROR_CODE_VERSION, NAMED_TOPOLOGY_VERSION, SubscriptionInfo

#: Number of top-level fields per version.
FIELDS = {1: 6, 2: 8, 3: 11, 4: 11}
#: ``TaskId._rank``: ``subtopology << 31 | partition``, kept by unnamed tasks only
_KEPT_RANK = attrgetter("_rank")
#: First version that carries named-topology task ids.


def encode(info: SubscriptionInfo, version: int) -> list[object]:
    if version > info.latest_supported_version:
        raise ValueError(
            f"cannot write a version {version} subscription for a member whose latest supported "
            f"version is {info.latest_supported_version}"
        )
    endpoint = info.user_endpoint
    items: list[object] = [
        version,
        info.latest_supported_version,
        KIND_SUBSCRIPTION,
    ]
    header_code = version >= HEADER_ERROR_CODE_VERSION
    if header_code:
        items.append(int(info.error_code))
    items += [
        info.process_id.uuid.bytes,
        None if endpoint is None else [endpoint.host, endpoint.port],
        _encode_offset_sums(info.task_offset_sums, named=version >= NAMED_TOPOLOGY_VERSION),
    ]
    if version >= 2:
        items.append(info.unique_field)
        if not header_code:
            items.append(int(info.error_code))
    if version >= 3:
        items += [
            _encode_tags(info.client_tags),
            None if info.rack_id is None else check_wire_str(info.rack_id, "rack_id"),
            info.group_instance_id,
        ]
    return items


def _encode_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """The tags in key order, each checked as ``check_wire_str`` checks it. Every consumer
    writes its process's tags at every join: a short non-empty key and a short value cannot
    fail, so the check (and the value's field name, a repr) is made only for the others."""
    check_count(len(tags), "client_tags", MAX_CLIENT_TAGS)
    for key, value in tags.items():
        if not key or len(key) > _SURELY_SHORT:
            check_wire_str(key, "client_tags key")
        if len(value) > _SURELY_SHORT:
            check_wire_str(value, f"client_tags[{key!r}]", allow_empty=True)
    return dict(sorted(tags.items()))


#: The longest string ``check_wire_str`` passes without encoding it (4 bytes per character)
_SURELY_SHORT: Final = MAX_STRING_BYTES // 4


def _encode_offset_sums(sums: Mapping[TaskId, int], *, named: bool) -> list[list[object]]:
    check_count(len(sums), "task_offset_sums", MAX_OFFSET_SUMS)
    try:  # unnamed tasks keep their (subtopology, partition) order as one int: sorted in C
        ranked = sorted(zip(map(_KEPT_RANK, sums), sums.values(), strict=True))
    except AttributeError:  # a named task (or one whose keys are not kept): the general path
        pass
    else:
        return _encode_ranked(ranked, named)
    groups: dict[tuple[str | None, int], list[tuple[int, int]]] = {}
    for task, offset_sum in sums.items():
        if task.topology is not None and not named:
            raise ValueError(
                f"task {task} has a named topology; named topologies need subscription version "
                f"{NAMED_TOPOLOGY_VERSION} or later"
            )
        groups.setdefault((task.topology, task.subtopology), []).append(
            (task.partition, offset_sum)
        )
    encoded: list[list[object]] = []
    for (topology, subtopology), entries in sorted(groups.items(), key=_group_order):
        entries.sort()
        if topology is None:
            group: list[object] = [None, subtopology] if named else [subtopology]
        else:
            group = [check_wire_str(topology, "task_offset_sums topology"), subtopology]
        previous = 0
        for partition, offset_sum in entries:
            group += [partition - previous, offset_sum]
            previous = partition
        encoded.append(group)
    return encoded


def _encode_ranked(ranked: list[tuple[int, int]], named: bool) -> list[list[object]]:
    """The groups of unnamed tasks' sums, from ``(TaskId._rank, sum)`` pairs in rank order.

    Every member encodes its sums at every join, and they change between joins (standbys
    restore), so nothing is kept: this only spares the general path's per-task tuple, topology
    check and grouping dictionary (ranks are distinct, so a sum is never compared).
    """
    encoded: list[list[object]] = []
    group: list[object] = []
    current = previous = -1
    for rank, offset_sum in ranked:
        subtopology = rank >> 31
        if subtopology != current:
            current, previous = subtopology, 0
            group = [None, subtopology] if named else [subtopology]
            encoded.append(group)
        partition = rank & INT32_MAX
        group += (partition - previous, offset_sum)
        previous = partition
    return encoded


def _group_order(item: tuple[tuple[str | None, int], object]) -> tuple[bool, bytes, int]:
    (topology, subtopology), _ = item
    return (topology is not None, java_string_key(topology or ""), subtopology)


def decode(reader: Reader, fields: int, version: int, latest: int) -> SubscriptionInfo:
    """Read the fields after the header, in order, each against its own limits."""
    expected = FIELDS[version]
    if fields != expected:
        fail("payload", f"a version {version} subscription has {expected} fields, not {fields}")
    unique_field = 0
    code = AssignorError.NONE
    client_tags: dict[str, str] = {}
    rack_id = None
    group_instance_id = None
    header_code = version >= HEADER_ERROR_CODE_VERSION
    if header_code:
        code = error_code(reader.value("error_code"))
    pid = process_id(reader.value("process_id"))
    endpoint = _decode_endpoint(reader)
    sums = _decode_offset_sums(reader, named=version >= NAMED_TOPOLOGY_VERSION)
    if version >= 2:
        unique_field = reader.integer("unique_field", 0, 255)
        if not header_code:
            code = error_code(reader.value("error_code"))
    if version >= 3:
        client_tags = _decode_tags(reader)
        rack_id = reader.optional_text("rack_id")
        if not reader.nil():
            group_instance_id = reader.text("group_instance_id", 249)
    reader.finish()
    # Every field named, so this is model_construct without its per-call bookkeeping: the
    # leader decodes one of these per member per rebalance.
    return trusted_model(
        SubscriptionInfo,
        {
            "version": version,
            "latest_supported_version": latest,
            "process_id": pid,
            "user_endpoint": endpoint,
            "task_offset_sums": sums,
            "unique_field": unique_field,
            "error_code": code,
            "client_tags": client_tags,
            "rack_id": rack_id,
            "group_instance_id": group_instance_id,
        },
    )


def _decode_endpoint(reader: Reader) -> HostInfo | None:
    if reader.nil():
        return None
    length = reader.array("user_endpoint", 2)
    if length != 2:
        fail("user_endpoint", f"expected [host, port], got {length} elements")
    host = reader.value("user_endpoint.host")
    return host_info(host, reader.value("user_endpoint.port"), "user_endpoint")


def _decode_tags(reader: Reader) -> dict[str, str]:
    tags: dict[str, str] = {}
    for _ in range(reader.map("client_tags", MAX_CLIENT_TAGS)):
        key = reader.text("client_tags")
        tag = reader.value(f"client_tags[{quote(key)}]")
        if type(tag) is not str:
            fail(f"client_tags[{quote(key)}]", f"expected a string, got {type(tag).__name__}")
        if key in tags:
            fail("client_tags", f"key {quote(key)} appears twice")
        tags[key] = tag
    return tags


def _offset_sum_element(field: str) -> Callable[[int], str]:
    """Names the i-th value after a group's head: a partition delta, then its sum."""
    return lambda index: f"{field}.{'offset_sum' if index % 2 else 'partition'}"


def _decode_offset_sums(reader: Reader, *, named: bool) -> dict[TaskId, int]:
    """Groups of ``[topology?, subtopology, delta, sum, delta, sum, ...]``, at most
    ``MAX_OFFSET_SUMS`` sums in all: each group's declared length is checked against what is
    left of that budget before any of its elements is read."""
    head = 2 if named else 1
    sums: dict[TaskId, int] = {}
    known = interned_tasks().get
    seen: set[tuple[str | None, int]] = set()
    for index in range(reader.array("task_offset_sums", MAX_OFFSET_SUMS)):
        field = f"task_offset_sums[{index}]"
        length = reader.array(field, None)  # a count; the budget is checked next
        if length < head + 2 or (length - head) % 2:
            fail(field, "expected a subtopology followed by (partition delta, offset sum) pairs")
        if len(sums) + (length - head) // 2 > MAX_OFFSET_SUMS:
            fail(
                "task_offset_sums",
                f"holds more than {MAX_OFFSET_SUMS:,} offset sums (group {index} declares "
                f"{(length - head) // 2:,} after {len(sums):,})",
            )
        topology = reader.optional_text(f"{field}.topology") if named else None
        subtopology = reader.integer(f"{field}.subtopology", 0, INT32_MAX)
        # Partitions strictly increase within a group, so tasks are unique iff groups are.
        if (topology, subtopology) in seen:
            fail(
                field,
                f"subtopology {subtopology} of topology {quote(topology)} appears in more than "
                "one group",
            )
        seen.add((topology, subtopology))
        partition = -1
        pairs = iter(reader.values(field, length - head, _offset_sum_element(field)))
        for step, offset_sum in zip(pairs, pairs, strict=True):
            if type(step) is not int or step < (0 if partition < 0 else 1):
                fail(
                    f"{field}.partition",
                    f"delta {quote(step)} after partition {partition}: "
                    "partitions must be strictly increasing",
                )
            partition = step if partition < 0 else partition + step
            if partition > INT32_MAX:
                fail(f"{field}.partition", f"{partition} is beyond the int32 range")
            if (
                type(offset_sum) is not int
                or not (offset_sum >= 0 or offset_sum == -2 or offset_sum == -3)
                or offset_sum > INT64_MAX
            ):
                fail(
                    f"{field}.offset_sum",
                    f"{quote(offset_sum)} for partition {partition} is not "
                    "-2 (running), -3 (unknown) or a non-negative int64",
                )
            task = known((subtopology, partition, topology))  # the shared-instance lookup, inlined
            if task is None:
                task = task_id(subtopology, partition, topology)
            sums[task] = offset_sum
    return sums
