"""What the properties found, each pinned by its smallest reproducing story, and proof that the
state machine catches a broken assignor.

A finding the project has not fixed yet is a strict xfail: it fails the suite the day the
behaviour changes, so the finding is re-read then.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.task_assignor import TaskAssignment
from simulator.scenarios import JoinEvent, scenario_from_data
from tests.properties import group_machine
from tests.properties.group_machine import HighAvailabilityMachine, SteppedReplay

ONE_STORE = {
    "application_id": "app",
    "subtopologies": [{"id": 0, "source_topics": ["in"], "stores": ["store"],
                       "changelog_topics": ["app-store-changelog"]}],
}


@pytest.fixture(autouse=True)
def _no_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``note`` needs a hypothesis context; these stories run without one."""
    monkeypatch.setattr(group_machine, "note", lambda _text: None)


def _scale_out_sim(version: int) -> SteppedReplay:
    """One caught-up process with every task, a second (empty) one joins: both built at
    ``version``; returned settled, open (the caller closes it)."""
    sim = SteppedReplay(scenario_from_data({
        "name": "scale-out", "topology": ONE_STORE, "partitions": {"in": 4},
        "processes": [
            {"name": "a", "protocol_version": version, "initial_state": "caught_up"},
            {"name": "b", "protocol_version": version, "start": False},
        ],
        "config": {"probing.rebalance.interval.ms": 60_000},
        "timeouts": {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000,
                     "group.initial.rebalance.delay.ms": 0},
        "dynamics": {"write_rate": 0.0, "standby_trail": 0.0, "initial_records": 20_000},
    }))
    try:
        assert sim.settle(600)
        sim.apply(lambda at: JoinEvent(at=at, process="b"))
        assert sim.settle(3600)
    except BaseException:
        sim.close()
        raise
    return sim


def last_stable_decision(sim: SteppedReplay) -> Any:
    replay = sim.replay
    stable = {r.generation for r in replay.journal.stable(sim.group)}
    return replay.decisions[max(g for g in replay.decisions if g in stable)]


def actives_per_process(decision: Any) -> dict[str, int]:
    per_process: dict[str, int] = {}
    for member, tasks in decision.ownership.active.items():
        process = decision.ownership.process(member)
        per_process[process] = per_process.get(process, 0) + len(tasks)
    return per_process


def _scale_out(version: int) -> dict[str, Any]:
    """The scale-out story's outcome: actives per process and the last decision's follow-up."""
    sim = _scale_out_sim(version)
    try:
        decision = last_stable_decision(sim)
        return {"active": actives_per_process(decision), "followup": decision.followup,
                "version": decision.protocol_version}
    finally:
        sim.close()


def test_a_v2_group_promotes_its_warm_ups() -> None:
    """The control: at v2 the probing follow-up reaches the members, the warm-up catches up and
    the next rebalance gives b its share."""
    outcome = _scale_out(2)
    assert outcome["active"] == {"a": 2, "b": 2}
    assert outcome["followup"] == ""


