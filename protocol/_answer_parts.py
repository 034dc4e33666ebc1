"""The packed parts a leader's answers share, kept by :class:`protocol.answers.AnswerWriter`.

Records only: what one set of host maps packs once for every member (``Shared``) and the bytes
around a single task's ints (``Frame``); the writer that fills and reads them is in
``protocol.answers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any, cast

import msgpack

from protocol._assignment_format import FIELDS, HostSection
from protocol._limits import MAX_ASSIGNMENT_BYTES, MAX_TOPICS
from protocol._read import KIND_ASSIGNMENT
from protocol.ids import TaskId, TopicPartition
from protocol.messages import HEADER_ERROR_CODE_VERSION, HOST_SCOPE_VERSION

_SORT_KEY_NAME = itemgetter(0)  # a task's kept sort key: its topology's name, empty if unnamed


@dataclass(frozen=True, slots=True)
class Shared:
    """What every answer with the same host maps shares, packed once."""

    section: HostSection
    #: index of each topic of the host maps in the topic dictionary
    topic_index: dict[str, int]
    #: the packed topic dictionary (and, from version 3, the empty topology list); None when
    #: the maps name more topics than a reader accepts (the codec then says so)
    topics_packed: bytes | None
    #: per (commonly supported version, error code): the packed fields before a member's tasks,
    #: and those after them up to the next rebalance time
    around: dict[tuple[int, int], tuple[bytes, bytes]]
    #: per tuple of topics only some members' standby tasks name (sorted): these parts with
    #: those topics appended to the dictionary (``AnswerWriter._widened``)
    widened: dict[tuple[str, ...], Shared]


@dataclass(frozen=True, slots=True)
class Frame:
    """The bytes around one task's ints in answers of the same maps objects and common
    version, no error and no follow-up (``AnswerWriter._one_task``)."""

    active_hosts: object
    standby_hosts: object
    complete: object
    common: object
    #: before the active tasks; after them when they are the answer's only task
    before: bytes
    after_active: bytes
    #: before the standby entries when there are no active tasks; after the standby entries
    before_standby: bytes
    after: bytes
    topic_index: dict[str, int]

    def serves(self, fields: Mapping[str, object]) -> bool:
        """Whether answers of ``fields`` (every ``AssignmentInfo`` field by name) are written
        in this frame, given no error and no follow-up: the same maps objects, the same
        completeness and common version."""
        return (
            self.active_hosts is fields["partitions_by_host"]
            and self.standby_hosts is fields["standby_partitions_by_host"]
            and self.complete is fields["host_maps_complete"]
            and self.common == fields["commonly_supported_version"]
        )


#: msgpack's empty array: a member without standby tasks
EMPTY_ARRAY = b"\x90"
#: Most widened dictionaries kept per host maps (``AnswerWriter._widened``): one per set of
#: topics that only standby tasks name, a handful in a group.
MAX_WIDENED = 64


def widened(
    shared: Shared, topics: set[str], packer: msgpack.Packer, named: bool
) -> Shared | None:
    """``shared`` with those of ``topics`` it lacks appended to the dictionary, sorted (the
    codec's order: the host maps' topics, then those only the standby tasks name), kept per
    such tuple of topics; ``None`` when it lacks none. Its ``topics_packed`` is ``None`` past
    ``MAX_TOPICS`` (the codec then refuses the answer).

    Why: in a group whose processes have no endpoint the host maps name no topic, so every
    member with a standby task carried an extra topic and was written by the codec (23,582
    answers in one 59-rebalance replay of 400 members)."""
    extra = tuple(sorted(topics.difference(shared.topic_index)))
    if not extra:
        return None
    wider = shared.widened.get(extra)
    if wider is None:
        base = shared.section.topics
        index = dict(shared.topic_index)
        index.update((topic, len(base) + at) for at, topic in enumerate(extra))
        names = [*base, *extra]
        topics_packed = None
        if len(names) <= MAX_TOPICS:
            topics_packed = packer.pack(names)
            if named:
                topics_packed += packer.pack([])
        wider = Shared(shared.section, index, topics_packed, {}, {})
        if len(shared.widened) >= MAX_WIDENED:  # a few sets of topics in one rebalance
            shared.widened.clear()
        shared.widened[extra] = wider
    return wider


def around(
    packer: msgpack.Packer, shared: Shared, version: int, common: int, code: int, complete: bool
) -> tuple[bytes, bytes]:
    """The packed fields before a member's tasks and those between its tasks and its next
    rebalance time, in the field order of ``protocol._assignment_format``: the same for every
    answer of ``shared``'s maps at these versions and error code (``Shared.around``)."""
    pack = packer.pack
    assert shared.topics_packed is not None  # checked by the caller
    before = [packer.pack_array_header(FIELDS[version]), pack(version), pack(common),
              pack(KIND_ASSIGNMENT)]
    header_code = version >= HEADER_ERROR_CODE_VERSION
    if header_code:
        before.append(pack(code))
    before.append(shared.topics_packed)
    after = [pack(int(complete))] if version >= HOST_SCOPE_VERSION else []
    after.append(shared.section.packed)
    if not header_code:
        after.append(pack(code))
    return b"".join(before), b"".join(after)


