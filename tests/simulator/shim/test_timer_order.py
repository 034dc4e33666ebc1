"""Same-instant timers on the virtual clock run in the order they were scheduled.

asyncio compares timers by due time only, so with its plain heap the order of two callbacks due at
one instant depends on every other timer pushed or cancelled in between: dropping a timer that
never fires could then reorder a replay. The virtual clock numbers its timers, so the order is
(due time, order of scheduling), whatever else sits on the heap.
"""

from __future__ import annotations

import asyncio
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.shim import VirtualClock
from simulator.shim.deadline import Deadline


def _fire(plan: list[tuple[float, bool]]) -> tuple[list[int], list[int]]:
    """Schedule timer i at ``plan[i]``'s delay, cancelling it if asked; return the order in which
    they fired and the (due time, scheduling order) order of the ones left standing."""
    with VirtualClock(0) as clock:
        fired: list[int] = []

        async def main() -> None:
            handles = [clock.call_later(delay, lambda i=i: fired.append(i))
                       for i, (delay, _) in enumerate(plan)]
            for handle, (_, cancel) in zip(handles, plan, strict=True):
                if cancel:
                    handle.cancel()
            await clock.sleep(max((d for d, _ in plan), default=0.0) + 1.0)

        clock.run(main())
    standing = sorted((delay, i) for i, (delay, cancel) in enumerate(plan) if not cancel)
    return fired, [i for _, i in standing]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 2.5, 3.0]), st.booleans()), max_size=150))
def test_timers_fire_by_due_time_then_by_scheduling_order(plan: list[tuple[float, bool]]) -> None:
    fired, expected = _fire(plan)
    assert fired == expected


def test_unrelated_timers_do_not_change_the_order_of_same_instant_ones() -> None:
    """Three timers due at 5 s fire a, b, c however many unrelated timers (earlier, later, some
    cancelled) were scheduled around them; asyncio's plain heap reorders them for most of these
    seeds (checked below against a loop without the numbering)."""
    plain_reordered = 0
    for seed in range(20):
        rng = random.Random(seed)
        noise = [(rng.choice([1.0, 5.0, 9.0]), rng.random() < 0.4)
                 for _ in range(rng.randrange(80))]
        at = sorted(rng.sample(range(len(noise) + 3), 3))
        plan = list(noise)
        for position in at:
            plan.insert(position, (5.0, False))
        fired, _ = _fire(plan)
        ours = [i for i in fired if i in at]
        assert ours == at, seed
        plain_reordered += _plain_order(plan, at) != at
    assert plain_reordered > 0, "the plan no longer exercises asyncio's unordered ties"


def _plain_order(plan: list[tuple[float, bool]], watched: list[int]) -> list[int]:
    """The order the watched timers fire in on a plain asyncio heap (the behaviour replaced)."""
    loop = asyncio.new_event_loop()
    try:
        fired: list[int] = []

        async def main() -> None:
            running = asyncio.get_running_loop()
            base = running.time()
            handles = [running.call_at(base + delay / 1000, fired.append, i)
                       for i, (delay, _) in enumerate(plan)]
            for timer, (_, cancel) in zip(handles, plan, strict=True):
                if cancel:
                    timer.cancel()
            await asyncio.sleep(0.02)

        loop.run_until_complete(main())
    finally:
        loop.close()
    return [i for i in fired if i in watched]


def _fire_mixed(plan: list[tuple[float, bool, bool]]) -> list[int]:
    """Timer i at ``plan[i]``'s delay, as a deadline (``clock.call_later``) or as one of
    asyncio's timers (``loop.call_later``), cancelled if asked; the order they fired in."""
    with VirtualClock(0) as clock:
        fired: list[int] = []

        async def main() -> None:
            loop = asyncio.get_running_loop()
            handles = [clock.call_later(delay, lambda i=i: fired.append(i)) if deadline
                       else loop.call_later(delay, lambda i=i: fired.append(i))
                       for i, (delay, deadline, _) in enumerate(plan)]
            for handle, (_, _, cancel) in zip(handles, plan, strict=True):
                if cancel:
                    handle.cancel()
            await clock.sleep(max((d for d, _, _ in plan), default=0.0) + 1.0)

        clock.run(main())
    return fired


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1e-7, 1.0, 2.5, 2.5000005, 3.0]),
                          st.booleans(), st.booleans()), max_size=120))
