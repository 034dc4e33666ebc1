"""The virtual loop's ``get_debug()`` answers as asyncio's does, through ``set_debug`` too.

While debug mode is off the loop answers ``get_debug()`` with a C callable (every ``Future`` and
``Task`` asks it from C); switching debug mode on must reach asyncio all the same: futures built
then record where they were made, as asyncio's debug mode does, and switching it off again stops
that.
"""

from __future__ import annotations

import asyncio

from simulator.shim import VirtualClock


def test_get_debug_follows_set_debug_and_reaches_new_futures() -> None:
    with VirtualClock(0) as clock:
        loop = clock.loop
        assert loop.get_debug() is False
        seen: list[bool] = []

        async def main() -> None:
            seen.append(bool(getattr(clock.create_future(), "_source_traceback", None)))
            loop.set_debug(True)
            seen.append(bool(getattr(clock.create_future(), "_source_traceback", None)))
            loop.set_debug(False)
            seen.append(bool(getattr(clock.create_future(), "_source_traceback", None)))

        clock.run(main())
        assert seen == [False, True, False]
        assert loop.get_debug() is False


def test_a_loop_made_in_debug_mode_answers_true() -> None:
    with VirtualClock(0) as clock:
        loop = clock.loop
        loop.set_debug(True)
        assert loop.get_debug() is True
        task_debug: list[bool] = []

        async def main() -> None:
            task = asyncio.ensure_future(asyncio.sleep(0))
            task_debug.append(bool(getattr(task, "_source_traceback", None)))
            await task

        clock.run(main())
        assert task_debug == [True]
