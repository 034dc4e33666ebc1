"""The one place that touches aiokafka's private API: asking a consumer to rejoin its group.

Kafka Streams triggers probing and follow-up rebalances with ``Consumer.enforceRebalance()``.
aiokafka has no public equivalent; its group coordinator has ``request_rejoin()``, which the
consumer's own loop watches. If a future aiokafka renames it, :func:`check_rejoin_supported` fails
at start-up with a clear message instead of silently never rebalancing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class RejoinUnsupportedError(RuntimeError):
    """This aiokafka cannot be asked to rejoin; follow-up rebalances would never happen."""


def aiokafka_group_coordinator(unsupported: type[Exception]) -> type:
    """aiokafka's private ``GroupCoordinator`` class, whose methods the adapter hooks; raises
    ``unsupported`` when this aiokafka has none where 0.14 keeps it."""
    try:
        from aiokafka.consumer.group_coordinator import GroupCoordinator
    except ImportError as exc:  # pragma: no cover - depends on the installed aiokafka
        raise unsupported(
            "aiokafka.consumer.group_coordinator.GroupCoordinator cannot be imported; "
            "streams-assignor supports aiokafka 0.14.x"
        ) from exc
    return GroupCoordinator  # type: ignore[no-any-return]


def check_rejoin_supported() -> None:
    """Fail loudly if aiokafka's private ``GroupCoordinator.request_rejoin`` has gone."""
    GroupCoordinator = aiokafka_group_coordinator(RejoinUnsupportedError)
    if not callable(getattr(GroupCoordinator, "request_rejoin", None)):
        raise RejoinUnsupportedError(
            "aiokafka's GroupCoordinator has no request_rejoin(); probing and follow-up "
            "rebalances cannot be triggered. streams-assignor supports aiokafka 0.14.x"
        )


def request_rejoin(consumer: object) -> None:
    """Make ``consumer`` rejoin its group at the next turn of its loop."""
    coordinator = getattr(consumer, "_coordinator", None)
    if coordinator is None:
        raise RejoinUnsupportedError(
            f"{consumer!r} has no group coordinator (not started, or not in a group)"
        )
    method = getattr(coordinator, "request_rejoin", None)
    if not callable(method):
        raise RejoinUnsupportedError(
            f"{type(coordinator).__name__} has no request_rejoin(); cannot trigger a rebalance"
        )
    method()


class FollowupScheduler:
    """One pending follow-up rebalance per consumer; a newer schedule replaces the older one.

    ``now_ms`` is the clock the deadline was computed on (the process's ``clock_ms``): a delay
    computed against another clock fires at once or never.
    """

    def __init__(
        self, consumer: object | None = None, *, now_ms: Callable[[], int] | None = None
    ) -> None:
        self._consumer = consumer
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))
        self._handle: asyncio.TimerHandle | None = None
        self.scheduled_at_ms: int | None = None

    def bind(self, consumer: object) -> None:
        self._consumer = consumer

    def schedule(self, at_ms: int, reason: str) -> None:
        """Rejoin at ``at_ms`` on this scheduler's clock (0 or past: as soon as the loop turns)."""
        self.cancel()
        if self._consumer is None:
            log.warning("follow-up rebalance wanted (%s) but no consumer is bound", reason)
            return
        delay = max(0.0, (at_ms - self._now_ms()) / 1000)
        loop = asyncio.get_running_loop()
        self.scheduled_at_ms = at_ms
        self._handle = loop.call_later(delay, self._fire, reason)
        log.info("follow-up rebalance in %.3f s: %s", delay, reason)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self.scheduled_at_ms = None

    def _fire(self, reason: str) -> None:
        self._handle = None
        self.scheduled_at_ms = None
        log.info("triggering follow-up rebalance: %s", reason)
        try:
            request_rejoin(self._consumer)
        except RejoinUnsupportedError:
            log.exception("could not trigger the follow-up rebalance")
