"""The clocks the shim runs on: asyncio's own, or a virtual one that jumps to the next timer.

Every timeout of the coordinator and every sleep of a member goes through a ``Clock`` so the same
code runs against wall time (``RealClock``) and against virtual time (``VirtualClock``), where an
hour of rebalancing costs milliseconds and two runs with the same seed are identical.

The virtual clock is an asyncio event loop whose ``time()`` is a counter and whose selector never
blocks: when no callback is ready, the loop asks the selector to wait until the next timer, and the
selector moves the counter there instead. Time therefore advances exactly when every task is idle,
and plain ``asyncio.sleep``/``wait_for`` inside the loop follow virtual time too. Nothing in a
virtual run may wait for real I/O or threads: there is nobody to wake the loop up.

Two ways a virtual run can stop making progress are detected rather than left to hang: every task
waiting with no timer pending (``VirtualTimeDeadlock``), and the loop stepping again and again at
one instant, so that time would never move (``VirtualTimeLivelock``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import heapq
import itertools
import random
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar, runtime_checkable

from simulator.shim.deadline import Deadline

T = TypeVar("T")

# Timers within this distance of "now" fire; it absorbs float rounding when time jumps to a timer.
_VIRTUAL_RESOLUTION = 1e-6

# Loop steps allowed at one virtual instant before the run counts as spinning. Work that ends takes
# a handful of steps per instant (every ready callback and due timer runs in the same step), so the
# bound only trips on a cycle: a timer rescheduling itself at 0 s, a task that only yields.
DEFAULT_MAX_STEPS_PER_INSTANT = 100_000


class Timer(Protocol):
    """What ``Clock.call_later`` hands back: asyncio's ``TimerHandle`` on the real clock, a
    deadline kept off asyncio's heap until it is due on the virtual one (:class:`Deadline`)."""

    def cancel(self) -> None: ...

    def cancelled(self) -> bool: ...

    def when(self) -> float: ...


@runtime_checkable
class Clock(Protocol):
    """What the coordinator and the members need from time: now, timers, sleeps, a seeded RNG."""

    @property
    def random(self) -> random.Random:
        """The one source of randomness of a run (member ids, network jitter)."""
        ...

    def time(self) -> float:
        """Seconds on this clock (monotonic; 0.0 at the start of a virtual run)."""
        ...

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        """Run ``callback`` after ``delay`` seconds; the handle cancels it."""
        ...

    async def sleep(self, delay: float) -> None:
        """Suspend the calling task for ``delay`` seconds of this clock."""
        ...

    def create_future(self) -> asyncio.Future[Any]:
        """A future bound to the loop this clock drives."""
        ...


