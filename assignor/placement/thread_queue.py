"""The queues of tasks-to-threads' stateful passes (:mod:`assignor.placement.threads`).

Kept apart from the pass itself: the pass decides which thread takes which task, these say in
which order Kafka's ``PriorityQueue`` would hand tasks out and where each task sits in a pass,
with as little work as the common case allows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import islice, repeat
from operator import attrgetter

from assignor._java.priority_queue import JavaPriorityQueue
from protocol.ids import TaskId

_KEPT_RANK = attrgetter("_rank")  # Kafka's task order as one int, kept by unnamed tasks only


class LazyQueue:
    """Kafka's ``PriorityQueue`` of tasks (as ranks 0..n-1), built only if its layout matters.

    ``poll``/``remove``/``contains`` answer from a sorted cursor and a set, and every mutation
    is logged. Only when leftovers are handed out in heap-array order is the real heap built
    (from the Java iteration order, which may itself be costly to compute) and the log
    replayed; in the common case - no leftovers - neither is ever needed.
    """

    __slots__ = ("_cursor", "_java_order", "_log", "_n", "_present")

    def __init__(self, n: int, java_order: Callable[[], Sequence[int]]) -> None:
        self._n = n
        self._present = set(range(n))
        self._cursor = 0
        self._log: list[tuple[bool, int]] = []
        self._java_order = java_order

    def __len__(self) -> int:
        return len(self._present)

    def __contains__(self, item: int) -> bool:
        return item in self._present

    @property
    def present(self) -> set[int]:
        """The tasks still queued; a caller may discard one if it logs the removal."""
        return self._present

    @property
    def log(self) -> list[tuple[bool, int]]:
        """Every poll and removal so far, (polled, task), for the replay."""
        return self._log

    def remove(self, item: int) -> None:
        self._present.discard(item)
        self._log.append((False, item))

    def poll(self) -> int | None:
        while self._cursor < self._n and self._cursor not in self._present:
            self._cursor += 1
        if self._cursor >= self._n:
            return None
        item = self._cursor
        self._present.discard(item)
        self._log.append((True, item))
        return item

    def remove_many(self, items: list[int]) -> None:
        """``remove`` of each of ``items`` (distinct, all present), in order."""
        self._present.difference_update(items)
        self._log.extend(zip(repeat(False), items))

    def poll_many(self, k: int) -> list[int]:
        """``k`` polls in a row (fewer if the queue runs out): the ``k`` smallest left, found
        by a scan in C from the cursor."""
        if k <= 0:
            return []
        present = self._present
        taken = list(islice(filter(present.__contains__, range(self._cursor, self._n)), k))
        # the cursor stops past the last one taken, or at the end when the queue ran out
        self._cursor = taken[-1] + 1 if len(taken) == k else self._n
        present.difference_update(taken)
        self._log.extend(zip(repeat(True), taken))
        return taken

    def heap_order(self) -> list[int]:
        if len(self._present) <= 1:
            # One task left (always so with two threads: at most threads - 1 are left over):
            # an array of one element is that element, whatever the steps that led to it.
            return list(self._present)
        return self.replayed()

    def replayed(self) -> list[int]:
        """The real heap's array: built from the Java iteration order, the log replayed."""
        order = self._java_order()
        if not self._log and isinstance(order, range):
            return list(order)  # a sorted array is a heap already: nothing to replay
        heap = JavaPriorityQueue(range(self._n), order, indexed=True)
        for polled, item in self._log:
            if polled:
                heap.poll()
            else:
                heap.remove(item)
        return list(heap)


class TaskNumbers:
    """Tasks' positions in a pass's sorted tasks. By their int ``_rank`` when every task has
    one (unnamed tasks: the look-ups hash ints, in C, instead of calling ``TaskId.__hash__``
    per task), else by value; a task of a list that lacks a rank is looked up by value."""

    __slots__ = ("_by_rank", "_by_value", "_ordered")

    def __init__(self, ordered: list[TaskId]) -> None:
        self._ordered = ordered
        self._by_value: dict[TaskId, int] | None = None
        try:
            ranks = list(map(_KEPT_RANK, ordered))
        except AttributeError:
            self._by_rank: dict[int, int] | None = None
        else:
            self._by_rank = dict(zip(ranks, range(len(ranks)), strict=True))

    def of(self, tasks: Iterable[TaskId]) -> list[int]:
        """Each task's position, -1 for one that is not among the pass's tasks."""
        if self._by_rank is not None:
            try:
                ranks = list(map(_KEPT_RANK, tasks))
            except AttributeError:
                pass  # a named task (no rank): an unnamed task's rank says nothing about it
            else:
                return list(map(self._by_rank.get, ranks, repeat(-1)))
        if self._by_value is None:
            self._by_value = {task: i for i, task in enumerate(self._ordered)}
        return list(map(self._by_value.get, tasks, repeat(-1)))
