"""The answer writer reads an unnamed task's ints from its rank slot (``TaskId._rank``); a task
without one is written from its fields, as the codec writes it."""

from __future__ import annotations

import pytest

from protocol import AssignmentInfo, Codec, TaskId, TopicPartition
from protocol._answer_ints import ranked_standby_entries
from protocol.answers import AnswerWriter
from protocol.codec import LATEST_VERSION
from tests.protocol.test_answers import _maps, _outcome


@pytest.mark.parametrize("version", range(1, LATEST_VERSION + 1))
def test_tasks_without_a_rank_are_written_from_their_fields(version: int) -> None:
    """The writer reads unnamed tasks' ints from their rank; a task without one (its
    slot emptied) or of a named topology is written from its fields, as the codec does."""
    active, standby = _maps()
    ranked = (TaskId(0, 3), TaskId(1, 0), TaskId(0, 1))
    bare = tuple(TaskId(t.subtopology, t.partition) for t in ranked)
    for task in bare:  # every built task keeps its rank: these drop theirs
        object.__delattr__(task, "_rank")
    named = tuple(TaskId(t.subtopology, t.partition, topology="named") for t in ranked)
    writer = AnswerWriter(Codec(), version)
    for tasks in (ranked, bare, named):
        info = AssignmentInfo.model_construct(
            version=version, commonly_supported_version=version, active_tasks=tasks,
            partitions_by_host=active, standby_partitions_by_host=standby,
        )
        expected = _outcome(lambda i: Codec().encode_assignment(i, version=version), info)
        assert _outcome(writer.encode, info) == expected
        if tasks is bare:  # the same bytes as the same tasks with their rank
            with_rank = info.model_copy(update={"active_tasks": ranked})
            assert expected == _outcome(writer.encode, with_rank)


@pytest.mark.parametrize("version", range(1, LATEST_VERSION + 1))
def test_standby_entries_of_ranked_tasks_are_the_codecs(version: int) -> None:
    """Several standbys of one partition each, given out of task order (as a leader's dict
    may be), are written from their ranks in Kafka's task order, byte for byte the codec's;
    a standby also active is refused as the codec refuses it."""
    active, standby = _maps()
    topic = "a" if version < 2 else "b"  # version 1 has no standby host map: "a" is named
    tasks = [TaskId(1, 2), TaskId(0, 7), TaskId(0, 0), TaskId(2, 5), TaskId(0, 3)]
    standby_tasks = {t: (TopicPartition(topic, t.partition),) for t in tasks}
    writer = AnswerWriter(Codec(), version)
    for active_tasks in ((TaskId(0, 1), TaskId(1, 0)), (), (TaskId(0, 7),)):
        info = AssignmentInfo.model_construct(
            version=version, commonly_supported_version=version, active_tasks=active_tasks,
            standby_tasks=standby_tasks, partitions_by_host=active,
            standby_partitions_by_host=standby,
        )
        expected = _outcome(lambda i: Codec().encode_assignment(i, version=version), info)
        assert _outcome(writer.encode, info) == expected
        assert isinstance(expected, str) == (TaskId(0, 7) in active_tasks)
    # the entries really come from the ranked path, in task order
    index = {name: at for at, name in enumerate(sorted({"a", "b"}))}
    entries = ranked_standby_entries(standby_tasks, (), index, named=False)
    assert entries == [(0, 0, index[topic], 0), (0, 3, index[topic], 3), (0, 7, index[topic], 7),
                       (1, 2, index[topic], 2), (2, 5, index[topic], 5)]
