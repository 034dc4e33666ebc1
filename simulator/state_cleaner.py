"""Kafka Streams' state directory cleaner, for the simulated disks of ``simulator.state``.

A Kafka Streams instance deletes the directory of a task it no longer runs: ``KafkaStreams``
schedules ``StateDirectory.cleanRemovedTasks`` every ``state.cleanup.delay.ms`` (default
600,000 ms), the first run one delay after the instance starts, and each run deletes every task
directory no stream thread holds (it can take the directory's lock) whose last modification is
more than one delay old. Without it a simulated process kept the state of every task it ever
held, reported an offset sum for each at every join (up to every task of the group after a few
rolling events) and restored a returning task from a position Kafka would have deleted.

The model here, per process:

- the cleaner starts with the incarnation: at the first thing the state model hears of it after
  it was added or crashed (its first join's rebalance: a few virtual seconds after Kafka's
  ``start()``, the same for every assignor), and stops when it crashes;
- a directory is *released* (last modified) when the last thread of the process that held the
  task (active, standby or warm-up) got an assignment without it, or when the process crashed
  (a stopped instance writes its checkpoints last); directories on disk when the process was
  added count as released then;
- at runs ``start + k * delay`` (k >= 1) every released directory with ``run > released +
  delay`` is deleted (Kafka's ``now > lastModified + delay``).

Deletion is applied lazily, before anything reads the disk (the offset sums a member reports,
an assignment's starting position, a crash): the runs are at known times, so deleting at the
next read is the same as deleting at the run. Tasks a process holds are never released, so the
integration loops, which walk held tasks only, need not ask.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from simulator.state_scan import ThreadTasks


class StateCleaner:
    """Released task directories per process and when each process's cleaner runs."""

    __slots__ = ("_released", "_start", "delay_s", "due")

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        #: process -> virtual time its cleaner started (absent: the process is not running)
        self._start: dict[str, float] = {}
        #: process -> task index -> when its directory was last released
        self._released: dict[str, dict[int, float]] = {}
        #: process -> the earliest time a run may delete something: ``-inf`` to be computed,
        #: ``inf`` never (absent: the process is not running); read before calling ``clean``
        self.due: dict[str, float] = {}

    def start(self, process: str, now: float) -> None:
        """The process runs: its cleaner starts now unless it already runs."""
        if process not in self._start:
            self._start[process] = now
            self.due[process] = -math.inf

    def stop(self, process: str) -> None:
        """The process crashed or stopped: no cleaner runs until it starts again."""
        self._start.pop(process, None)
        self.due.pop(process, None)

    def release(self, process: str, indices: Iterable[int], now: float) -> None:
        """The process no longer holds these tasks' directories (kept: an earlier release)."""
        released = self._released.get(process)
        if not released:  # (a settled start releases every task of the group: one C pass)
            self._released[process] = dict.fromkeys(indices, now)
        else:
            for i in indices:
                released.setdefault(i, now)
        self._recompute(process)

    def hold(self, process: str, indices: tuple[int, ...]) -> None:
        """Some thread of the process holds these tasks (their directories are locked)."""
        released = self._released.get(process)
        if released:
            for i in indices:
                released.pop(i, None)
            self._recompute(process)

    def reassign(self, process: str, before: ThreadTasks | None, actives: tuple[int, ...],
                 standbys: tuple[int, ...], threads: Mapping[int, ThreadTasks],
                 disk: Mapping[int, float], now: float) -> None:
        """A thread that held ``before`` now holds ``actives`` and ``standbys``: a task it let
        go of is released once no other thread of the process (``threads``) holds it."""
        if before is not None and before.active == actives and before.standby == standbys:
            return  # (most threads of a probing round: held already, nothing let go)
        released = self._released.get(process)
        if released:  # ``hold`` of both, in one (a thread's first assignment: nothing released)
            for i in actives:
                released.pop(i, None)
            for i in standbys:
                released.pop(i, None)
            self._recompute(process)
        if before is None:
            return
        dropped = set(before.active).union(before.standby).difference(actives, standbys)
        if dropped:
            for other in threads.values():
                if other is not before:
                    dropped.difference_update(other.active, other.standby)
            self.release(process, [i for i in sorted(dropped) if i in disk], now)

    def forget(self, process: str) -> None:
        """The process's disk is gone (wiped): nothing left to release."""
        self._released.pop(process, None)
        self._recompute(process)

    def _recompute(self, process: str) -> None:
        """Released directories changed: the next ``clean`` computes when a run is due."""
        if process in self.due:
            self.due[process] = -math.inf

    def clean(self, process: str, disk: dict[int, float], now: float) -> bool:
        """Delete from ``disk`` what the runs up to ``now`` deleted; whether anything went."""
        start = self._start.get(process)
        if start is None or now < self.due[process]:
            return False
        delay = self.delay_s
        runs = math.floor((now - start) / delay)
        if runs < 1:  # no run yet, so nothing deleted: look again at the first run
            # (a settled start's 512 released directories were walked here at every
            # assignment of the first ten minutes: 9 ms a 100-process rolling restart)
            self.due[process] = start + delay - 1e-9
            return False
        released = self._released.get(process)
        deleted = False
        if released:
            last_run = start + runs * delay
            gone = [i for i, at in released.items() if last_run > at + delay]
            for i in gone:
                del released[i]
                if disk.pop(i, None) is not None:
                    deleted = True
            # trimmed by other means (a settled start keeps only what its first assignment
            # held: some 500 of 512 released directories go at once); kept in C set passes,
            # the dict's order is never read (runs, deletions and the next run are order-free)
            kept = released.keys() & disk.keys()
            if len(kept) < len(released):
                self._released[process] = released = {i: released[i] for i in kept}
        self.due[process] = self._next_run(start, released)
        return deleted

    def _next_run(self, start: float, released: dict[int, float] | None) -> float:
        """The first run after which some released directory is more than a delay old."""
        if not released:
            return math.inf
        delay = self.delay_s
        oldest = min(released.values())
        runs = max(1, math.floor((oldest + delay - start) / delay) + 1)
        return start + runs * delay - 1e-9  # (early by a rounding's width: ``clean`` decides)


__all__ = ["StateCleaner"]
