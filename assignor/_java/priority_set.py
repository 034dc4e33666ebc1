"""The two Java collection orders that leak into Kafka's task assignment, emulated exactly.

``java.util.PriorityQueue`` is a binary heap in an array. Kafka's ``ConstrainedPrioritySet``
keeps clients in one while their loads change underneath it, so the heap can be out of order
for a moment and ``poll()`` then answers by *array layout*, not by the true minimum. To give
Kafka's answer in those moments the array itself must be the same: :class:`JavaHeap` performs
exactly the JDK 17 ``siftUp``/``siftDown``/``removeAt`` steps.

Clients that a poll skipped are put back from a ``java.util.HashSet``, whose iteration order is
its hash-table order: :func:`hash_iteration_order` reproduces it from Java's ``hashCode`` of
``UUID``/``TaskId`` (:func:`uuid_hash`, :func:`task_id_hash`). The red-black "treeified" bins
of a table of 64+ buckets holding 9+ colliding keys are not emulated (one bucket out of 64 or
more receiving nine keys essentially never happens for UUIDs or task ids; it is detected and
logged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final

from assignor._java.java_hash import process_hash, task_hash

log = logging.getLogger(__name__)

_MASK32: Final = 0xFFFFFFFF
_TREEIFY_THRESHOLD: Final = 8
_MIN_TREEIFY_CAPACITY: Final = 64


#: Java's hash codes live in ``assignor._java.java_hash``; these names are kept
#: for this module's users.
uuid_hash = process_hash
task_id_hash = task_hash


def spread(hash_code: int) -> int:
    """``HashMap.hash``: fold the high half into the low half (as an unsigned 32-bit value)."""
    h = hash_code & _MASK32
    return h ^ (h >> 16)


def hash_iteration_order(spread_hashes: Sequence[int]) -> list[int]:
    """Iteration order of a default ``HashSet``/``HashMap`` filled in the given order.

    Takes each key's :func:`spread` hash, in insertion order, and returns the insertion
    positions in the order Java iterates them: by bucket of the final table, insertion order
    within a bucket (resizes split buckets without reordering them).
    """
    count = len(spread_hashes)
    capacity = 16
    while count > capacity * 3 // 4:
        capacity *= 2
    if count <= _TREEIFY_THRESHOLD:
        mask = capacity - 1
        return sorted(range(count), key=lambda i: spread_hashes[i] & mask)
    # A bucket that would reach 9 entries in a table under 64 buckets makes Java resize.
    while True:
        mask = capacity - 1
        sizes: dict[int, int] = {}
        worst = 0
        for h in spread_hashes:
            bucket = h & mask
            size = sizes.get(bucket, 0) + 1
            sizes[bucket] = size
            worst = max(worst, size)
        if worst <= _TREEIFY_THRESHOLD or capacity >= _MIN_TREEIFY_CAPACITY:
            break
        capacity *= 2
    if worst > _TREEIFY_THRESHOLD:
        log.warning(
            "a Java hash bucket holds %d keys and would be a red-black tree; iteration order "
            "may differ from Kafka's",
            worst,
        )
    return sorted(range(count), key=lambda i: spread_hashes[i] & mask)


class JavaHeap:
    """``java.util.PriorityQueue`` of small ints whose keys live outside the heap.

    ``keys[e]`` is element ``e``'s comparison key (a tuple, compared as Java's comparator would);
    the caller may change keys while elements sit in the heap, exactly as Kafka does.
    """

    __slots__ = ("keys", "queue")

    def __init__(self, keys: list[tuple[float, int]] | list[tuple[int, int]]) -> None:
        self.keys: Sequence[tuple[float, int] | tuple[int, int]] = keys
        self.queue: list[int] = []

    def __len__(self) -> int:
        return len(self.queue)

    def offer(self, element: int) -> None:
        self.queue.append(element)
        self._sift_up(len(self.queue) - 1, element)

    def poll(self) -> int:
        queue = self.queue
        result = queue[0]
        last = queue.pop()
        if queue:
            self._sift_down(0, last)
        return result

    def remove(self, element: int) -> bool:
        """``remove(Object)``: the first array slot holding ``element``, then ``removeAt``."""
        queue = self.queue
        try:
            i = queue.index(element)
        except ValueError:
            return False
        s = len(queue) - 1
        if s == i:
            queue.pop()
            return True
        moved = queue.pop()
        self._sift_down(i, moved)
        if queue[i] == moved:
            self._sift_up(i, moved)
        return True

    def _sift_up(self, k: int, x: int) -> None:
        queue = self.queue
        keys = self.keys
        kx = keys[x]
        while k > 0:
            parent = (k - 1) >> 1
            e = queue[parent]
            if kx >= keys[e]:
                break
            queue[k] = e
            k = parent
        queue[k] = x

    def _sift_down(self, k: int, x: int) -> None:
        queue = self.queue
        keys = self.keys
        n = len(queue)
        half = n >> 1
        kx = keys[x]
        while k < half:
            child = 2 * k + 1
            c = queue[child]
            kc = keys[c]
            right = child + 1
            if right < n and kc > keys[queue[right]]:
                child = right
                c = queue[child]
                kc = keys[c]
            if kx <= kc:
                break
            queue[k] = c
            k = child
        queue[k] = x


class ConstrainedPrioritySet:
    """Kafka's ``ConstrainedPrioritySet`` over client indices, step for step.

    ``poll`` takes the lightest client (by ``keys``) that ``valid`` accepts; clients it passed
    over go back in the order of the Java ``HashSet`` that held them. ``spread_hashes[c]`` is
    client ``c``'s :func:`spread` ``UUID`` hash.
    """

    __slots__ = ("_all_in_hash_order", "_heap", "_present", "_spread")

    def __init__(self, keys: list[tuple[float, int]], spread_hashes: Sequence[int]) -> None:
        self._heap = JavaHeap(keys)
        self._present: set[int] = set()
        self._spread = spread_hashes
        self._all_in_hash_order: list[int] | None = None

    def offer(self, client: int) -> None:
        if client in self._present:
            self._heap.remove(client)
        else:
            self._present.add(client)
        self._heap.offer(client)

    def offer_all(self, clients: Sequence[int]) -> None:
        for client in clients:
            self.offer(client)

    def poll(self, valid: Callable[[int], bool]) -> int | None:
        heap = self._heap
        present = self._present
        skipped: list[int] = []
        while heap.queue:
            client = heap.poll()
            present.discard(client)
            if valid(client):
                self._offer_skipped(skipped)
                return client
            skipped.append(client)
        self._offer_skipped(skipped)
        return None

    def poll_none_valid(self) -> None:
        """What ``poll`` does when the caller knows no client qualifies: empty, then refill.

        Equal to ``poll`` in that case, without replaying every pop: when the heap is in order
        the pops come out sorted, and when no two clients share a hash bucket the refill order
        does not even depend on the pop order. Otherwise the pops are replayed.
        """
        heap = self._heap
        if len(self._present) != len(self._spread):
            self.poll(lambda client: False)
            return
        order = self._all_hash_order()
        if order is None:
            queue = heap.queue
            keys = heap.keys
            n = len(queue)
            for child in range(1, n):
                if keys[queue[(child - 1) >> 1]] > keys[queue[child]]:
                    self.poll(lambda client: False)
                    return
            popped = sorted(queue, key=keys.__getitem__)
            spread_hashes = self._spread
            order = [popped[i] for i in hash_iteration_order([spread_hashes[c] for c in popped])]
        # Refill: sequential offers into an empty heap (siftUp inlined, it runs C times here).
        keys = heap.keys
        queue = []
        for client in order:
            k = len(queue)
            queue.append(client)
            key = keys[client]
            while k > 0:
                parent = (k - 1) >> 1
                above = queue[parent]
                if key >= keys[above]:
                    break
                queue[k] = above
                k = parent
            queue[k] = client
        heap.queue = queue

    def _all_hash_order(self) -> list[int] | None:
        if self._all_in_hash_order is None:
            count = len(self._spread)
            capacity = 16
            while count > capacity * 3 // 4:
                capacity *= 2
            buckets = {h & (capacity - 1) for h in self._spread}
            if len(buckets) != count:
                self._all_in_hash_order = []
            else:
                self._all_in_hash_order = hash_iteration_order(self._spread)
        return self._all_in_hash_order or None

    def _offer_skipped(self, skipped: list[int]) -> None:
        if not skipped:
            return
        if len(skipped) == 1:
            self.offer(skipped[0])
            return
        spread_hashes = self._spread
        for i in hash_iteration_order([spread_hashes[c] for c in skipped]):
            self.offer(skipped[i])
