"""The leader's answers as aiokafka sends them: one encoded ``ConsumerProtocolMemberAssignment``
(version, ``[(topic, [partition, ...]), ...]``, user data) per member, as bytes.

aiokafka's ``_on_join_leader`` sends an answer that is already ``bytes`` as it is and calls
``.encode()`` on anything else, one member at a time, on the event loop: at 10,000 consumers
(2,010 distinct answers) that was about 30 ms a rebalance after ``assign()`` returned. So
``assign()`` returns the bytes, each distinct answer written once and shared by the members
that get it, in exactly the layout aiokafka's schema writes (``tests/assignor/adapter/
test_answer_bytes.py`` compares them with aiokafka's own ``encode()``). :func:`decode_answers`
reads them back into aiokafka's structs, for tests and tools that want the fields.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any, cast

from aiokafka.coordinator.protocol import (
    ConsumerProtocol,
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
#: the schema's leading fields: Int16 version, Int32 length of the topic array
_HEAD = struct.Struct(">hi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
#: an answer without partitions begins with these bytes (version 0, no topic)
_NO_PARTITIONS = _HEAD.pack(CONSUMER_PROTOCOL_VERSION, 0)
#: most layouts and topic names kept (dropped together beyond it: they are few in practice)
_KEPT_LIMIT = 1024
#: ``Struct(">{n}i")`` by ``n`` (a partition array's length and its partitions): one look-up,
#: not formatting the layout's text for ``struct``'s own cache at every topic
_arrays: dict[int, struct.Struct] = {}
#: a topic's name as the schema writes it (Int16 length, UTF-8), by name
_names: dict[str, bytes] = {}
#: what ``answer_bytes`` keeps a head by: a member's one partition, or its tuple of them
HeadKey = TopicPartition | tuple[TopicPartition, ...]


def answer_bytes(
    members: Mapping[str, ConsumerProtocolMemberMetadata],
    results: Mapping[str, MemberResult],
    heads: dict[HeadKey, bytes] | None = None,
) -> dict[str, bytes]:
    """aiokafka's encoded answer for every member, in the order aiokafka listed the members.

    A one-partition member's leading bytes (version and listing) come from ``heads`` (added
    when missing): kept from an earlier rebalance, they are neither rebuilt nor new objects
    for the collector's young pass when ``assign()`` re-enables it (1,000 such members at
    1,000 threads per client). A member of several partitions that the leader did not list
    by topic is kept by its tuple of partitions: in a probing round most members hold what
    they held, and a tuple's look-up (the plan's own partition objects, equal by identity)
    costs less than sorting and packing the listing again.

    Members handed the same result object (those without tasks) share one answer: the
    pipeline lists them next to each other, so a run of them costs an identity check and a
    store each (8,000 of 10,000 consumers over 1,000 tasks), not two dict look-ups. (Matching
    members to answers in C, ``map``/``zip`` by result ``id``, took more instructions: callgrind).
    """
    answers: dict[str, bytes | None] = dict.fromkeys(members)
    made: dict[int, bytes] = {}
    kept = {} if heads is None else heads
    last: MemberResult | None = None
    answer: bytes | None = None
    join = b"".join
    pack_length = _INT32.pack
    for member_id, member in results.items():
        if member is not last:
            answer = made.get(id(member))
            if answer is None:
                by_topic = member.by_topic
                partitions = member.partitions
                if by_topic is not None:
                    head = listing_head(by_topic)
                elif not partitions:
                    head = _NO_PARTITIONS
                elif len(partitions) == 1:  # (most busy members: one partition, kept)
                    only = partitions[0]
                    cached = kept.get(only)
                    if cached is None:
                        cached = kept[only] = _one_partition_head(only.topic, only.partition)
                    head = cached
                elif type(partitions) is tuple:  # kept by the partitions themselves
                    cached = kept.get(partitions)
                    if cached is None:
                        cached = kept[partitions] = listing_head(topic_listing(partitions))
                    head = cached
                else:
                    head = listing_head(topic_listing(partitions))
                data = member.user_data
                answer = made[id(member)] = join((head, pack_length(len(data)), data))
            last = member
        answers[member_id] = answer
    extra = len(answers) != len(members)
    if extra:  # answers for members aiokafka did not list: not sent
        for member_id in [m for m in answers if m not in members]:
            del answers[member_id]
    # Without extras every result names a listed member, so as many results as members name
    # them all: only then is a member left unanswered (no pass over the keys to compare them).
    if extra or len(results) != len(members):
        for member_id in [m for m, a in answers.items() if a is None]:
            log.error("the pipeline gave member %s no answer; sending an error", member_id)
            answers.update(error_assignments({member_id: members[member_id]}, "no answer"))
    return cast(dict[str, bytes], answers)


def listing_head(
    listing: Iterable[tuple[str, Sequence[int]]], version: int = CONSUMER_PROTOCOL_VERSION
) -> bytes:
    """The schema's bytes up to the user data: version, then each topic's name and partitions
    (Int32 count, then Int32s), in the listing's order. The simulator's shim writes every
    assignor's answers with it too (``simulator.shim.consumer_bytes``)."""
    parts = [b""]
    for topic, numbers in listing:
        name = _names.get(topic)
        if name is None:
            data = str(topic).encode("utf-8")
            name = _INT16.pack(len(data)) + data
            if len(_names) >= _KEPT_LIMIT:
                _names.clear()
            _names[topic] = name
        count = len(numbers) + 1
        layout = _arrays.get(count)
        if layout is None:
            if len(_arrays) >= _KEPT_LIMIT:
                _arrays.clear()
            layout = _arrays[count] = struct.Struct(f">{count}i")
        parts.append(name)
        parts.append(layout.pack(count - 1, *numbers))
    parts[0] = _HEAD.pack(version, len(parts) // 2)
    return b"".join(parts)


#: the leading bytes of a listing of one topic at version 0, and its one partition's array
_ONE_TOPIC = _HEAD.pack(CONSUMER_PROTOCOL_VERSION, 1)
_ONE_PARTITION = struct.Struct(">ii")


def _one_partition_head(topic: str, partition: int) -> bytes:
    """``listing_head(((topic, (partition,)),))``: the same bytes without the general loop,
    for the 1,000 members of one partition each that a first rebalance at 1,000 threads per
    client writes (``answer_bytes`` keeps them for the next)."""
    name = _names.get(topic)
    if name is None:
        return listing_head(((topic, (partition,)),))
    return b"".join((_ONE_TOPIC, name, _ONE_PARTITION.pack(1, partition)))


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


def error_assignments(members: Mapping[str, Any], why: str) -> dict[str, bytes]:
    """Version 1 error assignments, which every build of the codec reads (one answer, shared)."""
    data = Codec(1).encode_assignment(AssignmentInfo.error(AssignorError.ASSIGNMENT_ERROR, 1))
    log.error("answering %d member(s) with ASSIGNMENT_ERROR: %s", len(members), why)
    answer = _NO_PARTITIONS + _INT32.pack(len(data)) + data
    return dict.fromkeys(members, answer)


def decode_answers(answers: Mapping[str, bytes]) -> dict[str, ConsumerProtocolMemberAssignment]:
    """``assign()``'s answers read back as aiokafka's structs (as each member decodes its own),
    for tests and tools that look at the listing or the user data."""
    decode = ConsumerProtocol.ASSIGNMENT.decode
    return {member_id: decode(data) for member_id, data in answers.items()}


__all__ = [
    "CONSUMER_PROTOCOL_VERSION",
    "HeadKey",
    "answer_bytes",
    "decode_answers",
    "error_assignments",
    "listing_head",
    "topic_listing",
]
