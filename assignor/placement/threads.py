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

The same algorithm with fewer operations: consumers are indices into one load list, so a pass
touches only the consumers that matter (previous owners, threads short of the floor, threads
at the floor when tasks are left over) plus one comprehension over the loads; the heap and the
``HashSet`` order are built only when leftovers are handed out in heap order. At Kafka's
ManyThreadsPerClient point (1,000 threads per client, 100 tasks each way) most threads take
nothing, and that is where per-consumer dicts used to cost more than placing the tasks.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain, compress, islice, repeat
from operator import attrgetter, itemgetter
from typing import Any, Protocol

from assignor.placement.lags import TaskLags
from assignor.placement.previous_by_lag import prev_by_lag_order
from assignor.placement.thread_queue import LazyQueue, hash_set_positions, task_keys
from protocol.ids import TaskId, java_string_key

_KEPT_SORT_KEY = attrgetter("_sort_key")  # Kafka's TaskId.compareTo, from the task's slot
_KEPT_RANK = attrgetter("_rank")  # the same order as one int, kept by unnamed tasks only
_NO_TASKS: frozenset[TaskId] = frozenset()


def _task_sorted(tasks: Iterable[TaskId]) -> list[TaskId]:
    """Tasks in Kafka's ``TaskId.compareTo`` order.

    One sort by each task's kept key, read from its slot rather than through the ``sort_key``
    property (a Python call per task): the int ``TaskId._rank`` when every task is unnamed (a
    quarter of a tuple sort's cost: 6,000 tasks of a client 2.3 -> 0.6 ms), else the kept tuple
    ``TaskId._sort_key``, which every task keeps; a task of a named topology has no rank.
    """
    ordered = list(tasks)
    try:
        ordered.sort(key=_KEPT_RANK)
    except AttributeError:
        ordered.sort(key=_KEPT_SORT_KEY)
    return ordered


class TaskAssignmentError(RuntimeError):
    """Kafka's ``TaskAssignmentException``: the inputs cannot be spread as the rules demand."""


def _check_comparable(tasks: Iterable[TaskId]) -> None:
    named = {task.topology is None for task in tasks}
    if len(named) > 1:
        raise ValueError("cannot order tasks of named and unnamed topologies together")


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
    if not consumers:
        raise ValueError("a client needs at least one consumer to receive tasks")
    distinct = list(dict.fromkeys(tasks))
    owners = [
        (i, prev_tasks_by_lag[c]) for i, c in enumerate(consumers) if prev_tasks_by_lag.get(c)
    ]
    (keys,), previous = task_keys([distinct], [owned for _, owned in owners])
    task_of = dict(zip(keys, distinct, strict=True))
    load = [thread_load.get(c, 0) for c in consumers]
    # Java sums the whole load map, whatever consumers it names.
    extra = sum(thread_load.values()) - sum(load)
    prev = list(zip([i for i, _ in owners], previous, strict=True))

    def java_order(ordered: Sequence[int]) -> list[int]:
        position = dict(zip(ordered, range(len(ordered)), strict=True))
        return [position[k] for k in keys]

    assigned = _assign_pass(keys, java_order, is_stateful, prev, load, extra)
    result = {
        c: list(map(task_of.__getitem__, assigned.get(i, ()))) for i, c in enumerate(consumers)
    }
    return result, dict(zip(consumers, load, strict=True))


