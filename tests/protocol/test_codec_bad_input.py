"""Bad bytes, one kind at a time: each raises ``ProtocolError`` naming the field at fault."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest

from protocol import ProtocolError
from protocol._limits import MAX_PAYLOAD_BYTES
from protocol.codec import (
    decode,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from tests.protocol.samples import assignment, subscription

GOLDEN_DIR = Path(__file__).parent / "golden"


def sub_tree(version: int = 3) -> list[Any]:
    tree: list[Any] = msgpack.unpackb(encode_subscription(subscription(version), version))
    return tree


def assignment_tree(version: int = 3) -> list[Any]:
    tree: list[Any] = msgpack.unpackb(encode_assignment(assignment(version), version))
    return tree


def pack(tree: object) -> bytes:
    return msgpack.packb(tree, use_bin_type=True)


def edited(tree: list[Any], edit: Callable[[list[Any]], object]) -> bytes:
    edit(tree)
    return pack(tree)


def assert_protocol_error(data: object, field: str, problem: str = "", decoder: Any = None) -> None:
    with pytest.raises(ProtocolError) as caught:
        (decoder or decode)(data)
    assert caught.value.field == field, caught.value
    assert problem in caught.value.problem, caught.value


def test_payload_level_problems() -> None:
    assert_protocol_error("9601", "payload", "expected bytes, got str")
    assert_protocol_error(None, "payload", "expected bytes")
    assert_protocol_error(b"", "payload", "empty")
    assert_protocol_error(b"\x90" * (MAX_PAYLOAD_BYTES + 1), "payload", "exceeds the limit")
    assert_protocol_error(pack(5), "payload", "expected an array, got an integer")
    assert_protocol_error(pack([1, 1]), "payload", "at least 3")
    assert_protocol_error(b"\x93\x01", "payload", "truncated")
    assert_protocol_error(pack(sub_tree()) + b"\x00", "payload", "after the message")


def test_header_problems() -> None:
    assert_protocol_error(pack([0, 1, 0x53]), "version", "outside")
    assert_protocol_error(pack([True, 1, 0x53]), "version", "expected an integer, got bool")
    assert_protocol_error(pack([1.0, 1, 0x53]), "version", "got float")
    assert_protocol_error(pack([2, 1, 0x53]), "latest_supported_version", "older than")
    assert_protocol_error(pack([2, 1, 0x41]), "commonly_supported_version", "older than")
    assert_protocol_error(pack([1, 1, 0x42]), "kind")
    assert_protocol_error(pack([1, 1, "S"]), "kind")
    assert_protocol_error(pack(sub_tree()), "kind", "not an assignment", decode_assignment)
    assert_protocol_error(
        pack(assignment_tree()), "kind", "not a subscription", decode_subscription
    )


def test_a_version_must_have_exactly_its_fields() -> None:
    assert_protocol_error(edited(sub_tree(), lambda t: t.append(None)), "payload", "11 fields")
    assert_protocol_error(edited(sub_tree(1), lambda t: t.pop()), "payload", "6 fields")
    assert_protocol_error(edited(assignment_tree(2), lambda t: t.pop()), "payload", "10 fields")


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (lambda t: t.__setitem__(3, b"\x00" * 15), "process_id", "16 raw bytes"),
        (lambda t: t.__setitem__(3, "0" * 16), "process_id", "16 raw bytes"),
        (lambda t: t.__setitem__(4, ["a b", 1]), "user_endpoint.host", "whitespace"),
        (lambda t: t.__setitem__(4, ["a", 70000]), "user_endpoint.port", "outside"),
        (lambda t: t.__setitem__(4, ["a"]), "user_endpoint", "[host, port]"),
        (lambda t: t.__setitem__(5, [[None, 0, 1, -1]]), "task_offset_sums[0].offset_sum", "-1"),
        (lambda t: t.__setitem__(5, [[None, 0, 1, -4]]), "task_offset_sums[0].offset_sum", ""),
        (lambda t: t.__setitem__(5, [[None, 0, 1, 2**63]]), "task_offset_sums[0].offset_sum", ""),
        (lambda t: t.__setitem__(5, [[None, 0, 1, 1.5]]), "task_offset_sums[0].offset_sum", ""),
        (
            lambda t: t.__setitem__(5, [[None, 0, 1, 5, 0, 5]]),
            "task_offset_sums[0].partition",
            "strictly increasing",
        ),
        (
            lambda t: t.__setitem__(5, [[None, 0, 2**31 - 1, 5, 1, 5]]),
            "task_offset_sums[0].partition",
            "int32",
        ),
        (
            lambda t: t.__setitem__(5, [[None, 0, 1, 5], [None, 0, 1, 6]]),
            "task_offset_sums[1]",
            "more than one group",
        ),
        (lambda t: t.__setitem__(5, [[None, -1, 1, 5]]), "task_offset_sums[0].subtopology", ""),
        (lambda t: t.__setitem__(5, [["", 0, 1, 5]]), "task_offset_sums[0].topology", "empty"),
        (lambda t: t.__setitem__(5, [[None, 0, 1]]), "task_offset_sums[0]", "pairs"),
        (lambda t: t.__setitem__(5, {}), "task_offset_sums", "expected an array"),
        (lambda t: t.__setitem__(6, 256), "unique_field", "outside"),
        (lambda t: t.__setitem__(7, 9), "error_code", "not a known AssignorError"),
        (lambda t: t.__setitem__(8, {"k": 1}), "client_tags['k']", "expected a string"),
        (lambda t: t.__setitem__(8, {"": "v"}), "client_tags", "empty"),
        (lambda t: t.__setitem__(8, []), "client_tags", "expected a map"),
        (lambda t: t.__setitem__(9, 7), "rack_id", "expected a string"),
        (lambda t: t.__setitem__(10, "x" * 250), "group_instance_id", "at most 249"),
    ],
)
def test_subscription_field_problems(
    edit: Callable[[list[Any]], object], field: str, problem: str
) -> None:
    assert_protocol_error(edited(sub_tree(), edit), field, problem, decode_subscription)


@pytest.mark.parametrize(
    ("version", "edit", "field", "problem"),
    [
        (3, lambda t: t.__setitem__(3, ["a", "a"]), "topics", "twice"),
        (3, lambda t: t.__setitem__(3, ["a" * 250]), "topics[0]", "at most 249"),
        (3, lambda t: t.__setitem__(4, [""]), "topologies[0]", "empty"),
        (3, lambda t: t.__setitem__(5, [0, 0]), "active_tasks", "3 ints per task"),
        (3, lambda t: t.__setitem__(5, [2, 0, 0]), "active_tasks[0].topology", ""),
        (2, lambda t: t.__setitem__(4, [0, True]), "active_tasks[0].partition", ""),
        (2, lambda t: t.__setitem__(4, [-1, 0]), "active_tasks[0].subtopology", ""),
        (2, lambda t: t.__setitem__(5, [[0, 2, 9, 0]]), "standby_tasks[0].topic", "index"),
        (2, lambda t: t.__setitem__(5, [[0, 2, 0, -5]]), "standby_tasks[0].partition", ""),
        (2, lambda t: t.__setitem__(5, [[0, 2], [0, 2]]), "standby_tasks[1]", "more than once"),
        (2, lambda t: t.__setitem__(5, [[0, 1]]), "standby_tasks", "also active"),
        (2, lambda t: t.__setitem__(5, [[0, 2, 1]]), "standby_tasks[0]", "pairs"),
        (
            2,
            lambda t: t.__setitem__(6, [["h", 1], ["h", 1]]),
            "partitions_by_host[1]",
            "more than once",
        ),
        (2, lambda t: t.__setitem__(6, [["h", 1, [0]]]), "partitions_by_host[0].partitions", ""),
        (
            2,
            lambda t: t.__setitem__(6, [["h", 1, [1, 0], [0, 0]]]),
            "partitions_by_host[0].topic",
            "ascending",
        ),
        (
            2,
            lambda t: t.__setitem__(7, [["h", 1, [0, 3, 0]]]),
            "standby_partitions_by_host[0].partition",
            "strictly increasing",
        ),
        (2, lambda t: t.__setitem__(8, -1), "error_code", ""),
        (2, lambda t: t.__setitem__(9, -1), "next_rebalance_ms", "outside"),
        (2, lambda t: t.__setitem__(9, 2**63), "next_rebalance_ms", "outside"),
        (1, lambda t: t.__setitem__(7, 5), "error_code", "not a known"),
    ],
)
def test_assignment_field_problems(
    version: int, edit: Callable[[list[Any]], object], field: str, problem: str
) -> None:
    tree = assignment_tree(version)
    assert_protocol_error(edited(tree, edit), field, problem, decode_assignment)


@pytest.mark.parametrize("path", sorted(GOLDEN_DIR.glob("[sa]*_v[0-9].bin")), ids=lambda p: p.name)
def test_every_truncation_of_a_golden_file_is_a_protocol_error(path: Path) -> None:
    data = path.read_bytes()
    for end in range(len(data)):
        with pytest.raises(ProtocolError):
            decode(data[:end])


def test_limits_are_checked_before_allocating() -> None:
    """A claimed 4-billion-element array or map is refused at its header, before a list of that
    size is allocated: by the field's own limit where the format has an array, and by msgpack's
    container limit (0) where it has a single value."""
    header = b"\x96\x01\x01\x53" + pack(b"\x01" * 16) + b"\xc0"  # up to the offset sums
    bombs = {
        b"\xdd\xff\xff\xff\xff": (
            "task_offset_sums",
            "declares 4,294,967,295 elements; at most 65,536 are allowed",
        ),
        b"\xdf\xff\xff\xff\xff": ("task_offset_sums", "expected an array, got a map"),
        b"\x91\xdd\xff\xff\xff\xff": ("task_offset_sums", "more than 65,536 offset sums"),
        b"\x91\x93\xdd\xff\xff\xff\xff": (
            "task_offset_sums[0].subtopology",
            "4294967295 exceeds max_array_len(0)",
        ),
        b"\x91\x93\xdf\xff\xff\xff\xff": (
            "task_offset_sums[0].subtopology",
            "4294967295 exceeds max_map_len(0)",
        ),
        # strings and binaries are only built once their bytes are all there
        b"\x91\x93\xdb\xff\xff\xff\xff": ("payload", "is truncated (in task_offset_sums[0]"),
        b"\x91\x93\xc6\xff\xff\xff\xff": ("payload", "is truncated (in task_offset_sums[0]"),
    }
    for bomb, (field, refusal) in bombs.items():
        with pytest.raises(ProtocolError) as caught:
            decode_subscription(header + bomb + b"\x00" * 60)
        assert caught.value.field == field, caught.value
        assert refusal in caught.value.problem, caught.value
    with pytest.raises(ProtocolError, match="max_str_len"):
        decode_subscription(pack([1, 1, 0x53, "x" * 5000, None, []]))
    with pytest.raises(ProtocolError, match="max_ext_len"):
        decode_subscription(pack([1, 1, 0x53, msgpack.ExtType(1, b"abcd"), None, []]))
