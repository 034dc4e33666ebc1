"""Simulated local state: what each process holds on disk per task, over virtual time.

Kafka Streams' cost of a rebalance is mostly state: a task that lands on a process without its
state processes nothing until it has restored its changelog. This model keeps, per process, the
changelog position of each task's local store (in records, summed over the task's changelog
partitions, which is what a subscription's offset sum is), and per stateful task the end of its
changelog. Everything is piecewise linear in virtual time and pure: the replay tells it what
happened (a thread stopped for a rebalance, a thread got its tasks, a process crashed or lost its
disk) and asks it to :meth:`StateModel.advance` to a time.

The rules, with the scenario's :class:`~simulator.scenarios.StateDynamics`:

- an active task whose local state is at the changelog's end is *processing*: it writes
  ``write_rate`` records per second to its changelog and its local state stays at the end;
- an active task behind the end is *restoring*: it writes nothing, and its thread restores at
  ``restore_rate`` records per second, shared equally by the tasks that thread restores;
- a standby (or warm-up) replica follows the changelog at up to ``restore_rate`` per second and
  stays at best ``standby_trail`` records behind the end;
- nothing happens on a thread that is not running: eager rebalancing stops every task of a member
  from the moment it rejoins until it has its new assignment, and a crashed or paused process does
  nothing at all;
- a crash keeps the disk (the next incarnation restores from there) unless it is wiped.

A task is *available* while some running thread has it as a processing active task; every second
it is not counts toward its unavailability (task-seconds).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocol.ids import TaskId, TopicPartition
from simulator.scenarios import StateDynamics

#: Positions within this many records of the end count as caught up (float rounding).
_EPSILON = 1e-6


@dataclass(slots=True)
class _Thread:
    """One stream thread of one process: its tasks, and whether it runs them right now."""

    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()
    running: bool = False


class StateModel:
    """Local state of every process and the changelog of every task (see the module docstring)."""

    def __init__(
        self,
        dynamics: StateDynamics,
        tasks: Iterable[TaskId],
        stateful: Iterable[TaskId],
        *,
        now: float = 0.0,
    ) -> None:
        self.dynamics = dynamics
        self.now = now
        self.tasks: list[TaskId] = []
        self.stateful: set[TaskId] = set()
        #: changelog end per stateful task, records
        self.end: dict[TaskId, float] = {}
        #: local position per process per task, records (absent: nothing on disk)
        self.disk: dict[str, dict[TaskId, float]] = {}
        self._threads: dict[str, dict[int, _Thread]] = {}
        #: seconds each task spent without a processing active owner
        self.unavailable_s: dict[TaskId, float] = {}
        #: records restored by active tasks (standby catch-up is counted apart)
        self.restored = 0.0
        self.standby_replayed = 0.0
        self.add_tasks(tasks, stateful, initial_records=dynamics.initial_records)

    # -- what the replay tells it -------------------------------------------------------------
    def add_tasks(
        self, tasks: Iterable[TaskId], stateful: Iterable[TaskId], *, initial_records: float = 0.0
    ) -> None:
        """New tasks (at start, or after partitions were added) with changelogs of that size."""
        stateful_set = set(stateful)
        for task in tasks:
            if task in self.unavailable_s:
                continue
            self.tasks.append(task)
            self.unavailable_s[task] = 0.0
            if task in stateful_set:
                self.stateful.add(task)
                self.end[task] = float(initial_records)

    def add_process(self, process: str, behind: Mapping[TaskId, float] | None = None) -> None:
        """A process's disk: ``behind`` maps tasks to how far their local state trails the end."""
        disk = self.disk.setdefault(process, {})
        for task, lag in (behind or {}).items():
            if task in self.end:
                disk[task] = max(0.0, self.end[task] - lag)
        self._threads.setdefault(process, {})

    def stop(self, process: str, thread: int | None = None) -> None:
        """The thread (every thread if ``None``) stops processing: a rebalance began for it."""
        for index, state in self._threads.get(process, {}).items():
            if thread is None or index == thread:
                state.running = False

    def assign(
        self, process: str, thread: int, active: Iterable[TaskId], standby: Iterable[TaskId]
    ) -> None:
        """The thread got its assignment and runs it from now on."""
        self.disk.setdefault(process, {})
        threads = self._threads.setdefault(process, {})
        threads[thread] = _Thread(frozenset(active), frozenset(standby), True)
        disk = self.disk[process]
        for task in (*active, *standby):
            if task in self.end:
                disk.setdefault(task, 0.0)

    def crash(self, process: str, *, wipe: bool = False) -> None:
        """The process is gone: its threads and their tasks vanish; its disk stays unless wiped."""
        self._threads[process] = {}
        if wipe:
            self.disk[process] = {}

    def wipe(self, process: str) -> None:
        self.disk[process] = {}

    # -- what the process reports, what the leader reads --------------------------------------
    def offset_sums(self, process: str) -> dict[TaskId, int]:
        """The ``state()`` provider of a process: its local position per task on disk."""
        return {task: int(position) for task, position in self.disk.get(process, {}).items()}

    def end_offsets(
        self, changelogs: Mapping[TaskId, tuple[TopicPartition, ...]]
    ) -> dict[TopicPartition, int]:
        """Changelog end offsets per partition, the task's end split so the sums match."""
        offsets: dict[TopicPartition, int] = {}
        for task, partitions in changelogs.items():
            if not partitions:
                continue
            total = int(self.end.get(task, 0.0))
            share, rest = divmod(total, len(partitions))
            for index, tp in enumerate(partitions):
                offsets[tp] = share + (rest if index == 0 else 0)
        return offsets

    # -- questions ----------------------------------------------------------------------------
    def owners(self) -> dict[TaskId, list[tuple[str, int]]]:
        """Running (process, thread) pairs per active task."""
        owners: dict[TaskId, list[tuple[str, int]]] = {}
        for process, threads in self._threads.items():
            for index, state in threads.items():
                if state.running:
                    for task in state.active:
                        owners.setdefault(task, []).append((process, index))
        return owners

    def caught_up(self, process: str, task: TaskId) -> bool:
        if task not in self.end:
            return True
        return self.disk.get(process, {}).get(task, -1.0) >= self.end[task] - _EPSILON

    def available(self) -> set[TaskId]:
        """Tasks with a processing active owner right now."""
        return {
            task
            for task, owners in self.owners().items()
            if any(self.caught_up(process, task) for process, _ in owners)
        }

    def all_available(self) -> bool:
        return len(self.available()) == len(self.tasks)

    def owned_caught_up(self) -> bool:
        """Every task some running thread owns is processed: nothing is left restoring. (A task
        nobody owns is the assignor's failure, recorded as a violation, not something to wait
        for.)"""
        return not self.restoring()

    def restoring(self) -> dict[tuple[str, int], list[TaskId]]:
        """Active tasks behind their changelog's end, per running thread."""
        result: dict[tuple[str, int], list[TaskId]] = {}
        for process, threads in self._threads.items():
            for index, state in threads.items():
                if state.running:
                    behind = [t for t in sorted(state.active) if not self.caught_up(process, t)]
                    if behind:
                        result[(process, index)] = behind
        return result

    def next_change_in(self) -> float | None:
        """Seconds until the next restoring task catches up (None: nothing is restoring)."""
        rate = self.dynamics.restore_rate
        best: float | None = None
        for (process, _), tasks in self.restoring().items():
            share = rate / len(tasks)
            for task in tasks:
                need = (self.end[task] - self.disk[process][task]) / share
                best = need if best is None else min(best, need)
        return best

    # -- time ---------------------------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Integrate from the last time to ``now``, one constant-rate segment at a time.

        A segment ends at ``now`` or when a restoring task catches up (which changes the rates),
        so the loop runs at most once per task plus once.
        """
        for _ in range(len(self.tasks) + 2):
            remaining = now - self.now
            if remaining <= 0:
                return
            finish = self.next_change_in()
            step = remaining if finish is None else min(remaining, max(finish, 0.0))
            self._segment(step)
            self.now = now if step == remaining else self.now + step
        self.now = max(self.now, now)

    def _segment(self, step: float) -> None:
        dynamics = self.dynamics
        restoring = self.restoring()
        available = self.available()
        for task in self.tasks:
            if task not in available:
                self.unavailable_s[task] += step
        for (process, _), tasks in restoring.items():
            share = dynamics.restore_rate / len(tasks) * step
            disk = self.disk[process]
            for task in tasks:
                gained = min(share, self.end[task] - disk[task])
                disk[task] += gained
                self.restored += gained
        written = dynamics.write_rate * step
        processing = {
            (process, task)
            for task, owners in self.owners().items()
            for process, _ in owners
            if task in self.end and task in available and self.caught_up(process, task)
        }
        grown = {task for _, task in processing}
        for task in grown:
            self.end[task] += written
        for process, task in processing:
            self.disk[process][task] = self.end[task]
        for process, threads in self._threads.items():
            disk = self.disk[process]
            for state in threads.values():
                if not state.running:
                    continue
                for task in state.standby:
                    if task not in self.end:
                        continue
                    before = disk.get(task, 0.0)
                    target = max(before, self.end[task] - dynamics.standby_trail)
                    after = min(before + dynamics.restore_rate * step, target)
                    disk[task] = after
                    self.standby_replayed += after - before


__all__ = ["StateModel"]
