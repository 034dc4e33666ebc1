"""A member that receives the same answer again reuses its last reading: the same outcome.

``StreamsPartitionAssignor.on_assignment`` skips decoding and interpreting an answer whose bytes
and partitions repeat the last one read in full (most members of a probing round). Here two
consumers of twin processes receive the same drawn sequence of answers, each often repeated;
one of them forgets its last reading before every answer, so it reads each in full. Everything
either shows afterwards must be the same, down to the types and the order of maps and sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assignor.adapter.streams_assignor as adapter
from assignor import StreamsPartitionAssignor, StreamsProcess
from assignor.member import MemberAssignment, TaskChanges
from assignor.testing import assignment_infos
from protocol import AssignmentInfo, HostInfo
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import ProcessId, TaskId
from tests.assignor.adapter.test_streams_assignor import TOPOLOGY

#: the topic the drawn answers' partitions are listed in (their count is what matters)
TOPIC = "orders"


def _shown(value: object) -> object:
    """``value`` with every map and set spelled out in its iteration order, with its type."""
    if isinstance(value, Mapping):
        return (type(value), [(_shown(k), _shown(v)) for k, v in value.items()])
    if isinstance(value, frozenset | set):
        return (type(value), [_shown(v) for v in value])
    if isinstance(value, tuple | list):
        return (type(value), [_shown(v) for v in value])
    return value


def _assignment(assignment: MemberAssignment | None) -> object:
    if assignment is None:
        return None
    fields = {name: getattr(assignment, name) for name in MemberAssignment.__slots__}
    changes: TaskChanges = fields.pop("changes")
    fields["changes"] = {name: getattr(changes, name) for name in TaskChanges.__slots__}
    return _shown(fields)


def _seen(consumer: StreamsPartitionAssignor) -> object:
    """What the consumer shows after an answer: its last message and assignment, its next
    subscription version, its follow-up, and its process's view of who runs what."""
    info = consumer.last_info
    return (
        None if info is None else (_shown(vars(info)), sorted(info.model_fields_set)),
        _assignment(consumer.last_assignment),
        consumer.used_version,
        consumer.last_followup_reason,
        consumer.followups.scheduled_at_ms,
        _shown(consumer.process.running_tasks()),
        _shown(consumer.process.standby_tasks()),
        consumer.process.metrics(),
    )


def _consumer(endpoint: HostInfo | None) -> StreamsPartitionAssignor:
    process = StreamsProcess(TOPOLOGY, process_id=ProcessId.for_int(1), endpoint=endpoint)
    return process.new_assignor()


def _answer(info: AssignmentInfo, extra_partitions: int) -> ConsumerProtocolMemberAssignment:
    count = len(info.active_tasks) + extra_partitions
    listing = [(TOPIC, list(range(count)))] if count else []
    return ConsumerProtocolMemberAssignment(0, listing, Codec().encode_assignment(info))


def _answers() -> st.SearchStrategy[list[ConsumerProtocolMemberAssignment]]:
    """Answers, mostly without error and with as many partitions as active tasks (those a
    member keeps for reuse), each repeated up to three times."""
    info = st.tuples(assignment_infos(named=False), st.booleans()).map(
        lambda drawn: drawn[0].model_copy(update={"error_code": AssignorError.NONE})
        if drawn[1]
        else drawn[0]
    )
    one = st.builds(_answer, info, st.sampled_from([0, 0, 0, 1]))
    return st.lists(st.tuples(one, st.integers(1, 3)), min_size=1, max_size=5).map(
        lambda runs: [answer for answer, times in runs for _ in range(times)]
    )


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(answers=_answers(), endpoint=st.sampled_from([None, 0]))
def test_a_repeated_answer_shows_what_reading_it_again_shows(
    answers: list[ConsumerProtocolMemberAssignment], endpoint: int | None
) -> None:
    first = AssignmentInfo.model_validate(Codec().decode_assignment(answers[0].user_data))
    hosts = [*first.partitions_by_host, HostInfo("elsewhere", 1)]
    own = None if endpoint is None else hosts[endpoint]
    reusing, reading = _consumer(own), _consumer(own)
    for answer in answers:
        # the same bytes, but distinct objects, as aiokafka decodes every answer anew
        again = ConsumerProtocolMemberAssignment.decode(answer.encode())
        before = reusing.last_assignment
        reusing.on_assignment(answer)
        reading._kept_answer = None
        reading.on_assignment(again)
        assert _seen(reusing) == _seen(reading)
        now = reusing.last_assignment
        assert now is not None and before is not now
        if before is not None:  # a new assignment never shares a map with the last one
            for name in ("active_tasks", "standby_tasks", "partitions_by_host", "changelogs"):
                assert getattr(now, name) is not getattr(before, name)


def test_the_same_answer_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reuse happens: the second of two equal answers is neither decoded nor interpreted,
    and a different answer, a changed endpoint or a changed version is read in full."""
    calls: list[object] = []
    real = adapter.interpret_assignment

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(adapter, "interpret_assignment", counted)
    host = HostInfo("h", 1)
    consumer = _consumer(host)
    info = AssignmentInfo(
        version=4,
        commonly_supported_version=4,
        active_tasks=(TaskId(0, 0), TaskId(1, 1)),
        partitions_by_host={host: frozenset()},
        next_rebalance_ms=10,
    )
    answer = _answer(info, 0)
    for _ in range(3):
        consumer.on_assignment(ConsumerProtocolMemberAssignment.decode(answer.encode()))
    assert len(calls) == 1
    consumer.on_assignment(_answer(info.model_copy(update={"next_rebalance_ms": 11}), 0))
    assert len(calls) == 2
    consumer.process.endpoint = HostInfo("h", 2)
    consumer.on_assignment(_answer(info.model_copy(update={"next_rebalance_ms": 11}), 0))
    assert len(calls) == 3