def _assign_pass(
    keys: list[int],
    java_order: Callable[[Sequence[int]], Sequence[int]],
    is_stateful: bool,
    prev: Sequence[tuple[int, Sequence[int]]],
    load: list[int],
    extra_load: int = 0,
) -> dict[int, list[int]]:
    """One pass on the pass's tasks as distinct keys (:func:`task_keys`, in any order), with
    consumers as their indices (``TreeSet`` order).

    ``load`` holds one count per consumer and is updated in place; ``prev`` lists only the
    consumers with previous tasks, in consumer order, each task as its key (a key in no pass
    is simply never queued); the answer maps a consumer index to the keys it received, and
    omits consumers that received nothing. Why indices and keys: at 1,000 threads per client
    and a few tasks per thread, per-consumer dicts cost more than placing the tasks, and with
    int keys a thread's previous tasks are matched against the queue by one filter in C. So
    each per-consumer step here is one comprehension over ``load`` or a loop over the few
    consumers that matter. ``java_order`` gives, from the sorted keys, the Java iteration order
    (as positions in them); it is asked only if the heap layout decides something.
    """
    assignment: dict[int, list[int]] = {}
    if not keys:
        return assignment
    floor = (len(keys) + sum(load) + extra_load) // len(load)
    queue = LazyQueue(keys, java_order)
    # A TreeMap in Java: iterated by task order, a later owner overwrites an earlier one.
    skipped: dict[int, int] = {}
    if is_stateful and prev and set(map(len, map(itemgetter(1), prev))) == {1}:
        # Every previous owner reported one task (each busy thread at 1,000 threads per
        # client): per thread a take (still room) or a skip, as the loop below decides for a
        # list of one.
        present = queue.present
        taken: list[int] = []  # removed from the queue in this order (logged once, below)
        for consumer, (r,) in prev:
            if r not in present:
                continue
            if load[consumer] < floor:
                present.discard(r)
                taken.append(r)
                assignment[consumer] = [r]
                load[consumer] += 1
            else:
                skipped[r] = consumer
        queue.log.append((False, tuple(taken)))
    elif is_stateful and prev:
        present = queue.present
        for consumer, tasks in prev:
            room = max(floor - load[consumer], 0)
            # A thread's previous tasks are distinct, so taking one never changes whether a
            # later one is in the queue: the first ``room`` present take, the rest are
            # skipped (Java's loop, one task at a time, in the same order).
            found = list(filter(present.__contains__, tasks))
            if len(set(found)) < len(found):  # a repeated task: Java's loop, step by step
                mine: list[int] = []
                for r in found:
                    if r not in present:
                        continue
                    if len(mine) < room:
                        mine.append(r)
                        queue.remove(r)
                    else:
                        skipped[r] = consumer
            else:
                mine = found[:room]
                if len(found) > room:
                    skipped.update(zip(found[room:], repeat(consumer)))
                queue.remove_many(mine)
            if mine:
                assignment[consumer] = mine
                load[consumer] += len(mine)

    # Threads below the floor, in consumer order, filled round-robin from the smallest task:
    # Java cycles a queue of them; that is rounds, round k serving the threads still short.
    short = (
        [(i, floor - count) for i, count in enumerate(load) if count < floor]
        if (min(load) < floor)
        else []
    )
    if short:
        needs = [need for _, need in short]
        most, wanted = max(needs), sum(needs)
        polled = queue.poll_many(wanted)
        if len(polled) < wanted:
            raise TaskAssignmentError(
                "Ran out of unassigned stateful tasks but some members were not at capacity"
            )
        if most == min(needs):  # each round serves every short thread, in order: the j-th
            # takes every len(short)-th task polled from the j-th on (sliced in C, where one
            # turn at a time made a thread short of 50 tasks 50 turns)
            width = len(short)
            for j, (consumer, _) in enumerate(short):
                got = polled[j::width]
                held = assignment.get(consumer)
                if held is None:
                    assignment[consumer] = got
                else:
                    held.extend(got)
        else:
            turns = [i for k in range(most) for i, need in short if need > k]
            for consumer, r in zip(turns, polled, strict=True):
                assignment.setdefault(consumer, []).append(r)
        for consumer, _ in short:
            load[consumer] = floor

    if len(queue):
        at_floor: Sequence[int] = range(len(load))
        if load.count(floor) != len(load):
            # (in C; without skipped tasks only as many as tasks are left are handed any, so
            # the scan stops there: 100 of 1,000 threads per client in a first rebalance)
            at_floor_all = compress(range(len(load)), map(floor.__eq__, load))
            at_floor = list(at_floor_all if skipped else islice(at_floor_all, len(queue)))
        if skipped:  # (no set of every thread at the floor when nothing was skipped)
            waiting = set(at_floor)
            present = queue.present
            back: list[int] = []  # removed from the queue in this order (logged once, below)
            for r in sorted(skipped):
                consumer = skipped[r]
                if consumer in waiting and r in present:
                    assignment.setdefault(consumer, []).append(r)
                    load[consumer] += 1
                    back.append(r)  # (distinct: taking one never changes whether another is in)
                    waiting.discard(consumer)
            if back:
                queue.remove_many(back)
            # The rest in heap-array order, to the threads at the floor that took no skipped
            # task.
            if len(waiting) < len(at_floor):
                at_floor = list(filter(waiting.__contains__, at_floor))
        leftovers = queue.heap_order()
        if len(leftovers) > len(at_floor):
            # Java would fail here with a NullPointerException.
            raise TaskAssignmentError(
                "Ran out of threads at the minimum load while tasks remain unassigned"
            )
        for consumer, r in zip(at_floor, leftovers, strict=False):
            assignment.setdefault(consumer, []).append(r)
            load[consumer] += 1
    return assignment


def _sorted_order(keys: Sequence[int]) -> range:
    """The Java order of a pass fed the sorted set itself: the sorted keys' own order."""
    return range(len(keys))


