"""Kafka's constrained ``offer`` and ``poll`` done for real on a JDK-exact queue.

:class:`~assignor.placement.constrained_priority_set.ConstrainedPrioritySet` answers from keys
while it can prove the queue's order, and falls back to these steps when it cannot (or replays
them to rebuild the array). ``poll`` pops every client lighter than the answer and re-offers
them, which made it task movement's cost in large groups (issue 11: at 100,000 partitions over
1,000 clients the standby movement polled 99,800 times, popping 57 clients a poll on average).

:class:`RankQueue` is the real queue while the set runs Kafka's steps. Its array holds each
queued client's key as one int (:func:`rank`) instead of the client, so ``heapq``'s C functions
can do Java's steps, and ints compare several times faster than (load, client) tuples:

- ``heapq.heappush`` is ``java.util.PriorityQueue``'s ``offer``/``siftUp`` in any array (rise
  while strictly below the parent).
- ``heapq.heappop`` is Java's ``poll`` when the array is in heap order and ranks are distinct:
  Java's ``siftDown`` walks the path of smaller children and stops above the first child
  heavier than the moved element; ``heapq`` walks the same path (which child is smaller does
  not depend on the moved element; a tie, which could send ``heapq`` right where Java goes
  left, cannot occur) to a leaf and bubbles the element back up, and in an ordered heap the
  children on that path increase downwards, so it comes to rest in the same slot with the same
  children moved up. A queue out of order (loads changed under it) pops by Java's steps.
- Java compares by the *current* key; a queued client whose key changes gets its new rank in
  its slot (:meth:`RankQueue.rekey`), without moving, as Java's array does not move either.
- The queued ranks are also kept sorted (``by_rank``: a move changes two of them, ``bisect``
  in C): a poll of an ordered queue then knows the clients it passes over (every rank below
  the answer) without a Python step per pop. The pops and the re-offers themselves cannot be
  skipped: the array they leave decides later polls once loads change under the queue, and
  it depends on the order of the re-offers (checked on random heaps: pushing the same small
  keys in another order and popping them again leaves another array in most cases).

Knowing the order without a pass over the array: it holds after a poll that found it, and
survives while no step compares a client whose key changed since (``changed``): re-offering a
changed client removes it first (the removal compares only the others) and inserts it by its
current key, which mends it; an insert of another client is checked along its path
(:meth:`RankQueue._push_meets`); anything else forgets it until the next poll checks.
"""

from __future__ import annotations

import heapq
import struct
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import repeat
from operator import le

from assignor._java.hash_table import SubsetOrders

POLL = 1  # a logged step's kind for :func:`replay` (any other: an offer)
_LOW = (1 << 32) - 1  # a rank's client bits
_CLIENT = _LOW.__and__
_PACK = struct.Struct("<d").pack
_UNPACK = struct.Struct("<q").unpack


def rank(key: tuple[float, int]) -> int:
    """``key`` = (load, client) as one int that orders as the tuple does. A double's bits read
    as a signed int order non-negative doubles, and negated magnitudes order negative ones
    (-0.0 and 0.0 both map to 0, equal as in the tuple); the client fills the low 32 bits."""
    bits: int = _UNPACK(_PACK(key[0]))[0]
    if bits < 0:
        bits = -(bits & 0x7FFF_FFFF_FFFF_FFFF)
    return (bits << 32) + key[1]


