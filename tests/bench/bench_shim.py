"""How much time the shim itself spends per rebalance, excluding the assignor.

1. One rebalance of 1,000 members on the virtual clock (the initial join, then one member
   leaving so that all 999 others rejoin).
2. 10,000 successive rebalances of a 10-member group (the leader asks to rejoin each time).

Wall time is measured around the whole run; the time the leader spent inside ``assign`` is
subtracted. The reference is the issue's target of 1 ms per member per rebalance.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aiokafka.coordinator.assignors.roundrobin import (
    RoundRobinPartitionAssignor,
)

from simulator.shim import (
    CoordinatorConfig,
    GroupCoordinator,
    Journal,
    ShimMember,
    VirtualClock,
    make_cluster,
    settle,
)

TARGET_MS_PER_MEMBER = 1.0
CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)


def _members(
    coordinator: GroupCoordinator, count: int, cluster: Any
) -> list[ShimMember]:
    return [
        ShimMember(
            coordinator, group_id="bench", assignors=[RoundRobinPartitionAssignor],
            topics=["events"], cluster=cluster, client_id=f"m{i:05d}",
        )
        for i in range(count)
    ]


def _report(title: str, wall: float, assign: float, rebalances: int, members: int) -> None:
    shim = wall - assign
    per_rebalance_ms = shim / rebalances * 1000
    per_member_ms = per_rebalance_ms / members
    print(f"{title}")
    print(f"  wall {wall:.3f} s, in the assignor {assign:.3f} s, in the shim {shim:.3f} s")
    print(f"  shim per rebalance: {per_rebalance_ms:.3f} ms; per member: {per_member_ms:.4f} ms "
          f"(target {TARGET_MS_PER_MEMBER} ms, ratio {per_member_ms / TARGET_MS_PER_MEMBER:.3f})")


def big_group(size: int = 1000) -> None:
    cluster = make_cluster({"events": 2 * size})
    with VirtualClock(seed=1) as clock:
        coordinator = GroupCoordinator(clock, CONFIG, Journal(max_events=100_000))
        members = _members(coordinator, size, cluster)

        async def first() -> int:
            for member in members:
                member.start()
            return await settle(members, timeout=3600)

        started = time.perf_counter()
        generation = clock.run(first())
        wall = time.perf_counter() - started
        assign = sum(m.assign_seconds for m in members)
        _report(f"initial rebalance of {size} members (generation {generation})",
                wall, assign, 1, size)

        async def one_leaves() -> int:
            await members[-1].close()
            return await settle(members, timeout=3600)

        before = sum(m.assign_seconds for m in members)
        started = time.perf_counter()
        generation = clock.run(one_leaves())
        wall = time.perf_counter() - started
        assign = sum(m.assign_seconds for m in members) - before
        _report(f"one leaves, {size - 1} rejoin (generation {generation}, "
                f"virtual {clock.time():.1f} s)", wall, assign, 1, size - 1)


def many_rebalances(count: int = 10_000, size: int = 10) -> None:
    cluster = make_cluster({"events": 4 * size})
    with VirtualClock(seed=2) as clock:
        coordinator = GroupCoordinator(clock, CONFIG, Journal(max_events=100_000))
        members = _members(coordinator, size, cluster)

        async def run() -> int:
            for member in members:
                member.start()
            generation = await settle(members)
            for _ in range(count):
                leader = coordinator.leader("bench")
                next(m for m in members if m.member_id == leader).request_rejoin()
                generation = await settle(members)
            return generation

        started = time.perf_counter()
        generation = clock.run(run())
        wall = time.perf_counter() - started
        assign = sum(m.assign_seconds for m in members)
        stable = len(coordinator.journal.stable("bench"))
        _report(f"{count} successive rebalances of {size} members (generation {generation}, "
                f"{stable} stable records, virtual {clock.time() / 3600:.1f} h)",
                wall, assign, count + 1, size)


def main() -> None:
    big_group()
    many_rebalances()


if __name__ == "__main__":
    main()
