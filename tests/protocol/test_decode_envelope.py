"""``python -m protocol decode`` on the ConsumerProtocol structs around our user data.

The envelopes here are the bytes aiokafka itself puts on the wire (its own
``ConsumerProtocolMemberMetadata`` / ``ConsumerProtocolMemberAssignment`` encoders) and, for the
newer struct versions Java clients send, bytes laid out field by field as Kafka's
``ConsumerProtocolSubscription.json`` defines them.
"""

from __future__ import annotations

import io
import json
import struct
import sys

import pytest
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from protocol import ProtocolError
from protocol.__main__ import main
from protocol.codec import encode_assignment, encode_subscription
from protocol.envelope import read_envelope
from tests.protocol.samples import assignment, subscription


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def java_subscription_v3(topics: list[str], user_data: bytes, owned: dict[str, list[int]]) -> bytes:
    """A v3 ConsumerProtocolSubscription as Kafka's generated code writes it."""
    out = struct.pack(">hi", 3, len(topics)) + b"".join(_string(t) for t in topics)
    out += struct.pack(">i", len(user_data)) + user_data
    out += struct.pack(">i", len(owned))
    for topic, partitions in owned.items():
        out += _string(topic) + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return out + struct.pack(">i", 7) + _string("rack-a")


def aiokafka_subscription(user_data: bytes | None) -> bytes:
    return ConsumerProtocolMemberMetadata(0, ["orders", "payments"], user_data).encode()


def aiokafka_assignment(user_data: bytes | None) -> bytes:
    return ConsumerProtocolMemberAssignment(0, [("orders", [0, 3])], user_data).encode()


