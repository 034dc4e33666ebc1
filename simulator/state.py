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
- a crash keeps the disk (the next incarnation restores from there) unless it is wiped;
- a running process deletes the state of a task it has not held for ``state.cleanup.delay.ms``,
  as Kafka Streams' state directory cleaner does (``simulator.state_cleaner``).

A task is *available* while some running thread has it as a processing active task; every second
it is not counts toward its unavailability (task-seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from functools import partial
from operator import attrgetter, is_not
from types import MappingProxyType
from typing import TypeGuard, cast

from protocol.ids import TaskId, TopicPartition
from simulator import state_scan
from simulator.end_offsets import ChangelogPlan, EndOffsetsSnapshot, split_ends
from simulator.scenarios import StateDynamics
from simulator.state_cleaner import StateCleaner
from simulator.state_scan import Parts, ProcessPart, Scan, ThreadTasks, follow_standbys

#: Positions within this many records of the end count as caught up (``state_scan``).
_EPSILON = state_scan.EPSILON
#: the cleaner's due time of a process that is not running
_NEVER = float("inf")
#: an unnamed ``TaskId``'s kept (subtopology, partition) rank (AttributeError for others)
_RANK = attrgetter("_rank")
#: the collections assignments come in (a ``Collection`` ABC check costs a microsecond; ours
#: hands its tasks as dicts, task -> partitions: two ABC checks per thread per rebalance)
_COLLECTIONS = (dict, frozenset, set, list, tuple)
#: ``i is not None``, in C: a filter for looked-up indices (0 is an index)
_KNOWN = cast(Callable[[int | None], TypeGuard[int]], partial(is_not, None))


class StateModel:
    """Local state of every process and the changelog of every task (see the module docstring).

    Tasks are numbered internally: ``TaskId`` hashing is a pydantic-model hash, and the
    integration loops run over every task at every step of a long run.
    """

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
        self._index: dict[TaskId, int] = {}
        #: ``_index`` of the unnamed tasks, by their ``TaskId`` int rank
        self._rank_index: dict[int, int] = {}
        #: changelog end per task, records (None: stateless)
        self._end: list[float | None] = []
        #: local position per process per task index, records (absent: nothing on disk)
        self._disk: dict[str, dict[int, float]] = {}
        self._threads: dict[str, dict[int, ThreadTasks]] = {}
        self._unavailable: list[float] = []
        #: the current scan (None: something changed) and the per-process parts it walks
        self._scanned: Scan | None = None
        self._parts = Parts()
        #: bumped when some disk position may have changed; ``offset_sums`` is cached against it
        #: (every thread of a process reports the same sums at one instant, each rebalance)
        self._disk_version = 0
        self._sums: dict[str, tuple[int, dict[TaskId, int]]] = {}
        #: bumped whenever a changelog end may have moved; ``_at_end`` is cached against it
        self._ends_moved = 0
        self._positions: tuple[Collection[TaskId], tuple[int, int], dict[int, float]] | None = None
        self._changelogs: tuple[tuple[int, int], Mapping[TaskId, tuple[TopicPartition, ...]],
                                ChangelogPlan] | None = None
        #: processes still on the disk they started with (``"settled"``): their threads not
        #: yet assigned, and the task indices those assignments kept
        self._settling: dict[str, tuple[set[int], set[int]]] = {}
        #: records restored by active tasks (standby catch-up is counted apart)
        self.restored = 0.0
        self.standby_replayed = 0.0
        self._cleaner = StateCleaner(dynamics.state_cleanup_delay_ms / 1000)
        self.add_tasks(tasks, stateful, initial_records=dynamics.initial_records)

    # -- views by task id (built on demand: for rows and tests, not for the hot loops) --------
    @property
    def stateful(self) -> set[TaskId]:
        return {self.tasks[i] for i, end in enumerate(self._end) if end is not None}

    @property
    def end(self) -> dict[TaskId, float]:
        """Changelog end per stateful task, records."""
        return {self.tasks[i]: end for i, end in enumerate(self._end) if end is not None}

    @property
    def disk(self) -> dict[str, dict[TaskId, float]]:
        """Local position per process per task, records."""
        ids = self.tasks
        for process in self._disk:
            self._clean(process)
        return {p: {ids[i]: x for i, x in d.items()} for p, d in self._disk.items()}

    @property
    def unavailable_s(self) -> dict[TaskId, float]:
        """Seconds each task spent without a processing active owner."""
        return dict(zip(self.tasks, self._unavailable, strict=True))

    # -- what the replay tells it -------------------------------------------------------------
    def add_tasks(
        self, tasks: Iterable[TaskId], stateful: Iterable[TaskId], *, initial_records: float = 0.0
    ) -> None:
        """New tasks (at start, or after partitions were added) with changelogs of that size."""
        self._ends_moved += 1
        self._parts.touch_all()
        self._scanned = None
        stateful_set = set(stateful)
        known = len(self.tasks)
        for task in tasks:
            if task in self._index:
                continue
            self._index[task] = len(self.tasks)
            rank = getattr(task, "_rank", None)  # unnamed tasks keep one (``_indices``)
            if rank is not None:
                self._rank_index[rank] = len(self.tasks)
            self.tasks.append(task)
            self._unavailable.append(0.0)
            self._end.append(float(initial_records) if task in stateful_set else None)
        self._parts.add_tasks(len(self.tasks) - known)

    def _indices(self, tasks: Iterable[TaskId]) -> tuple[int, ...]:
        """The known ``tasks``' indices, sorted, for every thread's assignment: unnamed tasks by
        their kept int rank (hashed in C), others by the ``TaskId`` (a Python ``__hash__``).
        A thread holds a task or two: one list, filtered only if some task is unknown."""
        if type(tasks) not in _COLLECTIONS and not isinstance(tasks, Collection):
            tasks = list(tasks)  # read twice if a task keeps no rank (an ABC check: 1 us)
        try:
            found = [*map(self._rank_index.get, map(_RANK, tasks))]
        except AttributeError:
            found = [*map(self._index.get, tasks)]
        if None in found:
            found = [*filter(_KNOWN, found)]
        found.sort()  # (no None left)
        return tuple(found)  # type: ignore[arg-type]

    def add_process(self, process: str, behind: Mapping[TaskId, float] | None = None, *,
                    at_end: Collection[TaskId] = (), settle_threads: int = 0) -> None:
        """A process's disk: ``behind`` maps tasks to how far their local state trails the end;
        ``at_end`` names tasks whose local state is at the end (0 behind; pass the same
        collection for every process: its task indices are looked up once, not per process).

        ``settle_threads``: the process starts *settled*, as in a group that has run under its
        assignor for a while: it holds ``behind`` until each of its threads has had a first
        assignment, and then only what those assignments kept (Kafka Streams cleans up the
        state of tasks a process no longer runs). So each assignor starts from its own steady
        state: the high-availability assignor sees every client caught up and places its
        balanced assignment at once, and a sticky one keeps what it would have kept.
        """
        self._touch(process)
        if settle_threads:
            self._settling[process] = (set(range(settle_threads)), set())
        self._disk_version += 1
        disk = self._disk.setdefault(process, {})
        disk.update(self._at_end(at_end))  # processes x tasks entries at a settled start
        index, ends = self._index, self._end
        for task, lag in (behind or {}).items():
            known = index.get(task)
            if known is not None and (end := ends[known]) is not None:
                disk[known] = max(0.0, end - lag)
        self._threads.setdefault(process, {})
        self._cleaner.release(process, disk, self.now)  # until a thread holds them

    def _at_end(self, tasks: Collection[TaskId]) -> dict[int, float]:
        """Local positions at the end of each of the known stateful ``tasks``, in their order;
        kept for the same collection while no changelog end moves (every process of a group
        that starts caught up holds the same positions)."""
        key = (len(self.tasks), self._ends_moved)
        cached = self._positions
        if cached is None or cached[0] is not tasks or cached[1] != key:
            index, ends = self._index, self._end
            positions: dict[int, float] = {}
            for task in tasks:
                i = index.get(task)
                if i is not None and (end := ends[i]) is not None:
                    positions[i] = max(0.0, end)
            cached = self._positions = (tasks, key, positions)
        return cached[2]

    def stop(self, process: str, thread: int | None = None) -> None:
        """The thread (every thread if ``None``) stops processing: a rebalance began for it."""
        self._cleaner.start(process, self.now)
        stopped = False
        for index, state in self._threads.get(process, {}).items():
            if state.running and (thread is None or index == thread):
                state.running = False
                stopped = True
        # A part lists what running threads do: with none stopped here it stays as built (a
        # cold start's first join of each process rebuilt an empty part: 200 of its 912)
        if stopped:
            self._parts.stale.add(process)  # ``_touch``, inline: each member's join
            self._scanned = None

    def assign(
        self, process: str, thread: int, active: Iterable[TaskId], standby: Iterable[TaskId]
    ) -> None:
        """The thread got its assignment and runs it from now on."""
        self._parts.stale.add(process)  # ``_touch``, inline
        self._scanned = None
        self._disk_version += 1
        actives, standbys = self._indices(active), self._indices(standby)
        threads = self._threads.setdefault(process, {})
        now, cleaner = self.now, self._cleaner
        cleaner.start(process, now)
        # a returning task restores from what the cleaner left (``_clean``'s test first)
        if now >= cleaner.due.get(process, _NEVER):
            self._clean(process)
        cleaner.reassign(process, threads.get(thread), actives, standbys, threads,
                         self._disk.get(process, {}), now)
        threads[thread] = ThreadTasks(actives, standbys, True)
        disk = self._disk.setdefault(process, {})
        ends = self._end
        for i in actives:
            if ends[i] is not None:
                disk.setdefault(i, 0.0)
        for i in standbys:
            if ends[i] is not None:
                disk.setdefault(i, 0.0)
        settling = self._settling.get(process)
        if settling is not None:
            threads_left, kept = settling
            threads_left.discard(thread)
            kept.update(actives, standbys)
            if not threads_left:
                del self._settling[process]
                self._disk[process] = {i: x for i, x in disk.items() if i in kept}

    def _clean(self, process: str) -> None:
        """Apply the cleaner's runs up to now to the process's disk (see ``state_cleaner``)."""
        if self.now < self._cleaner.due.get(process, _NEVER):
            return  # (most calls: no run has come since the last look)
        disk = self._disk.get(process)
        if disk is not None and self._cleaner.clean(process, disk, self.now):
            self._touch(process)
            self._disk_version += 1

    def crash(self, process: str, *, wipe: bool = False) -> None:
        """The process is gone: its threads and their tasks vanish; its disk stays unless wiped
        (and its cleaner stops: it deleted what it had deleted by now)."""
        self._touch(process)
        self._clean(process)
        self._disk_version += 1
        self._threads[process] = {}
        self._settling.pop(process, None)
        self._cleaner.release(process, self._disk.get(process, {}), self.now)
        self._cleaner.stop(process)
        if wipe:
            self._disk[process] = {}
            self._cleaner.forget(process)

    def _touch(self, process: str) -> None:
        """Something happened to ``process``: its part of the scan is stale."""
        self._parts.stale.add(process)
        self._scanned = None

    # -- what the process reports, what the leader reads --------------------------------------
    def offset_sums(self, process: str) -> Mapping[TaskId, int]:
        """The ``state()`` provider of a process: its local position per task on disk, built
        once per process and disk change and handed out read-only (the adapter copies what it
        keeps; a fresh dict per consumer's join cost a copy per member per rebalance)."""
        self._clean(process)
        cached = self._sums.get(process)
        if cached is None or cached[0] != self._disk_version:
            disk = self._disk.get(process, {})  # (rebuilt each rebalance: built in C)
            keys = map(self.tasks.__getitem__, disk)
            sums = dict(zip(keys, map(int, disk.values()), strict=True))
            cached = self._sums[process] = (self._disk_version, sums)
        return MappingProxyType(cached[1])

    def position(self, process: str, task: TaskId) -> float | None:
        """Where ``process``'s local state of ``task`` is (None: nothing on disk)."""
        i = self._index.get(task)
        self._clean(process)
        return None if i is None else self._disk.get(process, {}).get(i)

    def restore_needed(self, moves: Iterable[tuple[TaskId, str]]) -> int:
        """Records the ``(task, process)`` moves make restore (``state_scan.restore_needed``)."""
        return state_scan.restore_needed(moves, self._index, self._end, self._disk, self._clean)

    def end_of(self, task: TaskId) -> float | None:
        """The end of ``task``'s changelog (None: stateless or unknown)."""
        i = self._index.get(task)
        return None if i is None else self._end[i]

    def end_offsets(
        self, changelogs: Mapping[TaskId, tuple[TopicPartition, ...]]
    ) -> dict[TopicPartition, int]:
        """Changelog end offsets per partition, the task's end split so the sums match."""
        return split_ends(self._changelog_plan(changelogs), self._end)

    def end_offsets_snapshot(
        self, changelogs: Mapping[TaskId, tuple[TopicPartition, ...]]
    ) -> EndOffsetsSnapshot:
        """:meth:`end_offsets` now, built when first read (``simulator.end_offsets``)."""
        return EndOffsetsSnapshot(self._changelog_plan(changelogs), list(self._end))

    def _changelog_plan(
        self, changelogs: Mapping[TaskId, tuple[TopicPartition, ...]]
    ) -> ChangelogPlan:
        """``changelogs`` as (task index or -1, first partition, the others), in its order,
        kept while the mapping and the task list stay the same: the leader's end offsets are
        read at every rebalance instant, and a ``TaskId`` lookup is a Python-level hash."""
        key = (id(changelogs), len(self.tasks))
        cached = self._changelogs
        if cached is not None and cached[0] == key and cached[1] is changelogs:
            return cached[2]
        index = self._index
        plan = [(index.get(task, -1), partitions[0], tuple(partitions[1:]))
                for task, partitions in changelogs.items() if partitions]
        self._changelogs = (key, changelogs, plan)
        return plan

    # -- questions ----------------------------------------------------------------------------
    def _caught_up(self, process: str, i: int) -> bool:
        end = self._end[i]
        return end is None or self._disk[process].get(i, -1.0) >= end - _EPSILON

    def caught_up(self, process: str, task: TaskId) -> bool:
        i = self._index[task]
        self._clean(process)
        return self._end[i] is None or (process in self._disk and self._caught_up(process, i))

    def owners(self) -> dict[TaskId, list[tuple[str, int]]]:
        """Running (process, thread) pairs per active task."""
        owners: dict[TaskId, list[tuple[str, int]]] = {}
        for process, threads in self._threads.items():
            for index, state in threads.items():
                if state.running:
                    for i in state.active:
                        owners.setdefault(self.tasks[i], []).append((process, index))
        return owners

    def _scan(self) -> Scan:
        """Every process's part in process order, the tasks restoring per running thread and
        those without a processing owner; cached until the next change. Only the parts of the
        processes touched since the last scan are built again (see :class:`ProcessPart`)."""
        scan = self._scanned
        if scan is not None:
            return scan
        scan = self._scanned = self._parts.scan(self._threads, self._part)
        return scan

    def _part(self, process: str, threads: Mapping[int, ThreadTasks]) -> ProcessPart:
        disk = self._disk.get(process)
        local = disk if disk is not None else {}
        part = ProcessPart([], {}, [], local, [], None)  # filled through locals: 900 a cold start
        available, restoring, grow, standby = (part.available, part.restoring, part.grow,
                                               part.standby)
        ends = self._end
        for index, state in threads.items():
            if not state.running:
                continue
            behind: list[int] = []  # (its key added once, in the same order)
            for i in state.active:
                end = ends[i]
                if end is None:
                    available.append(i)
                elif local.get(i, -1.0) >= end - _EPSILON:
                    available.append(i)
                    grow.append(i)
                else:
                    behind.append(i)
            if behind:
                restoring[(process, index)] = behind
            if state.standby:
                part.standby_disk = self._disk[process]
                for i in state.standby:
                    if ends[i] is not None:
                        standby.append(i)
        return part

    def available(self) -> set[TaskId]:
        """Tasks with a processing active owner right now."""
        unowned = self._scan().unavailable
        return {task for i, task in enumerate(self.tasks) if i not in unowned}

    def all_available(self) -> bool:
        return not self._scan().unavailable

    def owned_caught_up(self) -> bool:
        """Every task some running thread owns is processed: nothing is left restoring. (A task
        nobody owns is the assignor's failure, recorded as a violation, not something to wait
        for.)"""
        return not self._scan().restoring

    def restoring(self) -> dict[tuple[str, int], list[TaskId]]:
        """Active tasks behind their changelog's end, per running thread."""
        return {k: [self.tasks[i] for i in v] for k, v in self._scan().restoring.items()}

    def next_change_in(self) -> float | None:
        """Seconds until the next restoring task catches up (None: nothing is restoring)."""
        return self._finish_of(self._scan())

    def _finish_of(self, scan: Scan) -> float | None:
        """``state_scan.next_finish`` of the scan, kept on it while every disk stays the same
        (the settle loop asks after an advance, the next advance again first: two passes a
        wake-up; kept on the scan, not here, so that no older scan outlives its turn)."""
        kept = scan.finish
        if kept is not None and kept[0] == self._disk_version:
            return kept[1]
        finish = state_scan.next_finish(scan.restoring, self.dynamics.restore_rate, self._end,
                                        self._disk)
        scan.finish = (self._disk_version, finish)
        return finish

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
            scan = self._scan()
            finish = self._finish_of(scan)
            step = remaining if finish is None else min(remaining, max(finish, 0.0))
            self._segment(step, scan)
            self._disk_version += 1
            # only a restoring task at its end changes its part; if none, the finish comes along
            reached, finish = state_scan.reached_ends(scan.restoring, self.dynamics.restore_rate,
                                                      self._end, self._disk)
            for process in reached:
                self._touch(process)
            if not reached:
                scan.finish = (self._disk_version, finish)
            self.now = now if step == remaining else self.now + step
        self.now = max(self.now, now)

    def _segment(self, step: float, scan: Scan) -> None:
        dynamics = self.dynamics
        unavailable = self._unavailable
        for i in scan.unavailable:
            unavailable[i] += step
        ends = self._end
        restored = self.restored
        for (process, _), tasks in scan.restoring.items():
            share = dynamics.restore_rate / len(tasks) * step
            disk = self._disk[process]
            for i in tasks:
                end = ends[i]
                assert end is not None
                gained = end - disk[i]
                if not gained < share:  # min(share, gained), without the builtin's call
                    gained = share
                disk[i] += gained
                restored += gained
        self.restored = restored
        written = dynamics.write_rate * step
        self._ends_moved += 1
        parts = scan.parts
        if not scan.twice:  # each processed task once: its end and its store move together
            for part in parts:
                disk = part.disk
                for i in part.grow:
                    disk[i] = ends[i] = ends[i] + written  # type: ignore[operator]
        else:  # a task processed twice (a violation) grows once, and both its stores follow
            for i in dict.fromkeys(i for part in parts for i in part.grow):
                ends[i] += written  # type: ignore[operator]  # stateful tasks only
            for part in parts:
                disk = part.disk
                for i in part.grow:
                    disk[i] = ends[i]  # type: ignore[assignment]
        reach, trail = dynamics.restore_rate * step, dynamics.standby_trail
        self.standby_replayed = follow_standbys(parts, ends, reach, trail,
                                                self.standby_replayed)


__all__ = ["StateModel"]