def one_task_answers(
    frame: Frame,
    pack: Callable[[object], bytes],
    named: bool,
    active: Sequence[TaskId],
    standby: Sequence[TaskId],
    standby_partitions: Sequence[TopicPartition],
) -> tuple[list[bytes], list[bytes]] | None:
    """The answers in ``frame`` of members that each hold one unnamed task and nothing else:
    ``active[i]`` as an active task, or ``standby[i]`` as a standby task of the one partition
    ``standby_partitions[i]``; the same ints between the same bytes as one answer at a time
    (``AnswerWriter._one_task``); ``None`` (nothing written) unless every one of them is such
    an answer. Read in comprehensions: at 1,000 threads per client most of 2,000 busy members
    hold one task, and the per-member calls and checks cost more than the packing."""
    keys = [task._sort_key for task in active]
    standby_keys = [task._sort_key for task in standby]
    if any(map(_SORT_KEY_NAME, keys)) or any(map(_SORT_KEY_NAME, standby_keys)):
        return None  # a named topology's task: the general path's
    index = frame.topic_index
    topics = [index.get(tp.topic) for tp in standby_partitions]
    if None in topics:
        return None  # a topic the maps do not name: the general path widens the dictionary
    try:
        actives, standbys = _joined(frame, named, keys, standby_keys, topics, standby_partitions)
    except KeyError:  # an int not packed yet: packed once, kept for the next answers
        values: set[object] = {key[1] for key in chain(keys, standby_keys)}
        values.update(key[2] for key in chain(keys, standby_keys))
        values.update(topics)
        values.update(tp.partition for tp in standby_partitions)
        if any(type(value) is not int for value in values):
            return None  # (ids are validated ints: a stranger is the general path's)
        if len(_PACKED_INTS) + len(values) > MAX_PACKED_INTS:
            _PACKED_INTS.clear()
        _PACKED_INTS.update((cast(int, value), pack(value)) for value in values)
        try:
            actives, standbys = _joined(
                frame, named, keys, standby_keys, topics, standby_partitions
            )
        except KeyError:  # (cleared meanwhile by another leader's thread)
            return None
    if max(map(len, actives), default=0) > MAX_ASSIGNMENT_BYTES or max(
        map(len, standbys), default=0
    ) > MAX_ASSIGNMENT_BYTES:
        return None
    return actives, standbys


#: msgpack's bytes of the ints one-task answers hold (subtopologies, partitions, topic
#: indexes), by value: kept across rebalances, cleared past ``MAX_PACKED_INTS`` entries
_PACKED_INTS: dict[int, bytes] = {}
MAX_PACKED_INTS = 1 << 16
#: an active entry's array header (with the named topology's empty name first), and a
#: standby list of one entry's headers
_ACTIVE_HEAD = {True: b"\x93\x00", False: b"\x92"}
_STANDBY_HEAD = {True: b"\x91\x95\x00", False: b"\x91\x94"}


def _joined(
    frame: Frame,
    named: bool,
    keys: list[tuple[bytes, int, int]],
    standby_keys: list[tuple[bytes, int, int]],
    topics: list[Any],
    standby_partitions: Sequence[TopicPartition],
) -> tuple[list[bytes], list[bytes]]:
    """The answers of :func:`one_task_answers`, each joined once from the frame's bytes and
    the kept bytes of its ints (``KeyError`` for an int not kept). Why: a msgpack ``pack``
    call per answer, of a list built for it, cost twice the join (2,000 answers a rebalance
    at 1,000 threads per client: 1.6 against 0.75 ms for 900 standby answers)."""
    ints, join = _PACKED_INTS, b"".join
    head = _ACTIVE_HEAD[named]
    before, after = frame.before, frame.after_active
    actives = [join((before, head, ints[key[1]], ints[key[2]], after)) for key in keys]
    head = _STANDBY_HEAD[named]
    before, after = frame.before_standby, frame.after
    standbys = [
        join((before, head, ints[key[1]], ints[key[2]], ints[topic], ints[tp.partition], after))
        for key, topic, tp in zip(standby_keys, topics, standby_partitions, strict=True)
    ]
    return actives, standbys
