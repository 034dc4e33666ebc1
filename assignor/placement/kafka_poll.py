"""Kafka's constrained ``offer`` and ``poll`` done for real on a JDK-exact queue.

:class:`~assignor.placement.constrained_priority_set.ConstrainedPrioritySet` answers from keys
while it can prove the queue's order, and falls back to these steps when it cannot (or replays
them to rebuild the array). ``poll`` pops every client lighter than the answer and re-offers
them, which made it task movement's cost in large groups (issue 11: at 100,000 partitions over
1,000 clients the standby movement polled 99,800 times, popping 57 clients a poll on average).

Why the pops may run in C: when the queue's array is in heap order by the current keys and the
keys are distinct, ``heapq.heappop`` moves exactly the elements ``java.util.PriorityQueue.poll``
moves. Java's ``siftDown`` walks the path of smaller children and stops above the first child
heavier than the moved element; ``heapq`` walks the same path (which child is smaller does not
depend on the moved element; ties, which could send ``heapq`` right where Java goes left, do not
occur) to a leaf and bubbles the element back up, and in an ordered heap the children on that
path increase downwards, so it comes to rest in the same slot with the same children moved up
as Java's. ``heappush`` is Java's ``siftUp`` (rise while strictly below the parent) in any
array. An ordered heap stays ordered through pops and pushes, so one check per poll suffices.
A queue out of order (loads changed under it) takes Java's steps one by one.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from operator import itemgetter, le
from typing import Any

from assignor._java.hash_table import SubsetOrders
from assignor._java.priority_queue import JavaPriorityQueue

# Below this many queued clients the check and the copies cost more than Java's steps.
_ORDERED_FROM = 48
_CLIENT = itemgetter(1)


class OrderWatch:
    """Whether a real queue is known to be in heap order by the current keys, so that a poll
    can skip the check (a pass over the whole array).

    ``ordered`` holds right after a poll that found the queue ordered; ``changed`` then
    collects the queued clients whose keys changed since. Order survives while no step
    compares a changed client: re-offering a changed client removes it first (the removal
    compares only the others) and inserts it by its current key, which mends it; an insert
    of another client is checked along its path (:func:`_push_meets`); anything else forgets.
    """

    __slots__ = ("changed", "ordered")

    def __init__(self) -> None:
        self.ordered = True  # an empty queue
        self.changed: set[int] = set()

    def forget(self) -> None:
        self.ordered = False
        self.changed.clear()

    def keys_changed(self, clients: list[int], present: set[int]) -> None:
        if self.ordered:
            self.changed.update(c for c in clients if c in present)


def only(client: int) -> Callable[[int], bool]:
    """A ``valid`` that passes ``client`` alone (a replayed poll's known answer)."""
    return lambda c: c == client


def heap_offer(
    heap: JavaPriorityQueue, present: set[int], client: int, watch: OrderWatch | None = None
) -> None:
    """Kafka's ``offer``: a client already queued is removed first."""
    if client in present:
        if watch is not None and watch.ordered:
            changed = watch.changed
            changed.discard(client)
            if changed:
                watch.ordered = False  # the removal may compare changed clients
        heap.remove(client)
    else:
        present.add(client)
    if watch is not None and watch.ordered and watch.changed and _push_meets(
        heap, client, watch.changed
    ):
        watch.ordered = False
    heap.offer(client)


def _push_meets(heap: JavaPriorityQueue, client: int, changed: set[int]) -> bool:
    """Whether offering ``client`` (not queued) compares it with a client in ``changed``: the
    same walk up from the new last slot that ``offer`` makes."""
    keys = heap.keys
    queue = heap.queue
    key = keys[client]
    k = len(queue)
    while k > 0:
        parent = (k - 1) >> 1
        above = queue[parent]
        if above in changed:
            return True
        if key >= keys[above]:
            return False
        k = parent
    return False


def heap_poll(
    heap: JavaPriorityQueue,
    present: set[int],
    valid: Callable[[int], bool],
    orders: SubsetOrders,
    watch: OrderWatch | None = None,
) -> int | None:
    """Kafka's ``poll``: pop until a client passes, re-offer the passed-over ones from a new
    ``HashSet``. ``heap.keys[c]`` must be ``(load, c)`` (distinct, ending in the client);
    ``watch``, if given, follows this queue's steps (see :class:`OrderWatch`)."""
    queue = heap.queue
    if len(queue) >= _ORDERED_FROM:
        ranked: list[Any] = list(map(heap.keys.__getitem__, queue))
        if (watch is not None and watch.ordered and not watch.changed) or (
            all(map(le, ranked, ranked[1::2])) and all(map(le, ranked, ranked[2::2]))
        ):
            if watch is not None:
                watch.ordered = True
                watch.changed.clear()
            return _ordered_poll(heap, ranked, present, valid, orders)
    if watch is not None:
        watch.forget()
    skipped: list[int] = []
    found: int | None = None
    while heap.queue:
        client = heap.poll()
        assert client is not None
        present.discard(client)
        if valid(client):
            found = client
            break
        skipped.append(client)
    for client in orders.order(skipped):
        heap_offer(heap, present, client)
    return found


def _ordered_poll(
    heap: JavaPriorityQueue,
    ranked: list[Any],
    present: set[int],
    valid: Callable[[int], bool],
    orders: SubsetOrders,
) -> int | None:
    """:func:`heap_poll` on a queue in heap order, ``ranked`` its keys in array order: the
    same pops and offers with ``heapq`` on the keys (see the module's docstring), then the
    array of clients read back from the keys."""
    pop = heapq.heappop
    skipped: list[int] = []
    found: int | None = None
    while ranked:
        client: int = pop(ranked)[1]
        if valid(client):
            found = client
            break
        skipped.append(client)
    if found is not None:
        present.discard(found)  # the skipped ones are popped and queued again: still present
    if skipped:
        keys = heap.keys
        push = heapq.heappush
        for client in orders.order(skipped):  # none is queued: each offer is a push
            push(ranked, keys[client])
    heap.queue = list(map(_CLIENT, ranked))
    return found
