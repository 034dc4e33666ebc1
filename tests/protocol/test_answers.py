"""The leader's answer writer writes exactly the codec's bytes, and raises exactly its errors.

``AnswerWriter`` packs the parts members share once and each member's tasks alone; the codec's
``encode_assignment`` stays the reference. Drawn groups of answers (several members sharing
host-map objects, as a leader hands them out) must give byte-identical payloads, and the common
case must really take the writer's own path, not the codec's.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignor.testing import assignment_infos, host_maps
from protocol import AssignmentInfo, AssignorError, Codec, HostInfo, TaskId, TopicPartition
from protocol import _answer_parts as answer_parts
from protocol.answers import AnswerWriter
from protocol.codec import LATEST_VERSION
from protocol.ids import INT32_MAX
from protocol.messages import NO_FOLLOWUP_REBALANCE


@st.composite
def groups(draw: st.DrawFn) -> tuple[int, list[AssignmentInfo]]:
    """One rebalance's answers at one version: drawn members, some sharing map objects."""
    version = draw(st.integers(1, LATEST_VERSION))
    common = draw(st.integers(version, version + 2))
    shared = (draw(host_maps()), draw(host_maps()))
    own = [(draw(host_maps(max_hosts=1)), draw(host_maps(max_hosts=1))) for _ in range(2)]
    answers = []
    for info in draw(st.lists(assignment_infos(st.just(version)), min_size=1, max_size=6)):
        maps = shared
        if not info.host_maps_complete:
            maps = own[draw(st.integers(0, 1))]
        elif draw(st.booleans()):
            maps = (info.partitions_by_host, info.standby_partitions_by_host)
        answers.append(
            info.model_copy(
                update={
                    "commonly_supported_version": common,
                    "partitions_by_host": maps[0],
                    "standby_partitions_by_host": maps[1],
                }
            )
        )
    return version, answers


def _outcome(encode: Any, info: AssignmentInfo) -> bytes | str:
    try:
        return bytes(encode(info))
    except ValueError as exc:
        return f"ValueError: {exc}"


@settings(max_examples=300, deadline=None)
@given(groups())
def test_same_bytes_as_the_codec(group: tuple[int, list[AssignmentInfo]]) -> None:
    version, answers = group
    writer = AnswerWriter(Codec(), version)
    for info in answers:
        expected = _outcome(lambda i: Codec().encode_assignment(i, version=version), info)
        assert _outcome(writer.encode, info) == expected


def _maps() -> tuple[dict[HostInfo, frozenset[TopicPartition]], ...]:
    hosts = [HostInfo(f"h{i}", 9000 + i) for i in range(3)]
    active = {
        h: frozenset(TopicPartition("a", p) for p in range(i, 30, 3)) for i, h in enumerate(hosts)
    }
    standby = {
        h: frozenset(TopicPartition("b", p) for p in range(i, 9, 3)) for i, h in enumerate(hosts)
    }
    return active, standby


def _codec_calls(monkeypatch: pytest.MonkeyPatch) -> list[AssignmentInfo]:
    """Every message ``Codec.encode_assignment`` is asked to write from now on (the writer hands
    it what it does not pack itself)."""
    asked: list[AssignmentInfo] = []
    original = Codec.encode_assignment

    def counted(self: Codec, info: AssignmentInfo, version: int | None = None) -> bytes:
        asked.append(info)
        return original(self, info, version)

    monkeypatch.setattr(Codec, "encode_assignment", counted)
    return asked


