"""A member survives what other clients do to the group (issue 10 item 5b, 5c).

(b) A member whose metadata is not a consumer-protocol encoding used to kill the leader's task
(only ``assign()`` was guarded): the leader stayed "joining" and the group never settled.
(c) A second JoinGroup carrying a parked member's id replaces its pending request, as in Kafka; with
no request timeout the parked member used to wait forever.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from simulator.shim import CoordinatorConfig, GroupState, JoinGroupRequest, ShimMember
from tests.simulator.shim.test_member import World, play

GARBAGE = b"\xff\xff\xff\x7fnot a consumer-protocol subscription"
ALL = sorted([("orders", p) for p in range(6)] + [("payments", p) for p in range(4)])


class Garbled(RoundRobinPartitionAssignor):
    """Speaks the same protocol name as everyone else, but its metadata is not decodable."""

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> bytes:  # type: ignore[override]
        return GARBAGE


def _owned(members: Iterable[ShimMember]) -> list[tuple[str, int]]:
    return sorted((tp.topic, tp.partition) for m in members for tp in m.partitions())


def test_a_member_with_undecodable_metadata_neither_kills_the_leader_nor_stalls_the_group() -> None:
    async def scenario(world: World) -> None:
        good = world.member("c0")
        garbled = world.member("c1", assignors=[Garbled])
        other = world.member("c2")
        assert await world.settle(timeout=120) == 1
        assert good.member_id == world.coordinator.leader("g")
        assert garbled.stable and garbled.partitions() == []
        assert _owned([good, other]) == ALL
        undecodable = list(world.journal.kinds("metadata-undecodable"))
        assert [e.member for e in undecodable] == [good.member_id]
        assert garbled.member_id in undecodable[0].detail

    play(scenario)


def test_a_leader_whose_own_metadata_is_garbage_still_assigns_the_others() -> None:
    async def scenario(world: World) -> None:
        garbled = world.member("c0", assignors=[Garbled])
        good = [world.member("c1"), world.member("c2")]
        assert await world.settle(timeout=120) == 1
        assert garbled.member_id == world.coordinator.leader("g")
        assert garbled.partitions() == []
        assert _owned(good) == ALL

    play(scenario)


def test_a_parked_join_replaced_by_an_impostor_times_out_and_the_member_rejoins() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=3000)

    async def scenario(world: World) -> None:
        victim = world.member("a")  # default request_timeout_ms, as aiokafka's: 40 s
        await world.clock.sleep(1.0)  # victim has its id and is parked in the initial delay
        assert victim.member_id and victim.status == "joining"
        impostor = world.coordinator.join(JoinGroupRequest(
            "g", victim.member_id, protocols=(("roundrobin", GARBAGE),), client_id="impostor",
        ))
        answer = await impostor  # the impostor gets the victim's join response and never syncs
        assert answer.member_id == victim.member_id and answer.generation_id == 1
        generation = await world.settle(timeout=300)
        assert victim.stable and _owned([victim]) == ALL
        assert world.coordinator.state("g") is GroupState.STABLE
        assert generation >= 2
        timeouts = list(world.journal.kinds("request-timeout"))
        assert timeouts and timeouts[0].time >= 40.0
        assert "JoinGroup" in timeouts[0].detail

    play(scenario, config=config)


def test_the_request_timeout_is_a_parameter() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=3000)

    async def scenario(world: World) -> None:
        victim = world.member("a", request_timeout_ms=5_000)
        await world.clock.sleep(1.0)
        world.coordinator.join(JoinGroupRequest(
            "g", victim.member_id, protocols=(("roundrobin", GARBAGE),), client_id="impostor",
        ))
        await world.settle(timeout=300)
        (first, *_) = world.journal.kinds("request-timeout")
        assert 5.0 <= first.time < 10.0

    play(scenario, config=config)
