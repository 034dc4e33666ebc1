"""The state model's working records: per-thread assignments and the scan of what runs now.

Kept apart from ``simulator.state`` so that module reads as the model's rules; these are the
plain records its integration loops walk (task indices, not ``TaskId``s), used by it alone.
"""

from __future__ import annotations

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
