"""Waiting for a group to settle: every running member stable on the coordinator's generation.

Kept apart from ``ShimMember`` because it reads members and coordinator only through their public
state; ``simulator.shim.member`` re-exports it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from simulator.shim.group import GroupState

if TYPE_CHECKING:
    from simulator.shim.member import ShimMember


async def settle(
    members: Sequence[ShimMember],
    *,
    timeout: float = 600.0,
    exact: bool = True,
) -> int:
    """Wait until every running member is stable on the coordinator's current generation.

    With ``exact`` the coordinator's membership must also equal the running members' ids, so a
    crashed member must first time out. Returns the generation; raises ``TimeoutError`` after
    ``timeout`` seconds of the members' clock with a description of who is not there yet.
    """
    if not members:
        raise ValueError("settle needs at least one member")
    coordinator = members[0].coordinator
    group_id = members[0].group_id
    clock = coordinator.clock
    deadline = clock.time() + timeout
    while True:
        live = [m for m in members if m.running]
        generation = coordinator.generation(group_id)
        if (live and coordinator.state(group_id) is GroupState.STABLE
                and all(m.stable and m.generation == generation for m in live)
                and (not exact or set(coordinator.members(group_id))
                     == {m.member_id for m in live})):
            return generation
        remaining = deadline - clock.time()
        if remaining <= 0:
            waiting = [f"{m.name}:{m.status}@{m.generation}" for m in live if not m.stable]
            raise TimeoutError(
                f"group {group_id} not settled after {timeout}s: coordinator "
                f"{coordinator.state(group_id).value} generation {generation} members "
                f"{list(coordinator.members(group_id))}; not stable: {waiting}"
            )
        futures = [m.changed() for m in members]
        await asyncio.wait(futures, timeout=min(remaining, 1.0),
                           return_when=asyncio.FIRST_COMPLETED)
