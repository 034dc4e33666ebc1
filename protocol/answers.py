"""A leader's many answers in one rebalance, packed around the parts they share.

A leader writes one ``AssignmentInfo`` per member, all at one version, and most of each answer
is shared: the header, the topic dictionary and the packed host maps are the same for every
member given the same maps (the whole group's, or one endpoint's own entry). ``Codec.
encode_assignment`` rebuilds all of that per member (about 25 microseconds each, 250 ms for
the 10,000 consumers of Kafka's ManyThreadsPerClient point); :class:`AnswerWriter` packs the
shared parts once per host maps and only the member's own tasks per member.

The bytes are exactly ``Codec.encode_assignment``'s (``tests/protocol/test_answers.py``
compares both on drawn inputs). A standby partition of a topic the host maps do not name widens
the topic dictionary as the codec does (``AnswerWriter._widened``). Any other answer outside the
common case (a named topology, a limit reached, an inconsistent message) is handed to
``Codec.encode_assignment`` itself, which writes it or raises as it always did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import msgpack

from protocol._answer_ints import Fallback as _Fallback
from protocol._answer_ints import standby_entries as _standby_entries
from protocol._answer_ints import unnamed_task_ints
from protocol._answer_parts import EMPTY_ARRAY as _EMPTY_ARRAY
from protocol._answer_parts import Frame as _Frame
from protocol._answer_parts import Shared as _Shared
from protocol._answer_parts import around as _around
from protocol._answer_parts import one_task_answers as _one_task_answers
from protocol._answer_parts import widened as _widened
from protocol._limits import (
    MAX_ASSIGNMENT_BYTES,
    MAX_MEMBER_TASKS,
    MAX_STANDBY_PARTITIONS,
    MAX_TOPICS,
)
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import TaskId, TopicPartition, trusted_model
from protocol.messages import (
    HOST_SCOPE_VERSION,
    NAMED_TOPOLOGY_VERSION,
    NO_FOLLOWUP_REBALANCE,
    AssignmentInfo,
)

_TOPOLOGY = attrgetter("topology")
_SUBTOPOLOGY = attrgetter("subtopology")
_PARTITION = attrgetter("partition")
_TOPIC = attrgetter("topic")



class AnswerWriter:
    """Writes one rebalance's answers at ``version`` with ``codec``'s host-map sections.

    The writer recognises host maps by identity: a leader hands every member the same map
    objects (the group's, or one shared dict per endpoint), and those must not change while
    the writer is in use (one rebalance).
    """

    __slots__ = (
        "_codec",
        "_fast",
        "_frame",
        "_kept",
        "_last",
        "_named",
        "_no_followup",
        "_packer",
        "_shared",
        "_version",
    )

    def __init__(self, codec: Codec, version: int) -> None:
        self._codec = codec
        self._version = version
        self._named = type(version) is int and version >= NAMED_TOPOLOGY_VERSION
        # An unwritable version goes to the codec, which raises its own error; so does every
        # answer of a codec whose ``encode_assignment`` is its own (a subclass's is the rule).
        self._fast = (
            type(version) is int
            and 1 <= version <= codec.latest_supported
            and type(codec).encode_assignment is Codec.encode_assignment
        )
        self._shared: dict[tuple[int, int, bool], _Shared] = {}
        self._kept: list[AssignmentInfo] = []  # keeps the ids in ``_shared`` valid
        self._packer = msgpack.Packer(use_bin_type=True)
        self._no_followup = self._packer.pack(NO_FOLLOWUP_REBALANCE)
        # the maps of the last answer and their shared parts: consecutive members mostly share
        self._last: tuple[object, object, bool, _Shared] | None = None
        # the last answer's maps and versions with the bytes around one task (``_one_task``)
        self._frame: _Frame | None = None

    @property
    def version(self) -> int:
        """The version every answer is written at."""
        return self._version

    def encode(self, info: AssignmentInfo, standby_packed: bytes | None = None) -> bytes:
        """``Codec.encode_assignment(info, version)``'s bytes (and errors).

        ``standby_packed``: the caller's packed standby entries of ``info``, two or more
        unnamed tasks of one partition each, none of them active, written with this writer's
        :meth:`topic_index` for ``info``'s maps: exactly what the writer would pack for them
        (``assignor.leader.packed_standby`` keeps each task's entry packed per plan). The
        writer uses them in place of reading the tasks; any answer it does not write itself
        goes to the codec, which reads ``info`` alone."""
        if self._fast:
            try:
                return self._pack(info, standby_packed)
            except _Fallback:
                pass
        return self._codec.encode_assignment(info, version=self._version)

    def topic_index(self, info: AssignmentInfo) -> Mapping[str, int] | None:
        """Each topic's index in the topic dictionary of answers with ``info``'s maps (what a
        standby entry names its partition's topic by); ``None`` when this writer leaves such
        answers to the codec."""
        if not self._fast:
            return None
        shared = self._shared_of(info.__dict__, info)
        return shared.topic_index if shared.topics_packed is not None else None

    def one_task(self, fields: Mapping[str, object]) -> bytes | None:
        """The bytes :meth:`encode` writes for the ``AssignmentInfo`` whose fields are
        ``fields`` (every field by name, as the model keeps them), when it is an answer of one
        unnamed task of one partition, active or standby, and nothing else, in the maps of the
        answer written last (whose frame the writer keeps); ``None`` for any other, which
        :meth:`encode` writes from the model. Read from the fields alone, so a caller builds
        the model only for the answers this does not write (1,000 of each kind at 1,000
        threads per client)."""
        active: tuple[TaskId, ...] = fields["active_tasks"]  # type: ignore[assignment]
        standby: Mapping[TaskId, tuple[TopicPartition, ...]] = fields[  # type: ignore[assignment]
            "standby_tasks"
        ]
        return self.one_task_of(fields, active, standby)

    def one_task_of(
        self,
        fields: Mapping[str, object],
        active: tuple[TaskId, ...],
        standby: Mapping[TaskId, tuple[TopicPartition, ...]],
    ) -> bytes | None:
        """:meth:`one_task` for the fields ``fields`` with ``active`` and ``standby`` as the
        tasks (whatever ``fields`` holds for them is not read): the leader hands every busy
        member of an endpoint that endpoint's fields and the member's own tasks, so it builds
        no dict of fields per member (2,000 at 1,000 threads per client). (No ``typing.cast``
        on this path: its subscripted types were built at every call, 0.6 us a member.)"""
        frame = self._frame
        if (
            frame is not None
            and frame.serves(fields)
            and fields["error_code"] is AssignorError.NONE
            and fields["next_rebalance_ms"] == NO_FOLLOWUP_REBALANCE
        ):
            return self._one_task(frame, active, standby)
        return None

    def one_task_answers(
        self,
        fields: Mapping[str, object],
        active: Sequence[TaskId],
        standby: Sequence[TaskId],
        standby_partitions: Sequence[TopicPartition],
    ) -> tuple[list[bytes], list[bytes]] | None:
        """:meth:`one_task_of` for many members of ``fields`` at once: each of ``active`` the
        only task of one member, each of ``standby`` the only (standby) task of one member,
        of the partition at the same place in ``standby_partitions``; the answers in those
        orders, or ``None`` (nothing written) unless every one is such an answer. The
        frame's checks run once, not per member (2,000 a rebalance at 1,000 threads per
        client), and the frame is built from ``fields`` when the last answer's does not fit."""
        frame = self._frame_for(fields)
        if frame is None:
            return None
        return _one_task_answers(
            frame, self._packer.pack, self._named, active, standby, standby_partitions
        )

    def _frame_for(self, fields: Mapping[str, object]) -> _Frame | None:
        """The frame of answers of ``fields`` (:meth:`_keep_frame`'s), kept as the writer's;
        ``None`` where :meth:`_pack_fields` would not keep one or would refuse the answer."""
        frame = self._frame
        if (
            not self._fast
            or fields["error_code"] is not AssignorError.NONE
            or fields["next_rebalance_ms"] != NO_FOLLOWUP_REBALANCE
        ):
            return None
        if frame is not None and frame.serves(fields):
            return frame
        common = fields["commonly_supported_version"]
        complete = fields["host_maps_complete"]
        if (
            type(common) is not int
            or type(complete) is not bool
            or common < self._version
            or (not complete and self._version < HOST_SCOPE_VERSION)
        ):
            return None
        shared = self._shared_of(fields, None)
        if shared.topics_packed is None:
            return None
        around = shared.around.get((common, 0))
        if around is None:
            around = shared.around[(common, 0)] = _around(
                self._packer, shared, self._version, common, 0, complete
            )
        self._keep_frame(fields, shared, around)
        return self._frame

    def encode_packed(
        self,
        fields: Mapping[str, object],
        active: tuple[TaskId, ...],
        standby_count: int,
        standby_packed: bytes,
        active_packed: bytes | None = None,
    ) -> bytes | None:
        """:meth:`encode`'s bytes for the ``AssignmentInfo`` of ``fields`` with ``active`` as
        its active tasks and ``standby_count`` (two or more) standby tasks whose packed entries
        are ``standby_packed`` (as :meth:`encode` takes them, written with
        :meth:`topic_index_of` ``fields``), ``active_packed`` (if given) the packed array of
        ``active``'s ints; ``None`` when the writer would hand the answer to the codec. Why: a
        member of a hundred standby tasks is then written without a map of them or a model,
        which nothing on the way to aiokafka reads."""
        if not self._fast or standby_count < 2:
            return None
        try:
            return self._pack_fields(
                fields, None, active, {}, standby_packed, standby_count, active_packed
            )
        except _Fallback:
            return None

    def topic_index_of(self, fields: Mapping[str, object]) -> Mapping[str, int] | None:
        """:meth:`topic_index` for the ``AssignmentInfo`` of ``fields`` (every field by name),
        without the model (built only for the first answer of its maps)."""
        if not self._fast:
            return None
        shared = self._shared_of(fields, None)
        return shared.topic_index if shared.topics_packed is not None else None

    def _pack(self, info: AssignmentInfo, standby_packed: bytes | None = None) -> bytes:
        # The fields read once from the model's dict (pydantic keeps them there): a leader
        # writes 2,000 answers of one or two tasks at 1,000 threads per client, where reading
        # attributes and calling helpers cost as much as packing.
        fields = info.__dict__
        packed = self.one_task(fields)
        if packed is not None:
            return packed
        standby = fields["standby_tasks"]
        return self._pack_fields(
            fields, info, fields["active_tasks"], standby, standby_packed, len(standby)
        )

    def _pack_fields(
        self,
        fields: Mapping[str, Any],
        info: AssignmentInfo | None,
        active: tuple[TaskId, ...],
        standby: Mapping[TaskId, tuple[TopicPartition, ...]],
        standby_packed: bytes | None,
        standby_count: int,
        active_packed: bytes | None = None,
    ) -> bytes:
        """The general path of :meth:`_pack`, the tasks given apart from ``fields`` (``info``
        the model of them, or ``None``: made from ``fields`` if its maps need packing), and
        ``standby`` read only when ``standby_packed`` is not used."""
        version = self._version
        complete = fields["host_maps_complete"]
        if fields["commonly_supported_version"] < version or (
            not complete and version < HOST_SCOPE_VERSION
        ):
            raise _Fallback
        shared = self._shared_of(fields, info)
        if shared.topics_packed is None:
            raise _Fallback
        if len(active) + standby_count > MAX_MEMBER_TASKS:
            raise _Fallback
        named = self._named
        flat: list[int] = []
        if len(active) == 1:  # one partition's task, the common case at many consumers
            task = active[0]
            if task.topology is not None:
                raise _Fallback
            flat = [0, task.subtopology, task.partition] if named else [task.subtopology,
                                                                         task.partition]
        elif active and active_packed is None:
            # Every loop over the tasks runs in C (attrgetter, map, chain): no Python frame per
            # task. A named topology is the codec's to write.
            flat = unnamed_task_ints(active, named)
        pack = self._packer.pack
        packed_entries = _EMPTY_ARRAY
        widened = False
        if standby_packed is not None and standby_count > 1:
            if standby_count > MAX_STANDBY_PARTITIONS:  # (one partition per task, as vouched)
                raise _Fallback
            packed_entries = standby_packed
        elif standby:
            if not shared.topic_index and (wider := self._widened(shared, standby)) is not None:
                shared, widened = wider, True  # maps naming no topic: widened first, not on refusal
            try:
                packed_entries = pack(
                    _standby_entries(standby, active, shared.topic_index, self._named)
                )
            except _Fallback:
                # A topic only standby tasks name (no endpoint names it: every member of a
                # group without endpoints): the same parts with it appended to the dictionary,
                # as the codec appends it; anything else refused stays refused.
                wider = self._widened(shared, standby)
                if wider is None:
                    raise
                shared = wider
                widened = True
                packed_entries = pack(
                    _standby_entries(standby, active, shared.topic_index, self._named)
                )
        common = fields["commonly_supported_version"]
        error = fields["error_code"]
        code = 0 if error is AssignorError.NONE else int(error)
        around = shared.around.get((common, code))
        if around is None:
            around = shared.around[(common, code)] = _around(
                self._packer, shared, version, common, code, complete
            )
        next_ms = fields["next_rebalance_ms"]
        packed = b"".join(
            [
                around[0],
                pack(flat) if active_packed is None else active_packed,
                packed_entries,
                around[1],
                b""
                if version < 2
                else self._no_followup
                if next_ms == NO_FOLLOWUP_REBALANCE
                else pack(next_ms),
            ]
        )
        if len(packed) > MAX_ASSIGNMENT_BYTES:
            raise _Fallback
        if code == 0 and next_ms == NO_FOLLOWUP_REBALANCE and not widened:
            # (a widened dictionary is this member's: the frame serves every member of the maps)
            self._keep_frame(fields, shared, around)
        return packed

    def _widened(
        self, shared: _Shared, standby: Mapping[TaskId, tuple[TopicPartition, ...]]
    ) -> _Shared | None:
        """``protocol._answer_parts.widened`` for ``standby``'s topics (a group whose processes
        have no endpoint: host maps that name no topic)."""
        named_topics = set(map(_TOPIC, chain.from_iterable(standby.values())))
        wider = _widened(shared, named_topics, self._packer, self._named)
        if wider is not None and wider.topics_packed is None:
            raise _Fallback  # more topics than a reader accepts: the codec says so
        return wider

    def _keep_frame(
        self, fields: Mapping[str, object], shared: _Shared, around: tuple[bytes, bytes]
    ) -> None:
        """Keep what :meth:`_one_task` needs for answers like the one just written (same maps
        objects and common version, no error, no follow-up), unless already kept."""
        frame = self._frame
        if frame is not None and frame.serves(fields):
            return
        after = around[1] + (b"" if self._version < 2 else self._no_followup)
        self._frame = _Frame(
            fields["partitions_by_host"],
            fields["standby_partitions_by_host"],
            fields["host_maps_complete"],
            fields["commonly_supported_version"],
            around[0],
            _EMPTY_ARRAY + after,
            around[0] + _EMPTY_ARRAY,
            after,
            shared.topic_index,
        )

    def _one_task(
        self,
        frame: _Frame,
        active: tuple[TaskId, ...],
        standby: Mapping[TaskId, tuple[TopicPartition, ...]],
    ) -> bytes | None:
        """The bytes of an answer with one unnamed task of one partition, active or standby,
        and nothing else, in the kept frame: what the general path writes for it (the same
        ints, packed between the same bytes), without its checks of what the frame settles;
        ``None`` for any other answer (1,000 of each at 1,000 threads per client)."""
        if len(active) == 1:
            if standby:
                return None
            # (the task's kept key, read once: each field read of the model goes through
            # pydantic's attribute hook; its first item is empty exactly when unnamed)
            key = active[0]._sort_key
            if key[0]:
                return None
            ints = [0, key[1], key[2]] if self._named else [key[1], key[2]]
            packed = frame.before + self._packer.pack(ints) + frame.after_active
        elif not active and len(standby) == 1:
            ((task, partitions),) = standby.items()
            key = task._sort_key
            if len(partitions) != 1 or key[0]:
                return None
            (tp,) = partitions
            topic = frame.topic_index.get(tp.topic)
            if topic is None:
                return None
            entry = (
                [0, key[1], key[2], topic, tp.partition]
                if self._named
                else [key[1], key[2], topic, tp.partition]
            )
            packed = frame.before_standby + self._packer.pack([entry]) + frame.after
        else:
            return None
        return packed if len(packed) <= MAX_ASSIGNMENT_BYTES else None

    def _shared_of(self, fields: Mapping[str, Any], info: AssignmentInfo | None) -> _Shared:
        """The shared parts of answers with the maps ``fields`` name (``info`` the model of
        ``fields``, or ``None``: then built from them if the maps are new to this writer)."""
        last = self._last
        active_hosts = fields["partitions_by_host"]
        standby_hosts = fields["standby_partitions_by_host"]
        complete = fields["host_maps_complete"]
        if (
            last is not None
            and last[0] is active_hosts
            and last[1] is standby_hosts
            and last[2] is complete
        ):
            return last[3]
        key = (id(active_hosts), id(standby_hosts), complete)
        shared = self._shared.get(key)
        if shared is None:
            if info is None:
                info = trusted_model(AssignmentInfo, dict(fields))
            section = self._codec.packed_host_maps(info, self._version)
            topics = section.topics
            topics_packed = None
            if len(topics) <= MAX_TOPICS:
                topics_packed = self._packer.pack(list(topics))
                if self._named:
                    topics_packed += self._packer.pack([])
            shared = _Shared(
                section, {topic: at for at, topic in enumerate(topics)}, topics_packed, {}, {}
            )
            self._shared[key] = shared
            self._kept.append(info)  # keeps the ids in the key valid
        self._last = (active_hosts, standby_hosts, complete, shared)
        return shared


__all__ = ["AnswerWriter"]
