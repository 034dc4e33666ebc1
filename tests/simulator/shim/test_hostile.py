"""Hostile traffic against the coordinator (issue 9 item 4): 100,000 random requests, then peace.

A seeded client sends JoinGroup, SyncGroup, Heartbeat and LeaveGroup with valid, stale, random and
impersonated member ids, generations and instance ids, random protocols and metadata bytes, and
members that go silent, while well-behaved ``ShimMember``s (dynamic and static) try to work in the
same group and an "application" restarts those that fail (fenced by an impostor, handed garbage by
an impostor leader). The coordinator must answer every request without raising; once the hostile
traffic stops, the well-behaved members must settle within a bounded virtual time, and the journal
and the group tables must stay bounded.

``make test`` runs 100,000 requests for one seed; the ``deep`` hypothesis profile
(``make test-deep``) runs them for more seeds.
"""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocol

from simulator.shim import (
    CoordinatorConfig,
    ErrorCode,
    GroupCoordinator,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    ShimMember,
    SyncGroupRequest,
    VirtualClock,
    make_cluster,
    settle,
)
from simulator.shim.records import DEFAULT_MAX_EVENTS
from tests.simulator.shim.helpers import Driver, run

REQUESTS = 100_000
SEEDS = range(1, 9) if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else range(1, 2)

TOPICS = {"orders": 6, "payments": 4}
CLUSTER = make_cluster(TOPICS)
GROUP = "g"
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=500, max_session_timeout_ms=30_000, new_member_join_timeout_ms=30_000
)
# Longest a hostile member can linger after the traffic stops: its session, a join phase and a
# sync phase at the longest rebalance timeout it may ask for, and the new-member join timeout.
MAX_HOSTILE_REBALANCE_MS = 20_000
REBALANCE_TIMEOUTS_MS = (-1, 0, 1, 500, 5000, MAX_HOSTILE_REBALANCE_MS)
LINGER_S = (CONFIG.max_session_timeout_ms + 2 * MAX_HOSTILE_REBALANCE_MS
            + CONFIG.new_member_join_timeout_ms) / 1000.0
SETTLE_BOUND_S = LINGER_S + 120.0

VALID_METADATA = ConsumerProtocol.METADATA(0, sorted(TOPICS), b"").encode()
PROTOCOL_NAMES = ("roundrobin", "range", "sticky", "x")


