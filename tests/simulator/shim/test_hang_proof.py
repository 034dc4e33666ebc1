"""The shim hosts every simulation: neither a silent group nor a runaway timer may stop time.

Issue 10 item 5: a group whose remaining members are all static with a rebalance timeout of 0 and
never rejoin used to reschedule its join timer at 0 ms forever (virtual time stood still, the CPU
spun and the deadlock detector saw nothing); the virtual clock itself now refuses to spin.
"""

from __future__ import annotations

import asyncio

import pytest

from simulator.shim import ErrorCode, VirtualClock, VirtualTimeDeadlock, VirtualTimeLivelock
from tests.simulator.shim.helpers import Driver, run


def test_static_members_not_rejoining_a_zero_timeout_rebalance_leave_by_session_timeout() -> None:
    """Kafka keeps static members that did not rejoin and polls again after the rebalance timeout
    "until session timeout removes all the non-responsive members"; with a 0 ms timeout the poll
    must still let time reach those session timeouts."""

    async def scenario(d: Driver) -> None:
        futures = []
        for name in ("a", "b"):
            futures.append(d.join("", instance=name, client=name, rebalance_ms=0))
        responses = [await f for f in futures]
        assert {r.error_code for r in responses} == {ErrorCode.NONE}
        ids = {r.member_id: r for r in responses}
        leader = responses[0].leader_id
        syncs = [d.sync(m, 1, tuple((x, b"") for x in ids) if m == leader else ()) for m in ids]
        assert [(await s).error_code for s in syncs] == [ErrorCode.NONE] * 2
        assert d.state == "Stable"
        b = d.coordinator.static_members("g")["b"]
        # An admin removes instance "a"; "b" is told nothing and never rejoins.
        d.leave(("", "a"))
        assert d.state == "PreparingRebalance"
        started = d.clock.time()
        await d.sleep(30.0)
        # b's session (10 s) ran out: the group is empty, and virtual time really moved.
        assert d.clock.time() - started == pytest.approx(30.0)
        assert d.state == "Empty"
        assert d.coordinator.members("g") == ()
        assert [e.member for e in d.coordinator.journal.kinds("session-expired")] == [b]

    run(scenario)


def test_a_timer_that_keeps_rescheduling_itself_at_the_same_instant_is_a_livelock() -> None:
    with VirtualClock(0, max_steps_per_instant=1000) as clock:
        fired = 0

        def again() -> None:
            nonlocal fired
            fired += 1
            clock.call_later(0.0, again)

        async def spin() -> None:
            clock.call_later(0.0, again)
            await clock.sleep(1.0)

        with pytest.raises(VirtualTimeLivelock, match=r"virtual time 0\.000s") as caught:
            clock.run(spin())
        assert isinstance(caught.value, VirtualTimeDeadlock)  # one except clause catches both
        assert 900 <= fired <= 1100


def test_a_task_that_only_yields_is_a_livelock_too() -> None:
    with VirtualClock(0, max_steps_per_instant=1000) as clock:

        async def busy() -> None:
            while True:
                await asyncio.sleep(0)

        with pytest.raises(VirtualTimeLivelock):
            clock.run(busy())


def test_much_work_at_one_instant_that_ends_is_not_a_livelock() -> None:
    """Thousands of timers due at the same instant fire in one loop step: no false alarm."""
    with VirtualClock(0, max_steps_per_instant=100) as clock:
        fired: list[int] = []

        async def many() -> None:
            for i in range(10_000):
                clock.call_later(1.0, lambda i=i: fired.append(i))
            await clock.sleep(2.0)

        clock.run(many())
        assert len(fired) == 10_000 and clock.time() == pytest.approx(2.0)
