"""Two members claiming one member id, at the leader and through the coordinator shim.

A Kafka coordinator keys a group's members by member id, so a JoinGroup response never lists an
id twice; a duplicate comes from a client that sends another member's id (a bug, or hostile).
Each path has a defined outcome:

- **at the leader's ``assign()``**: aiokafka builds the mapping it passes to ``assign()`` from
  the JoinGroup response's list, one entry per member id, so the claim listed last is the one
  the leader reads (``aiokafka/consumer/group_coordinator.py``, ``_perform_assignment``:
  ``member_metadata[member_id] = metadata`` in a loop). Whatever that claim is, the id gets one
  answer made from it (its own error assignment if the bytes are unreadable), every task is
  active exactly once and every other member is served as in a normal rebalance;
- **through the coordinator**: the later JoinGroup takes the id's place in that round (the
  coordinator keeps one pending join per member, as Kafka's ``updateMember`` does) and the
  earlier claimant's request goes unanswered. Nobody heartbeats for the id, so its session
  expires and the group rebalances without it (no task lost: the survivors take its tasks); the
  real member's request times out, it rejoins, hears ``UNKNOWN_MEMBER_ID`` and joins as a new
  member, and the group is balanced again, all within one request timeout and a few heartbeats.
"""

from __future__ import annotations

import logging
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assignor.leader.pipeline import assign_group
from assignor.testing import Group, groups
from protocol import AssignmentInfo, AssignorError
from protocol.codec import Codec
from simulator.metrics import check_invariants
from simulator.scenarios import RejoinEvent, scenario_from_data
from simulator.shim.requests import JoinGroupRequest, JoinGroupResponse
from tests.assignor.leader.pipeline_support import check_served
from tests.properties import group_machine
from tests.properties.group_machine import SteppedReplay
from tests.properties.test_findings import ONE_STORE, actives_per_process

#: whole groups, decoded and checked from the bytes up: an eighth of the profile's examples
FEW = settings(max_examples=max(10, settings().max_examples // 8))


def _as_aiokafka_passes_it(listing: list[tuple[str, bytes]]) -> dict[str, bytes]:
    """The JoinGroup response's member list as ``assign()`` receives it: one entry per id, the
    last claim kept (aiokafka's ``_perform_assignment``)."""
    members: dict[str, bytes] = {}
    for member_id, data in listing:
        members[member_id] = data
    return members


@FEW
@given(group=groups(processes=st.integers(2, 4), threads=st.integers(1, 2)), data=st.data())
def test_a_member_id_claimed_twice_gets_one_answer_and_the_rest_is_served(
    group: Group, data: st.DataObject
) -> None:
    honest = group.member_bytes()
    names = sorted(honest)
    victim = data.draw(st.sampled_from(names), label="claimed id")
    other = data.draw(st.sampled_from([n for n in names if n != victim]), label="whose bytes")
    claim = data.draw(st.sampled_from([honest[other], b"\x93garbage"]), label="second claim")
    last_is_hostile = data.draw(st.booleans(), label="hostile claim listed last")
    claims = [(victim, honest[victim]), (victim, claim)]
    if not last_is_hostile:
        claims.reverse()
    listing = [(m, honest[m]) for m in names if m != victim] + claims
    read = _as_aiokafka_passes_it(listing)
    extra = {victim: read[victim]}
    logging.disable(logging.ERROR)
    try:
        result = assign_group(group.topology, group.assignor_config(),
                              group.group_input(extra=extra))
    finally:
        logging.disable(logging.NOTSET)
    assert set(result.members) == set(names)  # one answer per id
    process_of = {m: p.process_id for p in group.processes for m in p.members()}
    builds = {m: p.build for p in group.processes for m in p.members()}
    used = {m: p.version for p in group.processes for m in p.members()}
    endpoints = {m: p.endpoint for p in group.processes for m in p.members()}
    if read[victim] == b"\x93garbage":
        info = Codec(1).decode_assignment(result.members[victim].user_data)
        assert isinstance(info, AssignmentInfo)
        assert info.error_code is AssignorError.ASSIGNMENT_ERROR
        assert result.members[victim].partitions == ()
    elif read[victim] != honest[victim]:  # served as one more consumer of the other's process
        for table in (process_of, builds, used, endpoints):
            table[victim] = table[other]  # type: ignore[index]
    check_served(result, process_of=process_of, builds=builds, used=used, endpoints=endpoints)


# -- through the coordinator shim -----------------------------------------------------------------

def _three_processes() -> SteppedReplay:
    return SteppedReplay(scenario_from_data({
        "name": "duplicate-member-id", "topology": ONE_STORE, "partitions": {"in": 6},
        "processes": [{"name": n, "initial_state": "caught_up"} for n in ("a", "b", "c")],
        "timeouts": {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000,
                     "group.initial.rebalance.delay.ms": 0},
        "dynamics": {"write_rate": 0.0, "standby_trail": 0.0, "initial_records": 20_000},
    }))


def test_a_second_join_with_a_members_id_takes_its_place_until_the_session_expires(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(group_machine, "note", lambda _text: None)
    sim = _three_processes()
    try:
        assert sim.settle(600)
        replay, coordinator = sim.replay, sim.replay.coordinator
        leader = replay.sims["a"].members[0].member_id
        join = coordinator.join
        claimed: list[str] = []
        hostile: list[Any] = []

        def join_then_claim(request: JoinGroupRequest) -> Any:
            """The first follower whose JoinGroup waits for the round is claimed at once by a
            second client sending the same id with the leader's subscription bytes."""
            pending = join(request)
            if request.member_id not in ("", leader) and not claimed and not pending.done():
                claimed.append(request.member_id)
                protocols = next(m.protocols for m in _members(coordinator, sim.group)
                                 if m.member_id == leader)
                hostile.append(join(JoinGroupRequest(sim.group, request.member_id, protocols,
                                                     client_id="hostile")))
            return pending

        monkeypatch.setattr(coordinator, "join", join_then_claim)
        sim.apply(lambda at: RejoinEvent(at=at, process="a"))
        began = sim.clock.time()
        assert sim.settle(600)
        assert claimed, "no follower joined while the round was open"
        victim = claimed[0]
        answer: JoinGroupResponse = hostile[0].result()
        assert answer.error_code == 0 and answer.member_id == victim  # the later claim won
        victim_process = victim.split("-")[0]
        real = replay.sims[victim_process].members[0]
        assert real.member_id != victim  # the real member joined again under a new id
        # within one request timeout (40 s) and a few heartbeats
        assert sim.clock.time() - began <= 40 + 5
        stable = replay.journal.stable(sim.group)
        for record in stable:
            decision = replay.decisions[record.generation]
            assert check_invariants(decision.ownership, decision.tasks,
                                    generation=record.generation, time_s=record.ended_at,
                                    replay="") == []
        # the claimed generation: the leader read the id as a second consumer of its process
        result = sim.leader_results[answer.generation_id]
        leader_pid = replay.sims["a"].process.process_id  # type: ignore[union-attr]
        assert victim in result.threads[leader_pid].active
        # the expiry: a generation without the id, every task owned by the two others
        gone = [r for r in stable if r.ended_at > began and victim not in r.members]
        assert gone
        # the end: three processes, two tasks each
        last = replay.decisions[stable[-1].generation]
        assert actives_per_process(last) == {"a": 2, "b": 2, "c": 2}
    finally:
        sim.close()


def _members(coordinator: Any, group_id: str) -> list[Any]:
    """The coordinator's members of a group (the shim exposes ids only; the protocols bytes
    a member joined with are what a second client would copy)."""
    return list(coordinator._groups[group_id].members.values())
