"""Payloads at the decoder's size limits (``protocol/_limits.py``) sent by a member of a running
group, through the coordinator shim with the real assignor objects.

The codec's own tests (``tests/protocol/test_codec_limits.py``) and the leader's
(``tests/assignor/leader/test_pipeline_limits.py``) check single decodes; here the question is
what the *group* does. A member's subscription at exactly a limit is served like any other
(the padding is offset sums for tasks that do not exist, which the leader ignores); one sum or
one byte beyond gets an ``ASSIGNMENT_ERROR`` of its own, the others take its tasks, and the
group settles (nothing tells the refused member to rejoin, so nothing loops).

An assignment over its limit is different: it is the group that is too small for the topology
(65,537 tasks for one consumer), not one member that misbehaves, and giving only that member an
error would lose its tasks. The leader answers every member with ``ASSIGNMENT_ERROR`` and logs
why; the next member to join splits the tasks and the group is served. A group of 65,536 tasks
takes the engine ~15 s to run, so those two run under ``make test-deep`` only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from protocol import AssignorError
from protocol._limits import MAX_MEMBER_TASKS, MAX_OFFSET_SUMS, MAX_SUBSCRIPTION_BYTES
from simulator.scenarios import JoinEvent, RejoinEvent, scenario_from_data
from tests.properties import group_machine
from tests.properties.group_machine import SteppedReplay
from tests.properties.padding import offset_sums, pad_subscriptions, size_in_bytes
from tests.properties.test_findings import ONE_STORE, actives_per_process, last_stable_decision

TIMEOUTS = {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000,
            "group.initial.rebalance.delay.ms": 0}
STILL = {"write_rate": 0.0, "standby_trail": 0.0, "initial_records": 20_000}


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(group_machine, "note", lambda _text: None)
    logging.disable(logging.ERROR)
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.parametrize(("pad", "refused"), [
    (offset_sums(MAX_OFFSET_SUMS), None),
    (offset_sums(MAX_OFFSET_SUMS + 1), f"holds more than {MAX_OFFSET_SUMS:,} offset sums"),
    (size_in_bytes(MAX_SUBSCRIPTION_BYTES), None),
    (size_in_bytes(MAX_SUBSCRIPTION_BYTES + 1),
     f"{MAX_SUBSCRIPTION_BYTES + 1:,} bytes exceeds the limit"),
], ids=["65,536 offset sums", "65,537 offset sums", "2 MiB", "2 MiB + 1 byte"])
def test_a_subscription_at_a_limit_is_served_and_one_beyond_is_refused_alone(
    pad: Callable[[bytes], bytes], refused: str | None
) -> None:
    sim = SteppedReplay(scenario_from_data({
        "name": "subscription-limits", "topology": ONE_STORE, "partitions": {"in": 6},
        "processes": [{"name": n, "initial_state": "caught_up"} for n in ("a", "b", "c")],
        "timeouts": TIMEOUTS, "dynamics": STILL,
    }))
    try:
        assert sim.settle(600)
        pad_subscriptions(sim, "c", pad)
        sim.apply(lambda at: RejoinEvent(at=at, process="c"))
        assert sim.settle(600), "the group did not settle"
        result = sim.leader_results[max(sim.leader_results)]
        assert result.error is AssignorError.NONE
        padded = sim.replay.sims["c"].members[0].member_id
        if refused is None:
            assert not result.rejected
            assert actives_per_process(last_stable_decision(sim)) == {"a": 2, "b": 2, "c": 2}
        else:
            assert set(result.rejected) == {padded}
            assert refused in result.rejected[padded]
            assert result.members[padded].info.error_code is AssignorError.ASSIGNMENT_ERROR
            assert actives_per_process(last_stable_decision(sim)) == {"a": 3, "b": 3, "c": 0}
            assert not result.followup  # nothing makes the refused member rejoin
    finally:
        sim.close()


@pytest.mark.deep  # a 65,536-task group takes the engine ~15-40 s: make test-deep only
@pytest.mark.parametrize("tasks", [MAX_MEMBER_TASKS, MAX_MEMBER_TASKS + 1])
def test_an_assignment_over_its_task_limit_errs_for_all_until_the_group_grows(tasks: int) -> None:
    sim = SteppedReplay(scenario_from_data({
        "name": "assignment-limits",
        "topology": {"application_id": "app",
                     "subtopologies": [{"id": 0, "source_topics": ["in"]}]},
        "partitions": {"in": tasks},
        "processes": [{"name": "a"}, {"name": "b", "start": False}],
        "timeouts": TIMEOUTS, "dynamics": {**STILL, "initial_records": 0},
    }))
    try:
        assert sim.settle(600)
        result = sim.leader_results[max(sim.leader_results)]
        (answer,) = result.members.values()
        if tasks <= MAX_MEMBER_TASKS:
            assert result.error is AssignorError.NONE
            assert len(answer.info.active_tasks) == tasks
            return
        assert result.error is AssignorError.ASSIGNMENT_ERROR
        assert f"{tasks:,} elements exceed the limit of {MAX_MEMBER_TASKS:,}" in result.detail
        assert answer.partitions == ()
        sim.apply(lambda at: JoinEvent(at=at, process="b"))
        assert sim.settle(600)
        grown = sim.leader_results[max(sim.leader_results)]
        assert grown.error is AssignorError.NONE
        assert sum(len(m.info.active_tasks) for m in grown.members.values()) == tasks
    finally:
        sim.close()
