"""A member's rejoin request: ``asyncio.Event`` semantics at a fraction of its cost.

Every member checks its rejoin flag several times per rebalance (the settle loop asks every
member whether it is stable), clears it before each SyncGroup and waits on it between
rebalances. ``asyncio.Event`` does each of these through Python-level methods, and its ``wait()``
is a coroutine that creates its future through the loop mixin and keeps a list of waiters. The
member's loop is the flag's only waiter, so :class:`Flag` keeps the value in a plain attribute
and hands the waiter the future itself: the same wake-ups at the same loop steps (``set()``
completes the waiting future, whose callback schedules the waiting task, as ``Event.set()``
does), with no coroutine frame in between.

A member at rest has no task at all: its loop ends and leaves :attr:`Flag.waker`, which ``set()``
calls where it would have woken the waiting task, so the next task's first step is queued at
that same loop step (a task's first step and a waiter's wake-up are both one ``call_soon``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Flag:
    """``asyncio.Event``'s ``is_set`` / ``set`` / ``clear`` / ``await wait()``, for one loop."""

    __slots__ = ("_loop", "_waiters", "value", "waker")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        #: True while set; read directly where a method call per member would add up
        self.value = False
        self._waiters: list[asyncio.Future[bool]] = []
        #: called once (then forgotten) by the next ``set()`` after the waiters: what a member
        #: at rest leaves instead of a task waiting on a future
        self.waker: Callable[[], object] | None = None

    def is_set(self) -> bool:
        return self.value

    def set(self) -> None:
        """Set it and wake every waiter (in the order they began waiting), as ``Event.set``."""
        if not self.value:
            self.value = True
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(True)
            waker = self.waker
            if waker is not None:
                self.waker = None
                waker()

    def clear(self) -> None:
        self.value = False

    def wait(self) -> asyncio.Future[bool]:
        """What to await until the flag is set: done already (no suspension) when it is set,
        else a future ``set()`` completes; cancelling the awaiting task cancels that future."""
        future: asyncio.Future[bool] = self._loop.create_future()
        if self.value:
            future.set_result(True)
        else:
            self._waiters.append(future)
        return future


__all__ = ["Flag"]
