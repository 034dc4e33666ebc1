"""The leader's changelog end offsets, read when it assigns, as Kafka's leader reads them.

Kafka's ``StreamsPartitionAssignor.assign()`` fetches changelog end offsets after every
subscription has arrived. aiokafka calls ``assignor.assign()`` synchronously, so the adapter
cannot fetch there; a snapshot taken at the leader's own join (the rebalance listener) predates
the subscriptions of members that joined later while the actives kept writing. A warm-up's
offset sum can then exceed the leader's stale end sum, and Kafka's lag rule
(``ClientState.computeTaskLags``: an offset sum beyond the end is corrupt state, lag = the end
sum), which the assignor keeps exactly, would keep it "not caught up": probing never stops.

aiokafka's leader runs ``await GroupCoordinator._perform_assignment(response)`` and calls
``assign()`` from inside it, once the JoinGroup response (every subscription) is in. The hook
here wraps that coroutine on one consumer's coordinator so that it first awaits
``StreamsProcess.refresh_end_offsets(force=True)``, bounded by a timeout; on a timeout or an
error the previous snapshot stays and the failure is logged (a WARNING the first time, DEBUG
after, so a broker outage does not flood the log). Like ``assignor.adapter.rejoin`` it uses
aiokafka's private API: :func:`check_assign_time_refresh_supported` fails at consumer creation,
with a clear message, if aiokafka changed it; running silently on a stale snapshot would bring
back the never-ending probing described above.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from assignor.adapter.rejoin import aiokafka_group_coordinator

if TYPE_CHECKING:
    from assignor.adapter.process import StreamsProcess

log = logging.getLogger(__name__)

#: How long the leader waits for end offsets before assigning on its previous snapshot.
DEFAULT_ASSIGN_END_OFFSETS_TIMEOUT_S = 10.0
#: Marks a coordinator whose ``_perform_assignment`` is already wrapped (one hook, not a stack).
_MARK = "_streams_assignor_end_offsets_hook"


class AssignTimeRefreshUnsupportedError(RuntimeError):
    """This aiokafka's leader path cannot be hooked; its end offsets would be stale."""


def check_assign_time_refresh_supported() -> None:
    """Fail loudly if aiokafka's private ``GroupCoordinator._perform_assignment`` changed."""
    GroupCoordinator = aiokafka_group_coordinator(AssignTimeRefreshUnsupportedError)
    method = getattr(GroupCoordinator, "_perform_assignment", None)
    if not inspect.iscoroutinefunction(method) or list(
        inspect.signature(method).parameters
    ) != ["self", "response"]:
        raise AssignTimeRefreshUnsupportedError(
            "aiokafka's GroupCoordinator._perform_assignment(response) coroutine has changed; "
            "the leader could not read changelog end offsets at assign time and warm-ups could "
            "probe forever under write load. streams-assignor supports aiokafka 0.14.x"
        )


def install_assign_time_refresh(
    coordinator: Any, process: StreamsProcess, timeout_s: float
) -> bool:
    """Wrap ``coordinator._perform_assignment`` once; True if this call installed the hook.

    ``coordinator`` is a started consumer's ``_coordinator`` (aiokafka creates it in
    ``start()``), or anything with the same coroutine (the simulator's members). aiokafka's
    own was checked at consumer creation; anything else without the coroutine (a test double,
    another client) is left alone with a WARNING: it then assigns on the listener's snapshot."""
    if getattr(coordinator, _MARK, False):
        return False
    original = getattr(coordinator, "_perform_assignment", None)
    if original is None or not inspect.iscoroutinefunction(original):
        log.warning(
            "%s has no _perform_assignment coroutine: as leader it assigns on the end offsets "
            "read before its join, not at assign time", type(coordinator).__name__
        )
        setattr(coordinator, _MARK, True)  # warn once per coordinator
        return False
    coordinator._perform_assignment = _refreshing(original, process, timeout_s)
    setattr(coordinator, _MARK, True)
    return True


def _refreshing(
    original: Callable[..., Awaitable[Any]], process: StreamsProcess, timeout_s: float
) -> Callable[..., Awaitable[Any]]:
    """``original`` preceded by a bounded, forced end-offset refresh of ``process``."""

    async def perform_assignment(*args: Any, **kwargs: Any) -> Any:
        await refresh_for_assign(process, timeout_s)
        return await original(*args, **kwargs)

    return perform_assignment


async def refresh_for_assign(process: StreamsProcess, timeout_s: float) -> bool:
    """Force a refresh of ``process``'s snapshot; on failure keep the previous one.

    True when a fresh snapshot is in place. The fetch itself is shielded in the process, so a
    timeout here leaves it running; it replaces the snapshot whenever it completes."""
    previous = process.changelog_end_offsets
    previous_at = process.end_offsets_fetched_at_ms
    try:
        await asyncio.wait_for(process.refresh_end_offsets(force=True), timeout_s)
    except Exception as exc:  # TimeoutError included: assign on the previous snapshot
        _failed(process, f"{type(exc).__name__}: {exc or 'no answer'} after {timeout_s:g} s")
        return False
    if process.changelog_end_offsets is None and previous is not None:
        # the reader failed (the process logged why): stale offsets beat no offsets here,
        # since no offsets make the leader fall back for the whole group
        process.changelog_end_offsets = previous
        process.end_offsets_fetched_at_ms = previous_at
        _failed(process, "the end-offset reader failed")
        return False
    return True


def _failed(process: StreamsProcess, why: str) -> None:
    """A WARNING the first time for this process, DEBUG after (an outage lasts rebalances)."""
    message = (
        "leader could not read changelog end offsets at assign time (%s); assigning on the "
        "previous snapshot"
    )
    if process.assign_refresh_warned:
        log.debug(message, why)
        return
    process.assign_refresh_warned = True
    log.warning(message + " (further failures are logged at DEBUG)", why)


__all__ = [
    "DEFAULT_ASSIGN_END_OFFSETS_TIMEOUT_S",
    "AssignTimeRefreshUnsupportedError",
    "check_assign_time_refresh_supported",
    "install_assign_time_refresh",
    "refresh_for_assign",
]
