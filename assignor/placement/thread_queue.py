"""The queues of tasks-to-threads' stateful passes (:mod:`assignor.placement.threads`).

Kept apart from the pass itself: the pass decides which thread takes which task, these say in
which order Kafka's ``PriorityQueue`` would hand tasks out (and the ``HashSet`` order it is built
from) and what int stands for each task in a pass, with as little work as the common case allows.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Collection, Sequence
from heapq import heapify, heappop
from itertools import chain, islice, repeat
from operator import attrgetter, itemgetter

from assignor._java.hash_codes import spread, task_id_hash
from assignor._java.hash_table import hash_set_order
from assignor._java.priority_queue import JavaPriorityQueue
from protocol.ids import TaskId

_KEPT_RANK = attrgetter("_rank")  # Kafka's task order as one int, kept by unnamed tasks only
_KEPT_SORT_KEY = attrgetter("_sort_key")  # the same order as a tuple, kept by every task
_PARTITION_BITS = (1 << 31) - 1  # a rank's low bits: the partition
NOT_A_KEY = -1  # the key of a task that is in none of the passes (keys are never negative)


_POLLED = itemgetter(0)


def _heap_after_polls(
    keys: Sequence[int], order: Sequence[int], log: list[tuple[bool, tuple[int, ...]]]
) -> list[int]:
    """Java's ``new PriorityQueue<>(collection)`` of ``keys`` in ``order`` (positions in the
    sorted keys), then the polls of ``log``: the array, as keys, built by ``heapq`` in C.

    Why it is Java's array: the keys are distinct ints. Java's heapify sifts each parent down
    from the last, stopping above the first child on the path of smaller children that is
    heavier; ``heapq.heapify`` walks the same path (which child is smaller does not depend on
    the element moved, and no two keys tie) to a leaf and bubbles the element back up, and
    below a parent already sifted the path increases downwards, so it stops in the same slot
    with the same children moved up. ``heappop`` equals Java's ``poll`` likewise (see
    :mod:`assignor.placement.kafka_poll`). At Kafka's ManyThreadsPerClient point a first
    rebalance builds 20 such heaps of 100 tasks with nothing to replay: 3.6 ms with a Python
    step per sift, 2.6 ms so (the rest is their hash-set order)."""
    heap = list(map(keys.__getitem__, order))
    heapify(heap)
    for _, step in log:
        deque(map(heappop, repeat(heap, len(step))), maxlen=0)
    return heap


class LazyQueue:
    """Kafka's ``PriorityQueue`` of a pass's tasks (by their keys), built only if its layout
    matters.

    ``poll``/``remove``/``contains`` answer from a cursor over the sorted keys and a set, and
    every mutation is logged. The keys are sorted only when first polled (in most passes the
    threads take back their previous tasks and nothing is polled). Only when leftovers are
    handed out in heap-array order is the real heap built (from the Java iteration order, which
    may itself be costly to compute) and the log replayed; in the common case - no leftovers -
    neither is ever needed.
    """

    __slots__ = ("_cursor", "_java_order", "_keys", "_log", "_present", "_sorted")

    def __init__(
        self, keys: Sequence[int], java_order: Callable[[Sequence[int]], Sequence[int]]
    ) -> None:
        """``keys``: distinct, in any order; ``java_order``: given the keys sorted (Kafka's task
        order), the Java iteration order as positions in them."""
        self._keys = keys
        self._sorted = False
        self._present = set(keys)
        self._cursor = 0  # a position in the sorted keys: every key before it is gone
        # (polled, keys) per step, in order; a step's keys as a tuple of its own (a record per
        # key cost more than the step in a pass that never replays)
        self._log: list[tuple[bool, tuple[int, ...]]] = []
        self._java_order = java_order

    def _ordered(self) -> Sequence[int]:
        if not self._sorted:
            self._keys, self._sorted = sorted(self._keys), True
        return self._keys

    def __len__(self) -> int:
        return len(self._present)

    def __contains__(self, key: int) -> bool:
        return key in self._present

    @property
    def present(self) -> set[int]:
        """The keys still queued; a caller may discard one if it logs the removal."""
        return self._present

    @property
    def log(self) -> list[tuple[bool, tuple[int, ...]]]:
        """Every poll and removal so far, for the replay: (polled, keys) per step, the keys in
        the order they left; a caller that discards keys itself appends its own step."""
        return self._log

    def remove(self, key: int) -> None:
        self._present.discard(key)
        self._log.append((False, (key,)))

    def remove_many(self, keys: list[int]) -> None:
        """``remove`` of each of ``keys`` (distinct, all present), in order."""
        self._present.difference_update(keys)
        self._log.append((False, tuple(keys)))

    def poll(self) -> int | None:
        taken = self.poll_many(1)
        return taken[0] if taken else None

    def poll_many(self, k: int) -> list[int]:
        """``k`` polls in a row (fewer if the queue runs out): the ``k`` smallest left, found
        by a scan in C from the cursor."""
        if k <= 0:
            return []
        present, keys = self._present, self._ordered()
        taken = list(islice(filter(present.__contains__, islice(keys, self._cursor, None)), k))
        # the cursor stops past the last one taken, or at the end when the queue ran out
        self._cursor = bisect_left(keys, taken[-1]) + 1 if len(taken) == k else len(keys)
        present.difference_update(taken)
        self._log.append((True, tuple(taken)))
        return taken

    def heap_order(self) -> list[int]:
        if len(self._present) <= 1:
            # One task left (always so with two threads: at most threads - 1 are left over):
            # an array of one element is that element, whatever the steps that led to it.
            return list(self._present)
        return self.replayed()

    def replayed(self) -> list[int]:
        """The real heap's array (as keys): built from the Java order, the log replayed."""
        keys = self._ordered()
        order = self._java_order(keys)
        if not self._log and isinstance(order, range):
            return list(keys)  # a sorted array is a heap already: nothing to replay
        if all(map(_POLLED, self._log)):
            return _heap_after_polls(keys, order, self._log)
        return self._replayed_step_by_step(keys, order)

    def _replayed_step_by_step(self, keys: Sequence[int], order: Sequence[int]) -> list[int]:
        """:meth:`replayed` on a heap that takes Java's steps one at a time (removals)."""
        heap = JavaPriorityQueue(range(len(keys)), order, indexed=True)
        position = dict(zip(keys, range(len(keys)), strict=True))
        for polled, step in self._log:
            for key in step:
                if polled:
                    heap.poll()
                else:
                    heap.remove(position[key])
        return [keys[i] for i in heap]