@dataclass
class Hostile:
    """The impostor's memory: ids and generations it has seen (its own and everyone's)."""

    rng: random.Random
    coordinator: GroupCoordinator
    good: list[ShimMember]
    ids: list[str] = field(default_factory=list)
    generations: list[int] = field(default_factory=lambda: [0, 1])
    sent: dict[str, int] = field(default_factory=dict)
    peak: int = 0  # the largest group tables seen during the traffic, in entries

    def sample(self) -> None:
        self.peak = max(self.peak, sum(_table_sizes(self.coordinator).values()))

    def learn(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled():
            return
        response = future.result()
        if isinstance(response, JoinGroupResponse):
            if response.member_id:
                self.remember(response.member_id)
            if response.generation_id >= 0:
                self.generations.append(response.generation_id)
                del self.generations[:-8]

    def remember(self, member_id: str) -> None:
        self.ids.append(member_id)
        del self.ids[:-64]

    # -- random fields ------------------------------------------------------------------------
    def group(self) -> str:
        return self.rng.choices((GROUP, "h", "", "g" * 3), (70, 20, 5, 5))[0]

    def member_id(self) -> str:
        roll = self.rng.random()
        if roll < 0.35 and self.good:  # impersonate a well-behaved member
            return self.rng.choice(self.good).member_id
        if roll < 0.75 and self.ids:
            return self.rng.choice(self.ids)
        if roll < 0.9:
            return ""
        return f"ghost-{self.rng.randrange(1000)}"

    def instance(self) -> str | None:
        roll = self.rng.random()
        if roll < 0.6:
            return None
        if roll < 0.75:
            return self.rng.choice(("static-0", "static-1"))  # the well-behaved static members'
        return f"evil-{self.rng.randrange(8)}"

    def generation(self) -> int:
        roll = self.rng.random()
        if roll < 0.5:
            return self.coordinator.generation(GROUP)
        if roll < 0.9:
            return self.rng.choice(self.generations)
        return self.rng.randrange(-2, 1000)

    def metadata(self) -> bytes:
        roll = self.rng.random()
        if roll < 0.4:
            return VALID_METADATA
        if roll < 0.5:
            return b""
        return self.rng.randbytes(self.rng.randrange(1, 64))

    def protocols(self) -> tuple[tuple[str, bytes], ...]:
        count = self.rng.choices((0, 1, 2, 3), (5, 60, 25, 10))[0]
        return tuple((self.rng.choice(PROTOCOL_NAMES), self.metadata()) for _ in range(count))

    # -- requests -----------------------------------------------------------------------------
    def send_one(self) -> None:
        kind = self.rng.choices(("join", "sync", "heartbeat", "leave"), (35, 20, 35, 10))[0]
        self.sent[kind] = self.sent.get(kind, 0) + 1
        coordinator = self.coordinator
        if kind == "join":
            request = JoinGroupRequest(
                group_id=self.group(), member_id=self.member_id(), protocols=self.protocols(),
                protocol_type=self.rng.choices(("consumer", "connect", ""), (90, 5, 5))[0],
                session_timeout_ms=self.rng.choice((0, 6000, 10_000, 30_000, 60_000)),
                rebalance_timeout_ms=self.rng.choice(REBALANCE_TIMEOUTS_MS),
                group_instance_id=self.instance(), client_id="impostor",
            )
            coordinator.join(request).add_done_callback(self.learn)
        elif kind == "sync":
            members = [self.member_id() for _ in range(self.rng.randrange(4))]
            assignments = tuple(
                (m, self.rng.choice((b"", self.rng.randbytes(self.rng.randrange(16)))))
                for m in members
            )
            coordinator.sync(SyncGroupRequest(
                self.group(), self.generation(), self.member_id(), assignments, self.instance()
            )).add_done_callback(self.learn)
        elif kind == "heartbeat":
            coordinator.heartbeat(HeartbeatRequest(
                self.group(), self.generation(), self.member_id(), self.instance()
            ))
        else:
            leavers = tuple(
                (self.member_id(), self.instance()) for _ in range(self.rng.randrange(1, 3))
            )
            coordinator.leave(LeaveGroupRequest(self.group(), leavers))

    async def run(self, clock: VirtualClock, requests: int) -> None:
        for sent in range(requests):
            self.send_one()
            if sent % 500 == 0:
                self.sample()
            roll = self.rng.random()
            if roll < 0.5:
                await asyncio.sleep(0)  # a burst at one instant
            elif roll < 0.98:
                await clock.sleep(self.rng.uniform(0.0, 0.04))
            else:
                await clock.sleep(self.rng.uniform(0.5, 5.0))  # everyone gets to breathe


@dataclass
class Outcome:
    generation: int
    settle_seconds: float
    restarts: int
    events: int
    dropped: int
    records: int
    tables: dict[str, int]
    timers: int
    sent: dict[str, int]
    peak: int


def _table_sizes(coordinator: GroupCoordinator) -> dict[str, int]:
    """Entries in each group's tables: what grows if the coordinator leaks."""
    return {
        group_id: len(group.members) + len(group.pending_join) + len(group.pending_sync)
        + len(group.static) + len(group.supported) + len(group.heartbeat_timers)
        for group_id, group in coordinator._groups.items()
    }


def _new_member(coordinator: GroupCoordinator, index: int) -> ShimMember:
    static = index >= 3
    return ShimMember(
        coordinator, group_id=GROUP, assignors=[RoundRobinPartitionAssignor],
        topics=sorted(TOPICS), cluster=CLUSTER, client_id=f"good-{index}",
        group_instance_id=f"static-{index - 3}" if static else None,
        session_timeout_ms=10_000, rebalance_timeout_ms=15_000, heartbeat_interval_ms=3_000,
        request_timeout_ms=40_000, latency_ms=(0.0, 3.0),
    ).start()


def _play(seed: int, requests: int) -> Outcome:
    with VirtualClock(seed) as clock:
        coordinator = GroupCoordinator(clock, CONFIG)
        slots: list[ShimMember] = []
        restarts = 0

        def restart_failed() -> None:
            nonlocal restarts
            for index, member in enumerate(slots):
                if not member.running:
                    slots[index] = _new_member(coordinator, index)
                    restarts += 1

        async def supervise(stop: asyncio.Event) -> None:
            while not stop.is_set():  # an application that restarts failed consumers
                restart_failed()
                await clock.sleep(2.0)

        async def story() -> Outcome:
            slots.extend(_new_member(coordinator, i) for i in range(5))
            hostile = Hostile(random.Random(seed), coordinator, slots)
            stop = asyncio.Event()
            supervisor = asyncio.get_running_loop().create_task(supervise(stop))
            await hostile.run(clock, requests)
            quiet_since = clock.time()
            # Peace: only the well-behaved members (restarted when they failed) talk from now on.
            generation = -1
            while clock.time() - quiet_since < SETTLE_BOUND_S:
                restart_failed()
                try:
                    generation = await settle(slots, timeout=5.0)
                    break
                except TimeoutError:
                    continue
            else:
                members = [f"{m.name}:{m.status}@{m.generation}" for m in slots]
                raise AssertionError(
                    f"seed {seed}: not settled {SETTLE_BOUND_S}s after the traffic stopped; "
                    f"{coordinator.state(GROUP).value} gen {coordinator.generation(GROUP)} "
                    f"members {coordinator.members(GROUP)}; ours {members}"
                )
            settled_after = clock.time() - quiet_since
            # Let every impostor's session, join and sync timeouts run out, then look at memory.
            await clock.sleep(LINGER_S)
            stop.set()
            await supervisor
            assert await settle(slots, timeout=60.0) >= generation
            tables = _table_sizes(coordinator)
            loop_timers = clock.pending_timers()  # asyncio's live timers and the deadlines
            journal = coordinator.journal
            outcome = Outcome(
                generation, settled_after, restarts, len(journal.events), journal.dropped,
                len(journal.records), tables, loop_timers, dict(hostile.sent), hostile.peak,
            )
            for member in slots:
                await member.close()
            return outcome

        return clock.run(story())


@pytest.mark.parametrize("seed", SEEDS)
def test_hostile_traffic_then_peace_the_good_members_settle_and_memory_stays_bounded(
    seed: int,
) -> None:
    outcome = _play(seed, REQUESTS)
    assert sum(outcome.sent.values()) == REQUESTS
    assert outcome.settle_seconds <= SETTLE_BOUND_S
    # During the traffic, impostors come and go but the tables stay small: pending ids and silent
    # members expire with their sessions (at most 30 s of traffic's worth of them).
    assert outcome.peak <= 500, outcome
    assert outcome.events <= DEFAULT_MAX_EVENTS and outcome.dropped > 0
    # Group tables: the five good members in "g" (members, static, supported, heartbeats), and
    # nothing left of the impostors anywhere.
    assert outcome.tables.pop(GROUP) == 5 + 2 + 1 + 5, outcome
    assert all(size == 0 for size in outcome.tables.values()), outcome
    # The loop holds the good members' heartbeats and sessions and a few sleeps, no leaked timers.
    assert outcome.timers <= 32, outcome


def test_hostile_traffic_is_reproducible_for_a_seed() -> None:
    first = _play(3, 3_000)
    second = _play(3, 3_000)
    assert first == second
    assert first.sent["join"] > 0 and first.sent["sync"] > 0


# -- what the hostile traffic found, one request at a time ---------------------------------------
def test_a_protocol_named_twice_counts_once_and_its_first_metadata_wins() -> None:
    """Found by the hostile run: a member listing "range" twice made the protocol look supported by
    two members in a group of one, no protocol was a candidate and the vote raised."""

    async def scenario(d: Driver) -> None:
        twice = (("range", b"first"), ("range", b"second"))
        member_id, parked = await d.enter("a", protocols=twice)
        response = await parked
        assert response.error_code == ErrorCode.NONE
        assert response.protocol_name == "range"
        assert response.members == ((member_id, None, b"first"),)

    run(scenario)


def test_a_pending_member_id_cannot_be_claimed_by_a_static_join() -> None:
    """Found by the hostile run: a JoinGroup with a pending (dynamic) member id and an instance id
    took over that instance's mapping, orphaning the real static member, and the group never
    settled. Kafka refuses it (IllegalStateException, UNKNOWN_SERVER_ERROR to the client)."""

    async def scenario(d: Driver) -> None:
        static = await d.join("", instance="i", client="s")
        static_id = static.member_id
        first = await d.join("", client="dyn")
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        claim = await d.join(first.member_id, instance="i", client="dyn")
        assert claim.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        assert d.coordinator.static_members("g") == {"i": static_id}
        assert d.coordinator.members("g") == (static_id,)

    run(scenario)
