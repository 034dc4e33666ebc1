"""A member's heartbeats: one every ``heartbeat_interval_ms`` while it is stable.

Long replays send hundreds of thousands of heartbeats, and almost all of them are answered NONE
and change nothing but the member's session deadline. Without network latency a member
therefore beats for real only when that matters: after a beat answered NONE it leaves its next
beats *standing* at the coordinator (``simulator.shim.leases``: beats at ``base + k x
interval``, no event each) and is woken at the instant of the first beat whose answer is not
NONE any more (a rebalance, a new generation, its removal); a stop tells the coordinator, which
sets the session timer from the last beat. A beat that is sent for real is a plain callback
(no task: a coroutine beat paid for a future, a task step and three frames), and a stop
completes two loop steps after it is asked for, as cancelling a heartbeat task and awaiting it
did. With latency (``latency_ms``) the beat awaits its delays, and a coroutine loop runs instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from typing import TYPE_CHECKING, Any

from simulator.shim.clock import Timer
from simulator.shim.errors import ErrorCode, MemberFailed, error_class
from simulator.shim.requests import HeartbeatRequest, HeartbeatResponse

#: the codes every heartbeat's answer is compared with, as globals: an Enum class attribute
#: goes through ``EnumType``'s ``__getattr__`` hook at each look-up (the same members)
_NONE, _REBALANCE_IN_PROGRESS = ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS

if TYPE_CHECKING:
    from simulator.shim.member import ShimMember


class _Stopped(asyncio.Future[None]):
    """What a stop waits on. Like a task being cancelled, it ignores a cancel from its waiter
    (``Task.cancel`` cancels the future it awaits) and ends cancelled when the loop stops, so
    the waiter sees exactly what awaiting the cancelled heartbeat task showed it."""

    def cancel(self, msg: Any = None) -> bool:
        return not self.done()

    def finish(self) -> None:
        asyncio.Future.cancel(self)


class Heartbeats:
    """The heartbeat loop of one stable member generation: ``start()``, then ``await stop()``
    (the member rejoins, leaves or crashes) or it ends by itself (reset, failure)."""

    def __init__(self, member: ShimMember) -> None:
        self._member = member
        self._loop = asyncio.get_running_loop()
        self._timer: Timer | None = None
        self._step: asyncio.Handle | None = None
        self._stopped: _Stopped | None = None
        self._task: asyncio.Task[None] | None = None
        #: (group, member id) of the standing heartbeats left at the coordinator, if any
        self._standing: tuple[str, str] | None = None
        self.running = False

    def start(self) -> None:
        member = self._member
        self.running = True
        if member.latency_ms[1] > 0:
            self._task = self._loop.create_task(self._coroutine(),
                                                name=f"heartbeat-{member.name}")
        else:  # where the task's first step would run: with the other starts not yet run
            self._step = _start_batch(self._loop, self)

    async def stop(self) -> None:
        """Stop beating; returns when a cancelled heartbeat task would have ended."""
        task, self._task = self._task, None
        if task is not None:
            self.running = False
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            return
        if not self.running:
            return
        self.running = False
        self._sit()
        stopped = self._stopped = _Stopped(loop=self._loop)
        if self._step is None:  # asleep: the cancelled sleep wakes the task one step later
            self._step = self._loop.call_soon(self._end)
        try:  # noqa: SIM105  # contextlib.suppress: two Python-level calls per stop, per rebalance
            await stopped
        except asyncio.CancelledError:
            pass

    @property
    def at_rest(self) -> bool:
        """Beating as a callback chain with nothing of it queued: standing at the coordinator,
        asleep on a timer, or waiting for the coordinator's wake-up (no latency task, no step
        pending, no stop under way)."""
        return (self.running and self._task is None and self._step is None
                and self._stopped is None)

    def stop_at_rest(self) -> None:
        """What ``await stop()`` leaves behind, at once, for heartbeats :attr:`at_rest`: not
        running, the standing order withdrawn, the sleep's timer cancelled (``_end``)."""
        assert self.at_rest
        self.running = False
        self._sit()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- the callback chain (no latency) ----------------------------------------------------
    def _first(self) -> None:
        self._step = None
        if not self.running:
            self._end()
        elif self._member.member_id:
            self._stand_or_sleep()
        else:
            self.running = False

    def _stand_or_sleep(self) -> None:
        """After a beat answered NONE: leave the next beats standing at the coordinator
        (``simulator.shim.leases``) if it takes them, else sleep until the next one."""
        member = self._member
        interval = member.heartbeat_interval_ms / 1000.0
        request = heartbeat_request(member)
        if member.coordinator.stand(request, interval, self._woken):
            self._standing = (request.group_id, request.member_id)
        else:
            self._sleep(interval)

    def _woken(self) -> None:
        """The standing beats ended and this is the next one's instant: send it for real."""
        self._standing = None
        if self.running and self._timer is None and self._step is None:
            self._beat()

    def _sit(self) -> None:
        standing, self._standing = self._standing, None
        if standing is not None:
            self._member.coordinator.sit(*standing)

    def _sleep(self, pause: float) -> None:
        if pause > 0:
            self._timer = self._member.clock.call_later(pause, self._wake)
        else:  # asyncio.sleep(0) yields one loop step without a timer
            self._step = self._loop.call_soon(self._beat)

    def _wake(self) -> None:
        self._timer = None
        if self.running:  # a stopped sleep's timer does nothing, as a cancelled future's
            self._step = self._loop.call_soon(self._beat)

    def _beat(self) -> None:
        self._step = None
        if not self.running:
            self._end()
            return
        member = self._member
        try:
            response = member.coordinator.heartbeat(heartbeat_request(member))
            ok = answer(member, response)
        except MemberFailed as failure:
            self.running = False
            fail(member, failure)
            return
        if not member.member_id:
            self.running = False
            return
        if not ok:
            self._sleep(member.retry_backoff_ms / 1000.0)
        elif response.error_code == _NONE:
            self._stand_or_sleep()
        else:  # a rebalance: the group is not Stable, so the coordinator would refuse to stand
            self._sleep(member.heartbeat_interval_ms / 1000.0)

    def _end(self) -> None:
        self._step = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._stopped is not None:
            self._stopped.finish()
            self._stopped = None

    # -- with latency ----------------------------------------------------------------------
    async def _coroutine(self) -> None:
        member = self._member
        interval = member.heartbeat_interval_ms / 1000.0
        backoff = member.retry_backoff_ms / 1000.0
        pause = interval
        clock = member.clock
        while member.member_id:
            await clock.sleep(pause)
            sent = clock.time()
            request = heartbeat_request(member)
            await member._delay()
            response = member.coordinator.heartbeat(request)
            await member._delay()
            try:
                ok = answer(member, response)
            except MemberFailed as failure:
                fail(member, failure)
                return
            pause = max(0.0, interval - (clock.time() - sent)) if ok else backoff


