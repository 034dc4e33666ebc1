"""One member that lies about itself must not keep the group rebalancing (issue 10, item 4).

Each test replays generations: every member sends what its build would send (a liar sends what
it lies), the leader answers with the memory it kept from the previous generation, and every
member reads its answer with the member side (``interpret_assignment``), which decides whether
it rejoins at once. A group is stable when no member asks to rejoin.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignor.config import AssignorConfig
from assignor.leader.model import LeaderResult
from assignor.leader.pipeline import assign_group
from assignor.member import MemberDecision, interpret_assignment
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import HostInfo, ProcessId
from protocol.messages import AssignmentInfo
from tests.assignor.leader.pipeline_support import check_served, group, shop, subscription

CONFIG = AssignorConfig()
H1, H2, H3 = (HostInfo(f"app-{n}", 9000 + n) for n in (1, 2, 3))
CLONE = HostInfo("clone", 9999)  # no honest process announces it
GUARD_LOGGER = "assignor.leader.guard"


@dataclass
class Member:
    """One consumer as the member side sees it: its identity and its subscription version."""

    pid: int
    endpoint: HostInfo | None
    build: int = 3
    used: int = 3
    #: a liar always sends this version, whatever it is told, and declares ``build``
    stuck_at: int | None = None

    def user_data(self) -> bytes:
        version = self.stuck_at if self.stuck_at is not None else self.used
        return subscription(self.pid, build=self.build, version=version, endpoint=self.endpoint)

    def sent_version(self) -> int:
        return self.stuck_at if self.stuck_at is not None else self.used


@dataclass
class Generation:
    result: LeaderResult
    decisions: dict[str, MemberDecision]

    @property
    def rejoining(self) -> list[str]:
        return sorted(m for m, d in self.decisions.items() if d.rebalance_at_ms == 0)


def play(members: dict[str, Member], generations: int, leader: int = 1) -> list[Generation]:
    """``generations`` rebalances in a row, the leader's memory carried from one to the next."""
    played: list[Generation] = []
    memory: Any = None
    for _ in range(generations):
        data = {m: member.user_data() for m, member in members.items()}
        group_input = group(data, leader=leader)
        if memory is not None:
            group_input = dataclasses.replace(group_input, memory=memory)
        result = assign_group(shop(), CONFIG, group_input)
        memory = getattr(result, "memory", None)
        decisions = {}
        for member_id, member in members.items():
            mine = result.members[member_id]
            info = Codec(member.build).decode_assignment(mine.user_data)
            decisions[member_id] = interpret_assignment(
                info,
                list(mine.partitions),
                used_version=member.sent_version(),
                latest_supported_version=member.build,
                endpoint=member.endpoint,
                previous=None,
            )
            member.used = decisions[member_id].next_used_version
        played.append(Generation(result, decisions))
    return played


def first_stable(played: list[Generation]) -> int:
    """Index of the first generation after which nobody rejoins, for every later one too."""
    for index in range(len(played)):
        if all(not g.rejoining for g in played[index:]):
            return index
    raise AssertionError(
        "the group never stops rebalancing: rejoining per generation "
        f"{[g.rejoining for g in played]}"
    )


def guard_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == GUARD_LOGGER
            and r.levelno >= logging.WARNING]


def honest(members: dict[str, Member], exclude: str) -> dict[str, Member]:
    return {m: v for m, v in members.items() if m != exclude}


def check_honest_served(generation: Generation, members: dict[str, Member], refused: str) -> None:
    """Honest members: every task active exactly once among them, host maps right; the refused
    member: an ASSIGNMENT_ERROR with no partitions and no follow-up."""
    served = honest(members, refused)
    result = generation.result
    check_served(
        dataclasses.replace(result, members={m: result.members[m] for m in served}),
        process_of={m: ProcessId.for_int(v.pid) for m, v in served.items()},
        builds={m: v.build for m, v in served.items()},
        used={m: v.sent_version() for m, v in served.items()},
        endpoints={m: v.endpoint for m, v in served.items()},
    )
    mine = result.members[refused]
    assert mine.partitions == ()
    info = Codec(members[refused].build).decode_assignment(mine.user_data)
    assert isinstance(info, AssignmentInfo)
    assert info.error_code is AssignorError.ASSIGNMENT_ERROR
    decision = generation.decisions[refused]
    assert decision.rebalance_at_ms is None, decision.reason
    assert decision.assignment.error is AssignorError.ASSIGNMENT_ERROR


