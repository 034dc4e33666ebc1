"""Heartbeat starts of one loop step share one handle (``simulator.shim.heartbeat``).

The first steps of heartbeats started before the batch's handle runs run in that handle, in
start order; a start after it opens a new batch; one first step's exception is reported as the
loop reports a handle's, and the others still run.
"""

from __future__ import annotations

import asyncio
from typing import Any

from simulator.shim import VirtualClock
from simulator.shim.heartbeat import _start_batch


class _Fake:
    """What the batch calls: ``_first``."""

    def __init__(self, name: str, ran: list[str], *, fail: bool = False) -> None:
        self.name, self.ran, self.fail = name, ran, fail

    def _first(self) -> None:
        self.ran.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} failed")


def test_starts_before_the_batch_runs_share_its_handle_and_run_in_start_order() -> None:
    ran: list[str] = []
    reported: list[dict[str, Any]] = []
    with VirtualClock(seed=1) as clock:
        async def story() -> None:
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(lambda _, context: reported.append(context))
            first = _start_batch(loop, _Fake("a", ran))  # type: ignore[arg-type]
            loop.call_soon(ran.append, "between")  # queued after the batch's handle
            assert _start_batch(loop, _Fake("b", ran, fail=True)) is first  # type: ignore[arg-type]
            assert _start_batch(loop, _Fake("c", ran)) is first  # type: ignore[arg-type]
            await asyncio.sleep(0)
            assert ran == ["a", "b", "c", "between"]
            later = _start_batch(loop, _Fake("d", ran))  # type: ignore[arg-type]
            assert later is not first
            await asyncio.sleep(0)
            assert ran == ["a", "b", "c", "between", "d"]
        clock.run(story())
    assert [str(context["exception"]) for context in reported] == ["b failed"]
