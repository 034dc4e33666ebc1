"""The private aiokafka call is isolated, checked at start-up, and fails loudly when absent."""

from __future__ import annotations

import asyncio

import pytest

from assignor.adapter.rejoin import (
    FollowupScheduler,
    RejoinUnsupportedError,
    check_rejoin_supported,
    request_rejoin,
)


class FakeCoordinator:
    def __init__(self) -> None:
        self.rejoins = 0

    def request_rejoin(self) -> None:
        self.rejoins += 1


class Consumer:
    def __init__(self, coordinator: object | None) -> None:
        self._coordinator = coordinator


def test_installed_aiokafka_supports_rejoin() -> None:
    check_rejoin_supported()


def test_request_rejoin_calls_the_coordinator() -> None:
    coordinator = FakeCoordinator()
    request_rejoin(Consumer(coordinator))
    assert coordinator.rejoins == 1


def test_request_rejoin_without_coordinator_fails_loudly() -> None:
    with pytest.raises(RejoinUnsupportedError, match="no group coordinator"):
        request_rejoin(Consumer(None))


def test_request_rejoin_when_aiokafka_renamed_it_fails_loudly() -> None:
    with pytest.raises(RejoinUnsupportedError, match="no request_rejoin"):
        request_rejoin(Consumer(object()))


async def test_scheduler_fires_once_and_newer_schedule_replaces_older() -> None:
    coordinator = FakeCoordinator()
    scheduler = FollowupScheduler(Consumer(coordinator))
    scheduler.schedule(at_ms=2**62, reason="far future")
    scheduler.schedule(at_ms=0, reason="now")
    for _ in range(10):
        await asyncio.sleep(0.01)
        if coordinator.rejoins:
            break
    assert coordinator.rejoins == 1
    assert scheduler.scheduled_at_ms is None


async def test_a_follow_up_is_timed_on_the_process_clock_not_the_wall_clock() -> None:
    """A process on another clock (a simulation's virtual one) computes its deadlines on it; the
    scheduler must measure the delay on the same clock, or the follow-up fires at once."""
    virtual_now = 5_000  # far behind the wall clock's epoch milliseconds
    scheduler = FollowupScheduler(object(), now_ms=lambda: virtual_now)
    scheduler.schedule(virtual_now + 60_000, "probing rebalance")
    try:
        handle = scheduler._handle
        assert handle is not None
        delay = handle.when() - asyncio.get_running_loop().time()
        assert 59.0 < delay <= 60.0
        assert scheduler.scheduled_at_ms == virtual_now + 60_000
    finally:
        scheduler.cancel()