# --- (a) two instances with one process id and different endpoints --------------------------


def three_and_a_clone(clone_id: str = "z-clone") -> dict[str, Member]:
    members = {
        f"p{p}-{c}": Member(p, endpoint)
        for p, endpoint in ((1, H1), (2, H2), (3, H3))
        for c in (1, 2)
    }
    members[clone_id] = Member(2, CLONE)  # process 2's id, its own endpoint
    return members


def test_a_process_id_clone_is_refused_and_the_group_is_stable_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    members = three_and_a_clone()
    played = play(members, 6)
    assert first_stable(played) == 0, [g.rejoining for g in played]
    for generation in played:
        check_honest_served(generation, members, refused="z-clone")
        assert "z-clone" in generation.result.refused
        assert "app-2:9002" in generation.result.refused["z-clone"]
    # logged once, naming the member and both endpoints, not once per generation
    warnings = guard_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "z-clone" in warnings[0] and "clone:9999" in warnings[0]


def test_the_endpoint_served_before_keeps_its_process_id_when_a_clone_arrives() -> None:
    # the clone's member id sorts first, so without memory it would win the tie
    members = {m: v for m, v in three_and_a_clone("a-clone").items() if m != "a-clone"}
    played = play(members, 1)
    assert not played[0].rejoining
    members["a-clone"] = Member(2, CLONE)
    memory = played[0].result.memory
    data = {m: v.user_data() for m, v in members.items()}
    result = assign_group(shop(), CONFIG, dataclasses.replace(group(data, leader=1), memory=memory))
    assert set(result.refused) == {"a-clone"}
    assert not result.members["a-clone"].partitions
    assert {m for m, r in result.members.items() if r.partitions} >= {"p2-1", "p2-2"}


def test_a_process_that_moves_to_a_new_endpoint_is_served_there() -> None:
    """A restarted static member keeps its process id and may come back elsewhere: with no
    conflict inside one generation, the new endpoint is simply the process's endpoint."""
    members = {f"p{p}": Member(p, endpoint) for p, endpoint in ((1, H1), (2, H2))}
    played = play(members, 1)
    members["p2"] = Member(2, CLONE)
    played += play(members, 1)
    result = played[-1].result
    assert not result.refused
    assert set(result.members["p1"].info.partitions_by_host) == {H1, CLONE}
    assert not played[-1].rejoining


# --- (b) a member stuck at version 1 while declaring version 3 -------------------------------


def test_a_version_liar_is_refused_after_ignoring_upgrades_and_the_group_stays_stable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    members = {f"p{p}-{c}": Member(p, endpoint) for p, endpoint in ((1, H1), (2, H2))
               for c in (1, 2)}
    members["p3-liar"] = Member(3, H3, stuck_at=1)
    played = play(members, 8)
    stable = first_stable(played)
    # two generations of Kafka's version probing (the liar told twice to upgrade), then refused
    assert stable == 2, [g.rejoining for g in played]
    for generation in played[stable:]:
        check_honest_served(generation, members, refused="p3-liar")
        assert generation.result.used_version == 3
        assert generation.result.commonly_supported_version == 3
    warnings = guard_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "p3-liar" in warnings[0] and "version 1" in warnings[0]


def test_a_liar_that_starts_telling_the_truth_is_served_again() -> None:
    members = {"p1": Member(1, H1), "p2": Member(2, H2, stuck_at=1)}
    played = play(members, 3)
    assert "p2" in played[-1].result.refused
    members["p2"].stuck_at = None
    members["p2"].used = 3
    played += play(members, 1)  # memory restarts here: a fresh leader, the truth is served
    assert not played[-1].result.refused
    assert played[-1].result.members["p2"].partitions


