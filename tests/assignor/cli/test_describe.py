"""``describe``'s decoding without a broker: envelopes, our bytes, and what cannot be read."""

from __future__ import annotations

from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from assignor.adapter.group_description import LiveGroup, unwrap_member
from assignor.cli.describe import describe_data
from protocol.codec import Codec
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import AssignmentInfo, SubscriptionInfo

HOST = HostInfo("app-1", 8080)
A0 = TopicPartition("a", 0)


def _member(member_id: str, version: int = 3) -> tuple[bytes, bytes]:
    codec = Codec()
    sub = SubscriptionInfo(
        version=version,
        latest_supported_version=3,
        process_id=ProcessId.for_int(1),
        user_endpoint=HOST,
        task_offset_sums={TaskId(0, 0): -2, TaskId(0, 1): 40},
    )
    answer = AssignmentInfo(
        version=version,
        commonly_supported_version=3,
        active_tasks=(TaskId(0, 0),),
        standby_tasks={TaskId(0, 1): (TopicPartition("a", 1),)},
        partitions_by_host={HOST: frozenset({A0})},
    )
    metadata = ConsumerProtocolMemberMetadata(0, ["a"], codec.encode_subscription(sub)).encode()
    assignment = ConsumerProtocolMemberAssignment(
        0, [("a", [0])], codec.encode_assignment(answer, version=version)
    ).encode()
    return metadata, assignment


def test_members_are_unwrapped_decoded_and_grouped_by_process() -> None:
    metadata, assignment = _member("m1")
    good = unwrap_member("m1", "client", "/127.0.0.1", metadata, assignment)
    garbage = unwrap_member("m2", "client", "/127.0.0.1", b"\x00\x01", b"")
    foreign = unwrap_member(
        "m3", "c", "/h", ConsumerProtocolMemberMetadata(0, ["a"], b"not ours").encode(), b""
    )
    group = LiveGroup("g", "Stable", "consumer", "stream", (good, garbage, foreign), {"a": 2})
    data = describe_data(group, Codec())
    m1 = data["members"]["m1"]
    assert m1["problems"] == []
    assert m1["subscription"]["task_offset_sums"] == {"0_0": -2, "0_1": 40}
    assert m1["subscription"]["endpoint"] == "app-1:8080"
    assert m1["assignment"]["active_tasks"] == {"0_0": ["a-0"]}
    assert m1["assignment"]["standby_tasks"] == {"0_1": ["a-1"]}
    assert "not a consumer-protocol subscription" in data["members"]["m2"]["problems"][0]
    assert data["members"]["m3"]["problems"][0].startswith("subscription: ")
    (process,) = data["processes"].values()
    assert process["members"] == ["m1"]
    assert process["active_tasks"] == ["0_0"] and process["standby_tasks"] == ["0_1"]
    assert process["versions"] == [[3, 3]]
    assert data["partitions_by_host"] == {"app-1:8080": ["a-0"]}