def decode(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:
    code = main(["decode", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else {}), err


def test_an_aiokafka_subscription_envelope_is_detected_and_unwrapped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bare = encode_subscription(subscription(3))
    code, printed, _ = decode(capsys, aiokafka_subscription(bare).hex())
    assert code == 0
    _, bare_printed, _ = decode(capsys, bare.hex())
    assert printed == bare_printed | {
        "consumer_protocol": {
            "kind": "subscription",
            "version": 0,
            "topics": ["orders", "payments"],
            "owned_partitions": {},
            "generation_id": None,
            "rack_id": None,
            "user_data_bytes": len(bare),
        }
    }


def test_an_aiokafka_assignment_envelope_is_detected_and_unwrapped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bare = encode_assignment(assignment(2), 2)
    code, printed, _ = decode(capsys, "0x" + aiokafka_assignment(bare).hex(" "))
    assert code == 0
    assert printed["kind"] == "assignment" and printed["version"] == 2
    assert printed["consumer_protocol"]["assigned_partitions"] == {"orders": [0, 3]}
    assert printed["active_task_list"] == ["0_1", "1_1", "0_4", "0_1"]
    assert printed["partitions"] == ["orders-0", "orders-3"]


def test_tasks_that_do_not_fit_the_envelopes_partitions_are_said_to_disagree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bare = encode_assignment(assignment(2), 2)  # four active tasks
    code, printed, err = decode(capsys, aiokafka_assignment(bare).hex())  # two partitions
    assert code == 0
    assert printed["active_tasks"] == {"0_1": None, "0_4": None, "1_1": None}
    assert "differ in length" in err


def test_an_enveloped_assignment_prints_as_assign_prints_the_member(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One view for both CLIs: the bytes a member receives, enveloped as aiokafka sends them,
    decode to the fields ``python -m assignor assign`` prints for that member."""
    from assignor.adapter.answer_bytes import topic_listing as _by_topic
    from assignor.cli.group_input import read_group
    from assignor.cli.render import member_to_data
    from assignor.leader.pipeline import assign_group
    from tests.assignor.cli.test_cli import example

    described = read_group(example())
    result = assign_group(described.topology, described.config, described.group, described.codec)
    checked = 0
    for member_id, member in sorted(result.members.items()):
        envelope = ConsumerProtocolMemberAssignment(
            0, _by_topic(member.partitions), member.user_data
        ).encode()
        code, printed, err = decode(capsys, envelope.hex())
        assert code == 0, err
        expected = member_to_data(member)
        del expected["user_data_hex"]
        assert {k: printed[k] for k in expected} == expected, member_id
        if any(expected["active_tasks"].values()):
            checked += 1
    assert checked >= 2  # members with active tasks and their partitions


def test_a_java_v3_subscription_gives_owned_partitions_generation_and_rack(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bare = encode_subscription(subscription(1))
    payload = java_subscription_v3(["orders"], bare, {"orders": [1, 2]})
    code, printed, _ = decode(capsys, payload.hex())
    assert code == 0
    assert printed["consumer_protocol"] == {
        "kind": "subscription",
        "version": 3,
        "topics": ["orders"],
        "owned_partitions": {"orders": [1, 2]},
        "generation_id": 7,
        "rack_id": "rack-a",
        "user_data_bytes": len(bare),
    }
    assert printed["kind"] == "subscription" and printed["version"] == 1


def test_the_kind_flag_forces_the_struct(capsys: pytest.CaptureFixture[str]) -> None:
    payload = aiokafka_assignment(encode_assignment(assignment(3), 3))
    code, _, err = decode(capsys, "--envelope", "subscription", payload.hex())
    assert code == 2 and err.startswith("ProtocolError: consumer_protocol")
    code, printed, _ = decode(capsys, "--envelope", "assignment", payload.hex())
    assert code == 0 and printed["consumer_protocol"]["kind"] == "assignment"
    code, _, err = decode(capsys, "--envelope", "none", payload.hex())
    assert code == 2 and "leave out --envelope none" in err


def test_an_envelope_without_our_user_data_is_described_not_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, printed, err = decode(capsys, aiokafka_subscription(b"").hex())
    assert code == 0
    assert printed == {
        "kind": "subscription",
        "consumer_protocol": printed["consumer_protocol"] | {"user_data_bytes": 0},
    }
    assert "carries no user data" in err


def test_foreign_user_data_is_blamed_on_the_user_data(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = decode(capsys, aiokafka_subscription(b'{"faust": 1}').hex())
    assert code == 2
    assert err.startswith("ProtocolError: user_data.payload:")
    assert "consumer-protocol subscription v0 envelope, which itself read fine" in err


@pytest.mark.parametrize(
    ("cut", "field"),
    [(3, "consumer_protocol"), (10, "consumer_protocol"), (-1, "consumer_protocol")],
)
def test_a_truncated_envelope_says_where_in_plain_words(
    capsys: pytest.CaptureFixture[str], cut: int, field: str
) -> None:
    payload = aiokafka_subscription(encode_subscription(subscription(3)))[:cut]
    code, _, err = decode(capsys, payload.hex())
    assert code == 2
    assert err.startswith(f"ProtocolError: {field}")
    assert "cut short" in err or "bytes are left" in err


def test_a_huge_declared_count_is_refused_before_reading() -> None:
    payload = struct.pack(">hi", 0, 2**31 - 1) + b"\x00\x01a"
    with pytest.raises(ProtocolError, match=r"declares 2,147,483,647 elements"):
        read_envelope(payload, "subscription")


def test_a_newer_struct_version_is_read_as_the_newest_known(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bare = encode_subscription(subscription(3))
    payload = bytearray(java_subscription_v3(["t"], bare, {}) + b"future fields")
    payload[0:2] = struct.pack(">h", 9)
    code, printed, _ = decode(capsys, bytes(payload).hex())
    assert code == 0
    assert printed["consumer_protocol"]["version"] == 9
    assert printed["consumer_protocol"]["rack_id"] == "rack-a"


def test_odd_hex_and_stdin_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = decode(capsys, "9301a")
    assert code == 2 and "odd count" in err
    payload = aiokafka_subscription(encode_subscription(subscription(2)))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload)))
    code, printed, _ = decode(capsys, "-")
    assert code == 0 and printed["consumer_protocol"]["kind"] == "subscription"
