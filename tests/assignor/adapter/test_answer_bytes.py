"""The adapter's answers to aiokafka: one per listed member, in aiokafka's order, aiokafka's own
bytes for each, one shared answer for shared results, an error answer for a member the
pipeline left out, none for a stranger."""

from __future__ import annotations

import random

from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from assignor import decode_answers
from assignor.adapter.answer_bytes import HeadKey, error_assignments
from assignor.adapter.answer_bytes import answer_bytes as _answer_bytes
from assignor.leader.model import MemberResult
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import TopicPartition
from protocol.messages import AssignmentInfo


def _result(partition: int | None) -> MemberResult:
    info = AssignmentInfo.error(AssignorError.NONE, 1)
    partitions = () if partition is None else (TopicPartition(topic="t", partition=partition),)
    return MemberResult(partitions, info, f"data-{partition}".encode())


def _metadata() -> ConsumerProtocolMemberMetadata:
    return ConsumerProtocolMemberMetadata(0, ["t"], b"")


def _aiokafka_bytes(listing: list[tuple[str, list[int]]], user_data: bytes) -> bytes:
    return bytes(ConsumerProtocolMemberAssignment(0, listing, user_data).encode())


def test_every_listed_member_in_order_with_one_shared_answer_for_shared_results() -> None:
    idle, busy = _result(None), _result(3)
    members = {m: _metadata() for m in ["c", "a", "d", "b"]}
    results = {"a": idle, "b": idle, "c": busy, "d": idle}  # grouped, not aiokafka's order
    answers = _answer_bytes(members, results)
    assert list(answers) == ["c", "a", "d", "b"]
    assert answers["a"] is answers["b"] is answers["d"]
    assert answers["a"] == _aiokafka_bytes([], b"data-None")
    assert answers["c"] == _aiokafka_bytes([("t", [3])], b"data-3")
    read = decode_answers(answers)
    assert read["c"].assignment == [("t", [3])] and read["c"].user_data == b"data-3"


def test_a_member_without_a_result_gets_an_error_and_a_stranger_nothing() -> None:
    members = {m: _metadata() for m in ["a", "b"]}
    answers = _answer_bytes(members, {"a": _result(1), "z": _result(2)})
    assert list(answers) == ["a", "b"]
    read = decode_answers(answers)["b"]
    error = Codec(1).decode_assignment(read.user_data)
    assert isinstance(error, AssignmentInfo)
    assert error.error_code is AssignorError.ASSIGNMENT_ERROR
    assert read.assignment == []
    assert set(error_assignments(members, "test").values()) == {answers["b"]}
    # no stranger: the missing member found by the count alone
    fewer = _answer_bytes(members, {"a": _result(1)})
    assert list(fewer) == ["a", "b"] and fewer["b"] == answers["b"]
    assert fewer["a"] == answers["a"]


def test_partitions_grouped_by_topic_ascending_whatever_their_order() -> None:
    """aiokafka's ``[(topic, [partitions])]``: one topic (the path read in C) and several."""
    from assignor.adapter.answer_bytes import topic_listing as _by_topic

    one = [TopicPartition("t", p) for p in (5, 0, 3, 1)]
    assert _by_topic(one) == [("t", [0, 1, 3, 5])]
    mixed = [TopicPartition("b", 2), TopicPartition("a", 9), TopicPartition("b", 0)]
    assert _by_topic(mixed) == [("a", [9]), ("b", [0, 2])]
    assert _by_topic([]) == []


def test_a_listing_the_leader_already_made_is_what_is_sent() -> None:
    """``MemberResult.by_topic`` (the encode step's one-topic listing) is written as it is:
    a listing different from the partitions would show."""
    info = AssignmentInfo.error(AssignorError.NONE, 1)
    partitions = tuple(TopicPartition(topic="t", partition=n) for n in (2, 5, 8))
    listed = MemberResult(partitions, info, b"x", (("t", [2, 5, 8]),))
    assert _answer_bytes({"a": _metadata()}, {"a": listed})["a"] == _aiokafka_bytes(
        [("t", [2, 5, 8])], b"x"
    )
    other = MemberResult(partitions, info, b"x", (("t", [2, 5]),))
    assert _answer_bytes({"a": _metadata()}, {"a": other})["a"] == _aiokafka_bytes(
        [("t", [2, 5])], b"x"
    )


def test_several_partition_heads_are_kept_by_their_tuple_and_encode_the_same() -> None:
    """A member of several partitions (without a leader-made listing) is kept by its tuple of
    partitions: the next rebalance's equal tuple, in any member, reuses the bytes, which are
    aiokafka's encoding of the sorted listing."""
    info = AssignmentInfo.error(AssignorError.NONE, 1)
    parts = tuple(TopicPartition(topic=t, partition=n) for t, n in (("u", 4), ("t", 9), ("t", 1)))
    kept: dict[HeadKey, bytes] = {}
    members = {m: _metadata() for m in ["a", "b"]}
    busy, idle = MemberResult(parts, info, b"1"), _result(None)
    first = _answer_bytes(members, {"a": busy, "b": idle}, kept)
    head = kept[parts]
    second = _answer_bytes(members, {"a": idle, "b": MemberResult(parts, info, b"1")}, kept)
    assert kept[parts] is head and second["b"] == first["a"]
    assert first["a"] == _aiokafka_bytes([("t", [1, 9]), ("u", [4])], b"1")


