"""Step 5: a client's tasks -> its consumers (stream threads), as Kafka's ``assignTasksToThreads``.

Three passes share one per-thread load count, so actives, standbys and stateless tasks together
differ by at most one task between threads: stateful actives first, then standbys, then stateless
actives. In a stateful pass a thread first takes back the tasks it held before (least lag first)
up to ``floor(total / threads)``; threads still short are then filled round-robin from the
smallest task id up ("interleaved by subtopology"); what is left goes, first to a skipped
previous owner still at the floor, then to the threads at the floor in order.

That last hand-out walks Java's ``PriorityQueue`` in its internal heap order, and the queue is
built from a ``HashSet`` for actives. To give Kafka's exact answer we replay both structures
(:mod:`assignor._java.hash_table`, :mod:`assignor._java.priority_queue`); the conformance
tests compare with the real Java method.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import Protocol

from assignor._java.hash_codes import task_id_hash
from assignor._java.hash_table import JavaHashSet
from assignor._java.priority_queue import JavaPriorityQueue
from protocol.ids import TaskId, java_string_key

_SORT_KEY = attrgetter("sort_key")  # Kafka's TaskId.compareTo


class TaskAssignmentError(RuntimeError):
    """Kafka's ``TaskAssignmentException``: the inputs cannot be spread as the rules demand."""


def _check_comparable(tasks: Iterable[TaskId]) -> None:
    named = {task.topology is None for task in tasks}
    if len(named) > 1:
        raise ValueError("cannot order tasks of named and unnamed topologies together")


class _LazyQueue:
    """Kafka's ``PriorityQueue`` of tasks (as ranks 0..n-1), built only if its layout matters.

    ``poll``/``remove``/``contains`` answer from a sorted cursor and a set, and every mutation
    is logged. Only when leftovers are handed out in heap-array order is the real heap built
    (from the Java iteration order, which may itself be costly to compute) and the log
    replayed; in the common case - no leftovers - neither is ever needed.
    """

    __slots__ = ("_cursor", "_java_order", "_log", "_n", "_present")

    def __init__(self, n: int, java_order: Callable[[], Iterable[int]]) -> None:
        self._n = n
        self._present = set(range(n))
        self._cursor = 0
        self._log: list[tuple[bool, int]] = []
        self._java_order = java_order

    def __len__(self) -> int:
        return len(self._present)

    def __contains__(self, item: int) -> bool:
        return item in self._present

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

    def heap_order(self) -> list[int]:
        heap = JavaPriorityQueue(list(range(self._n)), self._java_order(), indexed=True)
        for polled, item in self._log:
            if polled:
                heap.poll()
            else:
                heap.remove(item)
        return list(heap)


def assign_tasks_to_threads(
    tasks: Sequence[TaskId],
    is_stateful: bool,
    consumers: Sequence[str],
    prev_tasks_by_lag: Mapping[str, Sequence[TaskId]],
    thread_load: Mapping[str, int],
) -> tuple[dict[str, list[TaskId]], dict[str, int]]:
    """One pass of Kafka's thread distribution; returns tasks per consumer and the new loads.

    ``tasks`` must be in the iteration order of the Java collection the pass receives (it seeds
    the priority queue's heap); ``consumers`` in ``TreeSet<String>`` order; ``prev_tasks_by_lag``
    gives each consumer's previous stateful tasks sorted by (lag, task), already limited to
    tasks that are stateful now. ``thread_load`` is not modified.
    """
    _check_comparable(tasks)
    ordered = sorted(set(tasks), key=_SORT_KEY)
    return _assign_pass(
        ordered, lambda: tasks, is_stateful, consumers, prev_tasks_by_lag, thread_load
    )


def _assign_pass(
    ordered: list[TaskId],
    java_order: Callable[[], Iterable[TaskId]],
    is_stateful: bool,
    consumers: Sequence[str],
    prev_tasks_by_lag: Mapping[str, Sequence[TaskId]],
    thread_load: Mapping[str, int],
) -> tuple[dict[str, list[TaskId]], dict[str, int]]:
    """``assign_tasks_to_threads`` on sorted distinct tasks; ``java_order`` is asked for the
    Java iteration order only if the heap layout decides something."""
    if not consumers:
        raise ValueError("a client needs at least one consumer to receive tasks")
    rank = {task: i for i, task in enumerate(ordered)}
    load = {c: thread_load.get(c, 0) for c in consumers}
    assignment: dict[str, list[int]] = {c: [] for c in consumers}

    total = len(ordered) + sum(thread_load.values())
    floor = total // len(consumers)
    queue = _LazyQueue(len(ordered), lambda: [rank[t] for t in java_order()])

    if len(queue):
        to_fill: deque[str] = deque()
        # A TreeMap in Java: iterated by task order, a later owner overwrites an earlier one.
        skipped: dict[int, str] = {}
        for consumer in consumers:
            mine = assignment[consumer]
            target = floor - load[consumer]
            if is_stateful:
                for task in prev_tasks_by_lag.get(consumer, ()):
                    r = rank.get(task)
                    if r is None or r not in queue:
                        continue
                    if len(mine) < target:
                        mine.append(r)
                        queue.remove(r)
                    else:
                        skipped[r] = consumer
            if len(mine) < target:
                to_fill.append(consumer)

        while to_fill:
            r_next = queue.poll()
            if r_next is None:
                raise TaskAssignmentError(
                    "Ran out of unassigned stateful tasks but some members were not at capacity"
                )
            consumer = to_fill.popleft()
            mine = assignment[consumer]
            mine.append(r_next)
            if len(mine) + load[consumer] < floor:
                to_fill.append(consumer)

        if len(queue):
            at_floor = [c for c in consumers if len(assignment[c]) + load[c] == floor]
            waiting = set(at_floor)
            to_fill.extend(at_floor)
            for r in sorted(skipped):
                consumer = skipped[r]
                if consumer in waiting and r in queue:
                    assignment[consumer].append(r)
                    queue.remove(r)
                    to_fill.remove(consumer)
                    waiting.discard(consumer)
            for r in queue.heap_order():
                if not to_fill:
                    # Java would fail here with a NullPointerException.
                    raise TaskAssignmentError(
                        "Ran out of threads at the minimum load while tasks remain unassigned"
                    )
                assignment[to_fill.popleft()].append(r)

    result = {c: [ordered[r] for r in assigned] for c, assigned in assignment.items()}
    new_load = {c: load[c] + len(assignment[c]) for c in consumers}
    return result, new_load


