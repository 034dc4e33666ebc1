"""How a member waits for a parked request's answer (docs/shim.md, *Answers*).

The member's task awaits the coordinator's answer future itself: an answer wakes it at the next
loop step (it used to take two), and a request deadline that fires before an answer due at the
same instant times the request out, as aiokafka's ``wait_for`` does (the answer is dropped).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from simulator.shim import HeartbeatRequest, ShimMember
from simulator.shim.calls import call
from simulator.shim.errors import RequestTimedOut
from tests.simulator.shim.test_member import CLUSTER, World, play

REQUEST = HeartbeatRequest("g", 1, "m")  # any value: the stub sender below never reads it


def _member(world: World) -> ShimMember:
    """A member that is never started: only its request call (``calls.call``) is exercised."""
    return ShimMember(world.coordinator, group_id="g", assignors=[RoundRobinPartitionAssignor],
                      topics=("orders",), cluster=CLUSTER, client_id="a",
                      request_timeout_ms=5_000)


def test_an_answer_wakes_the_waiting_member_at_the_next_loop_step() -> None:
    async def scenario(world: World) -> None:
        member = _member(world)
        answer: asyncio.Future[Any] = world.clock.create_future()
        task = asyncio.get_running_loop().create_task(call(member, lambda _: answer, REQUEST))
        await asyncio.sleep(0)  # the call runs up to its await
        assert not task.done()
        answer.set_result("the answer")
        await asyncio.sleep(0)  # one step: queued after the call's wake-up, so it runs after it
        assert task.done() and task.result() == "the answer"

    play(scenario)


def _race(deadline_first: bool) -> list[Any]:
    """A request whose answer is due at its deadline's instant, scheduled before or after the
    deadline (timers due at one instant fire in the order they were scheduled)."""
    outcome: list[Any] = []

    async def scenario(world: World) -> None:
        member = _member(world)
        answer: asyncio.Future[Any] = world.clock.create_future()

        def reply() -> None:  # as the coordinator does: only a future not yet done
            if not answer.done():
                answer.set_result("late answer")

        def send(_: object) -> asyncio.Future[Any]:
            if not deadline_first:  # scheduled before the member's deadline, fires before it
                world.clock.call_later(5.0, reply)
            return answer

        def late() -> None:
            world.clock.call_later(5.0, reply)

        if deadline_first:  # at time 0, after the deadline the call sets: fires after it
            world.clock.call_later(0.0, late)
        try:
            outcome.append(await call(member, send, REQUEST))
        except RequestTimedOut:
            outcome.append("timed out")
        outcome.append(world.clock.time())
        outcome.extend(e.kind for e in world.journal.kinds("request-timeout"))

    play(scenario)
    return outcome


def test_an_answer_due_with_the_deadline_but_after_it_is_dropped() -> None:
    assert _race(deadline_first=True) == ["timed out", 5.0, "request-timeout"]


def test_an_answer_due_with_the_deadline_and_before_it_is_taken() -> None:
    assert _race(deadline_first=False) == ["late answer", 5.0]
