"""The adapter's answers to aiokafka: one per listed member, in aiokafka's order, shared structs
for shared results, an error answer for a member the pipeline left out, none for a stranger."""

from __future__ import annotations

from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from assignor.adapter.answer_structs import answer_structs as _answer_structs
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


def test_every_listed_member_in_order_with_shared_structs_for_shared_results() -> None:
    idle, busy = _result(None), _result(3)
    members = {m: _metadata() for m in ["c", "a", "d", "b"]}
    results = {"a": idle, "b": idle, "c": busy, "d": idle}  # grouped, not aiokafka's order
    answers = _answer_structs(members, results)
    assert list(answers) == ["c", "a", "d", "b"]
    assert answers["a"] is answers["b"] is answers["d"]
    assert answers["a"].assignment == [] and answers["a"].user_data == b"data-None"
    assert answers["c"].assignment == [("t", [3])] and answers["c"].user_data == b"data-3"


def test_a_member_without_a_result_gets_an_error_and_a_stranger_nothing() -> None:
    members = {m: _metadata() for m in ["a", "b"]}
    answers = _answer_structs(members, {"a": _result(1), "z": _result(2)})
    assert list(answers) == ["a", "b"]
    error = Codec(1).decode_assignment(answers["b"].user_data)
    assert isinstance(error, AssignmentInfo)
    assert error.error_code is AssignorError.ASSIGNMENT_ERROR
    assert answers["b"].assignment == []


def test_partitions_grouped_by_topic_ascending_whatever_their_order() -> None:
    """aiokafka's ``[(topic, [partitions])]``: one topic (the path read in C) and several."""
    from assignor.adapter.answer_structs import topic_listing as _by_topic

    one = [TopicPartition("t", p) for p in (5, 0, 3, 1)]
    assert _by_topic(one) == [("t", [0, 1, 3, 5])]
    mixed = [TopicPartition("b", 2), TopicPartition("a", 9), TopicPartition("b", 0)]
    assert _by_topic(mixed) == [("a", [9]), ("b", [0, 2])]
    assert _by_topic([]) == []


def test_a_listing_the_leader_already_made_is_handed_over_as_a_copy() -> None:
    """``MemberResult.by_topic`` (the encode step's one-topic listing) becomes aiokafka's
    assignment as it is, in lists of aiokafka's own, so the result is never changed through
    the struct."""
    info = AssignmentInfo.error(AssignorError.NONE, 1)
    numbers = [2, 5, 8]
    partitions = tuple(TopicPartition(topic="t", partition=n) for n in numbers)
    listed = MemberResult(partitions, info, b"x", (("t", numbers),))
    answers = _answer_structs({"a": _metadata()}, {"a": listed})
    assert answers["a"].assignment == [("t", [2, 5, 8])]
    assert answers["a"].assignment[0][1] is not numbers
    # and a listing different from the partitions would show: the listing is what is sent
    other = MemberResult(partitions, info, b"x", (("t", [2, 5]),))
    assert _answer_structs({"a": _metadata()}, {"a": other})["a"].assignment == [("t", [2, 5])]


def test_one_partition_lists_are_kept_between_rebalances_and_encode_the_same() -> None:
    """The leader's kept lists: a one-partition member's list is the one of the rebalance
    before (not a new one for the collector), members without partitions share one empty
    list, and every answer encodes as a fresh struct of the same values does."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

    kept: dict[TopicPartition, list[tuple[str, list[int]]]] = {}
    members = {m: _metadata() for m in ["a", "b", "c"]}
    standby = MemberResult((), AssignmentInfo.error(AssignorError.NONE, 1), b"s")
    first = _answer_structs(members, {"a": _result(3), "b": standby, "c": _result(7)}, kept)
    second = _answer_structs(members, {"a": _result(7), "b": _result(None), "c": standby}, kept)
    assert second["a"].assignment is first["c"].assignment == [("t", [7])]
    assert second["b"].assignment is first["b"].assignment is second["c"].assignment == []
    assert set(kept) == {TopicPartition("t", 3), TopicPartition("t", 7)}
    for answer in [*first.values(), *second.values()]:
        fresh = ConsumerProtocolMemberAssignment(0, answer.assignment, answer.user_data)
        assert answer.encode() == fresh.encode()