def test_one_partition_heads_are_kept_between_rebalances_and_encode_the_same() -> None:
    """The leader's kept heads: a one-partition member's leading bytes are those of the
    rebalance before, and every answer is aiokafka's encoding of the same values."""
    kept: dict[HeadKey, bytes] = {}
    members = {m: _metadata() for m in ["a", "b", "c"]}
    standby = MemberResult((), AssignmentInfo.error(AssignorError.NONE, 1), b"s")
    first = _answer_bytes(members, {"a": _result(3), "b": standby, "c": _result(7)}, kept)
    head = kept[TopicPartition("t", 7)]
    second = _answer_bytes(members, {"a": _result(7), "b": _result(None), "c": standby}, kept)
    assert kept[TopicPartition("t", 7)] is head and second["a"] == first["c"]
    assert set(kept) == {TopicPartition("t", 3), TopicPartition("t", 7)}
    assert second["c"] == first["b"] == _aiokafka_bytes([], b"s")


def test_one_partition_answers_are_aiokafkas_bytes_before_and_after_the_name_is_kept() -> None:
    """A one-partition member's leading bytes, written the first time its topic's name is
    seen (the general writer) and again once the name is kept (the one-partition writer):
    aiokafka's bytes both times, for a non-ASCII name and Int32's largest partition."""
    topic = "one-partition-é-" + str(random.Random(5).randrange(10**9))
    for partition in (2**31 - 1, 0, 2**31 - 1):
        result = MemberResult(
            (TopicPartition(topic, partition),), AssignmentInfo.error(AssignorError.NONE, 1), b"u"
        )
        answer = _answer_bytes({"m": _metadata()}, {"m": result}, {})["m"]
        assert answer == _aiokafka_bytes([(topic, [partition])], b"u")


def test_drawn_results_are_aiokafkas_bytes_for_the_same_listing() -> None:
    """Random partitions over random topics (names with non-ASCII characters, partition
    numbers up to Int32's largest), with and without a ready listing: each answer is the
    bytes aiokafka's ``encode()`` gives for the listing the adapter sends."""
    rng = random.Random(11)
    info = AssignmentInfo.error(AssignorError.NONE, 1)
    topics = ["t", "orders-é", "a" * 249, "ünïcode-✓", "b"]
    for _ in range(300):
        numbers = [0, 1, 7, 2**31 - 1, rng.randrange(5000)]
        chosen = {
            TopicPartition(rng.choice(topics), rng.choice(numbers))
            for _ in range(rng.randrange(0, 12))
        }
        partitions = tuple(rng.sample(sorted(chosen), len(chosen)))
        user_data = rng.randbytes(rng.randrange(0, 40))
        grouped: dict[str, list[int]] = {}
        for tp in sorted(chosen):
            grouped.setdefault(tp.topic, []).append(tp.partition)
        listing = sorted(grouped.items())
        ready = tuple(listing) if rng.random() < 0.3 else None
        result = MemberResult(partitions, info, user_data, ready)
        answer = _answer_bytes({"m": _metadata()}, {"m": result})["m"]
        assert answer == _aiokafka_bytes(listing, user_data)
        assert decode_answers({"m": answer})["m"].assignment == listing


def test_aiokafka_sends_bytes_answers_as_they_are() -> None:
    """Why the answers are bytes: aiokafka's leader encodes only answers that are not bytes
    yet (``_on_join_leader``); an aiokafka that stopped doing so would fail here, not on the
    wire."""
    import inspect

    from aiokafka.consumer.group_coordinator import CoordinatorGroupRebalance

    source = inspect.getsource(CoordinatorGroupRebalance._on_join_leader)
    assert "if not isinstance(assignment, bytes):" in source
    assert "assignment = assignment.encode()" in source


def test_member_metadata_built_without_struct_init_equals_aiokafkas() -> None:
    """The join's metadata, filled directly, is aiokafka's own struct field for field and byte for
    byte; and the installed aiokafka is the plain ``Struct`` the direct fill assumes, so the fast
    path is the one tested."""
    from assignor.adapter.answer_bytes import CONSUMER_PROTOCOL_VERSION
    from assignor.adapter.streams_assignor import _PLAIN_METADATA, _member_metadata

    assert _PLAIN_METADATA
    built = _member_metadata(["a", "b"], b"\x00\x01user")
    expected = ConsumerProtocolMemberMetadata(
        CONSUMER_PROTOCOL_VERSION, ["a", "b"], b"\x00\x01user"
    )
    assert type(built) is ConsumerProtocolMemberMetadata
    assert vars(built) == vars(expected)
    assert built.encode() == expected.encode()
