"""Kafka's ``ConstrainedPrioritySet``: the lightest client that meets a constraint, step for step.

Task movement keeps its candidate clients here. Kafka's class is a ``java.util.PriorityQueue``
of clients ordered by (load, ``ProcessId``) plus a ``HashSet`` of the clients in it; ``poll``
takes clients off the queue until one qualifies and puts the ones it passed over back from a
new ``HashSet``, in that set's iteration order. Loads change while clients sit in the queue
(a client that gives a task away is re-offered only after a client that took one), so the
queue's array can end up out of heap order, and then ``poll`` answers by the array layout, not
by the true minimum: the array itself must be reproduced (:mod:`assignor._java`).

Replaying every step is what made task movement slow (each poll pops and re-offers every client
lighter than the answer). This class does the same steps lazily. From a *reset* (a poll nobody
passes, which empties the queue and refills it in hash-set order: task movement does one per
movement whenever no caught-up client holds a standby) it only logs what happens, and answers a
poll from the keys whenever the queue is provably in heap order: keys are distinct (load, client),
so a poll of an ordered heap answers the lightest qualifying client, whatever the layout. The
queue is provably ordered after a reset and stays so while no client's key changes while it sits
in the queue (a client re-offered right after its own key changed is fine: removing it compares
only the others). Anything else (a poll once order may be lost, a reset that depends on the pop
order) first rebuilds the real array by replaying the log from the reset with the keys each step
saw, then continues exactly as Kafka does.

The caller must append a client to ``touched`` whenever its key changes (the workspace does).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from assignor._java.hash_table import SubsetOrders, grown_table_length
from assignor.placement.kafka_poll import POLL, RankQueue, rank, replay

_OFFER = 0
# a removal whose changed client's old and new key bracket more sorted entries than this is
# treated as order-breaking without looking (a look costs one step per entry)
_BETWEEN_LIMIT = 8
# up to this many clients a scan of the queued keys is cheaper than keeping them sorted
_SMALL = 32

# One logged step: kind, client, and the keys (client, key) the replay must see from then on.
_Step = tuple[int, int, tuple[tuple[int, Any], ...]]


class ConstrainedPrioritySet:
    """Kafka's ``ConstrainedPrioritySet`` over client indices ``0 .. n-1``.

    ``keys[c]`` is client ``c``'s (load, ``c``), read at every comparison (the caller updates
    it and appends ``c`` to ``touched``); client numbers must sort as their ``ProcessId``s do.
    ``spread_hashes[c]`` is client ``c``'s spread ``ProcessId`` hash
    (:func:`assignor._java.hash_codes.spread`).
    """

    __slots__ = (
        "_all_in_hash_order",
        "_base_array",
        "_base_keys",
        "_base_order",
        "_base_ranks",
        "_base_sorted",
        "_dirty",
        "_heap",
        "_keys",
        "_log",
        "_logged",
        "_ordered",
        "_orders",
        "_pending",
        "_present",
        "_ranks",
        "_seen",
        "_sorted",
        "_sorted_key",
        "_spread",
        "_start_seen",
        "_touched",
    )

    def __init__(
        self, keys: list[Any], spread_hashes: Sequence[int], touched: list[int]
    ) -> None:
        n = len(spread_hashes)
        self._keys = keys
        self._spread = spread_hashes
        self._orders = SubsetOrders(spread_hashes)
        self._touched = touched
        self._seen = len(touched)
        # every client's key as an int (kafka_poll.rank), kept current from ``touched`` while
        # the set runs Kafka's steps, rebuilt when it stops being lazy
        self._ranks = list(map(rank, keys))
        self._heap = RankQueue(self._ranks)  # the real queue while ``_log`` is None
        self._present: set[int] = set()
        self._all_in_hash_order: list[int] | None = None
        # Every client's key in key order (stale only for clients in ``_dirty``), built when
        # first needed.
        self._sorted: list[Any] | None = None
        self._sorted_key: list[Any] = [None] * n
        self._dirty: set[int] = set()
        # The lazy state: ``_log`` is None while ``_heap`` is the real queue; otherwise the real
        # queue is the reset's (``_base_array``, or a refill in ``_base_order``, or in the hash
        # order of the clients sorted by ``_base_keys``) followed by the logged steps.
        self._log: list[_Step] | None = None
        self._base_array: list[int] | None = None
        self._base_order: list[int] | None = None
        self._base_keys: list[Any] = []
        self._base_ranks: list[int] | None = None  # ``_base_keys``'s ranks, if known then
        self._start_seen = 0  # ``len(touched)`` when the stretch began
        # ``_sorted`` as it was at the reset, when the refill order depends on the pop order:
        # a replay then reads the clients in key order from it instead of sorting them again
        self._base_sorted: list[Any] | None = None
        # the key the replay compares a client by, so far, where it is not ``_base_keys``'s
        self._logged: dict[int, Any] = {}
        self._ordered = False  # the real queue is in heap order by the keys the log holds
        # a client whose re-offer, as the very next step, puts the queue back in heap order
        self._pending: int | None = None

    # --- Kafka's operations --------------------------------------------------------------------

    def offer(self, client: int) -> None:
        self._drain()
        keys = self._keys
        if self._log is not None:
            overrides: tuple[tuple[int, Any], ...] = ((client, keys[client]),)
            dirty = self._dirty
            pending = self._pending
            self._pending = None
            others: list[int] = []
            if dirty and (len(dirty) > 1 or client not in dirty):
                others = [c for c in self._changed() if c != client]
                if others and not self._same_outcomes(client, others):
                    if self._ordered and (
                        self._repaired_by_reoffer(client, others)
                        or self._removal_repaired_by_reoffer(client, others)
                    ):
                        self._pending = others[0]
                    self._ordered = False
                    overrides = tuple((c, keys[c]) for c in others) + overrides
            if pending == client and not others:
                self._ordered = True  # see _repaired_by_reoffer
            logged = self._logged
            for c, key in overrides:
                logged[c] = key
            self._log.append((_OFFER, client, overrides))
            self._present.add(client)
        else:
            self._heap.offer(client, self._present)
        if self._sorted is not None:
            self._resort(client)
        else:
            self._dirty.discard(client)

    def offer_all(self, clients: Sequence[int]) -> None:
        for client in clients:
            self.offer(client)

    def poll(
        self, valid: Callable[[int], bool], candidates: Collection[int] | None = None
    ) -> int | None:
        """The lightest client that passes ``valid``; ``candidates``, if given, holds every
        client that can pass (the rest are known to fail)."""
        self._drain()
        if self._log is not None and self._ordered and not self._changed():
            found = self._lightest(valid, candidates)
            if found is not None:
                self._log.append((POLL, found, ()))
                self._present.discard(found)
                return found
            if len(self._present) == len(self._spread):
                self._reset_ordered()  # Kafka popped everyone and refilled: a reset
                return None
        self._materialize()
        found = self._heap.poll(self._present, valid, self._orders, candidates)
        if found is None:
            self._after_exact_reset()
        return found

    def poll_none_valid(self) -> None:
        """What ``poll`` does when the caller knows no client qualifies: empty, then refill."""
        self._drain()
        all_present = len(self._present) == len(self._spread)
        if (
            self._log is not None
            and all_present
            and (self._hash_order() is not None or (self._ordered and not self._changed()))
        ):
            self._reset_ordered()
            return
        self._materialize()
        if all_present and self._hash_order() is not None:
            self._heap.refill(self._hash_order() or [])
        elif all_present and self._heap.is_heap_ordered():
            self._start(None, None)  # the pops would come out sorted
            return
        else:
            self._heap.poll(self._present, lambda client: False, self._orders)
        self._after_exact_reset()

    def layout(self) -> list[int]:
        """The real queue's array (Java's iteration order), rebuilt if need be; changes nothing."""
        if self._log is None:
            return list(self._heap)
        heap, _ = self._replay()
        return heap.queue

    # --- the lazy state -----------------------------------------------------------------------

    def _drain(self) -> None:
        touched = self._touched
        if len(touched) > self._seen:
            fresh = touched[self._seen :]
            self._dirty.update(fresh)
            self._seen = len(touched)
            if self._log is None:  # the real queue compares by the new keys from now on
                keys = self._keys
                heap = self._heap
                present = self._present
                for c in fresh:
                    heap.rekey(c, rank(keys[c]), c in present)

    def _changed(self) -> list[int]:
        """Clients in the queue whose key is not the one the replay compares them by."""
        keys = self._keys
        logged = self._logged
        base = self._base_keys
        present = self._present
        return [
            c for c in self._dirty if c in present and keys[c] != logged.get(c, base[c])
        ]

    def _same_outcomes(self, client: int, others: list[int]) -> bool:
        """Whether inserting ``client`` compares it with each changed client exactly as it
        would with that client's old key: then the queue stays in order by the old keys (an
        insert compares only the new key with its ancestors), and the changed clients keep
        their old keys in the log. Task movement: the source takes a task while the
        destination, still queued, gives it away; they compare alike unless their loads meet.
        """
        if client in self._present and not self._nothing_between(client, others):
            return False  # a removal first: it compares other clients with each other
        keys = self._keys
        key = keys[client]
        logged = self._logged
        base = self._base_keys
        return all((key < keys[c]) == (key < logged.get(c, base[c])) for c in others)

    def _repaired_by_reoffer(self, client: int, others: list[int]) -> bool:
        """Whether inserting ``client`` (not queued) leaves the queue in heap order by the
        current keys once the one changed client in ``others``, whose key fell, is re-offered
        next (then ``offer`` restores ``_ordered``; any other step first replays).

        Why: the insert compares the new key only with its ancestors; where it meets the
        changed client (new key below, old key above the inserted one) it stops beneath it
        instead of rising past it. The changed client's removal then needs every client above
        its slot lighter than everything below: it holds when no other queued key lies between
        the inserted key and the changed client's old key. Task movement: the polled source
        takes a task, the queued destination gives it away, both are re-offered in that order.
        """
        if client in self._present or len(others) != 1:
            return False
        changed = others[0]
        keys = self._keys
        old = self._logged.get(changed, self._base_keys[changed])
        key = keys[client]
        if not keys[changed] < key < old:
            return False
        return self._none_queued_between(key, old, (client, changed))

    def _removal_repaired_by_reoffer(self, client: int, others: list[int]) -> bool:
        """Whether re-offering ``client`` while queued (a removal, then an insert) leaves the
        queue in heap order by the current keys once the one changed client in ``others``,
        whose key fell, is re-offered next (as :meth:`_repaired_by_reoffer`).

        Why: only comparisons of the changed client with a client whose key lies between its
        new and old key can go otherwise than the log's keys say. With at most one such
        client ``x``, every way the removal can compare the two (``x`` and it as siblings,
        ``x`` or it as the moved last element, sifting down or up) leaves both in heap order,
        and a client above the changed one that is not ``x`` is lighter than its new key; what
        may remain is the changed client beneath ``x``, which its own removal undoes (all below
        it are heavier than its old key, so heavier than ``x``). The insert must not stop
        beneath it below ``x``'s key. Task movement: after a reset, the most caught-up client
        takes a standby while queued and the destination gives one away; in small groups
        their loads bracket at most one other client's.
        """
        if client not in self._present or len(others) != 1:
            return False
        changed = others[0]
        keys = self._keys
        new = keys[changed]
        old = self._logged.get(changed, self._base_keys[changed])
        if not new < old:
            return False
        between = self._queued_between(new, old, (client, changed), 1)
        if between is None:
            return False
        key = keys[client]
        return not (new < key < old and any(keys[x] > key for x in between))

    def _nothing_between(self, client: int, others: list[int]) -> bool:
        """Whether removing ``client`` compares the one changed client in ``others`` with every
        other queued client exactly as its old key would: no queued client's key lies between
        its old and new key. (A removal compares the remaining clients with each other, never
        ``client``.) Task movement, after a reset: the most caught-up client takes a standby
        while still queued and the destination gives one away; in small groups their loads
        rarely bracket a third client's.
        """
        if len(others) != 1:
            return False
        changed = others[0]
        keys = self._keys
        low, high = sorted((keys[changed], self._logged.get(changed, self._base_keys[changed])))
        return self._none_queued_between(low, high, (client, changed))

    def _none_queued_between(self, low: Any, high: Any, skip: tuple[int, int]) -> bool:
        """No queued client but those in ``skip`` has its current key strictly between."""
        return self._queued_between(low, high, skip, 0) == []

    def _queued_between(
        self, low: Any, high: Any, skip: tuple[int, int], most: int
    ) -> list[int] | None:
        """The queued clients but those in ``skip`` whose current key lies strictly between,
        if at most ``most`` (``None``: more, or not known cheaply)."""
        keys = self._keys
        present = self._present
        found: list[int] = []
        if len(self._spread) <= _SMALL:  # a look at every queued client costs less than upkeep
            for c in present:
                if c not in skip and low < keys[c] < high:
                    found.append(c)
                    if len(found) > most:
                        return None
            return found
        ordered = self._sorted
        if ordered is None:
            return None
        first = bisect.bisect_right(ordered, low)
        last = bisect.bisect_left(ordered, high)
        if last - first > _BETWEEN_LIMIT:
            return None
        dirty = self._dirty
        for key in ordered[first:last]:  # entries of clients in ``dirty`` may be stale
            c = key[1]
            if c not in skip and c in present and c not in dirty:
                found.append(c)
        # the stale ones, by their current key
        found += [c for c in dirty if c not in skip and c in present and low < keys[c] < high]
        return found if len(found) <= most else None

    def _resort(self, client: int) -> None:
        assert self._sorted is not None
        key = self._keys[client]
        old = self._sorted_key[client]
        if old is not None:
            if old == key:
                self._dirty.discard(client)
                return
            del self._sorted[bisect.bisect_left(self._sorted, old)]
        bisect.insort(self._sorted, key)
        self._sorted_key[client] = key
        self._dirty.discard(client)

    def _lightest(
        self, valid: Callable[[int], bool], candidates: Collection[int] | None
    ) -> int | None:
        present = self._present
        if candidates is None:
            if self._sorted is None:
                # the queued clients' keys are all current here (nothing changed)
                self._sorted = sorted(self._keys)
                self._sorted_key = list(self._keys)
                self._dirty.clear()
            for key in self._sorted:
                client: int = key[1]
                if client in present and valid(client):
                    return client
            return None
        keys = self._keys
        best: int | None = None
        best_key: Any = None
        for client in candidates:
            if client in present and valid(client):
                key = keys[client]
                if best is None or key < best_key:
                    best, best_key = client, key
        return best

    def _start(self, order: list[int] | None, array: list[int] | None) -> None:
        """A new lazy stretch from a reset: every client in the queue, in heap order.

        When the refill's order depends on the pop order (``order`` and ``array`` both
        ``None``), the clients' key order is kept from ``_sorted`` (built here if need be, then
        kept current by every offer): a copy costs a memory copy, a sort at replay time costs
        ``n log n`` comparisons of tuples, and in large groups nearly every such stretch is
        replayed once.
        """
        wants_sorted = order is None and array is None and len(self._spread) > _SMALL
        if wants_sorted and self._sorted is None:
            self._sorted = sorted(self._keys)
            self._sorted_key = list(self._keys)
        elif self._sorted is not None:
            for client in list(self._dirty):
                self._resort(client)
        self._dirty.clear()
        self._base_sorted = list(self._sorted) if wants_sorted and self._sorted else None
        # the real queue's ranks are current (no log yet): the replay starts from a copy
        self._base_ranks = list(self._ranks) if self._log is None else None
        self._start_seen = self._seen
        self._log = []
        self._base_order = order
        self._base_array = array
        self._base_keys = list(self._keys)
        self._logged = {}
        self._ordered = True
        self._pending = None

    def _reset_ordered(self) -> None:
        """Kafka's reset from a queue in heap order (or with a pop-order-free refill)."""
        self._start(self._hash_order(), None)

    def _after_exact_reset(self) -> None:
        """After the real queue did a reset, continue lazily from its array."""
        if len(self._present) == len(self._spread):
            self._start(None, list(self._heap.queue))

    def _materialize(self) -> None:
        if self._log is not None:
            heap, present = self._replay()
            # the clients whose key changed since the stretch began get their current rank in
            # their slot, as Java's array compares by the current key (the others' is current)
            keys = self._keys
            for c in set(self._touched[self._start_seen :]):
                heap.rekey(c, rank(keys[c]), c in present)
            self._present = present
            self._ranks = heap.rank_of
            self._heap = heap
            self._log = None
            self._ordered = False
            self._pending = None

    def _replay(self) -> tuple[RankQueue, set[int]]:
        """The real queue as the log leaves it (:func:`kafka_poll.replay`), each client at the
        rank its last logged step saw."""
        assert self._log is not None
        base = self._base_ranks
        ranks = list(base) if base is not None else list(map(rank, self._base_keys))
        order: Iterable[int] = ()
        if self._base_array is None:
            order = self._base_order or self._sorted_hash_order(self._base_keys)
        steps = (
            (kind, client, [(c, rank(key)) for c, key in overrides])
            for kind, client, overrides in self._log
        )
        return replay(ranks, self._base_array, order, steps, self._orders)

    def _sorted_hash_order(self, keys: list[Any]) -> list[int]:
        """A reset's refill order when it depends on the pop order (clients sharing a bucket):
        the pops of an ordered queue come out sorted."""
        if self._base_sorted is not None:
            return self._orders.order([key[1] for key in self._base_sorted])
        return self._orders.order(sorted(range(len(self._spread)), key=keys.__getitem__))

    def _hash_order(self) -> list[int] | None:
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