def test_deadlines_fire_in_the_same_order_as_asyncio_timers_would(
    plan: list[tuple[float, bool, bool]],
) -> None:
    """A deadline (kept off asyncio's heap until about due) fires exactly where a timer of the
    same due time and scheduling number would, among asyncio's own timers, whichever kind each
    one is: the order is the one of the plan with every timer on asyncio's heap."""
    fired = _fire_mixed(plan)
    assert fired == _fire_mixed([(delay, False, cancel) for delay, _, cancel in plan])
    assert fired == [i for _, i in sorted((d, i) for i, (d, _, c) in enumerate(plan) if not c)]


def test_cancelled_deadlines_never_reach_asyncios_heap() -> None:
    """Deadlines replaced before they are due (session timers, request timeouts) cost no asyncio
    timer; ``pending_timers`` counts the live ones of both kinds; the heap of cancelled
    deadlines is rebuilt rather than left to grow at one instant."""
    with VirtualClock(0) as clock:

        async def main() -> None:
            loop = asyncio.get_running_loop()
            for _ in range(1000):
                clock.call_later(40.0, lambda: None).cancel()
            live = clock.call_later(40.0, lambda: None)
            assert clock.pending_timers() == 1
            await asyncio.sleep(0)
            assert not [t for t in loop._scheduled if not t.cancelled()]  # type: ignore[attr-defined]
            assert len(loop._deadlines) < 300  # type: ignore[attr-defined]
            assert clock.quiet()
            await clock.sleep(39.0)
            live.cancel()
            assert clock.pending_timers() == 0

        clock.run(main())


def _fire_replaced(plan: list[tuple[float, bool, float | None, bool]], *, moved: bool) -> list[int]:
    """Timer i at ``plan[i][0]``, cancelled at once if ``plan[i][1]``; half a second later each
    timer with a new delay is replaced, by one with the same callback or (``plan[i][3]``) a new
    one: in place (``Deadline.reschedule`` / ``restart``) when ``moved``, else cancelled and
    scheduled anew. The order they fired in (a new callback fires as ``i + 1000``)."""
    with VirtualClock(0) as clock:
        fired: list[int] = []

        async def main() -> None:
            handles = [clock.call_later(delay, lambda i=i: fired.append(i))
                       for i, (delay, _, _, _) in enumerate(plan)]
            for handle, (_, cancel, _, _) in zip(handles, plan, strict=True):
                if cancel:
                    handle.cancel()
            await clock.sleep(0.5)
            for i, (handle, (_, _, delay, new)) in enumerate(zip(handles, plan, strict=True)):
                if delay is None:
                    continue
                callback = (lambda i=i: fired.append(i + 1000)) if new else (
                    lambda i=i: fired.append(i))
                done = False
                if moved and isinstance(handle, Deadline):
                    done = handle.restart(delay, callback) if new else handle.reschedule(delay)
                if not done:
                    handle.cancel()
                    clock.call_later(delay, callback)
            await clock.sleep(10.0)
            assert clock.pending_timers() == 0

        clock.run(main())
    return fired


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.3, 1.0, 2.5, 3.0]), st.booleans(),
                          st.one_of(st.none(), st.sampled_from([0.0, 0.2, 1.0, 2.0, 2.5, 4.0])),
                          st.booleans()), max_size=100))
def test_a_timer_moved_in_place_fires_where_a_new_one_would(
    plan: list[tuple[float, bool, float | None, bool]],
) -> None:
    """Moving a deadline in place (a session timer replaced at every request, a member's request
    and follow-up timers) takes a new due time and number exactly where cancelling it and
    scheduling a new one would: later or earlier than before, cancelled or not, its old heap
    entry already dropped or not, the order of every timer is the same."""
    assert _fire_replaced(plan, moved=True) == _fire_replaced(plan, moved=False)