def task_keys(
    passes: Sequence[Collection[TaskId]], previous: Sequence[Sequence[TaskId]]
) -> tuple[list[list[int]], list[list[int]]]:
    """One int per task that orders as Kafka's ``TaskId.compareTo``: each pass's tasks, in their
    own order, and each previous-task list's (a task in no pass gets a key no pass's task has:
    its rank, or ``NOT_A_KEY``).

    The kept ``_rank`` when every task of the passes has one (unnamed tasks: read in C, and the
    pass then hashes and compares ints, never a ``TaskId``); else each task's position among
    all the passes' tasks sorted by value. A pass that mixes named and unnamed tasks is refused,
    as Java refuses to compare them.
    """
    try:
        pass_keys = [list(map(_KEPT_RANK, tasks)) for tasks in passes]
    except AttributeError:
        return _keys_by_value(passes, previous)
    try:  # every list's ranks in one pass in C (1,000 lists of one task at 1,000 threads)
        flat = list(map(_KEPT_RANK, chain.from_iterable(previous)))
    except AttributeError:  # a named task is in no pass; an unnamed one is keyed by value
        flat = [_rank_or_not_a_key(task) for task in chain.from_iterable(previous)]
    lengths = list(map(len, previous))
    if min(lengths, default=1) == max(lengths, default=1) == 1:
        return pass_keys, [[key] for key in flat]
    ranks = iter(flat)
    return pass_keys, [list(islice(ranks, length)) for length in lengths]


def _rank_or_not_a_key(task: TaskId) -> int:
    if task.topology is not None:
        return NOT_A_KEY
    return (task.subtopology << 31) | task.partition


def _keys_by_value(
    passes: Sequence[Collection[TaskId]], previous: Sequence[Sequence[TaskId]]
) -> tuple[list[list[int]], list[list[int]]]:
    for tasks in passes:
        if len({task.topology is None for task in tasks}) > 1:
            raise ValueError("cannot order tasks of named and unnamed topologies together")
    everyone = sorted(set().union(*passes), key=_KEPT_SORT_KEY)
    position = dict(zip(everyone, range(len(everyone)), strict=True))
    return (
        [list(map(position.__getitem__, tasks)) for tasks in passes],
        [list(map(position.get, tasks, repeat(NOT_A_KEY))) for tasks in previous],
    )


def hash_set_positions(ordered: list[TaskId]) -> list[int]:
    """A ``HashSet`` filled with sorted tasks, iterated, as positions in ``ordered``: by bucket
    then insertion, from the hashes alone unless a bucket grows a tree (then it is replayed)."""
    return hash_set_order(spread_task_hashes(ordered), list(map(_KEPT_SORT_KEY, ordered)))


_INT32_MASK = 0xFFFFFFFF
_INT32_SIGN = 0x80000000


def spread_task_hashes(ordered: Sequence[TaskId]) -> list[int]:
    """``spread(task_id_hash(task))`` of each task (``HashMap.hash`` of ``TaskId.hashCode``).

    For unnamed tasks, from each kept int rank in two comprehensions (``Objects.hash
    (subtopology, partition, null)`` is ``((31 + s) * 31 + p) * 31``, wrapped to 32 bits; the
    spread xors its high half in and reads the bits as a signed int): three Python calls per
    task were a fifth of tasks-to-threads when every active task is handed out in hash-set
    order (the first rebalance at 1,000 threads per client)."""
    try:
        ranks = list(map(_KEPT_RANK, ordered))
    except AttributeError:  # a named task, or one that keeps no rank
        return [spread(task_id_hash(t)) for t in ordered]
    hashes = [((31 + (r >> 31)) * 31 + (r & _PARTITION_BITS)) * 31 & _INT32_MASK for r in ranks]
    spread_bits = [h ^ (h >> 16) for h in hashes]
    return [x - ((x & _INT32_SIGN) << 1) for x in spread_bits]