class RealClock:
    """Wall time: the running asyncio loop's monotonic clock."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed)

    @property
    def random(self) -> random.Random:
        return self._random

    def time(self) -> float:
        return asyncio.get_running_loop().time()

    def call_later(self, delay: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay, 0.0), callback)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(max(delay, 0.0))

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().create_future()


class VirtualTimeDeadlock(RuntimeError):
    """Every task waits and no timer is pending: in real time this run would hang forever."""


class VirtualTimeLivelock(VirtualTimeDeadlock):
    """The loop keeps running at one virtual instant: virtual time would never move again.

    A subclass of ``VirtualTimeDeadlock`` so that one ``except`` catches every way a virtual run
    can stop making progress.
    """


class _JumpingSelector(selectors.BaseSelector):
    """A selector with no I/O: "wait ``timeout`` seconds" means "move virtual time forward"."""

    def __init__(self, loop: _VirtualTimeLoop, max_steps_per_instant: int) -> None:
        self._loop = loop
        self._keys: dict[Any, selectors.SelectorKey] = {}
        self._max_steps = max_steps_per_instant
        self._instant = loop.time()
        self._steps = 0

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = selectors.SelectorKey(fileobj, _fd(fileobj), events, data)
        self._keys[fileobj] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._keys.pop(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        self._keys.pop(fileobj, None)
        return self.register(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            raise VirtualTimeDeadlock(
                f"at virtual time {self._loop.time():.3f}s every task is waiting and no timer is "
                "pending; a real run would hang here (a member awaits something nobody completes)"
            )
        if timeout > 0:
            self._loop.advance(timeout)
        # asyncio selects once per loop step: count the steps that leave time where it was.
        now = self._loop.time()
        if now - self._instant >= _VIRTUAL_RESOLUTION:
            self._instant, self._steps = now, 0
        else:
            self._steps += 1
            if self._steps > self._max_steps:
                self._steps = 0  # let the caller still cancel and close the loop
                raise VirtualTimeLivelock(
                    f"at virtual time {now:.3f}s the loop ran {self._max_steps:,} steps without "
                    "time moving: something reschedules itself at the same instant (a 0 s timer "
                    "or a task that only yields), so virtual time would never advance"
                )
        return []

    def close(self) -> None:
        self._keys.clear()

    def get_map(self) -> Any:
        return self._keys


def _fd(fileobj: Any) -> int:
    return fileobj if isinstance(fileobj, int) else int(fileobj.fileno())


class _OrderedTimer(asyncio.TimerHandle):
    """A timer that sorts by (due time, order of scheduling).

    asyncio's own timers compare by due time only, so two due at the same instant leave its heap
    in an order that depends on every other timer pushed or cancelled meanwhile (and on when the
    loop rebuilds the heap to drop cancelled ones). Numbering them makes same-instant callbacks
    run first scheduled, first run, whatever else is on the heap: a timer that never fires can
    then be left out without reordering anything."""

    __slots__ = ("_order",)

    def __init__(self, when: float, order: int, callback: Callable[..., object],
                 args: tuple[Any, ...], loop: asyncio.AbstractEventLoop,
                 context: Any = None) -> None:
        super().__init__(when, callback, args, loop, context)
        self._order = order

    def __lt__(self, other: object) -> bool:
        if isinstance(other, _OrderedTimer):
            mine, theirs = self._when, other._when  # type: ignore[attr-defined]
            return mine < theirs or (mine == theirs and self._order < other._order)
        return NotImplemented


class _ReadyHandle(asyncio.Handle):
    """asyncio's ``Handle`` for the virtual loop's ``call_soon``, built without asyncio's
    debug-mode bookkeeping (a virtual loop runs the shim's own callbacks on one thread; its
    ``call_at`` leaves the same checks out). Every task step and future callback of a replay is
    one of these: a cold start of 400 members queues 1,622 (2,840 before a
    member awaited its answer future directly, docs/shim.md *Answers*; 2,041 before the
    heartbeat starts of one step shared a handle)."""

    __slots__ = ()
    # Handle's slots that ``call_soon`` fills (declared for the type checker; no new slots)
    _callback: Callable[..., object]
    _loop: asyncio.AbstractEventLoop
    _source_traceback: Any
    _repr: str | None
    _context: Any


#: a :class:`_ReadyHandle` without an ``__init__`` frame (``call_soon`` fills the slots itself)
_new_ready_handle = _ReadyHandle.__new__


class _VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on virtual time (see the module docstring)."""

    def __init__(self, start: float, max_steps_per_instant: int) -> None:
        self._virtual_now = start
        self._timer_order = itertools.count()
        #: deadlines not yet on asyncio's heap (``Deadline``), and how many of them are cancelled
        self._deadlines: list[tuple[float, int, Deadline]] = []
        self._deadlines_cancelled = 0
        super().__init__(_JumpingSelector(self, max_steps_per_instant))
        self._clock_resolution = _VIRTUAL_RESOLUTION
        self._answer_debug()

    def set_debug(self, enabled: bool) -> None:
        super().set_debug(enabled)
        self._answer_debug()

    def _answer_debug(self) -> None:
        """Every ``Future`` and ``Task`` asyncio builds asks its loop ``get_debug()`` from C (a
        cold start of 400 members builds some 2,000): while debug mode is off, ``bool``
        answers False without a Python frame; on, asyncio's own method answers."""
        if self._debug:  # type: ignore[attr-defined]
            self.__dict__.pop("get_debug", None)
        else:
            self.get_debug = bool  # type: ignore[method-assign]

    def call_at(  # type: ignore[override]
        self, when: float, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        """asyncio's ``call_at`` with an :class:`_OrderedTimer`; asyncio's debug-mode thread and
        callback checks are left out (one loop, one thread, the shim's own callbacks)."""
        if when is None:
            raise TypeError("when cannot be None")
        return self._push(when, next(self._timer_order), callback, args, context)

    def call_soon(  # type: ignore[override]
        self, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> asyncio.Handle:
        """asyncio's ``call_soon`` with a :class:`_ReadyHandle` (no debug-mode checks)."""
        if self._closed:  # type: ignore[attr-defined]  # asyncio's _check_closed, inline
            raise RuntimeError("Event loop is closed")
        # Handle's own slots, set as Handle.__init__ sets them with debug mode off, inline: one
        # Python frame less for each of the replay's task steps and future callbacks
        handle = _new_ready_handle(_ReadyHandle)
        handle._callback = callback
        handle._args = args
        handle._cancelled = False
        handle._loop = self
        handle._source_traceback = None
        handle._repr = None
        handle._context = contextvars.copy_context() if context is None else context
        self._ready.append(handle)  # type: ignore[attr-defined]
        return handle

    def _push(self, when: float, order: int, callback: Callable[..., object],
              args: tuple[Any, ...], context: Any) -> asyncio.TimerHandle:
        if self._closed:  # type: ignore[attr-defined]  # asyncio's _check_closed, inline
            raise RuntimeError("Event loop is closed")
        timer = _OrderedTimer(when, order, callback, args, self, context)
        heapq.heappush(self._scheduled, timer)  # type: ignore[attr-defined]
        timer._scheduled = True  # type: ignore[attr-defined]
        return timer

    def deadline(self, delay: float, callback: Callable[[], object]) -> Deadline:
        """``call_later(delay, callback)`` as a :class:`Deadline`: the same due time and number,
        off asyncio's heap until about due."""
        if self._closed:  # type: ignore[attr-defined]  # asyncio's _check_closed, inline
            raise RuntimeError("Event loop is closed")
        when = self._virtual_now + delay
        deadline = Deadline(when, next(self._timer_order), callback, self)
        heapq.heappush(self._deadlines, (when, deadline._order, deadline))
        cancelled = self._deadlines_cancelled
        if cancelled > 100 and cancelled * 2 > len(self._deadlines):
            self._drop_cancelled_deadlines()
        return deadline

    def _reschedule(self, deadline: Deadline, delay: float) -> None:
        """A new due time and number. A later key leaves the heap entry to surface early and be
        moved (``_settle``); an earlier one pushes a new entry, the old one counted as cancelled."""
        when = self._virtual_now + delay
        order = next(self._timer_order)
        if deadline._queued < 0 or when < deadline._when:  # none in the heap, or it is later
            if deadline._queued >= 0:
                self._deadlines_cancelled += 1
            heapq.heappush(self._deadlines, (when, order, deadline))
            deadline._queued = order
        deadline._when, deadline._order = when, order

    def _settle(self, entry: tuple[float, int, Deadline]) -> bool:
        """Whether a popped heap entry stands for a live deadline at its own key; one rescheduled
        later is pushed again at its new key, a stale or cancelled one dropped (both False)."""
        _, order, deadline = entry
        if order != deadline._queued or deadline._cancelled:
            self._deadlines_cancelled -= 1
            if order == deadline._queued:
                deadline._queued = -1  # no entry left: a restart pushes one
            return False
        if order != deadline._order:
            heapq.heappush(self._deadlines, (deadline._when, deadline._order, deadline))
            deadline._queued = deadline._order
            return False
        return True

    def _drop_cancelled_deadlines(self) -> None:
        """Rebuild the heap without the cancelled deadlines (asyncio's rule for its own heap:
        more than half cancelled), so replacing timers at one instant cannot grow it forever;
        rescheduled ones get their entry at their own key."""
        live = []
        for _, order, deadline in self._deadlines:
            if order == deadline._queued and not deadline._cancelled:
                live.append((deadline._when, deadline._order, deadline))
                deadline._queued = deadline._order
            elif order == deadline._queued:
                deadline._queued = -1
        heapq.heapify(live)
        self._deadlines = live
        self._deadlines_cancelled = 0

    def _run_once(self) -> None:
        """One asyncio loop step, after arming the deadlines it can reach (``Deadline``).

        With callbacks ready the step does not jump, so nothing beyond two resolutions from now
        is armed; when the heap's first entry is past that too (live or not: every other entry
        is later still), arming would only tidy the heap's head, which a later step does as
        well (most steps of a rebalance: 1,222 in a cold start of 400 members)."""
        deadlines = self._deadlines
        if deadlines and not ((self._ready or self._stopping)  # type: ignore[attr-defined]
                              and deadlines[0][0] >= self._virtual_now + 2 * _VIRTUAL_RESOLUTION):
            self._arm_due_deadlines()
        super()._run_once()  # type: ignore[misc]

    def _arm_due_deadlines(self) -> None:
        """Arm every deadline due before the end of the coming step.

        asyncio's step moves to its ready queue every timer due before ``now + resolution``,
        where ``now`` is the current time if callbacks are ready (or the loop is stopping), else
        the earliest live timer's due time (the selector jumps there). So every deadline due
        before that ``now + resolution`` must be on asyncio's heap first, counting the earliest
        deadline among the timers; a margin of a second resolution absorbs the float rounding of
        the jump, and arming early only costs."""
        deadlines = self._deadlines
        while deadlines:
            _, order, first = deadlines[0]
            if order == first._order and order == first._queued and not first._cancelled:
                break
            self._settle(heapq.heappop(deadlines))
        if not deadlines:
            return
        scheduled = self._scheduled  # type: ignore[attr-defined]
        while scheduled and scheduled[0]._cancelled:  # what asyncio's step does first
            self._timer_cancelled_count -= 1  # type: ignore[attr-defined]
            heapq.heappop(scheduled)._scheduled = False
        if self._ready or self._stopping:  # type: ignore[attr-defined]  # no jump this step
            limit = self._virtual_now + 2 * _VIRTUAL_RESOLUTION
        else:
            earliest = deadlines[0][0]
            if scheduled and scheduled[0]._when < earliest:
                earliest = scheduled[0]._when
            limit = max(self._virtual_now, earliest) + 2 * _VIRTUAL_RESOLUTION
        while deadlines and deadlines[0][0] < limit:
            entry = heapq.heappop(deadlines)
            if self._settle(entry):
                entry[2].arm()

    def pending_timers(self) -> int:
        """Timers still to fire: asyncio's live ones and the deadlines not yet armed."""
        scheduled = self._scheduled  # type: ignore[attr-defined]
        return (sum(1 for timer in scheduled if not timer.cancelled())
                + len(self._deadlines) - self._deadlines_cancelled)

    def quiet(self) -> bool:
        """No callback ready and no live timer (asyncio's or a deadline) due within two
        resolutions of now: the next step would run nothing at this instant."""
        if self._ready or self._stopping:  # type: ignore[attr-defined]
            return False
        limit = self._virtual_now + 2 * _VIRTUAL_RESOLUTION
        scheduled = self._scheduled  # type: ignore[attr-defined]
        return (not any(timer._when < limit and not timer._cancelled for timer in scheduled)
                and not any(deadline._when < limit and not deadline._cancelled
                            for _, _, deadline in self._deadlines))

    def close(self) -> None:
        self._deadlines.clear()
        self._deadlines_cancelled = 0
        super().close()

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        self._virtual_now += seconds


class VirtualClock:
    """Deterministic virtual time on its own event loop; ``run`` drives a coroutine on it.

    Use it from synchronous code (a plain test function, a Spark task): ``run`` cannot be
    called from inside another running event loop. ``run`` raises ``VirtualTimeDeadlock`` when
    every task waits and no timer is left, and ``VirtualTimeLivelock`` when the loop takes more
    than ``max_steps_per_instant`` steps without virtual time moving.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        start: float = 0.0,
        max_steps_per_instant: int = DEFAULT_MAX_STEPS_PER_INSTANT,
    ) -> None:
        if max_steps_per_instant < 1:
            raise ValueError(
                f"max_steps_per_instant must be at least 1, not {max_steps_per_instant}"
            )
        self._random = random.Random(seed)
        self._loop = _VirtualTimeLoop(start, max_steps_per_instant)
        self._runner = asyncio.Runner(loop_factory=lambda: self._loop)
        # ``time()`` answered in C (the loop's virtual now, read at each call): the members, the
        # coordinator and the journal ask it some 5,000 times in a cold start of 400 members
        self.time = functools.partial(getattr, self._loop, "_virtual_now")  # type: ignore[method-assign]
        # and ``create_future()`` likewise (some 3,600 futures a cold start): the same Future
        self.create_future = functools.partial(  # type: ignore[method-assign]
            asyncio.Future, loop=self._loop)

    @property
    def random(self) -> random.Random:
        return self._random

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def time(self) -> float:  # (each instance answers through a C partial: see __init__)
        return self._loop._virtual_now

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        """Run ``callback`` after ``delay`` virtual seconds: a deadline off asyncio's heap until
        about due (``Deadline``), in the same order as asyncio's timers of this clock."""
        return self._loop.deadline(max(delay, 0.0), callback)

    def pending_timers(self) -> int:
        """How many timers of this clock's loop are still to fire (cancelled ones aside)."""
        return self._loop.pending_timers()

    def quiet(self) -> bool:
        """Nothing to run at this instant: no callback ready, no timer due (call it from a
        task: its own wake-up is not queued while it runs)."""
        return self._loop.quiet()

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(max(delay, 0.0))

    def create_future(self) -> asyncio.Future[Any]:  # (answered through a C partial: __init__)
        return asyncio.Future(loop=self._loop)  # what the loop's create_future returns

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        """Run ``main`` to completion in virtual time; tasks it left behind keep their state."""
        return self._runner.run(main)

    def close(self) -> None:
        """Cancel what is still running and close the loop."""
        self._runner.close()

    def __enter__(self) -> VirtualClock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
