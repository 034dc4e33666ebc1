"""The leader's answers as aiokafka sends them: one ``ConsumerProtocolMemberAssignment`` each.

Split from ``assignor.adapter.streams_assignor`` (the assignor aiokafka calls), whose
``assign()`` builds them from the pipeline's results: at 10,000 consumers how the structs are
built and shared is a visible part of the leader's round, hence their own module.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any, cast

from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from assignor.leader.model import MemberResult
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import TopicPartition
from protocol.messages import AssignmentInfo

#: the adapter's logger, as before these functions moved here (applications filter by it)
log = logging.getLogger("assignor.adapter.streams_assignor")

#: aiokafka's ConsumerProtocol schema version (v0 is the only one it has).
CONSUMER_PROTOCOL_VERSION = 0
_TOPIC = attrgetter("topic")
_PARTITION = attrgetter("partition")
#: Members with no partition share one empty list (aiokafka only encodes the lists).
_NO_PARTITIONS = cast(list[tuple[str, list[int]]], [])


def answer_structs(
    members: Mapping[str, ConsumerProtocolMemberMetadata],
    results: Mapping[str, MemberResult],
    listings: dict[TopicPartition, list[tuple[str, list[int]]]] | None = None,
) -> dict[str, ConsumerProtocolMemberAssignment]:
    """aiokafka's answer for every member, in the order aiokafka listed the members.

    A one-partition member's list comes from ``listings`` (added when missing): one kept from
    an earlier rebalance is not three new objects for the collector's young pass when
    ``assign()`` re-enables it (1,000 such members at 1,000 threads per client).

    Members handed the same result object (those without tasks) share one answer struct:
    aiokafka only encodes it. The pipeline lists members that share a result next to each
    other, so a run of them costs an identity check and a store each (8,000 of 10,000
    consumers over 1,000 tasks), not two dict look-ups.
    """
    answers: dict[str, ConsumerProtocolMemberAssignment | None] = dict.fromkeys(members)
    made: dict[int, ConsumerProtocolMemberAssignment] = {}
    kept = {} if listings is None else listings
    last: MemberResult | None = None
    answer: ConsumerProtocolMemberAssignment | None = None
    for member_id, member in results.items():
        if member is not last:
            answer = made.get(id(member))
            if answer is None:
                by_topic = member.by_topic
                partitions = member.partitions
                if by_topic is not None:
                    listing = [(t, list(numbers)) for t, numbers in by_topic] or _NO_PARTITIONS
                elif not partitions:
                    listing = _NO_PARTITIONS
                elif len(partitions) == 1:  # (most busy members: no call of ``topic_listing``)
                    only = partitions[0]
                    cached = kept.get(only)
                    if cached is None:
                        cached = kept[only] = [(only.topic, [only.partition])]
                    listing = cached
                else:
                    listing = topic_listing(partitions)
                answer = made[id(member)] = _answer_struct(listing, member.user_data)
            last = member
        answers[member_id] = answer
    if len(answers) != len(members):  # answers for members aiokafka did not list: not sent
        for member_id in [m for m in answers if m not in members]:
            del answers[member_id]
    # Every listed member is answered when the results name the same members, compared in C
    # (not ``None in answers.values()``: aiokafka's structs compare in Python).
    if results.keys() != members.keys():
        for member_id in [m for m, a in answers.items() if a is None]:
            log.error("the pipeline gave member %s no answer; sending an error", member_id)
            answers.update(error_assignments({member_id: members[member_id]}, "no answer"))
    return cast(dict[str, ConsumerProtocolMemberAssignment], answers)


def _plain_answer_struct(
    assignment: list[tuple[str, list[int]]], user_data: bytes
) -> ConsumerProtocolMemberAssignment:
    return ConsumerProtocolMemberAssignment(CONSUMER_PROTOCOL_VERSION, assignment, user_data)


def _fast_answer_struct(
    assignment: list[tuple[str, list[int]]], user_data: bytes
) -> ConsumerProtocolMemberAssignment:
    """:func:`_plain_answer_struct` without ``Struct.__init__``'s loop over the schema (2,000
    distinct answers at 1,000 threads per client): the same attributes, set in its order."""
    answer: ConsumerProtocolMemberAssignment = _new_object(ConsumerProtocolMemberAssignment)
    answer.version = CONSUMER_PROTOCOL_VERSION
    answer.assignment = assignment
    answer.user_data = user_data
    return answer


def _same_answer_structs() -> bool:
    """Whether :func:`_fast_answer_struct` builds what aiokafka's constructor builds: the same
    instance dict, in the schema's order, and the same bytes."""
    try:
        fast = _fast_answer_struct([("t", [1, 2])], b"x")
        plain = _plain_answer_struct([("t", [1, 2])], b"x")
        return (
            type(fast) is type(plain)
            and list(vars(fast).items()) == list(vars(plain).items())
            and fast.encode() == plain.encode()
        )
    except Exception:  # pragma: no cover - an aiokafka whose Struct changed
        return False


_new_object = object.__new__
_answer_struct = _fast_answer_struct if _same_answer_structs() else _plain_answer_struct


def topic_listing(partitions: Sequence[TopicPartition]) -> list[tuple[str, list[int]]]:
    """aiokafka's ``[(topic, [partition, ...]), ...]``, topics and partitions ascending."""
    if len(partitions) == 1:  # one partition, most members of a large group: nothing to sort
        (only,) = partitions
        return [(only.topic, [only.partition])]
    topics = set(map(_TOPIC, partitions))
    if len(topics) == 1:  # one topic (6,000 partitions of one consumer): read in C, no loop
        (topic,) = topics
        return [(topic, sorted(map(_PARTITION, partitions)))]
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [(topic, sorted(numbers)) for topic, numbers in sorted(grouped.items())]


def error_assignments(
    members: Mapping[str, Any], why: str
) -> dict[str, ConsumerProtocolMemberAssignment]:
    """Version 1 error assignments, which every build of the codec reads."""
    data = Codec(1).encode_assignment(AssignmentInfo.error(AssignorError.ASSIGNMENT_ERROR, 1))
    log.error("answering %d member(s) with ASSIGNMENT_ERROR: %s", len(members), why)
    return {
        member_id: ConsumerProtocolMemberAssignment(CONSUMER_PROTOCOL_VERSION, [], data)
        for member_id in members
    }


__all__ = ["CONSUMER_PROTOCOL_VERSION", "answer_structs", "error_assignments", "topic_listing"]
