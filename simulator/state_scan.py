"""The state model's working records: per-thread assignments and the scan of what runs now.

Kept apart from ``simulator.state`` so that module reads as the model's rules; these are the
plain records its integration loops walk (task indices, not ``TaskId``s), used by it alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from protocol.ids import TaskId

#: Positions within this many records of the end count as caught up (float rounding).
EPSILON = 1e-6


@dataclass(slots=True)
class ProcessPart:
    """One process's share of a scan: what its running threads do now. Kept until something
    happens to that process (a stop, an assignment, a crash) or one of its restoring tasks
    catches up; a change to one process of a hundred rescans that one only."""

    available: list[int]
    restoring: dict[tuple[str, int], list[int]]
    #: the stateful tasks it processes, and its local store (which follows their ends)
    grow: list[int]
    disk: dict[int, float]
    #: stateful standbys of running threads, and their store (None: no standby)
    standby: list[int]
    standby_disk: dict[int, float] | None


@dataclass(slots=True)
class Scan:
    """What a constant-rate segment walks, listed once, not found anew in each of the hundreds
    of segments a long replay integrates over one assignment: every process's
    :class:`ProcessPart` in process order (walked part by part: joining them into one list at
    every change of one process cost more than a segment), the restoring tasks of all of them
    (in that order) and the tasks without a processing owner."""

    parts: list[ProcessPart]
    restoring: dict[tuple[str, int], list[int]]
    unavailable: set[int]
    #: some task has two processing owners (a violation): its changelog grows once
    twice: bool
    #: the disk version and what ``next_finish`` said of this scan then (``StateModel``'s)
    finish: tuple[int, float | None] | None = None


class Parts:
    """Every process's :class:`ProcessPart`, built again only for the processes touched since
    the last scan (``stale``), and per task how many parts process it now: the tasks at 0 (no
    processing owner) and those above 1 kept as the parts change, not counted anew per scan."""

    def __init__(self) -> None:
        self.parts: dict[str, ProcessPart] = {}
        self.stale: set[str] = set()
        self._owners: list[int] = []
        self._unowned: set[int] = set()
        self._twice: set[int] = set()

    def add_tasks(self, count: int) -> None:
        """``count`` new tasks, numbered after the known ones: nothing processes them yet."""
        self._unowned.update(range(len(self._owners), len(self._owners) + count))
        self._owners.extend([0] * count)

    def touch_all(self) -> None:
        """Every part is stale."""
        self.stale.update(self.parts)

    def scan(self, threads: Mapping[str, Mapping[int, ThreadTasks]],
             build: Callable[[str, Mapping[int, ThreadTasks]], ProcessPart]) -> Scan:
        """The scan of ``threads`` (per process, in their order), the stale parts made by
        ``build(process, its threads)``."""
        parts = self.parts
        if self.stale:
            owners, unowned, twice = self._owners, self._unowned, self._twice
            for process in self.stale:
                old = parts.pop(process, None)
                if old is not None:
                    for i in old.available:
                        owners[i] -= 1
                        if owners[i] == 0:
                            unowned.add(i)
                        elif owners[i] == 1:
                            twice.discard(i)
                tasks = threads.get(process)
                if tasks is None:
                    continue
                part = parts[process] = build(process, tasks)
                for i in part.available:
                    owners[i] += 1
                    if owners[i] == 1:
                        unowned.discard(i)
                    else:
                        twice.add(i)
            self.stale.clear()
        try:  # (in C: every process of the scan has its part)
            ordered = list(map(parts.__getitem__, threads))
        except KeyError:
            ordered = [parts.get(process) or self._late(process, threads, build)
                       for process in threads]
        restoring: dict[tuple[str, int], list[int]] = {}
        for part in ordered:
            if part.restoring:
                restoring.update(part.restoring)
        return Scan(ordered, restoring, self._unowned, bool(self._twice))

    def _late(self, process: str, threads: Mapping[str, Mapping[int, ThreadTasks]],
              build: Callable[[str, Mapping[int, ThreadTasks]], ProcessPart]) -> ProcessPart:
        """The part of a process nobody touched yet: counted in as a touched one."""
        self.stale.add(process)
        self.scan(threads, build)
        return self.parts[process]


@dataclass(slots=True)
class ThreadTasks:
    """One stream thread of one process: its tasks (by index), and whether it runs them now."""

    active: tuple[int, ...] = ()
    standby: tuple[int, ...] = ()
    running: bool = False


def follow_standbys(
    parts: list[ProcessPart],
    ends: Sequence[float | None],
    reach: float,
    trail: float,
    replayed: float,
) -> float:
    """One constant-rate segment of the standbys (``StateModel._segment``), process by process:
    each store moves to ``min(before + reach, max(before, end - trail))``; returns ``replayed``
    plus what they replayed, summed in their order. Written as comparisons (the same floats:
    the builtins' calls were most of this loop); at or past ``end - trail`` a store stays and
    replays nothing (``reach >= 0``), one comparison in all."""
    for part in parts:
        disk = part.standby_disk
        if disk is None:
            continue
        for i in part.standby:
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


def restore_needed(moves: Iterable[tuple[TaskId, str]], index: Mapping[TaskId, int],
                   ends: Sequence[float | None], disks: Mapping[str, Mapping[int, float]],
                   clean: Callable[[str], None]) -> int:
    """Records the ``(task, process)`` moves make restore: per stateful task, its end less the
    process's local position (nothing on disk: from 0), truncated, summed. What the state
    model's ``end_of`` and ``position`` answer, with one index lookup per task and ``clean``
    (the cleaner's look) once per process: at one instant a second look deletes nothing more."""
    cleaned: set[str] = set()
    restore = 0
    for task, process in moves:
        i = index.get(task)
        if i is None or (end := ends[i]) is None:
            continue
        if process not in cleaned:
            cleaned.add(process)
            clean(process)
        position = disks.get(process, {}).get(i)
        restore += int(max(0.0, end - (position or 0.0)))
    return restore


def reached_ends(restoring: Mapping[tuple[str, int], list[int]], rate: float,
                 ends: Sequence[float | None], disks: Mapping[str, Mapping[int, float]]
                 ) -> tuple[list[str], float | None]:
    """The processes (in walk order, once per thread) where a restoring task is now within
    ``epsilon`` of its end, and, when there is none, what :func:`next_finish` would answer:
    computed on the same walk, with its floats in its order (one walk of the restoring tasks
    per segment less: the state model's ``advance`` needs both after each segment)."""
    reached: list[str] = []
    best: float | None = None
    for (process, _), tasks in restoring.items():
        disk = disks.get(process, {})
        share = rate / len(tasks)
        for i in tasks:
            end = ends[i]
            if end is None or disk.get(i, -1.0) >= end - EPSILON:
                reached.append(process)
                break
            if not reached:
                need = (end - disk[i]) / share
                if best is None or need < best:
                    best = need
    return reached, best


def next_finish(restoring: Mapping[tuple[str, int], list[int]], rate: float,
                ends: Sequence[float | None], disks: Mapping[str, Mapping[int, float]]
                ) -> float | None:
    """Seconds until the first restoring task catches up: each thread's restore ``rate`` shared
    evenly by the tasks it restores (None: nothing restores)."""
    best: float | None = None
    for (process, _), tasks in restoring.items():
        share = rate / len(tasks)
        disk = disks[process]
        for i in tasks:
            end = ends[i]
            assert end is not None
            need = (end - disk[i]) / share
            if best is None or need < best:  # min(best, need), without the builtin's call
                best = need
    return best
