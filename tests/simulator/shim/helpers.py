"""Request-level helpers for driving the coordinator by hand in virtual time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from simulator.shim import (
    CoordinatorConfig,
    ErrorCode,
    GroupCoordinator,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    VirtualClock,
)

T = TypeVar("T")

RANGE = (("range", b"range-metadata"),)
QUICK = CoordinatorConfig(initial_rebalance_delay_ms=0)


def run(
    scenario: Callable[[Driver], Awaitable[T]],
    *,
    seed: int = 0,
    config: CoordinatorConfig = QUICK,
) -> T:
    """Run ``scenario`` against a fresh coordinator on a fresh virtual clock."""
    with VirtualClock(seed) as clock:
        coordinator = GroupCoordinator(clock, config)
        return clock.run(scenario(Driver(clock, coordinator)))


class Driver:
    """Sends raw requests for one group, as a broker's clients would."""

    def __init__(self, clock: VirtualClock, coordinator: GroupCoordinator, group: str = "g"):
        self.clock = clock
        self.coordinator = coordinator
        self.group = group

    def join(
        self,
        member_id: str = "",
        *,
        protocols: tuple[tuple[str, bytes], ...] = RANGE,
        instance: str | None = None,
        client: str = "c",
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        protocol_type: str = "consumer",
    ) -> asyncio.Future[JoinGroupResponse]:
        return self.coordinator.join(JoinGroupRequest(
            group_id=self.group, member_id=member_id, protocols=protocols,
            protocol_type=protocol_type, session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms, group_instance_id=instance, client_id=client,
        ))

    async def enter(
        self, client: str, **kwargs: object
    ) -> tuple[str, asyncio.Future[JoinGroupResponse]]:
        """A new dynamic member: get an id (MEMBER_ID_REQUIRED), then join with it (parked)."""
        first = await self.join("", client=client, **kwargs)  # type: ignore[arg-type]
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED, first
        return first.member_id, self.join(first.member_id, client=client, **kwargs)  # type: ignore[arg-type]

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: tuple[tuple[str, bytes], ...] = (),
        instance: str | None = None,
    ) -> asyncio.Future[SyncGroupResponse]:
        return self.coordinator.sync(
            SyncGroupRequest(self.group, generation, member_id, assignments, instance)
        )

    def heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> int:
        request = HeartbeatRequest(self.group, generation, member_id, instance)
        return self.coordinator.heartbeat(request).error_code

    def leave(self, *members: tuple[str, str | None]) -> LeaveGroupResponse:
        return self.coordinator.leave(LeaveGroupRequest(self.group, tuple(members)))

    async def sleep(self, seconds: float) -> None:
        await self.clock.sleep(seconds)

    @property
    def state(self) -> str:
        return self.coordinator.state(self.group).value

    @property
    def generation(self) -> int:
        return self.coordinator.generation(self.group)

    async def stable_group(
        self, *clients: str, assignment: Callable[[str], bytes] = lambda m: m.encode()
    ) -> dict[str, str]:
        """Bring ``clients`` into one stable generation; returns client -> member id."""
        ids: dict[str, str] = {}
        futures = {}
        for client in clients:
            member_id, future = await self.enter(client)
            ids[client] = member_id
            futures[client] = future
        responses = {c: await f for c, f in futures.items()}
        leader = next(r.leader_id for r in responses.values())
        generation = next(r.generation_id for r in responses.values())
        syncs = []
        for member_id in ids.values():
            mine = tuple((m, assignment(m)) for m in ids.values()) if member_id == leader else ()
            syncs.append(self.sync(member_id, generation, mine))
        for sync in syncs:
            assert (await sync).error_code == ErrorCode.NONE
        assert self.state == "Stable"
        return ids