class RankQueue:
    """``java.util.PriorityQueue`` of client ints compared by ``rank_of`` (see the module)."""

    __slots__ = ("arr", "by_rank", "changed", "ordered", "rank_of", "slot")

    def __init__(self, rank_of: list[int], clients: Iterable[int] = ()) -> None:
        """``clients``: an existing array, in slot order, taken as it is."""
        self.rank_of = rank_of  # shared with the caller, kept current through ``rekey``
        self.arr = list(map(rank_of.__getitem__, clients))
        # the queued ranks in order, whatever the layout: a move changes a few of them, while
        # a poll of an ordered queue pops every rank below its answer (see ``poll``)
        self.by_rank = sorted(self.arr)
        # where ``rekey`` last found a queued client: a move rekeys the destination and then
        # re-offers it, and it is usually still there (``_remove`` checks before trusting it)
        self.slot = 0
        self.ordered = not self.arr  # known to be in heap order
        self.changed: set[int] = set()  # queued clients rekeyed since order was known

    @property
    def queue(self) -> list[int]:
        """The array of clients, as Java iterates it."""
        return list(map(_CLIENT, self.arr))

    def __iter__(self) -> Iterator[int]:
        return iter(self.queue)

    def rekey(self, client: int, new: int, queued: bool) -> None:
        old = self.rank_of[client]
        if new == old:
            return
        if queued:
            arr = self.arr
            i = self.slot = arr.index(old)
            arr[i] = new
            by_rank = self.by_rank
            del by_rank[bisect_left(by_rank, old)]
            insort(by_rank, new)
            if self.ordered:
                self.changed.add(client)
        self.rank_of[client] = new

    def is_heap_ordered(self) -> bool:
        """Slot ``i``'s children are ``2i+1`` and ``2i+2``: the left children, in slot order,
        pair with the parents in slot order, and so do the right children."""
        arr = self.arr
        return all(map(le, arr, arr[1::2])) and all(map(le, arr, arr[2::2]))

    def refill(self, clients: Iterable[int]) -> None:
        """``clear()``, then ``offer`` each client in turn."""
        arr: list[int] = []
        push = heapq.heappush
        for r in map(self.rank_of.__getitem__, clients):
            push(arr, r)
        self.arr = arr
        self.by_rank = sorted(arr)
        self.ordered = True
        self.changed.clear()

    def offer(self, client: int, present: set[int]) -> None:
        """Kafka's ``offer``: a client already queued is removed first."""
        self.remove(client, present)
        present.add(client)
        r = self.rank_of[client]
        if self.ordered and self.changed and self._push_meets(r):
            self.ordered = False
        heapq.heappush(self.arr, r)
        insort(self.by_rank, r)

    def remove(self, client: int, present: set[int]) -> bool:
        """``remove(Object)``: whether the client was queued."""
        if client not in present:
            return False
        if self.ordered:
            changed = self.changed
            changed.discard(client)
            if changed:
                self.ordered = False  # the removal may compare changed clients
        self._remove(client)
        by_rank = self.by_rank
        del by_rank[bisect_left(by_rank, self.rank_of[client])]
        present.discard(client)
        return True

    def poll(
        self,
        present: set[int],
        valid: Callable[[int], bool],
        orders: SubsetOrders,
        candidates: Collection[int] | None = None,
    ) -> int | None:
        """Kafka's ``poll``: pop until a client passes, re-offer the passed-over ones from a
        new ``HashSet``. ``candidates``, if given, holds every client that can pass.

        In an ordered queue the pops come out lightest first, so the answer is the lightest
        queued client that passes (with ``candidates``: the lightest queued candidate), and the
        clients passed over are every queued client lighter than it: read off ``by_rank``
        rather than popped one Python step at a time (the pops, which give Java's array,
        still happen, in C); if none passes, every client pops, in rank order, and the
        re-offers refill an empty queue."""
        arr = self.arr
        by_rank = self.by_rank
        skipped: list[int] = []
        found: int | None = None
        if (self.ordered and not self.changed) or self.is_heap_ordered():
            self.ordered = True
            self.changed.clear()
            best: int | None = None
            lighter = 0
            if candidates is not None:
                rank_of = self.rank_of
                best = min(
                    (rank_of[c] for c in candidates if c in present and valid(c)), default=None
                )
                if best is not None:
                    lighter = bisect_left(by_rank, best)
            else:
                for r in by_rank:
                    if valid(r & _LOW):
                        best = r
                        break
                    lighter += 1
            if best is None:
                skipped = list(map(_CLIENT, by_rank))
                arr.clear()
            else:
                skipped = list(map(_CLIENT, by_rank[:lighter]))
                deque(map(heapq.heappop, repeat(arr, lighter + 1)), maxlen=0)
                del by_rank[lighter]
                found = best & _LOW
        else:
            self.ordered = False
            self.changed.clear()
            while arr:
                client = self._poll_one()
                if valid(client):
                    found = client
                    del by_rank[bisect_left(by_rank, self.rank_of[client])]
                    break
                skipped.append(client)
        if found is not None:
            present.discard(found)  # the skipped ones are popped and queued again: still there
        if skipped:  # none is queued: each offer is a push
            push = heapq.heappush
            rank_of = self.rank_of
            for client in orders.order(skipped):
                push(arr, rank_of[client])
        return found

    # --- Java's steps where heapq's would differ ------------------------------------------------

    def _push_meets(self, r: int) -> bool:
        """Whether offering rank ``r`` compares it with a changed client: the same walk up from
        the new last slot that the push makes."""
        arr = self.arr
        changed = self.changed
        k = len(arr)
        while k > 0:
            parent = (k - 1) >> 1
            above = arr[parent]
            if above & _LOW in changed:
                return True
            if r >= above:
                return False
            k = parent
        return False

    def _poll_one(self) -> int:
        arr = self.arr
        result = arr[0]
        last = arr.pop()
        if arr:
            self._sift_down(0, last)
        return result & _LOW

    def _remove(self, client: int) -> None:
        """``remove(Object)``: the client's slot, then ``removeAt``."""
        arr = self.arr
        r = self.rank_of[client]
        i = self.slot
        if i >= len(arr) or arr[i] != r:  # ranks are distinct: a match is the client
            i = arr.index(r)
        moved = arr.pop()
        if i == len(arr):
            return
        self._sift_down(i, moved)
        if arr[i] == moved:
            self._sift_up(i, moved)

    def _sift_up(self, k: int, x: int) -> None:
        arr = self.arr
        while k > 0:
            parent = (k - 1) >> 1
            e = arr[parent]
            if x >= e:
                break
            arr[k] = e
            k = parent
        arr[k] = x

    def _sift_down(self, k: int, x: int) -> None:
        arr = self.arr
        n = len(arr)
        half = n >> 1
        while k < half:
            child = 2 * k + 1
            c = arr[child]
            right = child + 1
            if right < n and c > arr[right]:
                child = right
                c = arr[child]
            if x <= c:
                break
            arr[k] = c
            k = child
        arr[k] = x


