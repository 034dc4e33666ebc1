"""A member's request to the coordinator: sent, then awaited for at most its request timeout.

aiokafka waits ``request_timeout_ms`` for a JoinGroup or SyncGroup answer and then gives up on
the connection's answer; so does the shim's member, on the virtual clock. The wait is the
coordinator's own answer future (no waiter future of the member's in between), and its deadline
is one timer the member keeps and restarts in place from one request to the next.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from simulator.shim.deadline import Deadline
from simulator.shim.errors import RequestTimedOut

if TYPE_CHECKING:
    from simulator.shim.member import ShimMember

R = TypeVar("R")


def _expire(pending: asyncio.Future[Any]) -> None:
    """A request's deadline: its answer future ends in ``RequestTimedOut`` unless the
    coordinator has answered (at this same instant, before the timer) or a crash cancelled it."""
    if not pending.done():
        pending.set_exception(RequestTimedOut())


def call(member: ShimMember, send: Callable[[Any], asyncio.Future[R]], request: Any
         ) -> Awaitable[R]:
    """Send ``request`` for ``member``; wait at most its ``request_timeout_ms`` for the answer.

    A timed-out request stays parked at the coordinator (whose answer then goes nowhere, like
    a response on a connection aiokafka has given up on); the caller gets ``RequestTimedOut``.

    Without latency the request is sent at once, and an answer given at once (a new member's
    MEMBER_ID_REQUIRED, a static member's rejoin) is the coordinator's done future itself:
    awaiting it returns its result with no coroutine in between (a cold start of 400 members
    ran 400 such coroutines only to return a result already there), as the coroutine did.
    """
    if member.latency_ms[1] > 0:
        return _delayed(member, send, request)
    pending = send(request)
    if pending.done():
        return pending
    return _answer(member, pending, request)


async def _delayed(member: ShimMember, send: Callable[[Any], asyncio.Future[R]],
                   request: Any) -> R:
    """:func:`call` with network latency: a delay before the request and after its answer."""
    await member._delay()
    pending = send(request)
    response = await _answer(member, pending, request)
    await member._delay()
    return response


async def _answer(member: ShimMember, pending: asyncio.Future[R], request: Any) -> R:
    """Wait for the coordinator's answer ``pending``, at most the request timeout."""
    if pending.done():
        return pending.result()
    # The task awaits the coordinator's future itself, so an answer wakes it at the loop's
    # next step (an extra waiter future woken by the answer's callback cost a second step and
    # a closure per request). At the deadline the timer completes that future with
    # RequestTimedOut; the coordinator's later answer then goes nowhere (it completes only
    # futures not yet done), like a response on a connection aiokafka has given up on. The
    # rebalance of a crash cancels it, as a dropped connection would.
    delay, expire = member.request_timeout_ms / 1000.0, functools.partial(_expire, pending)
    timer = member._request_timer
    if type(timer) is not Deadline or not timer.restart(delay, expire):
        timer = member._request_timer = member.clock.call_later(delay, expire)
    try:
        return await pending
    except RequestTimedOut:
        member._log("request-timeout", f"{type(request).__name__} unanswered after "
                                       f"{member.request_timeout_ms} ms; retrying")
        raise
    finally:
        timer.cancel()


__all__ = ["call"]
