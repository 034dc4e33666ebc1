"""Standing heartbeats: no event per beat, yet every beat that matters at the instant it would be.

A stable member's beats stand at the coordinator as ``base + k x interval``; these tests check
the times the old one-timer-per-beat loop produced: a rebalance heard at the next beat, a session
that expires one session timeout after the last beat, a removed member told at its next beat,
and the same-instant rule (a beat due at an instant comes before whatever else happens then).
"""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from simulator.shim import (
    CoordinatorConfig,
    GroupCoordinator,
    HeartbeatRequest,
    Journal,
    LeaveGroupRequest,
    ShimMember,
    VirtualClock,
    make_cluster,
    settle,
)
from simulator.shim.leases import Lease

CLUSTER = make_cluster({"orders": 6})
SESSION_MS = 10_000
INTERVAL_S = 3.0


def _lease(base: float = 10.0) -> Lease:
    return Lease("m", base, INTERVAL_S, SESSION_MS / 1000.0, lambda: None, fallback_deadline=19.0)


def test_a_lease_counts_a_beat_due_now_as_sent_and_the_next_one_after_it() -> None:
    lease = _lease()
    assert lease.beats_before(12.9) == 0 and lease.next_beat(12.9) == 13.0
    assert lease.beats_before(13.0) == 1 and lease.next_beat(13.0) == 16.0  # beat first
    assert lease.beats_before(17.5) == 2 and lease.next_beat(17.5) == 19.0


def test_a_lease_session_deadline_runs_from_the_last_beat_or_from_where_it_stood() -> None:
    lease = _lease()
    assert lease.session_deadline(11.0) == 19.0  # no beat yet: the coordinator's own deadline
    assert lease.session_deadline(17.5) == 16.0 + 10.0
    lease.latest_deadline = 40.0  # a real Heartbeat with this id while leased (an impostor's)
    assert lease.session_deadline(17.5) == 40.0


