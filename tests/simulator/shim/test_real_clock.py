"""The same shim on asyncio's own clock, with timeouts short enough for a unit test."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from simulator.shim import (
    CoordinatorConfig,
    GroupCoordinator,
    RealClock,
    ShimMember,
    VirtualClock,
    VirtualTimeDeadlock,
    make_cluster,
    settle,
)


async def test_a_group_forms_and_drops_a_crashed_member_in_real_time() -> None:
    clock = RealClock(seed=0)
    config = CoordinatorConfig(initial_rebalance_delay_ms=50, min_session_timeout_ms=100)
    coordinator = GroupCoordinator(clock, config)
    cluster = make_cluster({"t": 6})
    members = [
        ShimMember(
            coordinator, group_id="g", assignors=[RoundRobinPartitionAssignor], topics=["t"],
            cluster=cluster, client_id=f"c{i}", session_timeout_ms=300,
            heartbeat_interval_ms=50, rebalance_timeout_ms=1000,
        ).start()
        for i in range(3)
    ]
    try:
        async with asyncio.timeout(20):
            assert await settle(members, timeout=10) == 1
            started = clock.time()
            await members[2].crash()
            assert await settle(members, timeout=10) == 2
            elapsed = clock.time() - started
    finally:
        for member in members:
            await member.close()
    assert elapsed >= 0.3  # the crash is noticed no sooner than the session timeout
    assert sorted(tp.partition for m in members[:2] for tp in m.partitions()) == list(range(6))
    assert [r.generation for r in coordinator.journal.stable("g")] == [1, 2]


def test_virtual_time_only_moves_when_every_task_waits() -> None:
    with VirtualClock(seed=0) as clock:
        order: list[tuple[str, float]] = []

        async def sleeper(name: str, delay: float) -> None:
            await clock.sleep(delay)
            order.append((name, clock.time()))

        async def busy() -> None:
            for _ in range(1000):
                await asyncio.sleep(0)  # ready work: time must not move meanwhile
            order.append(("busy", clock.time()))

        async def main() -> None:
            await asyncio.gather(sleeper("late", 3600.0), sleeper("early", 0.5), busy())

        clock.run(main())
    assert order == [("busy", 0.0), ("early", 0.5), ("late", 3600.0)]


def test_a_virtual_run_that_would_hang_forever_says_so() -> None:
    with VirtualClock(seed=0) as clock:
        async def stuck() -> None:
            await clock.create_future()

        with pytest.raises(VirtualTimeDeadlock, match="every task is waiting"):
            clock.run(stuck())
