"""The state model's working records: per-thread assignments and the scan of what runs now.

Kept apart from ``simulator.state`` so that module reads as the model's rules; these are the
plain records its integration loops walk (task indices, not ``TaskId``s), used by it alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(slots=True)
class ProcessPart:
    """One process's share of a scan: what its running threads do now. Kept until something
    happens to that process (a stop, an assignment, a crash) or one of its restoring tasks
    catches up; a change to one process of a hundred rescans that one only."""

    available: list[int]
    restoring: dict[tuple[str, int], list[int]]
    processing: list[tuple[str, int]]
    #: the stateful tasks among ``processing``, and their local stores (which follow the end)
    grow: list[int]
    follow: list[tuple[dict[int, float], int]]
    #: stateful standbys of running threads, with their local stores
    standby: list[tuple[dict[int, float], int]]


@dataclass(slots=True)
class Scan:
    """Every process's :class:`ProcessPart` joined in process order, plus what a constant-rate
    segment touches (listed once, not found anew in each of the hundreds of segments a long
    replay integrates over one assignment): tasks without a processing owner, and each growing
    changelog once."""

    available: set[int]
    restoring: dict[tuple[str, int], list[int]]
    processing: list[tuple[str, int]]
    unavailable: set[int]
    grow: list[int]
    follow: list[tuple[dict[int, float], int]]
    standby: list[tuple[dict[int, float], int]]


@dataclass(slots=True)
class ThreadTasks:
    """One stream thread of one process: its tasks (by index), and whether it runs them now."""

    active: tuple[int, ...] = ()
    standby: tuple[int, ...] = ()
    running: bool = False


def follow_standbys(
    standby: list[tuple[dict[int, float], int]],
    ends: Sequence[float | None],
    reach: float,
    trail: float,
    replayed: float,
) -> float:
    """One constant-rate segment of the standbys (``StateModel._segment``): each store moves to
    ``min(before + reach, max(before, end - trail))``; returns ``replayed`` plus what they
    replayed, summed in their order. Written as comparisons (the same floats: the builtins'
    calls were most of this loop); at or past ``end - trail`` a store stays and replays
    nothing (``reach >= 0``), one comparison in all."""
    for disk, i in standby:
        before = disk.get(i, 0.0)
        after = ends[i] - trail  # type: ignore[operator]  # stateful tasks only
        if after > before:
            reached = before + reach
            if not after < reached:
                after = reached
            replayed += after - before
        else:
            after = before
        disk[i] = after
    return replayed
