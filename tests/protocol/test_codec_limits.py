"""The decoder's limits: the largest legitimate payloads are accepted, anything beyond a limit is
refused with a ``ProtocolError`` that names the field and the limit, before the elements are read.

The hostile payloads are those an independent attack used against a real broker: a valid
subscription carrying a million offset sums (2 MB), 16 MB of them, a 4 MB host map and 16 MB of
empty arrays. What they cost is measured in ``tests/bench/bench_protocol_limits.py``; here only
what happens to them is checked.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import msgpack
import pytest

from protocol import (
    AssignmentInfo,
    HostInfo,
    ProcessId,
    ProtocolError,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
)
from protocol._limits import (
    MAX_ASSIGNMENT_BYTES,
    MAX_CLIENT_TAGS,
    MAX_HOST_MAP_PARTITIONS,
    MAX_HOSTS,
    MAX_MEMBER_TASKS,
    MAX_NAMED_TOPOLOGIES,
    MAX_OFFSET_SUMS,
    MAX_STANDBY_PARTITIONS,
    MAX_SUBSCRIPTION_BYTES,
    MAX_TOPICS,
)
from protocol._read import ONE_CALL_MAX_LONG_ARRAYS, read_whole
from protocol.codec import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import MAX_FIELD_CHARS, MAX_PROBLEM_CHARS
from tests.protocol.limit_payloads import (
    DEEP,
    DEEPLY_NESTED,
    PROCESS_ID,
    assignment_tree,
    dense_subscription,
    largest_assignment,
    largest_subscription,
    pack,
    subscription_tree,
)


def refused(data: bytes, decoder: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        decoder(data)
    error = caught.value
    assert "unexpected failure" not in error.problem, error
    return error


# --- the largest legitimate payloads ---------------------------------------------------------


def test_the_largest_accepted_subscription_decodes_and_round_trips() -> None:
    data = largest_subscription()
    assert len(data) <= MAX_SUBSCRIPTION_BYTES
    info = decode_subscription(data)
    assert isinstance(info, SubscriptionInfo)
    assert len(info.task_offset_sums) == MAX_OFFSET_SUMS
    assert len(info.client_tags) == MAX_CLIENT_TAGS
    # the writer accepts what the reader accepts
    assert decode_subscription(encode_subscription(info)) == info


def test_the_largest_accepted_assignment_decodes_and_round_trips() -> None:
    data = largest_assignment()
    assert len(data) <= MAX_ASSIGNMENT_BYTES
    info = decode_assignment(data)
    assert isinstance(info, AssignmentInfo)
    assert len(info.active_tasks) + len(info.standby_tasks) == MAX_MEMBER_TASKS
    assert sum(map(len, info.standby_tasks.values())) == MAX_STANDBY_PARTITIONS
    mapped = [*info.partitions_by_host.values(), *info.standby_partitions_by_host.values()]
    assert sum(map(len, mapped)) == MAX_HOST_MAP_PARTITIONS
    assert len(info.partitions_by_host) == len(info.standby_partitions_by_host) == MAX_HOSTS
    assert decode_assignment(encode_assignment(info)) == info


# --- the attack's payloads -------------------------------------------------------------------


def test_a_million_offset_sums_in_a_valid_subscription_are_refused() -> None:
    data = dense_subscription(1_000_000)
    assert len(data) <= MAX_SUBSCRIPTION_BYTES  # small enough to be read: the count refuses it
    error = refused(data, decode_subscription)
    assert error.field == "task_offset_sums"
    assert f"more than {MAX_OFFSET_SUMS:,} offset sums" in error.problem


def test_sixteen_megabytes_of_offset_sums_are_refused_by_size() -> None:
    data = dense_subscription(8_000_000, per_group=40_000)
    assert len(data) > 16_000_000
    error = refused(data, decode_subscription)
    assert error.field == "payload"
    assert "exceeds the limit of 4,194,304 bytes" in error.problem


def test_a_subscription_over_its_own_size_limit_is_refused() -> None:
    groups: list[list[object]] = [[None, 0, 0, 1, *([1, 2**62] * 300_000)]]
    data = pack(subscription_tree(groups))
    assert MAX_SUBSCRIPTION_BYTES < len(data) <= MAX_ASSIGNMENT_BYTES
    error = refused(data, decode_subscription)
    assert error.field == "payload"
    assert f"limit of {MAX_SUBSCRIPTION_BYTES:,} bytes for a subscription" in error.problem


def test_a_four_megabyte_host_map_is_refused() -> None:
    hosts = [[f"h{i}", 1, [0, i * 1000, *([1] * 999)]] for i in range(4_000)]
    data = pack([3, 3, 0x41, ["t"], [], [], [], hosts, [], 0, 0])
    assert len(data) > 4_000_000
    error = refused(data, decode_assignment)
    assert error.field == "partitions_by_host"
    assert f"more than {MAX_HOST_MAP_PARTITIONS:,} partitions" in error.problem


def test_a_host_map_over_its_partition_limit_is_refused_before_its_partitions_are_read() -> None:
    tree = assignment_tree(
        topics=2, topologies=0, active=0, standby=0, standby_partitions=0, hosts=2,
        host_partitions=2 * (MAX_HOST_MAP_PARTITIONS + 2),
    )  # fmt: skip
    error = refused(pack(tree), decode_assignment)
    assert error.field == "partitions_by_host"  # the first map alone is over: never the second
    assert f"more than {MAX_HOST_MAP_PARTITIONS:,} partitions" in error.problem


def test_both_host_maps_share_one_partition_budget() -> None:
    tree = assignment_tree(
        topics=2, topologies=0, active=0, standby=0, standby_partitions=0, hosts=1,
        host_partitions=MAX_HOST_MAP_PARTITIONS + 2,
    )  # fmt: skip
    error = refused(pack(tree), decode_assignment)
    assert error.field == "standby_partitions_by_host"
    assert f"more than {MAX_HOST_MAP_PARTITIONS:,} partitions" in error.problem


def test_sixteen_megabytes_of_empty_arrays_are_refused_by_size() -> None:
    data = pack([3, 3, 0x41, [], [], [], [[]] * 16_000_000, [], [], 0, 0])
    error = refused(data, decode_assignment)
    assert error.field == "payload"
    assert "exceeds the limit" in error.problem


def test_a_million_empty_arrays_are_refused_at_their_array_header() -> None:
    data = pack([3, 3, 0x41, [], [], [], [[]] * 1_000_000, [], [], 0, 0])
    assert len(data) < MAX_ASSIGNMENT_BYTES
    error = refused(data, decode_assignment)
    assert error.field == "standby_tasks"
    assert f"declares 1,000,000 elements; at most {MAX_MEMBER_TASKS:,}" in error.problem


# --- one past each limit ---------------------------------------------------------------------


TAGS_65 = dict.fromkeys(map(str, range(MAX_CLIENT_TAGS + 1)), "")


def _assignment(**counts: int) -> bytes:
    base = {
        "topics": 2, "topologies": 1, "active": 0, "standby": 0, "standby_partitions": 0,
        "hosts": 1, "host_partitions": 2,
    }  # fmt: skip
    return pack(assignment_tree(**{**base, **counts}))


@pytest.mark.parametrize(
    ("data", "field", "limit"),
    [
        (largest_subscription(MAX_OFFSET_SUMS + 1), "task_offset_sums", MAX_OFFSET_SUMS),
        (dense_subscription(MAX_OFFSET_SUMS + 1000), "task_offset_sums", MAX_OFFSET_SUMS),
        (
            pack([*subscription_tree([], lean=True)[:8], TAGS_65, None, None]),
            "client_tags",
            MAX_CLIENT_TAGS,
        ),
    ],
    ids=["one group per sum", "dense groups", "client tags"],
)
def test_one_past_a_subscription_limit_is_refused(data: bytes, field: str, limit: int) -> None:
    error = refused(data, decode_subscription)
    assert error.field == field
    assert f"{limit:,}" in error.problem


@pytest.mark.parametrize(
    ("counts", "field", "limit"),
    [
        ({"topics": MAX_TOPICS + 1}, "topics", MAX_TOPICS),
        ({"topologies": MAX_NAMED_TOPOLOGIES + 1}, "topologies", MAX_NAMED_TOPOLOGIES),
        ({"active": MAX_MEMBER_TASKS + 1}, "active_tasks", MAX_MEMBER_TASKS),
        ({"active": 10, "standby": MAX_MEMBER_TASKS - 9}, "standby_tasks", MAX_MEMBER_TASKS),
        (
            {"standby": 1, "standby_partitions": MAX_STANDBY_PARTITIONS + 1},
            "standby_tasks",
            MAX_STANDBY_PARTITIONS,
        ),
        ({"hosts": MAX_HOSTS + 1}, "partitions_by_host", MAX_HOSTS),
    ],
    ids=lambda value: str(value) if isinstance(value, dict) else "",
)
def test_one_past_an_assignment_limit_is_refused(
    counts: dict[str, int], field: str, limit: int
) -> None:
    if "hosts" in counts:
        counts = {**counts, "host_partitions": 2 * counts["hosts"]}
    error = refused(_assignment(**counts), decode_assignment)
    assert error.field == field
    assert f"{limit:,}" in error.problem


def test_writers_refuse_what_readers_refuse() -> None:
    process = ProcessId(bytes(PROCESS_ID).hex())
    too_many = {TaskId(0, p): 5 for p in range(MAX_OFFSET_SUMS + 1)}
    with pytest.raises(ValueError, match="task_offset_sums: 65,537 elements exceed the limit"):
        encode_subscription(
            SubscriptionInfo(
                version=3, latest_supported_version=3, process_id=process,
                task_offset_sums=too_many,
            )
        )  # fmt: skip
    partitions = frozenset(TopicPartition("t", p) for p in range(MAX_HOST_MAP_PARTITIONS + 1))
    with pytest.raises(ValueError, match="host map partitions: 131,073 elements exceed"):
        encode_assignment(
            AssignmentInfo(
                version=3, commonly_supported_version=3,
                partitions_by_host={HostInfo("h", 1): partitions},
            )
        )  # fmt: skip


# --- what an error message may quote ---------------------------------------------------------


def test_an_error_quotes_at_most_a_hundred_characters_of_what_was_sent() -> None:
    groups: list[list[object]] = [[None, 0, 0, "9" * 1000]]
    error = refused(pack(subscription_tree(groups)), decode_subscription)
    assert error.field == "task_offset_sums[0].offset_sum"
    assert "'" + "9" * 99 + "... (902 more)" in error.problem  # the repr's quotes count
    assert len(str(error)) < 250


def test_a_protocol_error_caps_whatever_it_is_given() -> None:
    error = ProtocolError("f" * 10_000, "p" * 96_000_000)
    assert error.field == "f" * MAX_FIELD_CHARS + "... (9,800 more)"
    left_out = 96_000_000 - MAX_PROBLEM_CHARS
    assert error.problem == "p" * MAX_PROBLEM_CHARS + f"... ({left_out:,} more)"
    assert len(str(error)) < MAX_FIELD_CHARS + MAX_PROBLEM_CHARS + 50


def test_a_container_where_a_value_belongs_is_described_not_printed() -> None:
    groups: list[list[object]] = [[None, 0, 0, ["x" * 1000] * 1000]]
    error = refused(pack(subscription_tree(groups)), decode_subscription)
    assert error.field == "task_offset_sums[0].offset_sum"
    assert "holds an array" in error.problem
    assert len(str(error)) < 250


# --- nesting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(DEEPLY_NESTED))
def test_a_thousand_levels_of_nesting_are_a_named_protocol_error(case: str) -> None:
    data, kind, field = DEEPLY_NESTED[case]
    assert msgpack.unpackb(DEEP) is not None  # msgpack itself accepts the nesting
    error = refused(data, decode_subscription if kind == "subscription" else decode_assignment)
    assert error.field == field
    assert "holds an array" in error.problem


# --- what a one-call read may allocate -------------------------------------------------------

#: 16 KiB of nested array16 / array32 headers, each declaring 16,384 elements and none present:
#: msgpack allocates a declared length before reading an element, so a one-call read of this
#: took about 80 MB before ``read_whole`` counted the long-array headers.
LONG_ARRAY_HEADERS = {
    "array16": b"\xdc\x40\x00" * (16 * 1024 // 3),
    "array32": b"\xdd\x00\x00\x40\x00" * (16 * 1024 // 5),
    "1 KiB, not counted": b"\xdc\x03\xff" * (1024 // 3),  # each declares 1,023: the most
    # a version 3 subscription's header (11 fields: 3, 3, 'S'), then the headers in its fields
    "after a header": b"\x9b\x03\x03\x53" + b"\xdc\x40\x00" * 5000,
}


@pytest.mark.parametrize("case", sorted(LONG_ARRAY_HEADERS))
@pytest.mark.parametrize("decode", [decode_subscription, decode_assignment])
def test_sixteen_kilobytes_of_long_array_headers_allocate_under_a_megabyte(
    case: str, decode: Any
) -> None:
    data = LONG_ARRAY_HEADERS[case]
    assert len(data) <= 16 * 1024  # small enough for the one-call readers to consider
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024 if len(data) <= 1024 else peak < 1024 * 1024, f"peak {peak:,}"


def test_a_one_call_read_allocates_at_most_a_few_megabytes_whatever_it_declares() -> None:
    # as many long-array headers as the one-call read allows, then the deepest short ones
    data = (b"\xdc\x40\x00" * ONE_CALL_MAX_LONG_ARRAYS + b"\x9f" * 16 * 1024)[: 16 * 1024]
    tracemalloc.start()
    try:
        assert read_whole(data, max_bin_len=16) is None  # truncated: msgpack read it and failed
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * 1024 * 1024, f"peak {peak:,} bytes"
    # one more long-array marker and it is not read in one call at all
    more = (b"\xdc\x40\x00" * (ONE_CALL_MAX_LONG_ARRAYS + 1) + b"\x9f" * 16 * 1024)[: 16 * 1024]
    tracemalloc.start()
    try:
        assert read_whole(more, max_bin_len=16) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, f"peak {peak:,} bytes"