def test_a_v1_group_keeps_its_warm_ups_until_something_else_rebalances_it() -> None:
    """At v1 the probing follow-up does not travel, as in Kafka: the warm-up is not promoted
    until some other rebalance; that rebalance then promotes it.

    Kafka's Java, read at apache/kafka (``streams/src/main/java/org/apache/kafka/streams/
    processor/internals/``):

    - ``assignment/AssignmentInfo.java``, ``encode()``: versions 1 to 6 write no
      ``nextRebalanceMs``; only 7 to 11 end with ``out.writeLong(nextRebalanceMs)``, so the
      deadline the leader set with ``setNextRebalanceTime`` is dropped when the group's used
      version is older;
    - ``StreamsPartitionAssignor.java``, ``onAssignment``: for received versions 1 to 6
      ``encodedNextScheduledRebalanceMs = Long.MAX_VALUE``, and ``maybeScheduleFollowupRebalance``
      then logs "No followup rebalance was requested" and sets the schedule to
      ``Long.MAX_VALUE``; no other route (the leader's own ``ClientState`` deadline included)
      reaches ``nextScheduledRebalanceMs``.

    Our v1 assignment is the one without ``next_rebalance_ms`` (``protocol/codec.py``), so it
    plays the part of Kafka's versions 1 to 6. This test was a strict xfail ("a v1 group
    never promotes its warm-ups") until the Java showed the behaviour is Kafka's.
    """
    sim = _scale_out_sim(1)
    try:
        replay = sim.replay
        decision = last_stable_decision(sim)
        assert decision.protocol_version == 1
        # the leader asked for a probing rebalance...
        assert decision.followup.startswith("probing rebalance")
        # ...no member holds one (the v1 bytes have nowhere to put it)...
        assert not any(h.followup_pending for s in replay.sims.values() for h in s.hosted)
        # ...so a keeps every active, b holds caught-up warm-ups, and nothing moves on its own
        assert actives_per_process(decision) == {"a": 4, "b": 0}
        owners = decision.ownership
        warm = {t for member, held in owners.standby.items() if owners.process(member) == "b"
                for t in held}
        assert warm, "b holds no warm-up"
        generation = max(replay.decisions)
        sim.wait(10 * 60.0)  # ten probing intervals
        assert sim.settle(600)
        assert max(replay.decisions) == generation, "something rebalanced on its own"
        # any other rebalance promotes the warm-ups: b's member rejoins (as after a restart)
        sim.live_members()[-1].request_rejoin()
        assert sim.settle(3600)
        assert max(replay.decisions) > generation
        assert actives_per_process(last_stable_decision(sim)) == {"a": 2, "b": 2}
    finally:
        sim.close()


# -- the machine catches a broken assignor ------------------------------------------------------

def _drop_one_active(result: TaskAssignment) -> TaskAssignment:
    clients = dict(result.clients)
    for pid, client in sorted(clients.items()):
        if client.active:
            clients[pid] = client.with_assignment(sorted(client.active)[1:], client.standby)
            break
    return dataclasses.replace(result, clients=clients)


def _drop_standbys(result: TaskAssignment) -> TaskAssignment:
    clients = {pid: c.with_assignment(c.active, ()) for pid, c in result.clients.items()}
    return dataclasses.replace(result, clients=clients, warmups={},
                               probing_rebalance_needed=False)


def _all_on_one_process(result: TaskAssignment) -> TaskAssignment:
    everything = frozenset().union(*(c.active for c in result.clients.values()))
    first = min(result.clients)
    clients = {pid: c.with_assignment(everything if pid == first else (),
                                      () if pid == first else c.standby)
               for pid, c in result.clients.items()}
    return dataclasses.replace(result, clients=clients, warmups={},
                               probing_rebalance_needed=False)


def _rotate_actives(result: TaskAssignment) -> TaskAssignment:
    """Each client runs the next client's actives, and its standbys are dropped (they could
    now sit beside their active): the counts per client stay, stickiness goes."""
    pids = sorted(result.clients, key=lambda p: p.sort_key)
    clients = {pid: result.clients[pid].with_assignment(
        result.clients[pids[(i + 1) % len(pids)]].active, ()) for i, pid in enumerate(pids)}
    return dataclasses.replace(result, clients=clients)


@pytest.fixture
def quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.parametrize(("mutation", "message"), [
    (_drop_one_active, "unowned"),
    (_drop_standbys, "wanted|share a tag"),  # whichever check meets the missing standby first
    (_all_on_one_process, "unbalanced|wanted"),  # its standbys are gone too
    (_rotate_actives, "balance did not force"),
])
def test_the_machine_catches_a_broken_assignor(
    monkeypatch: pytest.MonkeyPatch, quiet: None, mutation: Any, message: str
) -> None:
    original = HighAvailabilityTaskAssignor.place_tasks

    def broken(self: HighAvailabilityTaskAssignor, *args: Any, **kwargs: Any) -> TaskAssignment:
        return mutation(original(self, *args, **kwargs))  # type: ignore[no-any-return]

    monkeypatch.setattr(HighAvailabilityTaskAssignor, "place_tasks", broken)
    with pytest.raises(AssertionError, match=message):
        run_state_machine_as_test(HighAvailabilityMachine, settings=settings(
            max_examples=100, stateful_step_count=4, deadline=None, database=None,
            derandomize=True,
            phases=[Phase.generate], suppress_health_check=list(HealthCheck)))