#: per loop, the heartbeats whose first step is queued in one handle that has not run yet
_FIRSTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                   tuple[asyncio.Handle, list[Heartbeats]]] = (
    weakref.WeakKeyDictionary())


def _start_batch(loop: asyncio.AbstractEventLoop, heartbeats: Heartbeats) -> asyncio.Handle:
    """Queue ``heartbeats``' first step: in the loop handle of the starts not yet run, if there
    is one, else in a new one (returned either way: the step's marker). A rebalance's members
    start their heartbeats together (each when its SyncGroup answer arrives, the answers of one
    generation queued back to back), and a handle per member cost a quarter of a cold start's
    loop handles. The batch runs the first steps in start order, where its first member's own
    handle would have run: a later member's step moves ahead of what was queued between its
    start and the batch's (the members' ``stand`` touches only the coordinator's leases and
    session timers)."""
    queued = _FIRSTS.get(loop)
    if queued is None:
        queued = _FIRSTS[loop] = (loop.call_soon(_run_firsts, loop), [])
    queued[1].append(heartbeats)
    return queued[0]


def _run_firsts(loop: asyncio.AbstractEventLoop) -> None:
    """The batch's first steps, in start order; one's exception is reported as the loop reports
    a handle's, and the others still run."""
    _, batch = _FIRSTS.pop(loop)
    for heartbeats in batch:
        try:
            heartbeats._first()
        except Exception as error:  # what Handle._run does with a callback's exception
            loop.call_exception_handler({
                "message": f"Exception in heartbeat start {heartbeats._first!r}",
                "exception": error,
            })


def heartbeat_request(member: ShimMember) -> HeartbeatRequest:
    """The member's Heartbeat now. aiokafka sends Heartbeat v1: no ``group.instance.id``."""
    return HeartbeatRequest(member.group_id, member.generation, member.member_id)


def beat(member: ShimMember) -> bool:
    """One Heartbeat without latency and what its answer means (:func:`answer`)."""
    return answer(member, member.coordinator.heartbeat(heartbeat_request(member)))


def answer(member: ShimMember, response: HeartbeatResponse) -> bool:
    """What a Heartbeat's answer means for the member: True to keep beating at the interval,
    False to retry after the backoff (the member was reset); fatal codes raise."""
    code = response.error_code
    if code == _NONE:
        return True
    if code == _REBALANCE_IN_PROGRESS:
        member.request_rejoin()
        return True
    if code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
        member._log("heartbeat-reset", ErrorCode(code).name)
        member._reset_generation()
        member._notify()
        return False
    raise MemberFailed(f"Heartbeat failed: {ErrorCode(code).name}") from error_class(code)()


def fail(member: ShimMember, failure: MemberFailed) -> None:
    """A fatal heartbeat answer: the member stops with ``status == "failed"``."""
    member.error = failure.__cause__ or failure
    member._end_loop()
    member._set_status("failed", str(failure))


__all__ = ["Heartbeats", "answer", "beat", "heartbeat_request"]
