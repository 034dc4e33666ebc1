"""The application's assignment listeners of one process: checked when added, run after each
rebalance (see :meth:`~assignor.adapter.process.StreamsProcess.add_listener` for the order).

Plain listeners run inside aiokafka's synchronous ``on_assignment``; async ones are scheduled on
the event loop from there and chained per consumer, so a rebalance's async listeners start only
once the previous rebalance's have finished. A listener that raises is logged and counted in the
process's metrics (``listener_errors``); the others still run.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from assignor.adapter.metrics import MetricsRecorder
from assignor.member import MemberAssignment

if TYPE_CHECKING:
    from assignor.adapter.streams_assignor import StreamsPartitionAssignor

#: Listener failures are the process's: logged under its name, as they always were.
log = logging.getLogger("assignor.adapter.process")

#: ``listener(assignor, assignment)``: a plain function, or an ``async def`` (awaited).
AssignmentListener = Callable[
    ["StreamsPartitionAssignor", MemberAssignment], Awaitable[None] | None
]
#: How long :meth:`AssignmentListeners.cancel` waits for cancelled async listeners to unwind.
LISTENER_CANCEL_TIMEOUT_S = 5.0


class AssignmentListeners:
    """One process's listeners, in the order added, and per consumer the task running its
    latest rebalance's async listeners."""

    def __init__(self, metrics: MetricsRecorder) -> None:
        self._metrics = metrics
        self._listeners: list[tuple[AssignmentListener, bool]] = []
        #: per consumer, the task running its latest rebalance's async listeners
        self._chain: dict[int, asyncio.Task[None]] = {}

    def add(self, listener: AssignmentListener) -> None:
        """Keep ``listener``; ``TypeError`` now for anything that could never run."""
        self._listeners.append((listener, check_listener(listener)))

    def notify(self, assignor: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        """Run the plain listeners now and schedule the async ones."""
        later: list[Callable[[], Awaitable[None]]] = []
        for listener, is_async in list(self._listeners):
            if is_async:
                later.append(lambda fn=listener: fn(assignor, assignment))  # type: ignore[misc]
                continue
            try:
                result = listener(assignor, assignment)
            except Exception:
                self._metrics.add(listener_errors=1)
                log.exception("assignment listener %r failed", listener)
                continue
            if inspect.isawaitable(result):  # a plain function that returned a coroutine
                later.append(lambda awaitable=result: awaitable)  # type: ignore[misc]
        if later:
            self._schedule(assignor.index, later)

    async def wait(self, timeout_s: float) -> None:
        """Wait until the async listeners scheduled so far have finished (at most
        ``timeout_s``; ``TimeoutError`` after that, naming how many are still running)."""
        pending = [task for task in self._chain.values() if not task.done()]
        if not pending:
            return
        _, still = await asyncio.wait(pending, timeout=timeout_s)
        if still:
            raise TimeoutError(
                f"{len(still)} consumer(s)' async assignment listeners still running after "
                f"{timeout_s} s"
            )

    async def cancel(self) -> None:
        """Cancel the async listeners still running and wait a little for them to unwind."""
        running = [task for task in self._chain.values() if not task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=LISTENER_CANCEL_TIMEOUT_S)
        self._chain.clear()

    def _schedule(self, index: int, calls: list[Callable[[], Awaitable[None]]]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._metrics.add(listener_errors=len(calls))
            log.error(
                "%d async assignment listener(s) of consumer %d cannot run: on_assignment was "
                "called outside a running event loop",
                len(calls),
                index,
            )
            for call in calls:  # an already-created coroutine must not warn "never awaited"
                awaitable = call()
                if inspect.iscoroutine(awaitable):
                    awaitable.close()
            return
        previous = self._chain.get(index)
        self._chain[index] = loop.create_task(
            self._run(previous, calls), name=f"assignment-listeners-{index}"
        )

    async def _run(
        self, previous: asyncio.Task[None] | None, calls: list[Callable[[], Awaitable[None]]]
    ) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])  # its failures were logged by itself
        for call in calls:
            try:
                await call()
            except Exception:
                self._metrics.add(listener_errors=1)
                log.exception("async assignment listener failed")


def check_listener(listener: object) -> bool:
    """True for an async listener, False for a plain one; ``TypeError`` for anything else."""
    if not callable(listener):
        raise TypeError(
            f"an assignment listener must be a function listener(assignor, assignment), "
            f"plain or async def; got {type(listener).__name__} {listener!r}"
        )
    call = listener if inspect.isroutine(listener) else getattr(listener, "__call__", listener)  # noqa: B004
    if inspect.isgeneratorfunction(call) or inspect.isasyncgenfunction(call):
        raise TypeError(
            f"assignment listener {listener!r} is a generator function: its body would never "
            "run; make it a plain function or an async def"
        )
    try:
        inspect.signature(listener).bind(None, None)
    except TypeError as exc:
        raise TypeError(
            f"assignment listener {listener!r} cannot be called as listener(assignor, "
            f"assignment): {exc}"
        ) from None
    except ValueError:  # no signature to inspect (some builtins): trust the caller
        pass
    return inspect.iscoroutinefunction(call)



__all__ = [
    "LISTENER_CANCEL_TIMEOUT_S",
    "AssignmentListener",
    "AssignmentListeners",
    "check_listener",
]
