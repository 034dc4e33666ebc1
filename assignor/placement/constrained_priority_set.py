"""Kafka's ``ConstrainedPrioritySet``: the lightest client that meets a constraint, step for step.

Task movement keeps its candidate clients here. Kafka's class is a ``java.util.PriorityQueue``
of clients ordered by (load, ``ProcessId``) plus a ``HashSet`` of the clients in it; ``poll``
takes clients off the queue until one qualifies and puts the ones it passed over back from a
new ``HashSet``, in that set's iteration order. Loads change while clients sit in the queue,
so the answers depend on the queue's array and the set's order: both come from the one Java
collections emulation, :mod:`assignor._java`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from assignor._java.hash_table import grown_table_length, hash_set_order
from assignor._java.priority_queue import JavaPriorityQueue


class ConstrainedPrioritySet:
    """Kafka's ``ConstrainedPrioritySet`` over client indices, step for step.

    ``keys[c]`` is client ``c``'s (load, ``c``), read at every comparison (the caller updates
    it); client numbers must sort as their ``ProcessId``s do. ``spread_hashes[c]`` is client
    ``c``'s spread ``ProcessId`` hash (:func:`assignor._java.hash_codes.spread`).
    """

    __slots__ = ("_all_in_hash_order", "_heap", "_present", "_settled", "_spread")

    def __init__(self, keys: list[tuple[float, int]], spread_hashes: Sequence[int]) -> None:
        self._heap = JavaPriorityQueue(keys)
        self._present: set[int] = set()
        self._spread = spread_hashes
        self._all_in_hash_order: list[int] | None = None
        # The keys a fast poll_none_valid last refilled the queue with, while nothing has
        # touched the queue since: repeating it with the same keys reproduces the same array.
        self._settled: list[tuple[float, int]] | None = None

    def offer(self, client: int) -> None:
        self._settled = None
        if client in self._present:
            self._heap.remove(client)
        else:
            self._present.add(client)
        self._heap.offer(client)

    def offer_all(self, clients: Sequence[int]) -> None:
        for client in clients:
            self.offer(client)

    def poll(self, valid: Callable[[int], bool]) -> int | None:
        self._settled = None
        heap = self._heap
        present = self._present
        skipped: list[int] = []
        while heap.queue:
            client = heap.poll()
            assert client is not None
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
        does not even depend on the pop order. Otherwise the pops are replayed. Done twice in a
        row with the same loads, the second changes nothing and is skipped.
        """
        heap = self._heap
        keys = heap.keys
        if self._settled is not None and self._settled == keys:
            return
        if len(self._present) != len(self._spread):
            self.poll(lambda client: False)
            return
        order = self._all_hash_order()
        if order is None:
            if not heap.is_heap_ordered():
                self.poll(lambda client: False)
                return
            popped = sorted(heap.queue, key=keys.__getitem__)
            spread_hashes = self._spread
            order = [popped[i] for i in hash_set_order([spread_hashes[c] for c in popped], popped)]
        heap.refill(order)
        self._settled = list(keys)

    def _all_hash_order(self) -> list[int] | None:
        """Every client in hash-set order, if no two share a bucket of the final table: then
        the order is by bucket whatever the insertion order (``None`` otherwise)."""
        if self._all_in_hash_order is None:
            spread_hashes = self._spread
            mask = grown_table_length(len(spread_hashes)) - 1
            if len({h & mask for h in spread_hashes}) != len(spread_hashes):
                self._all_in_hash_order = []
            else:
                self._all_in_hash_order = sorted(
                    range(len(spread_hashes)), key=lambda c: spread_hashes[c] & mask
                )
        return self._all_in_hash_order or None

    def _offer_skipped(self, skipped: list[int]) -> None:
        if not skipped:
            return
        if len(skipped) == 1:
            self.offer(skipped[0])
            return
        spread_hashes = self._spread
        for i in hash_set_order([spread_hashes[c] for c in skipped], skipped):
            self.offer(skipped[i])
