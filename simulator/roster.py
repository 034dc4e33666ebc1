"""Which members of a replay are running now, as the settle loop asks at every wake-up.

The loop that waits for a replay to settle wakes at every member's change of status (one
:class:`~simulator.hosting.ChangeWatch` future for all of them) and then asks who is running,
whether they are all stable, and arms the watch again. Rebuilding the running list and the
watch's set at every wake-up cost O(members) per change of any member: some 200,000 member
visits in a replay of 200 processes with a thousand wake-ups. The roster keeps both until
something it is told about happens: a member's change of status (the members' ``on_change``),
a process started, stopped or resumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from simulator.hosting import ChangeWatch, SimulatedProcess
from simulator.shim import ShimMember


class Roster:
    """The running members of ``sims`` and the watch on them (see the module docstring)."""

    def __init__(self, sims: Iterable[SimulatedProcess]) -> None:
        self._sims = list(sims)
        self._watch = ChangeWatch()
        self._version = 0
        self._live: tuple[int, list[ShimMember]] | None = None
        self._armed: tuple[list[ShimMember], list[asyncio.Future[Any]]] | None = None
        #: bumped at every change the roster hears of (a member's or a process's)
        self._changes = 0
        self._stable: tuple[int, list[ShimMember], int, frozenset[str] | None] | None = None

    def changed(self) -> None:
        """A process started, stopped or got new members: the running list is stale."""
        self._version += 1
        self._changes += 1

    def member_changed(self, member: ShimMember) -> None:
        """Every member's ``on_change``: its status or generation changed. The running list
        is stale only when the member stopped running (left, crashed, failed: statuses it never
        comes back from; a member starts running, and joins the list, through ``changed``)."""
        self._changes += 1
        if not member.running:
            self._version += 1
        self._watch.notify(member)

    def stable_ids(self, live: list[ShimMember], generation: int) -> frozenset[str] | None:
        """The member ids of ``live`` if every one of them is stable on ``generation``, else
        None; kept until the roster hears of a change. A member's ``stable``, ``generation``
        and ``member_id`` move only while it joins, and it reports (``on_change``) when it
        starts joining, when it is stable again and when a heartbeat resets it, so between two
        reports the answer stands (the settle loop asked every member at every wake-up while a
        group of 400 restored its state)."""
        cached = self._stable
        if (cached is not None and cached[0] == self._changes and cached[1] is live
                and cached[2] == generation):
            return cached[3]
        ids = (frozenset(m.member_id for m in live)
               if all(m.stable and m.generation == generation for m in live) else None)
        self._stable = (self._changes, live, generation, ids)
        return ids

    def live(self) -> list[ShimMember]:
        """The running members of the processes that are up, in process and thread order
        (the same list object until something changes)."""
        cached = self._live
        if cached is None or cached[0] != self._version:
            live = [m for sim in self._sims if sim.up for m in sim.members if m.running]
            cached = self._live = (self._version, live)
        return cached[1]

    def arm(self, live: list[ShimMember],
            create: Callable[[], asyncio.Future[Any]]) -> list[asyncio.Future[Any]]:
        """``ChangeWatch.arm(live, create)``, armed again only when ``live`` is another list or
        the future fired (arming copies the members into a set)."""
        armed = self._armed
        if armed is None or armed[0] is not live or any(f.done() for f in armed[1]):
            armed = self._armed = (live, self._watch.arm(live, create))
        return armed[1]


__all__ = ["Roster"]