@pytest.mark.parametrize("lost", [False, True])
def test_an_honest_rolling_upgrade_is_never_refused(lost: bool) -> None:
    """The last old build was bounced: the others send v1 and are told to upgrade. Even if one
    instruction is lost (its generation aborted before the answer arrived), nobody is refused."""
    members = {"p1": Member(1, H1, used=1), "p2": Member(2, H2, used=1), "p3": Member(3, H3)}

    def generation(memory: Any) -> LeaderResult:
        data = {m: v.user_data() for m, v in members.items()}
        group_input = group(data, leader=1)
        if memory is not None:
            group_input = dataclasses.replace(group_input, memory=memory)
        return assign_group(shop(), CONFIG, group_input)

    result = generation(None)
    assert set(result.memory.upgrade_told) == {"p1", "p2"}
    members["p2"].used = 3
    if lost:  # p1 never read its answer and sends v1 once more
        result = generation(result.memory)
        assert not result.refused
        assert set(result.memory.upgrade_told) == {"p1"}
    members["p1"].used = 3
    result = generation(result.memory)
    assert not result.refused
    assert result.used_version == 3 and not result.memory.upgrade_told


# --- any group, one hostile member ------------------------------------------------------------


@st.composite
def groups_with_one_liar(draw: st.DrawFn) -> tuple[dict[str, Member], str, str]:
    """1-4 honest processes of 1-3 consumers (endpoint or none), member ids in random order, and
    one hostile consumer: a clone of one of them with another endpoint, or a version liar."""
    processes = draw(st.integers(1, 4))
    names = draw(st.permutations([f"m{i:02d}" for i in range(16)]))
    members: dict[str, Member] = {}
    for p in range(1, processes + 1):
        endpoint = draw(st.sampled_from([None, HostInfo(f"app-{p}", 9000 + p)]))
        for _ in range(draw(st.integers(1, 3))):
            members[names[len(members)]] = Member(p, endpoint)
    hostile = names[len(members)]
    kind = draw(st.sampled_from(["clone", "liar"]))
    if kind == "clone":
        victim = members[draw(st.sampled_from(sorted(members)))]
        other = draw(st.sampled_from([None, CLONE]).filter(lambda e: e != victim.endpoint))
        members[hostile] = Member(victim.pid, other)
    else:
        stuck = draw(st.integers(1, 2))
        members[hostile] = Member(processes + 1, draw(st.sampled_from([None, H3])), stuck_at=stuck)
    return members, hostile, kind


@given(groups_with_one_liar())
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_any_group_with_one_hostile_member_settles_within_three_generations(
    case: tuple[dict[str, Member], str, str],
) -> None:
    members, hostile, kind = case
    played = play(members, 5)
    stable = first_stable(played)
    assert stable <= (0 if kind == "clone" else 2), [g.rejoining for g in played]
    last = played[-1]
    refused = set(last.result.refused)
    if kind == "liar":
        assert refused == {hostile}
    else:  # one side of the conflict: the clone, or (no memory yet, smaller ids) the original
        victims = {m for m, v in members.items() if v.pid == members[hostile].pid}
        clone_side = {m for m in victims if members[m].endpoint == members[hostile].endpoint}
        assert refused in (clone_side, victims - clone_side), (refused, clone_side)
    served = {m: v for m, v in members.items() if m not in refused}
    check_served(
        dataclasses.replace(last.result, members={m: last.result.members[m] for m in served}),
        process_of={m: ProcessId.for_int(v.pid) for m, v in served.items()},
        builds={m: v.build for m, v in served.items()},
        used={m: v.sent_version() for m, v in served.items()},
        endpoints={m: v.endpoint for m, v in served.items()},
    )
    for member_id in refused:
        assert not last.result.members[member_id].partitions
        assert last.decisions[member_id].assignment.error is AssignorError.ASSIGNMENT_ERROR


def test_a_group_of_liars_only_is_told_so_and_is_stable() -> None:
    members = {"p1": Member(1, H1, stuck_at=1), "p2": Member(2, H2, stuck_at=2)}
    played = play(members, 5)
    assert first_stable(played) == 2, [g.rejoining for g in played]
    result = played[-1].result
    assert set(result.refused) == {"p1", "p2"}
    assert result.error is AssignorError.ASSIGNMENT_ERROR
    assert "every member was refused" in result.detail
