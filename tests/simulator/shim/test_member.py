"""The member driver: aiokafka's assignors hosted in the shim, rejoins, failures, determinism."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import pytest
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocol, ConsumerProtocolMemberMetadata

from simulator.shim import (
    CoordinatorConfig,
    FencedInstanceIdError,
    GroupCoordinator,
    Journal,
    ShimMember,
    VirtualClock,
    make_cluster,
    settle,
)

CLUSTER = make_cluster({"orders": 6, "payments": 4, "audit": 3})
FAST = CoordinatorConfig(initial_rebalance_delay_ms=0)


class World:
    """A coordinator and a way to add members to group ``g``, on one virtual clock."""

    def __init__(self, clock: VirtualClock, config: CoordinatorConfig = FAST) -> None:
        self.clock = clock
        self.coordinator = GroupCoordinator(clock, config, Journal())
        self.members: list[ShimMember] = []

    def member(
        self,
        name: str,
        assignors: Iterable[Any] = (RoundRobinPartitionAssignor,),
        topics: Iterable[str] = ("orders", "payments"),
        cluster: ClusterMetadata = CLUSTER,
        **kwargs: Any,
    ) -> ShimMember:
        member = ShimMember(
            self.coordinator, group_id="g", assignors=list(assignors), topics=topics,
            cluster=cluster, client_id=name, **kwargs,
        )
        self.members.append(member)
        return member.start()

    async def settle(self, **kwargs: Any) -> int:
        return await settle(self.members, **kwargs)

    @property
    def journal(self) -> Journal:
        return self.coordinator.journal


def play(scenario: Callable[[World], Awaitable[Any]], seed: int = 0, **kwargs: Any) -> World:
    with VirtualClock(seed) as clock:
        world = World(clock, **kwargs)
        clock.run(scenario(world))
        return world


def decoded(record_assignments: Mapping[str, bytes]) -> dict[str, list[tuple[str, int]]]:
    return {
        member: sorted(ConsumerProtocol.ASSIGNMENT.decode(data).partitions())
        for member, data in record_assignments.items()
    }


def as_lists(assignments: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]]:
    return {m: sorted(a.partitions()) for m, a in assignments.items()}


# -- hosting aiokafka's own assignors ------------------------------------------------------------
def test_roundrobin_in_the_shim_assigns_what_aiokafka_assigns_directly() -> None:
    subscriptions = {
        "c0": ("orders",),
        "c1": ("orders", "payments"),
        "c2": ("orders", "payments", "audit"),
        "c3": ("payments", "audit"),
    }

    async def scenario(world: World) -> None:
        for name, topics in subscriptions.items():
            world.member(name, topics=topics)
        await world.settle()
        members = {m.member_id: m for m in world.members}
        direct = RoundRobinPartitionAssignor.assign(CLUSTER, {
            member_id: ConsumerProtocolMemberMetadata(0, list(m.topics), b"")
            for member_id, m in members.items()
        })
        assert as_lists(direct) == {mid: sorted(m.partitions()) for mid, m in members.items()}
        (record,) = world.journal.stable("g")
        assert decoded(record.assignments) == as_lists(direct)

    play(scenario)


def _sticky_class(name: str) -> type[StickyPartitionAssignor]:
    # aiokafka's sticky assignor keeps its state on the class (aio-libs/aiokafka#1175): one
    # subclass per member gives each simulated process its own.
    return type(f"Sticky_{name}", (StickyPartitionAssignor,), {})


def test_sticky_in_the_shim_assigns_what_aiokafka_assigns_directly_across_generations() -> None:
    async def scenario(world: World) -> None:
        for i in range(3):
            world.member(f"c{i}", assignors=[_sticky_class(f"c{i}")])
        await world.settle()
        world.member("c3", assignors=[_sticky_class("c3")])
        await world.settle()
        await world.members[1].close()
        await world.settle()
        await world.members[0].crash()
        await world.settle()

    world = play(scenario)
    stable = world.journal.stable("g")
    assert [len(r.members) for r in stable] == [3, 4, 3, 2]
    for record in stable:
        members = {m: ConsumerProtocol.METADATA.decode(b) for m, b in record.metadata.items()}
        direct = _sticky_class("direct").assign(CLUSTER, members)
        assert decoded(record.assignments) == as_lists(direct), record
    # Sticky: the survivors of the last rebalance keep what they had.
    before, after = decoded(stable[-2].assignments), decoded(stable[-1].assignments)
    for member in stable[-1].members:
        assert set(before[member]) <= set(after[member])


def test_the_protocol_every_member_supports_is_used() -> None:
    async def scenario(world: World) -> None:
        world.member("c0", assignors=[_sticky_class("c0"), RoundRobinPartitionAssignor])
        world.member("c1", assignors=[_sticky_class("c1"), RoundRobinPartitionAssignor])
        await world.settle()
        assert {m.protocol for m in world.members} == {"sticky"}
        world.member("c2", assignors=[RoundRobinPartitionAssignor])
        await world.settle()
        assert {m.protocol for m in world.members} == {"roundrobin"}

    play(scenario)


def test_an_assignor_returning_bytes_and_an_instance_assignor_are_hosted() -> None:
    class BytesAssignor:
        name = "bytes"

        def __init__(self) -> None:
            self.seen: list[Any] = []

        def metadata(self, topics: Iterable[str]) -> bytes:
            return ConsumerProtocolMemberMetadata(0, list(topics), b"hello").encode()

        def assign(self, cluster: ClusterMetadata, members: Mapping[str, Any]) -> dict[str, Any]:
            assert all(m.user_data == b"hello" for m in members.values())
            one = RoundRobinPartitionAssignor.assign(cluster, members)
            return {k: v.encode() for k, v in one.items()}

        def on_assignment(self, assignment: Any) -> None:
            self.seen.append(assignment)

    hosts = [BytesAssignor(), BytesAssignor()]

    async def scenario(world: World) -> None:
        for i, host in enumerate(hosts):
            world.member(f"c{i}", assignors=[host])
        await world.settle()

    play(scenario)
    assert [len(h.seen) for h in hosts] == [1, 1]
    assert sum(len(h.seen[0].partitions()) for h in hosts) == 10


# -- rejoin requests ----------------------------------------------------------------------------
def test_a_rejoin_request_from_the_leader_starts_a_rebalance() -> None:
    async def scenario(world: World) -> None:
        world.member("c0")
        world.member("c1")
        assert await world.settle() == 1
        world.members[0].request_rejoin()  # c0 leads
        assert await world.settle() == 2

    play(scenario)


def test_a_follower_rejoining_with_unchanged_metadata_keeps_its_generation() -> None:
    async def scenario(world: World) -> None:
        world.member("c0")
        world.member("c1")
        assert await world.settle() == 1
        follower = world.members[1]
        follower.request_rejoin()
        assert await world.settle() == 1
        assert follower.joins == 2  # it did rejoin, and got generation 1 back
        follower.subscribe(["orders", "payments", "audit"])
        assert await world.settle() == 2
        assert any(tp.topic == "audit" for m in world.members for tp in m.partitions())

    play(scenario)


# -- failures ------------------------------------------------------------------------------------
class FailingOnce(RoundRobinPartitionAssignor):
    """Raises in ``assign`` the first ``failures`` times it is asked."""

    failures = 0

    @classmethod
    def assign(cls, cluster: ClusterMetadata, members: Mapping[str, Any]) -> dict[str, Any]:
        if cls.failures > 0:
            cls.failures -= 1
            raise RuntimeError("assignor blew up")
        return super().assign(cluster, members)


def test_a_leader_whose_assign_raises_does_not_leave_the_group_stuck() -> None:
    flaky = type("Flaky", (FailingOnce,), {"failures": 1000})

    async def scenario(world: World) -> None:
        world.member("c0", assignors=[flaky], rebalance_timeout_ms=10_000)
        world.member("c1", rebalance_timeout_ms=10_000)
        world.member("c2", rebalance_timeout_ms=10_000)
        await world.settle(timeout=300)

    world = play(scenario)
    outcomes = [(r.generation, r.outcome) for r in world.journal.records]
    assert outcomes[0] == (1, "aborted")
    assert outcomes[-1][1] == "stable"
    last = world.journal.stable("g")[-1]
    assert last.leader != world.members[0].member_id
    assert len(last.members) == 3
    assert world.members[0].assign_calls > 1
    assert any(e.kind == "assign-failed" for e in world.journal.events)


def test_a_leader_that_crashes_while_assigning_leads_to_a_new_generation() -> None:
    async def scenario(world: World) -> None:
        leader = world.member("c0", assign_delay_ms=5_000)
        world.member("c1")
        world.member("c2")
        await world.clock.sleep(1.0)  # the leader is now "inside assign"
        assert leader.status == "joining" and leader.assign_calls == 1
        await leader.crash()
        generation = await world.settle()
        assert generation == 2
        survivors = {m.member_id for m in world.members[1:]}
        assert set(world.journal.stable("g")[-1].members) == survivors

    play(scenario)


def test_an_old_incarnation_waiting_in_join_is_fenced_by_the_new_one() -> None:
    async def scenario(world: World) -> None:
        old = world.member("a", group_instance_id="i-a")
        world.member("b")
        await world.settle()
        old.subscribe(["orders", "payments", "audit"])  # a rebalance with a parked JoinGroup
        await world.clock.sleep(0)
        new = world.member("a", group_instance_id="i-a")
        world.members.remove(old)
        await world.settle()
        assert old.status == "failed"
        assert isinstance(old.error, FencedInstanceIdError)
        assert new.stable and new.member_id != old.member_id

    play(scenario)


def test_a_static_member_restarting_in_time_keeps_its_partitions_without_a_rebalance() -> None:
    async def scenario(world: World) -> None:
        old = world.member("a", group_instance_id="i-a")
        world.member("b")
        world.member("c")
        assert await world.settle() == 1
        before = sorted(old.partitions())
        await old.close()  # a static member sends no LeaveGroup
        world.members.remove(old)
        await world.clock.sleep(5.0)
        new = world.member("a", group_instance_id="i-a")
        assert await world.settle() == 1
        assert sorted(new.partitions()) == before
        assert len(world.journal.records) == 1

    play(scenario)


def test_an_undecodable_assignment_stops_the_member() -> None:
    class Broken(RoundRobinPartitionAssignor):
        name = "broken"

        @classmethod
        def assign(cls, cluster: ClusterMetadata, members: Mapping[str, Any]) -> dict[str, Any]:
            return {m: b"\x00" for m in members}

    async def scenario(world: World) -> None:
        member = world.member("a", assignors=[Broken])
        for _ in range(10):
            await world.clock.sleep(0.1)
        assert member.status == "failed"
        assert "undecodable assignment" in repr(world.journal.text())

    play(scenario)


# -- time and determinism -----------------------------------------------------------------------
async def _busy_scenario(world: World) -> None:
    """Joins, leaves, crashes, static restarts and probing rejoins over two virtual hours."""
    rng = world.clock.random
    for i in range(4):
        world.member(f"d{i}", latency_ms=(1.0, 20.0))
    world.member("s0", group_instance_id="i-s0", latency_ms=(1.0, 20.0))
    await world.settle()
    step = 0
    while world.clock.time() < 7200:
        step += 1
        live = [m for m in world.members if m.running]
        action = rng.choice(["rejoin", "join", "leave", "crash", "restart", "wait"])
        if action == "rejoin" and live:
            rng.choice(live).request_rejoin()
        elif action == "join" or len(live) < 2:
            world.member(f"n{step}", latency_ms=(1.0, 20.0))
        elif action == "leave":
            await rng.choice(live).close()
        elif action == "crash":
            await rng.choice(live).crash()
        elif action == "restart":
            static = [m for m in live if m.group_instance_id]
            if static:
                await static[0].close()
                world.members.remove(static[0])
                world.member("s0", group_instance_id="i-s0", latency_ms=(1.0, 20.0))
        await world.clock.sleep(rng.uniform(1, 120))
        if step % 5 == 0:
            await world.settle(timeout=600)


def test_hours_of_rebalancing_on_the_virtual_clock_are_deterministic_for_a_seed() -> None:
    first = play(_busy_scenario, seed=11)
    second = play(_busy_scenario, seed=11)
    other = play(_busy_scenario, seed=12)
    assert first.clock.time() >= 7200
    assert len(first.journal.records) > 20
    assert list(first.journal.events) == list(second.journal.events)
    assert first.journal.records == second.journal.records
    assert list(first.journal.events) != list(other.journal.events)


def test_the_journal_reads_well() -> None:
    world = play(_busy_scenario, seed=3)
    text = repr(world.journal)
    assert text.startswith("Journal(") and "gen " in text and "join-request" in text
    record = world.journal.stable("g")[-1]
    assert f"gen {record.generation} stable" in repr(record)


def test_settle_reports_who_is_missing() -> None:
    async def scenario(world: World) -> None:
        world.member("c0")
        await world.settle()
        await world.members[0].crash()
        with pytest.raises(TimeoutError, match="not settled"):
            await world.settle(timeout=1.0)

    play(scenario)