def _hash_set_ranks(keys: Sequence[int], task_of: Mapping[int, TaskId]) -> list[int]:
    """A ``HashSet`` filled with a pass's tasks in order (``keys``, sorted), iterated, as
    positions in ``keys``: by bucket then insertion, from the hashes alone unless a bucket
    grows a tree (then it is replayed)."""
    return hash_set_positions(list(map(task_of.__getitem__, keys)))


def java_hash_set_order(tasks: Iterable[TaskId]) -> list[TaskId]:
    """Iteration order of a ``HashSet`` filled in task order (``Collectors.toSet()`` of a
    sorted set): what Kafka hands the active passes."""
    tasks = list(tasks)
    _check_comparable(tasks)
    ordered = _task_sorted(set(tasks))
    return [ordered[i] for i in hash_set_positions(ordered)]


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
    standbys as the sorted set itself. A consumer that receives nothing maps to an empty tuple
    (one shared object: a client of 1,000 threads has hundreds of them).
    """
    ordered_consumers, index_of = _consumer_order(consumers)
    if not ordered_consumers:
        raise ValueError("a client needs at least one consumer to receive tasks")
    # The reporting consumers' positions found in C (2,000 at 1,000 threads per client); the
    # positions are distinct, so the sort never compares the task lists.
    known = index_of.known(compress(prev_by_lag, prev_by_lag.values()))
    pass_tasks = [
        tasks if isinstance(tasks, (set, frozenset)) else set(tasks)
        for tasks in (stateful_active, standby, stateless_active)
    ]
    pass_keys, previous = task_keys(pass_tasks, list(map(prev_by_lag.__getitem__, known)))
    prev = sorted(zip(index_of.positions(known), previous, strict=True))
    load = [0] * len(ordered_consumers)
    passes = []
    for given, keys, stateful_pass, hashed in zip(
        pass_tasks, pass_keys, (True, True, False), (True, False, True), strict=True
    ):
        task_of = dict(zip(keys, given, strict=True))
        # A HashSet filled in task order, or the sorted set itself (already a valid heap).
        java_order = partial(_hash_set_ranks, task_of=task_of) if hashed else _sorted_order
        assigned = _assign_pass(keys, java_order, stateful_pass, prev, load)
        passes.append(_by_consumer(assigned, ordered_consumers, task_of))
    stateful, standbys, stateless = passes
    # Both maps start from one map of every consumer to nothing, copied (a copy of a dict
    # clones its table in C; a second ``fromkeys`` would insert 1,000 consumers again).
    standby_by_consumer: dict[str, Sequence[TaskId]] = dict.fromkeys(ordered_consumers, ())
    active = standby_by_consumer.copy()
    active.update(stateful)
    for consumer, tasks in stateless.items():
        active[consumer] = [*active[consumer], *tasks]
    standby_by_consumer.update(standbys)
    return ThreadAssignment(active=active, standby=standby_by_consumer)


def _by_consumer(
    assigned: Mapping[int, list[int]], consumers: Sequence[str], task_of: Mapping[int, TaskId]
) -> dict[str, list[TaskId]]:
    """A pass's keys per consumer index as tasks per consumer name. When every consumer
    took one task (a first rebalance at 1,000 threads per client: 100 per pass and client),
    the names, tasks and one-task lists are made in C, not a comprehension step each."""
    names = map(consumers.__getitem__, assigned)
    got = assigned.values()
    if sum(map(len, got)) == len(assigned) and all(got):  # (so one task each)
        one_each = map(list, zip(map(task_of.__getitem__, chain.from_iterable(got))))
        return dict(zip(names, one_each, strict=True))
    tasks = [list(map(task_of.__getitem__, got)) for got in assigned.values()]
    return dict(zip(names, tasks, strict=True))


class _IndexOf:
    """A consumer's position in ``TreeSet<String>`` order, found by bisection (a dict of every
    consumer would cost more than the few look-ups made: only consumers with previous tasks)."""

    __slots__ = ("_key", "_keys", "_names", "ordered")

    def __init__(
        self, names: set[str], key: Callable[[str], bytes] | None, given: Sequence[str] = ()
    ) -> None:
        self._names = names
        self._key = key
        # ``given`` without repeats sorts to the same list as the set; it mostly arrives sorted
        # already (the leader's clients list their consumers sorted), which a sort only checks,
        # while the set's hash order had to be sorted for real (half the step at 1,000 threads
        # per client).
        source: Iterable[str] = given if len(given) == len(names) else names
        self.ordered: list[str] = sorted(source) if key is None else sorted(source, key=key)
        self._keys: list[Any] = self.ordered if key is None else [key(n) for n in self.ordered]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __call__(self, name: str) -> int:
        return bisect_left(self._keys, name if self._key is None else self._key(name))

    def known(self, names: Iterable[str]) -> list[str]:
        """The ``names`` that are consumers, in their order (checked in C)."""
        return list(filter(self._names.__contains__, names))

    def positions(self, names: Sequence[str]) -> list[int]:
        """``[self(name) for name in names]``, bisected in C when names are their own keys."""
        if self._key is not None:
            return list(map(self, names))
        return list(map(bisect_left, repeat(self._keys), names))


def _consumer_order(consumers: Iterable[str]) -> tuple[list[str], _IndexOf]:
    """Consumers in Java's ``String`` order, and how to find one's index. Strings of ASCII
    only (aiokafka's member ids) compare the same in UTF-16 units and in code points, so they
    sort without building a UTF-16 key per consumer."""
    given = consumers if isinstance(consumers, (list, tuple)) else list(consumers)
    names = set(given)
    index_of = _IndexOf(names, None if "".join(given).isascii() else java_string_key, given)
    return index_of.ordered, index_of


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
    @property
    def previous_tasks_by_consumer(self) -> Mapping[str, Iterable[TaskId]]: ...
    def prev_tasks_by_lag(self, consumer: str) -> Sequence[TaskId]: ...


#: what :func:`distribute_client_tasks` hands a client's inputs to (a leader's cache may
#: stand in for :func:`distribute_tasks`: ``assignor.leader.thread_cache``)
Distribute = Callable[
    [Sequence[str], Iterable[TaskId], Iterable[TaskId], Iterable[TaskId],
     Mapping[str, Sequence[TaskId]]],
    ThreadAssignment,
]


def distribute_client_tasks(
    client: AssignedClient,
    stateful: frozenset[TaskId] | None = None,
    distribute: Distribute = distribute_tasks,
    *,
    every_task_stateful: bool = False,
) -> ThreadAssignment:
    """:func:`distribute_tasks` (or ``distribute``, called as it is) for an assigned
    ``ClientState``.

    ``stateful``: the topology's stateful tasks as one set, when the caller has it (the
    leader's task layout, whose tasks are the keys of every client's ``task_lags``). A client
    with one thread then splits its actives with two set operations in C instead of a lag
    lookup per task (at 6,000 tasks, 0.3 ms instead of 4). ``every_task_stateful``: with
    ``stateful``, the caller knows it holds every task of the layout (the usual topology), so
    the actives are all stateful and need no split at all.
    """
    consumers = client.consumers
    # (all the same name, checked without a set of 1,000 names)
    if consumers and consumers.count(consumers[0]) == len(consumers):
        # One thread takes everything, whatever the order Kafka would hand it out in; this
        # skips the per-task bookkeeping that dominates single-threaded clients at scale.
        (only,) = set(consumers)
        assigned = getattr(client, "active", None) if stateful is not None else None
        if type(assigned) is frozenset and stateful is not None:
            stateful_active = assigned if every_task_stateful else assigned & stateful
            stateless_active = _NO_TASKS if every_task_stateful else assigned - stateful_active
        else:
            stateful_active = frozenset(client.stateful_active)
            stateless_active = frozenset(client.stateless_active)
        active = _task_sorted(stateful_active)
        if stateless_active:
            active += _task_sorted(stateless_active)
        return ThreadAssignment(active={only: active}, standby={only: _task_sorted(client.standby)})
    # Only consumers that reported tasks have any to take back (most have none at 1,000
    # threads per client); ``stateful`` splits the actives as above. A consumer that reported
    # one task (each of a client's busy threads at 1,000 threads per client) has no lags to
    # order: the task stays if it is stateful.
    prev_by_lag: dict[str, Sequence[TaskId]] = {}
    reports = client.previous_tasks_by_consumer
    # (the consumers that reported nothing skipped in C: 800 of 1,000 per client there)
    for c, reported in compress(reports.items(), reports.values()):
        if stateful is not None and type(reported) is frozenset and len(reported) == 1:
            prev_by_lag[c] = tuple(reported) if not reported.isdisjoint(stateful) else ()
            continue
        lags = getattr(client, "task_lags", None)
        by_lag = None
        if stateful is not None and type(reported) is frozenset and type(lags) is TaskLags:
            by_lag = prev_by_lag_order(reported, lags, stateful)
        prev_by_lag[c] = client.prev_tasks_by_lag(c) if by_lag is None else by_lag
    assigned = getattr(client, "active", None) if stateful is not None else None
    if type(assigned) is frozenset and stateful is not None:  # two set operations in C
        if every_task_stateful:
            return distribute(consumers, assigned, client.standby, _NO_TASKS, prev_by_lag)
        return distribute(
            consumers, assigned & stateful, client.standby, assigned - stateful, prev_by_lag
        )
    return distribute(
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