@pytest.mark.parametrize("version", range(1, LATEST_VERSION + 1))
def test_the_common_case_never_asks_the_codec_per_member(
    version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain tasks over the shared maps: the writer packs them itself (else it saves nothing)."""
    active, standby = _maps()
    reference = Codec().encode_assignment  # bound before the class is counted
    asked = _codec_calls(monkeypatch)
    writer = AnswerWriter(Codec(), version)
    for member in range(10):
        info = AssignmentInfo(
            version=version,
            commonly_supported_version=version,
            active_tasks=(TaskId(0, member), TaskId(1, member)),
            # topic "a": version 1 has no standby host map, so "b" would be an extra topic
            standby_tasks={TaskId(2, member): (TopicPartition("a", member),)},
            partitions_by_host=active,
            standby_partitions_by_host=standby,
            next_rebalance_ms=member if member % 2 else NO_FOLLOWUP_REBALANCE,
        )
        encoded = writer.encode(info)
        assert encoded == reference(info, version=version)
    assert asked == []


@pytest.mark.parametrize(
    ("version", "update", "error"),
    [
        # a task both active and standby (a model the validator would refuse, built unchecked)
        (4, {"standby_tasks": {TaskId(0, 0): ()}}, "both active and standby"),
        # a named topology below version 3
        (2, {"active_tasks": (TaskId(0, 0, topology="t"),)}, "named topologies"),
        # own-endpoint maps below version 4
        (3, {"host_maps_complete": False}, "own endpoint only"),
        # a commonly supported version below the one written
        (4, {"commonly_supported_version": 3}, "commonly supported version"),
    ],
)
def test_refuses_what_the_codec_refuses(version: int, update: dict[str, Any], error: str) -> None:
    active, standby = _maps()
    values: dict[str, Any] = {
        "version": version,
        "commonly_supported_version": version,
        "active_tasks": (TaskId(0, 0),),
        "standby_tasks": {},
        "partitions_by_host": active,
        "standby_partitions_by_host": standby,
        "error_code": AssignorError.NONE,
        "next_rebalance_ms": NO_FOLLOWUP_REBALANCE,
        "host_maps_complete": True,
    }
    info = AssignmentInfo.model_construct(**(values | update))
    with pytest.raises(ValueError, match=error) as by_codec:
        Codec().encode_assignment(info, version=version)
    with pytest.raises(ValueError, match=error) as by_writer:
        AnswerWriter(Codec(), version).encode(info)
    assert str(by_writer.value) == str(by_codec.value)


def test_a_version_beyond_the_codec_is_refused_as_the_codec_does() -> None:
    info = AssignmentInfo(version=1, commonly_supported_version=2)
    with pytest.raises(ValueError, match="writes versions 1 to 1"):
        AnswerWriter(Codec(latest_supported=1), 2).encode(info)


def test_standby_topics_outside_the_host_maps_and_named_tasks_are_still_written() -> None:
    """The uncommon answers the codec writes for the writer: same bytes either way."""
    active, standby = _maps()
    writer = AnswerWriter(Codec(), 3)
    for info in (
        AssignmentInfo(
            version=3,
            commonly_supported_version=3,
            standby_tasks={TaskId(2, 1): (TopicPartition("only-here", 1),)},
            partitions_by_host=active,
            standby_partitions_by_host=standby,
        ),
        AssignmentInfo(
            version=3,
            commonly_supported_version=3,
            active_tasks=(TaskId(0, 1, topology="named"),),
            partitions_by_host=active,
            standby_partitions_by_host=standby,
        ),
    ):
        assert writer.encode(info) == Codec().encode_assignment(info, version=3)


@pytest.mark.parametrize("version", range(1, LATEST_VERSION + 1))
def test_members_of_one_task_are_written_from_the_kept_frame(
    version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Members of one task each (active or standby) among members of other shapes, follow-ups
    and errors: every answer the codec's bytes, and the one-task answers taken by the frame."""
    active, standby = _maps()
    reference = Codec().encode_assignment
    framed: list[bytes | None] = []
    original = AnswerWriter._one_task

    def spied(self: AnswerWriter, *args: Any) -> bytes | None:
        framed.append(original(self, *args))
        return framed[-1]

    monkeypatch.setattr(AnswerWriter, "_one_task", spied)
    writer = AnswerWriter(Codec(), version)
    shapes: list[dict[str, Any]] = [
        {"active_tasks": (TaskId(0, 1),)},
        {"standby_tasks": {TaskId(2, 3): (TopicPartition("a", 3),)}},
        {"active_tasks": (TaskId(0, 2),), "next_rebalance_ms": 7},
        {"active_tasks": (TaskId(0, 4),), "error_code": AssignorError.ASSIGNMENT_ERROR},
        {"active_tasks": (TaskId(0, 5), TaskId(1, 5))},
        {"standby_tasks": {TaskId(2, 6): (TopicPartition("a", 6), TopicPartition("a", 7))}},
        {"standby_tasks": {TaskId(2, 8): (TopicPartition("zz", 8),)}},  # a topic of no map
        {"active_tasks": (TaskId(0, 9),), "standby_tasks": {TaskId(2, 9): ()}},
        {"active_tasks": (TaskId(0, 10),), "commonly_supported_version": version + 1},
    ]
    if version >= 3:
        shapes.append({"active_tasks": (TaskId(0, 11, topology="t"),)})
    for shape in shapes * 2:
        info = AssignmentInfo.model_construct(
            **{
                "version": version,
                "commonly_supported_version": version,
                "partitions_by_host": active,
                "standby_partitions_by_host": standby,
                **shape,
            }
        )
        assert _outcome(writer.encode, info) == _outcome(
            lambda i: reference(i, version=version), info
        )
    assert framed.count(None) < len(framed)  # the one-task members took the frame


@settings(max_examples=300, deadline=None)
@given(groups())
def test_one_task_from_fields_writes_the_codecs_bytes_or_declines(
    group: tuple[int, list[AssignmentInfo]],
) -> None:
    """``one_task`` (the leader's path that skips building a member's model) writes exactly
    the codec's bytes whenever it writes, in a writer used as a leader uses it."""
    version, answers = group
    writer = AnswerWriter(Codec(), version)
    for info in answers:
        from_fields = writer.one_task(dict(info.__dict__))
        if from_fields is not None:
            assert from_fields == Codec().encode_assignment(info, version=version)
        _outcome(writer.encode, info)


@pytest.mark.parametrize("version", range(1, LATEST_VERSION + 1))
def test_one_task_writes_one_task_answers_in_the_last_maps(version: int) -> None:
    active, standby = _maps()
    codec = Codec()
    writer = AnswerWriter(codec, version)
    first = AssignmentInfo(
        version=version,
        commonly_supported_version=version,
        active_tasks=(TaskId(0, 0), TaskId(0, 3)),
        partitions_by_host=active,
        standby_partitions_by_host=standby,
    )
    # (copies share the first's maps objects, as a leader's answers do)
    one = first.model_copy(update={"active_tasks": (TaskId(0, 6),)})
    # (topic "a": version 1 has no standby host map, so "b" would be a topic of its own)
    one_standby = first.model_copy(
        update={"active_tasks": (), "standby_tasks": {TaskId(1, 4): (TopicPartition("a", 4),)}}
    )
    later = one.model_copy(update={"next_rebalance_ms": 5})
    assert writer.one_task(dict(one.__dict__)) is None  # no maps written yet
    writer.encode(first)
    for info in (one, one_standby):
        assert writer.one_task(dict(info.__dict__)) == codec.encode_assignment(
            info, version=version
        )
    assert writer.one_task(dict(later.__dict__)) is None  # a follow-up: the model's path
    assert writer.one_task(dict(first.__dict__)) is None  # two tasks: the model's path
    # the leader's path: the first's fields (two tasks) shared, each member's tasks beside them
    shared = dict(first.__dict__)
    for info in (one, one_standby):
        assert writer.one_task_of(shared, info.active_tasks, info.standby_tasks) == (
            codec.encode_assignment(info, version=version)
        )
    assert shared == dict(first.__dict__)  # (read, not written)
    assert writer.one_task_of(shared, first.active_tasks, {}) is None


@pytest.mark.parametrize("version", range(1, LATEST_VERSION + 1))
def test_standby_topics_the_maps_do_not_name_are_written_without_the_codec(
    version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group without endpoints (empty host maps, as in the simulator) or with maps that miss
    some standby topics: each such answer's dictionary is the maps' topics then its own, as the
    codec writes it, and the answers of one task after it still get the maps' own frame."""
    active, standby = _maps()
    reference = Codec().encode_assignment
    asked = _codec_calls(monkeypatch)
    for maps in (({}, {}), (active, standby)):
        writer = AnswerWriter(Codec(), version)
        for member in range(12):
            own = ("c", "d", "a")[member % 3]
            standby_tasks = {TaskId(2, member): (TopicPartition(own, member),)}
            if member % 4 == 1:
                standby_tasks[TaskId(3, member)] = (TopicPartition("e", member),)
            checked = AssignmentInfo(
                version=version,
                commonly_supported_version=version,
                active_tasks=() if member % 5 == 4 else (TaskId(0, member),),
                standby_tasks={} if member % 5 == 3 else standby_tasks,
            )
            # the very map objects, as a leader hands them (validation would copy them)
            info = AssignmentInfo.model_construct(
                **(dict(checked) | {"partitions_by_host": maps[0],
                                    "standby_partitions_by_host": maps[1]})
            )
            assert info.partitions_by_host is maps[0]
            assert writer.encode(info) == reference(info, version=version)
    assert asked == []


def _one_task_fields(version: int) -> dict[str, object]:
    """Every ``AssignmentInfo`` field by name, no task, over :func:`_maps`, at ``version``."""
    active, standby = _maps()
    return dict(
        AssignmentInfo(
            version=version,
            commonly_supported_version=version,
            partitions_by_host=active,
            standby_partitions_by_host=standby,
        ).__dict__
    )


def _codec_answers(
    codec: Codec,
    fields: dict[str, object],
    active: list[TaskId],
    standby: list[TaskId],
    standby_partitions: list[TopicPartition],
) -> tuple[list[bytes], list[bytes]]:
    """What the codec writes, one answer at a time, for ``one_task_answers``'s members."""
    version = cast(int, fields["version"])
    return (
        [
            codec.encode_assignment(AssignmentInfo(**{**fields, "active_tasks": (task,)}), version)
            for task in active
        ],
        [
            codec.encode_assignment(
                AssignmentInfo(**{**fields, "standby_tasks": {task: (tp,)}}), version
            )
            for task, tp in zip(standby, standby_partitions, strict=True)
        ],
    )


@pytest.mark.parametrize("version", range(1, LATEST_VERSION + 1))
def test_one_task_answers_are_the_codecs_bytes_written_together(version: int) -> None:
    """The leader's batch of members of one task each (``one_task_answers``): each answer the
    codec's bytes for the fields with that task alone, from a writer that has written nothing
    yet (the frame built from the fields) and from one whose last answer had other maps."""
    codec = Codec()
    fields = _one_task_fields(version)
    tasks = [TaskId(0, 4), TaskId(1, 700), TaskId(2, 0)]
    standby_tasks = [TaskId(0, 5), TaskId(3, 300)]
    # (topic "a" from version 1: it has no standby host map, so "b" is not in its dictionary)
    standby_parts = [TopicPartition("a", 5), TopicPartition("a", 300)]
    other = AssignmentInfo(version=version, commonly_supported_version=version)
    for before in ([], [other]):
        writer = AnswerWriter(codec, version)
        for info in before:
            writer.encode(info)
        written = writer.one_task_answers(fields, tasks, standby_tasks, standby_parts)
        assert written is not None
        assert written == _codec_answers(codec, fields, tasks, standby_tasks, standby_parts)
        assert fields == dict(AssignmentInfo(**fields).__dict__)  # (read, not written)


def test_one_task_answers_decline_what_the_general_path_writes() -> None:
    """A named task, a standby topic the maps do not name, a follow-up or an error in the
    fields: nothing written (``None``), the members left to the one-at-a-time path."""
    active, standby = _maps()
    writer = AnswerWriter(Codec(), LATEST_VERSION)
    info = AssignmentInfo(
        version=LATEST_VERSION,
        commonly_supported_version=LATEST_VERSION,
        partitions_by_host=active,
        standby_partitions_by_host=standby,
    )
    fields = dict(info.__dict__)
    plain = [TaskId(0, 1)]
    assert writer.one_task_answers(fields, plain, [], []) is not None
    assert writer.one_task_answers(fields, [*plain, TaskId(0, 2, "named")], [], []) is None
    assert writer.one_task_answers(fields, [], [TaskId(0, 3)], [TopicPartition("z", 3)]) is None
    followup = {**fields, "next_rebalance_ms": 5}
    assert writer.one_task_answers(followup, plain, [], []) is None
    failed = {**fields, "error_code": AssignorError.ASSIGNMENT_ERROR}
    assert writer.one_task_answers(failed, plain, [], []) is None


@settings(max_examples=60, deadline=None)
@given(
    version=st.integers(1, LATEST_VERSION),
    numbers=st.lists(
        st.tuples(
            st.sampled_from([0, 1, 127, 128, 255, 256, 65_535, 65_536, INT32_MAX]),
            st.integers(0, INT32_MAX),
        ),
        min_size=1,
        max_size=6,
    ),
    table=st.sampled_from(["cold", "warm", "tiny"]),
)
def test_one_task_answers_are_the_codecs_bytes_whatever_ints_are_kept(
    version: int, numbers: list[tuple[int, int]], table: str
) -> None:
    """The batch joins each answer from kept msgpack bytes of its ints (packed when first
    met, the table cleared past its cap): the codec's bytes for ints of every msgpack width,
    whether the table starts empty, already holds them, or is cleared at every batch."""
    codec = Codec()
    fields = _one_task_fields(version)
    tasks = [TaskId(sub, partition) for sub, partition in numbers]
    standby_parts = [TopicPartition("a", partition) for _, partition in numbers]
    writer = AnswerWriter(codec, version)
    with pytest.MonkeyPatch.context() as patch:
        if table == "cold":
            answer_parts._PACKED_INTS.clear()
        elif table == "warm":
            assert writer.one_task_answers(fields, tasks, tasks, standby_parts) is not None
        else:  # entries no answer needs, and a cap that the batch's own ints pass
            answer_parts._PACKED_INTS.clear()
            answer_parts._PACKED_INTS.update({-i: b"stale" for i in range(1, 5)})
            patch.setattr(answer_parts, "MAX_PACKED_INTS", 2)
        written = writer.one_task_answers(fields, tasks, tasks, standby_parts)
        if table == "tiny":
            assert min(answer_parts._PACKED_INTS) >= 0  # the stale entries went
            # (this batch's subtopologies and partitions, and its one topic)
            assert len(answer_parts._PACKED_INTS) <= 2 * len(numbers) + 1
    assert written == _codec_answers(codec, fields, tasks, tasks, standby_parts)