class _Group:
    """Three round-robin members of group ``g`` on one virtual clock; timers counted."""

    def __init__(self, clock: VirtualClock, session_ms: int = SESSION_MS) -> None:
        self.clock = clock
        self.coordinator = GroupCoordinator(
            clock, CoordinatorConfig(initial_rebalance_delay_ms=0), Journal(max_events=None)
        )
        self.timers = 0
        loop = clock.loop
        real = loop.call_at

        def counting(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
            self.timers += 1
            return real(when, callback, *args, **kwargs)

        loop.call_at = counting  # type: ignore[method-assign]
        self.members = [
            ShimMember(self.coordinator, group_id="g", assignors=[RoundRobinPartitionAssignor],
                       topics=["orders"], cluster=CLUSTER, client_id=f"c{i}",
                       session_timeout_ms=session_ms, heartbeat_interval_ms=3000)
            for i in range(3)
        ]

    def times(self, kind: str, member: str | None = None, after: float = 0.0) -> list[float]:
        return [e.time for e in self.coordinator.journal.kinds(kind)
                if (member is None or e.member == member) and e.time > after]


def _play(story: Any, session_ms: int = SESSION_MS) -> _Group:
    async def main(group: _Group) -> None:
        for member in group.members:
            member.start()
        await story(group)

    with VirtualClock(5) as clock:
        group = _Group(clock, session_ms)
        clock.run(main(group))
        return group


def test_a_stable_group_makes_no_event_per_heartbeat() -> None:
    async def story(group: _Group) -> None:
        await settle(group.members)
        await group.clock.sleep(1.0)
        before = group.timers
        await group.clock.sleep(3000.0)  # a thousand heartbeats of each member
        assert group.timers - before == 1  # the sleep's own timer, nothing per beat
        assert set(group.coordinator._groups["g"].leases) == {m.member_id for m in group.members}
        assert all(m.stable for m in group.members)

    _play(story)


@pytest.mark.parametrize(("asked_after", "heard_after"), [
    (4.0, 2 * INTERVAL_S),  # between the first beat and the second: heard at the second
    (2 * INTERVAL_S, 3 * INTERVAL_S),  # on the second beat's instant: that beat came first
])
def test_a_rebalance_is_heard_at_each_member_s_next_beat(
    asked_after: float, heard_after: float
) -> None:
    async def story(group: _Group) -> None:
        await settle(group.members)
        stable_at = group.clock.time()
        await group.clock.sleep(asked_after)
        group.members[0].request_rejoin()  # the leader
        follower = group.members[1].member_id
        await group.clock.sleep(0.5)
        assert group.times("join-request", follower, stable_at) == []
        await settle(group.members)
        assert group.times("join-request", follower, stable_at) == [stable_at + heard_after]

    _play(story)


@pytest.mark.parametrize("crash_after", [10.0, 3 * INTERVAL_S])  # on the third beat's instant:
def test_a_crashed_member_expires_one_session_after_its_last_beat(crash_after: float) -> None:
    async def story(group: _Group) -> None:  # that beat went out before the crash
        await settle(group.members)
        stable_at = group.clock.time()
        victim = group.members[2]
        victim_id = victim.member_id
        await group.clock.sleep(crash_after)  # beats at +3, +6, +9 went out
        await victim.crash()
        await group.clock.sleep(30.0)
        expired = group.times("session-expired", victim_id)
        assert expired == [stable_at + 3 * INTERVAL_S + SESSION_MS / 1000.0], (stable_at, expired)

    _play(story)


def test_a_member_removed_by_the_coordinator_hears_it_at_its_next_beat() -> None:
    async def story(group: _Group) -> None:
        await settle(group.members)
        stable_at = group.clock.time()
        await group.clock.sleep(1.0)
        removed = group.members[1]
        removed_id = removed.member_id
        group.coordinator.leave(LeaveGroupRequest("g", ((removed_id, None),)))
        await settle(group.members, exact=False)
        assert group.times("heartbeat-error", removed_id)[:1] == [stable_at + INTERVAL_S]
        assert removed.member_id != removed_id  # it joined again under a new id
        assert removed.stable

    _play(story)


def test_an_impostor_s_heartbeat_for_a_leased_member_does_not_expire_it() -> None:
    async def story(group: _Group) -> None:
        await settle(group.members)
        member = group.members[0]
        group.coordinator.heartbeat(HeartbeatRequest("g", member.generation, member.member_id))
        await group.clock.sleep(120.0)
        assert group.times("session-expired") == []
        assert all(m.stable for m in group.members)

    _play(story)


def test_a_session_expiring_on_a_beat_s_instant_is_heard_by_that_beat() -> None:
    async def story(group: _Group) -> None:
        await settle(group.members)
        stable_at = group.clock.time()
        await group.clock.sleep(10.0)  # beats at +3, +6, +9 went out
        await group.members[2].crash()  # expires at +9 + 12 = +21, the survivors' 7th beat
        await group.clock.sleep(15.0)
        await settle(group.members[:2])
        follower = group.members[1].member_id
        assert group.times("session-expired") == [stable_at + 21.0]
        assert group.times("join-request", follower, stable_at) == [stable_at + 21.0]

    _play(story, session_ms=12_000)


def test_members_stopped_after_the_coordinator_closes_leave_no_session_timer() -> None:
    async def story(group: _Group) -> None:
        await settle(group.members)
        table = group.coordinator._groups["g"]
        first, *rest = group.members
        await first.crash()  # before close: its session runs on from its last beat
        assert first.member_id in table.heartbeat_timers
        group.coordinator.close()
        before = group.timers
        for member in rest:
            await member.crash()
        assert group.timers == before  # no timer that could never fire
        assert not any(m.member_id in table.heartbeat_timers for m in rest)
        assert not table.leases  # their standing heartbeats ended all the same

    _play(story)