# --- the replay of a logged stretch, on a queue of the ranks each step saw ----------------------


def replay(
    ranks: list[int],
    start: list[int] | None,
    refill: Iterable[int],
    steps: Iterable[tuple[int, int, Iterable[tuple[int, int]]]],
    orders: SubsetOrders,
) -> tuple[RankQueue, set[int]]:
    """The real queue after a lazy stretch of ``ConstrainedPrioritySet``: every client queued,
    laid out as ``start`` (an array of clients) or, if ``None``, filled by offers in
    ``refill``'s order, compared by ``ranks`` (taken, not copied); then each logged step
    (kind: :data:`POLL` or an offer; the client; each (client, rank) that step and the later
    ones see, set in place as in Java's array). A logged poll's answer is known, so its
    ``valid`` passes that client alone; the pops and re-offers are the real queue's, in C
    while the array is in order (Java's steps otherwise), where the old replay took Java's
    steps one Python call per pop."""
    queue = RankQueue(ranks, start if start is not None else ())
    if start is None:
        queue.refill(refill)
    present = set(range(len(ranks)))
    for kind, client, overrides in steps:
        for c, r in overrides:
            queue.rekey(c, r, c in present)
        if kind == POLL:
            found = queue.poll(present, client.__eq__, orders, (client,))
            assert found == client, "a logged poll replayed differently"
        else:
            queue.offer(client, present)
    return queue, present
