"""The virtual clock's timers: deadlines kept off asyncio's heap until they are about due, and
moved in place when a timer is replaced (a session timer at every request, a request timer at
every request). Split from ``simulator.shim.clock``, whose loop keeps their heap and arms them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from simulator.shim.clock import _VirtualTimeLoop


class Deadline:
    """A timer of ``VirtualClock.call_later``, kept off asyncio's heap until it is about due.

    The shim's timers are mostly deadlines that never fire: a member's session timer is replaced
    at every request and beat, a request's timeout is cancelled when the answer comes (a cold start
    of 400 members set 2,400 of them and fired none; :meth:`reschedule` and :meth:`restart` now
    move most of them in place). On asyncio's heap each cost a
    ``TimerHandle`` (three Python constructors), a push and a cancel through the loop. A deadline
    is a small object on the loop's own heap of ``(due time, number, deadline)`` tuples (compared
    in C), and cancelling it only marks it. It takes its number when it is scheduled, from the
    loop's one counter, and becomes a real timer with that number (:meth:`arm`) just before the
    loop step that could reach its due time (``_VirtualTimeLoop._run_once``): asyncio's heap then
    holds, at every step, every timer that step can fire, in the same (due time, number) order,
    so callbacks run exactly as if the deadline had been on asyncio's heap all along."""

    __slots__ = ("_callback", "_cancelled", "_context", "_loop", "_order", "_queued", "_timer",
                 "_when")

    def __init__(self, when: float, order: int, callback: Callable[[], object],
                 loop: _VirtualTimeLoop) -> None:
        self._when = when
        self._order = order
        self._queued = order  # the number of its heap entry (``reschedule`` leaves old ones)
        self._callback: Callable[[], object] | None = callback
        self._context = contextvars.copy_context()  # as asyncio's handle takes it at scheduling
        self._loop = loop
        self._timer: asyncio.TimerHandle | None = None
        self._cancelled = False

    def when(self) -> float:
        return self._when

    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        if self._cancelled:
            return
        self._cancelled = True
        self._callback = None
        if self._timer is not None:
            self._timer.cancel()
        else:
            self._loop._deadlines_cancelled += 1

    def restart(self, delay: float, callback: Callable[[], object]) -> bool:
        """:meth:`reschedule` with a new callback, cancelled or not (a member's request timer:
        one per request, cancelled when the answer comes). False (no change) once armed."""
        if self._timer is not None:
            return False
        loop = self._loop
        if self._cancelled:
            self._cancelled = False
            if self._queued >= 0:  # its heap entry, counted as cancelled, stands for it again
                loop._deadlines_cancelled -= 1
        self._callback = callback
        loop._reschedule(self, max(delay, 0.0))
        return True

    def reschedule(self, delay: float) -> bool:
        """``cancel()`` then ``call_later(delay, the same callback)`` in place, with a new number
        and due time as a new deadline would take (the same order), sparing the object and its
        heap entry: a session timer is replaced at every request and beat. The context stays the
        first one (the coordinator's callbacks read none). False (no change) once armed or
        cancelled."""
        if self._cancelled or self._timer is not None:
            return False
        self._loop._reschedule(self, max(delay, 0.0))
        return True

    def arm(self) -> None:
        """Put the real timer on asyncio's heap, numbered as when this was scheduled."""
        assert self._callback is not None
        self._queued = -1
        self._timer = self._loop._push(self._when, self._order, self._callback, (),
                                       self._context)


__all__ = ["Deadline"]
