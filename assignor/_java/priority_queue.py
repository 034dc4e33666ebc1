"""``java.util.PriorityQueue`` (JDK 17), with the same array, so the same answers and iteration.

A binary heap's array depends on the exact sequence of sift steps, and Kafka lets that array
leak: its thread distribution hands out leftover tasks in the queue's *iteration* (array)
order, and its ``ConstrainedPrioritySet`` changes clients' loads while they sit in the queue,
so ``poll()`` then answers by array layout rather than by the true minimum. This heap performs
exactly JDK 17's ``heapify``, ``offer``/``siftUp``, ``poll``/``siftDown`` and
``remove(Object)``/``removeAt``, and iterates its array as Java's iterator does.

Elements are distinct small ints (callers number their clients or tasks); element ``e`` is
compared by ``keys[e]``, which plays Java's comparator: keys compare as the comparator would,
and the caller may change them at any time, exactly as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from operator import le
from typing import Any


class JavaPriorityQueue:
    """``java.util.PriorityQueue`` of distinct ints ordered by ``keys[e]``.

    ``items``: ``new PriorityQueue<>(collection)`` of that iteration order (heapified, as Java
    does for a collection that is neither a ``SortedSet`` nor a ``PriorityQueue``; a sorted
    collection is already a heap, so heapifying it changes nothing). ``indexed``: keep each
    element's slot so that ``remove`` finds it without Java's linear scan (the same slot, as
    elements are distinct); worth it where removals are many and the heap is large.
    """

    __slots__ = ("_pos", "keys", "queue")

    def __init__(
        self, keys: Sequence[Any], items: Iterable[int] = (), *, indexed: bool = False
    ) -> None:
        self.keys = keys
        queue = list(items)
        self.queue = queue
        self._pos: dict[int, int] | None = None
        if indexed:
            self._pos = {x: i for i, x in enumerate(queue)}
        n = len(queue)
        for i in range((n >> 1) - 1, -1, -1):
            self._sift_down(i, queue[i])

    def __len__(self) -> int:
        return len(self.queue)

    def __iter__(self) -> Iterator[int]:
        """The array order, as Java's iterator walks it."""
        return iter(list(self.queue))

    def __contains__(self, element: object) -> bool:
        if self._pos is not None:
            return element in self._pos
        return element in self.queue

    def offer(self, element: int) -> None:
        queue = self.queue
        if self._pos is not None:
            queue.append(element)
            self._sift_up(len(queue) - 1, element)
            return
        # ``_sift_up`` inlined for the unindexed queue: offers are task movement's commonest step
        keys = self.keys
        key = keys[element]
        k = len(queue)
        queue.append(element)
        while k > 0:
            parent = (k - 1) >> 1
            e = queue[parent]
            if key >= keys[e]:
                break
            queue[k] = e
            k = parent
        queue[k] = element

    def poll(self) -> int | None:
        """The head (``None`` if empty); the last element sifts down from the root."""
        queue = self.queue
        if not queue:
            return None
        result = queue[0]
        if self._pos is not None:
            del self._pos[result]
        last = queue.pop()
        if queue:
            self._sift_down(0, last)
        return result

    def remove(self, element: int) -> bool:
        """``remove(Object)``: the element's slot, then ``removeAt``."""
        queue = self.queue
        if self._pos is not None:
            found = self._pos.pop(element, None)
            if found is None:
                return False
            i = found
        else:
            try:
                i = queue.index(element)
            except ValueError:
                return False
        moved = queue.pop()
        if i == len(queue):
            return True
        self._sift_down(i, moved)
        if queue[i] == moved:
            self._sift_up(i, moved)
        return True

    def is_heap_ordered(self) -> bool:
        """No parent above its child by the current keys (keys may have changed since).

        Slot ``i``'s children are ``2i+1`` and ``2i+2``: the left children, in slot order, pair
        with the parents in slot order, and so do the right children.
        """
        ranked = list(map(self.keys.__getitem__, self.queue))
        return all(map(le, ranked, ranked[1::2])) and all(map(le, ranked, ranked[2::2]))

    def refill(self, elements: Iterable[int]) -> None:
        """``clear()``, then ``offer`` each element in turn (``siftUp`` inlined: hot path)."""
        keys = self.keys
        queue: list[int] = []
        for element in elements:
            k = len(queue)
            queue.append(element)
            key = keys[element]
            while k > 0:
                parent = (k - 1) >> 1
                above = queue[parent]
                if key >= keys[above]:
                    break
                queue[k] = above
                k = parent
            queue[k] = element
        self.queue = queue
        if self._pos is not None:
            self._pos = {x: i for i, x in enumerate(queue)}

    def _sift_up(self, k: int, x: int) -> None:
        queue = self.queue
        keys = self.keys
        pos = self._pos
        kx = keys[x]
        while k > 0:
            parent = (k - 1) >> 1
            e = queue[parent]
            if kx >= keys[e]:
                break
            queue[k] = e
            if pos is not None:
                pos[e] = k
            k = parent
        queue[k] = x
        if pos is not None:
            pos[x] = k

    def _sift_down(self, k: int, x: int) -> None:
        queue = self.queue
        keys = self.keys
        pos = self._pos
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
            if pos is not None:
                pos[c] = k
            k = child
        queue[k] = x
        if pos is not None:
            pos[x] = k