def _hash_set_of_sorted(ordered: list[TaskId]) -> list[TaskId]:
    return list(JavaHashSet(task_id_hash, ordered, sort_key=_SORT_KEY))


def java_hash_set_order(tasks: Iterable[TaskId]) -> list[TaskId]:
    """Iteration order of a ``HashSet`` filled in task order (``Collectors.toSet()`` of a
    sorted set): what Kafka hands the active passes."""
    tasks = list(tasks)
    _check_comparable(tasks)
    ordered = sorted(tasks, key=_SORT_KEY)
    return list(JavaHashSet(task_id_hash, ordered, sort_key=_SORT_KEY))


@dataclass(frozen=True, slots=True)
class ThreadAssignment:
    """One client's tasks per consumer: actives (stateful first, then stateless) and standbys."""

    active: Mapping[str, Sequence[TaskId]]
    standby: Mapping[str, Sequence[TaskId]]


def distribute_tasks(
    consumers: Iterable[str],
    stateful_active: Iterable[TaskId],
    standby: Iterable[TaskId],
    stateless_active: Iterable[TaskId],
    prev_by_lag: Mapping[str, Sequence[TaskId]],
) -> ThreadAssignment:
    """Kafka's three passes for one client, each fed the collection Kafka feeds it.

    Stateful and stateless actives arrive as ``HashSet``s (filtered from the sorted active set),
    standbys as the sorted set itself.
    """
    ordered_consumers = sorted(set(consumers), key=java_string_key)
    passes = []
    load: dict[str, int] = {}
    for tasks, stateful_pass, hashed in (
        (stateful_active, True, True),
        (standby, True, False),
        (stateless_active, False, True),
    ):
        ordered = sorted(set(tasks), key=_SORT_KEY)
        _check_comparable(ordered)
        # A HashSet filled in task order, or the sorted set itself (already a valid heap).
        java_order = partial(_hash_set_of_sorted, ordered) if hashed else partial(iter, ordered)
        result, load = _assign_pass(
            ordered, java_order, stateful_pass, ordered_consumers, prev_by_lag, load
        )
        passes.append(result)
    stateful, standbys, stateless = passes
    active = {c: stateful[c] + stateless[c] for c in ordered_consumers}
    return ThreadAssignment(active=active, standby=standbys)


class AssignedClient(Protocol):
    """What thread distribution reads of a client (``placement.client_state.ClientState``)."""

    @property
    def consumers(self) -> Sequence[str]: ...
    @property
    def stateful_active(self) -> Iterable[TaskId]: ...
    @property
    def stateless_active(self) -> Iterable[TaskId]: ...
    @property
    def standby(self) -> Iterable[TaskId]: ...
    def prev_tasks_by_lag(self, consumer: str) -> Sequence[TaskId]: ...


def distribute_client_tasks(client: AssignedClient) -> ThreadAssignment:
    """:func:`distribute_tasks` for an assigned ``ClientState``."""
    consumers = client.consumers
    if len(set(consumers)) == 1:
        # One thread takes everything, whatever the order Kafka would hand it out in; this
        # skips the per-task bookkeeping that dominates single-threaded clients at scale.
        (only,) = set(consumers)
        active = sorted(client.stateful_active, key=_SORT_KEY)
        active += sorted(client.stateless_active, key=_SORT_KEY)
        return ThreadAssignment(
            active={only: active}, standby={only: sorted(client.standby, key=_SORT_KEY)}
        )
    prev_by_lag = {c: client.prev_tasks_by_lag(c) for c in consumers}
    return distribute_tasks(
        consumers, client.stateful_active, client.standby, client.stateless_active, prev_by_lag
    )


__all__ = [
    "AssignedClient",
    "TaskAssignmentError",
    "ThreadAssignment",
    "assign_tasks_to_threads",
    "distribute_client_tasks",
    "distribute_tasks",
    "java_hash_set_order",
]
