"""Kafka's ``LegacyStickyTaskAssignor`` (the pre-2.6 default): stickiness first, lags ignored.

Actives go back to their previous owner while it is under its quota of
``tasks // total_threads`` per thread (always, for the fallback assignor), then to a previous
standby owner under quota, then - task by task in order - to the previous owner unless it is
full while others are not, else to the least-loaded client that gains a *new pair* of
co-located tasks (spreading tasks that were seen together). Standbys then go, replica by
replica, to the least-loaded clients without the task.

Kafka walks ``HashMap``/``HashSet`` orders here (previous owners, unassigned tasks, candidate
clients), and those orders decide ties. We replay them with
:mod:`assignor._java.hash_table`, assuming Kafka's sets of all tasks and of stateful tasks
were filled in task order and the client map in the order given (which only matters for keys
whose hashes share a bucket). Under those assumptions the result equals Java's; the
conformance tests also check the invariants that do not depend on any order: each task active
exactly once, standbys never beside their active, per-client balance, and stickiness at least
Java's.
"""

from __future__ import annotations

import heapq
import logging
from collections import defaultdict
from collections.abc import Collection, Mapping
from operator import attrgetter

from assignor._java.hash_codes import int32, process_id_hash, spread, task_id_hash
from assignor._java.hash_table import (
    DEFAULT_CAPACITY,
    TREEIFY_THRESHOLD,
    JavaHashSet,
    buckets_stay_small,
    copy_capacity,
    grown_table_length,
    hash_set_order,
    table_size_for,
)
from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from assignor.placement.task_assignor import TaskAssignment
from protocol.ids import ProcessId, TaskId

_SORT_KEY = attrgetter("sort_key")  # Kafka's TaskId.compareTo

log = logging.getLogger(__name__)


class _Client:
    """Scratch state of one client during one assignment (tasks as ranks in task order)."""

    __slots__ = ("active", "assigned", "capacity", "index", "load", "process_id", "standby")

    def __init__(self, index: int, process_id: ProcessId, capacity: int) -> None:
        self.index = index
        self.process_id = process_id
        self.capacity = capacity
        self.active: set[int] = set()
        self.standby: set[int] = set()
        self.assigned: list[int] = []
        self.load = 0.0  # assigned / capacity, a Java double

    def has(self, task: int) -> bool:
        return task in self.active or task in self.standby


def _more_available(a: _Client, b: _Client) -> bool:
    """Kafka's ``hasMoreAvailableCapacityThan``: lower load (a double), then more threads."""
    if a.load != b.load:
        return a.load < b.load
    return a.capacity > b.capacity


class _Run:
    """One assignment; mirrors the fields Kafka's assignor keeps between its steps.

    Clients are ints: their position in the client map's (hash) iteration order.
    """

    def __init__(
        self,
        clients: Mapping[ProcessId, ClientState],
        all_tasks: Collection[TaskId],
        stateful_tasks: Collection[TaskId],
        must_preserve_active: bool,
    ) -> None:
        self.ordered_tasks = sorted(set(all_tasks) | set(stateful_tasks), key=_SORT_KEY)
        self.rank = {task: i for i, task in enumerate(self.ordered_tasks)}
        self.n_tasks = len(self.ordered_tasks)
        self.must_preserve_active = must_preserve_active
        # HashMap<ProcessId, ClientState>: iteration by hash bucket.
        map_order = JavaHashSet(process_id_hash, clients)
        self.pids = list(map_order)
        self.index = {pid: i for i, pid in enumerate(self.pids)}
        self.states = clients
        self.clients = [_Client(i, pid, clients[pid].capacity) for i, pid in enumerate(self.pids)]
        self.spread = [spread(process_id_hash(pid)) for pid in self.pids]
        self.map_length = map_order.table_length
        # Without tree bins the map iterates by bucket, then insertion: subsets can reuse that.
        self.map_plain = buckets_stay_small(
            [spread(process_id_hash(pid)) for pid in clients]
        )
        self.orders_by_length: dict[int, list[int]] = {}
        # table length -> how many clients, from the first in map order, fit there with at
        # most eight in any bucket
        self._roomy: dict[int, int] = {}
        # Kafka's minimum-load lookup (any client with more available capacity?) as a lazy heap.
        self.min_heap = [(0.0, -c.capacity, c.index) for c in self.clients]
        heapq.heapify(self.min_heap)
        # each client's (load, -capacity): ``_more_available`` as a key compared in C
        self.keys = [(0.0, -c.capacity) for c in self.clients]
        self.empty = set(range(len(self.clients)))  # clients given no task yet
        self.holders: dict[int, list[int]] = {}  # task -> clients given it (active or standby)
        # HashSet<TaskId>s of all and of stateful tasks, filled in task order.
        self.all_ranks = {self.rank[t] for t in all_tasks}
        self.all_in_java_order = self._task_set_order(all_tasks)
        self.stateful_in_java_order = self._task_set_order(stateful_tasks)
        # Java computes n(n-1)/2 in 32-bit ints (it wraps past 46,341 tasks).
        product = int32(len(self.all_ranks) * (len(self.all_ranks) - 1))
        self.max_pairs = product // 2 if product >= 0 else -(-product // 2)
        self.pairs: set[int] = set()
        self._map_previous()

    def _task_set_order(self, tasks: Collection[TaskId]) -> list[int]:
        """The ranks of ``tasks`` in the order of a ``HashSet`` filled with them in task order
        (:func:`hash_set_order`: a sort by bucket unless a bucket could grow a tree, rather
        than every insertion replayed)."""
        rank = self.rank
        return [rank[t] for t in _in_hash_set_order(sorted(set(tasks), key=_SORT_KEY))]

    def _map_previous(self) -> None:
        """``mapPreviousTaskAssignment``: last previous-active owner wins, key order by hash.

        Kafka's two maps are filled once and never shrink, so their iteration orders are those
        of a set filled once in insertion order (:func:`hash_set_order`, which replays the
        table only when a bucket could grow a tree): the tasks in the order first reported
        active, and each task's previous standby owners in client-map order. Replaying every
        insertion into emulated tables was most of this assignor's time in groups of hundreds
        of clients that each keep the state of many tasks.
        """
        first_active: dict[TaskId, int] = {}  # task -> its last previous-active owner, in
        # first-reported order (a dict keeps a key where it was first put)
        # task -> its previous standby owners in client-map order: only each list's order
        # counts (the dict is read by key), so a client's standbys need no sorting
        standby_owners: defaultdict[TaskId, list[int]] = defaultdict(list)
        for i, pid in enumerate(self.pids):
            state = self.states[pid]
            for task in sorted(state.previous_active, key=_SORT_KEY):
                first_active[task] = i
            for task in state.previous_standby:
                standby_owners[task].append(i)
        self.prev_active_keys: list[TaskId] = _in_hash_set_order(list(first_active))
        self.prev_active: dict[TaskId, int] = first_active
        # each task's previous standby owners (client numbers) in Kafka's set's order, and in
        # the order of the copy Kafka makes of that set
        self.prev_standby: dict[TaskId, list[int]] = {}
        self.prev_standby_copy: dict[int, list[int]] = {}
        for task, members in standby_owners.items():
            order, copy = self._owner_orders(members)
            self.prev_standby[task] = order
            r = self.rank.get(task)
            if r is not None:
                self.prev_standby_copy[r] = copy

    def _owner_orders(self, members: list[int]) -> tuple[list[int], list[int]]:
        """The iteration orders of a no-arg ``HashSet`` filled with ``members`` in this order,
        and of its copy (``new HashSet<>(set)``, presized).

        When no bucket of the first ever holds nine keys, each is ordered by its final table's
        bucket, then by insertion (a stable sort), and the copy's table, at least as long and
        filled without a resize, cannot hold nine in a bucket either (its buckets split the
        first's); if both tables are as long, the copy keeps the first's order.
        """
        count = len(members)
        if count == 1:  # most tasks: one previous standby owner
            return members, members
        spread = self.spread
        if not self._stays_small(members):
            order = self._new_set_order(members)
            return order, self._new_set_order(order, copy_capacity(count))
        mask = grown_table_length(count) - 1
        order = sorted(members, key=lambda i: spread[i] & mask)
        copy_mask = grown_table_length(count, copy_capacity(count)) - 1
        if copy_mask == mask:
            return order, order
        return order, sorted(order, key=lambda i: spread[i] & copy_mask)

    def _order_at(self, length: int) -> list[int]:
        """All clients in the order a set of that table length would hold them."""
        order = self.orders_by_length.get(length)
        if order is None:
            mask, spread = length - 1, self.spread
            order = sorted(range(len(self.pids)), key=lambda i: spread[i] & mask)
            self.orders_by_length[length] = order
        return order

    def _stays_small(self, members: list[int], capacity: int | None = None) -> bool:
        """``buckets_stay_small`` for a set of some of the clients: at once when, at every
        length the set passes through, the members it holds there are among the first clients
        of the map order that fit that length with at most eight in a bucket (a subset puts
        no more in any bucket), else checked.

        Why: the standby step builds such a set per task from hundreds of clients. All of
        them together crowd a bucket of the short tables a growing set passes through, but
        the few it holds there are early in the map order (sorted by bucket of a long
        table), whose prefix seldom does; checking every length per set was a sixth of a
        large legacy replay."""
        count = len(members)
        if count <= TREEIFY_THRESHOLD:
            return True
        length = table_size_for(capacity) if capacity is not None else DEFAULT_CAPACITY
        final = grown_table_length(count, capacity)
        roomy = self._roomy
        while True:
            held = count if length >= final else int(length * 0.75) + 1
            if held > TREEIFY_THRESHOLD:
                fit = roomy.get(length)
                if fit is None:
                    fit = roomy[length] = self._fitting_prefix(length)
                if max(members[:held]) >= fit:
                    return buckets_stay_small([self.spread[i] for i in members], capacity)
            if length >= final:
                return True
            length <<= 1

    def _fitting_prefix(self, length: int) -> int:
        """How many clients, from the first in map order, a table of ``length`` holds before
        a bucket gets a ninth."""
        mask, counts = length - 1, [0] * length
        for i, h in enumerate(self.spread):
            bucket = h & mask
            if counts[bucket] == TREEIFY_THRESHOLD:
                return i
            counts[bucket] += 1
        return len(self.spread)

    def _new_set_order(
        self, members: list[int], capacity: int | None = None, in_map_order: bool = False
    ) -> list[int]:
        """Iteration order of a new ``HashSet`` filled with these clients in this order.

        ``in_map_order``: the members come in the client map's order, so a table of the
        map's length keeps them as they are.
        """
        if not self._stays_small(members, capacity):
            chosen = JavaHashSet(process_id_hash, (self.pids[i] for i in members), capacity)
            return [self.index[pid] for pid in chosen]
        length = grown_table_length(len(members), capacity)
        if in_map_order:
            if length == self.map_length and self.map_plain:
                return members
            keep = set(members)
            return [i for i in self._order_at(length) if i in keep]
        mask, spread = length - 1, self.spread
        return sorted(members, key=lambda i: spread[i] & mask)  # stable: insertion order kept

    # --- task pairs -------------------------------------------------------------------------

    def _has_new_pair(self, task: int, client: _Client) -> bool:
        if len(self.pairs) == self.max_pairs:
            return False
        pairs, n = self.pairs, self.n_tasks
        for other in client.assigned:
            key = task * n + other if task < other else other * n + task
            if key not in pairs:
                return True
        return False

    # --- placing one task ---------------------------------------------------------------------

    def _give(self, task: int, client: _Client, active: bool) -> None:
        if client.has(task):
            raise ValueError(
                f"Tried to assign task {self.ordered_tasks[task]}, but it is already assigned "
                f"to client {client.process_id}"
            )
        n = self.n_tasks
        self.pairs.update([task * n + o if task < o else o * n + task for o in client.assigned])
        (client.active if active else client.standby).add(task)
        client.assigned.append(task)
        client.load = len(client.assigned) / client.capacity
        heapq.heappush(self.min_heap, (client.load, -client.capacity, client.index))
        self.keys[client.index] = (client.load, -client.capacity)
        self.empty.discard(client.index)
        self.holders.setdefault(task, []).append(client.index)

    def _has_quota(self, client: _Client, tasks_per_thread: int) -> bool:
        return len(client.active) < client.capacity * tasks_per_thread

    def _should_balance(self, client: _Client) -> bool:
        """Full (a task per thread) while some client has more available capacity."""
        if len(client.assigned) < client.capacity:
            return False
        heap = self.min_heap
        while heap[0][0] != self.clients[heap[0][2]].load:
            heapq.heappop(heap)  # stale: that client has been given tasks since
        load, neg_capacity, _ = heap[0]
        return (load, neg_capacity) < (client.load, -client.capacity)

    def _find_least_loaded(
        self, task: int, candidates: list[int], check_pairs: bool
    ) -> _Client | None:
        """Kafka's scan: the first client with no task yet, else the first of the most
        available ones (with a new pair of tasks, if ``check_pairs``).

        Why: the standby step scans hundreds of clients per task; the first most available one
        is found by ``min`` over kept keys, and only if it has no new pair is the scan run."""
        if self.empty:
            unused = next(filter(self.empty.__contains__, candidates), None)
            if unused is not None:
                return self.clients[unused]
        if not candidates:
            return None
        first = self.clients[min(candidates, key=self.keys.__getitem__)]
        if not check_pairs or self._has_new_pair(task, first):
            return first
        best: _Client | None = None
        clients = self.clients
        for i in candidates:
            client = clients[i]
            if not client.assigned:
                return client
            better = best is None or _more_available(client, best)
            if better and (not check_pairs or self._has_new_pair(task, client)):
                best = client
        return best

    def _least_loaded(self, task: int, candidates: list[int]) -> _Client | None:
        found = self._find_least_loaded(task, candidates, True)
        return found if found is not None else self._find_least_loaded(task, candidates, False)

    def _least_loaded_previous_standby(
        self, task: int, within: Collection[int]
    ) -> _Client | None:
        owners = self.prev_standby_copy.get(task)
        if owners is None:
            return None
        # new HashSet<>(owners).retainAll(within): removal keeps the copy's order.
        return self._least_loaded(task, [i for i in owners if i in within])

    def _find_client(self, task: int, within: list[int], within_set: Collection[int]) -> _Client:
        if len(within) == 1:
            return self.clients[within[0]]
        owner = self.prev_active.get(self.ordered_tasks[task])
        previous = (
            self.clients[owner]
            if owner is not None and owner in within_set
            else self._least_loaded_previous_standby(task, within_set)
        )
        if previous is None:
            found = self._least_loaded(task, within)
        elif self._should_balance(previous):
            standby = self._least_loaded_previous_standby(task, within_set)
            if standby is None or self._should_balance(standby):
                found = self._least_loaded(task, within)
            else:
                found = standby
        else:
            found = previous
        if found is None:
            raise ValueError(f"no client can take task {self.ordered_tasks[task]}")
        return found

    # --- the two phases -----------------------------------------------------------------------

    def assign_active(self) -> None:
        total_capacity = sum(c.capacity for c in self.clients)
        if total_capacity == 0:
            raise ValueError("`totalCapacity` should never be zero.")
        tasks_per_thread = len(self.all_ranks) // total_capacity
        assigned: set[int] = set()
        for task_id in self.prev_active_keys:
            task = self.rank.get(task_id)
            if task is None or task not in self.all_ranks:
                continue
            client = self.clients[self.prev_active[task_id]]
            if self.must_preserve_active or self._has_quota(client, tasks_per_thread):
                self._give(task, client, True)
                assigned.add(task)

        unassigned = JavaHashSet.copy_of(
            task_id_hash, (self.ordered_tasks[r] for r in self.all_in_java_order)
        )
        assigned_ids = [self.ordered_tasks[r] for r in assigned]
        if len(unassigned) > len(assigned_ids):  # AbstractSet.removeAll picks a side by size
            for task_id in assigned_ids:
                unassigned.discard(task_id)
        else:
            for task_id in list(unassigned):
                if self.rank[task_id] in assigned:
                    unassigned.discard(task_id, movable=False)

        for task_id in list(unassigned):
            owners = self.prev_standby.get(task_id)
            if owners is None:
                continue
            task = self.rank[task_id]
            for owner in owners:
                client = self.clients[owner]
                if self._has_quota(client, tasks_per_thread):
                    self._give(task, client, True)
                    unassigned.discard(task_id, movable=False)
                    break

        everyone = list(range(len(self.clients)))
        everyone_set = range(len(self.clients))
        for task in sorted(self.rank[t] for t in unassigned):
            self._give(task, self._find_client(task, everyone, everyone_set), True)

    def assign_standby(self, replicas: int) -> None:
        everyone = list(range(len(self.clients)))
        for task in self.stateful_in_java_order:
            for i in range(replicas):
                free = everyone[:]
                for held in sorted(self.holders.get(task, ()), reverse=True):
                    del free[held]
                if not free:  # the leader logs one WARNING with the total (pipeline)
                    log.debug(
                        "Unable to assign %d of %d standby tasks for task [%s]. There is not "
                        "enough available capacity. You should increase the number of threads "
                        "and/or application instances to maintain the requested number of "
                        "standby replicas.",
                        replicas - i,
                        replicas,
                        self.ordered_tasks[task],
                    )
                    break
                candidates = self._new_set_order(free, in_map_order=True)
                chosen = self._find_client(task, candidates, set(candidates))
                self._give(task, chosen, False)

    def result(self) -> dict[ProcessId, ClientState]:
        tasks = self.ordered_tasks
        return {
            client.process_id: self.states[client.process_id].with_assignment(
                (tasks[r] for r in client.active), (tasks[r] for r in client.standby)
            )
            for client in self.clients
        }


def _in_hash_set_order(tasks: list[TaskId]) -> list[TaskId]:
    """``tasks`` (distinct) as a ``HashSet<TaskId>`` filled with them in this order iterates
    them."""
    return [tasks[k] for k in hash_set_order([spread(task_id_hash(t)) for t in tasks], tasks)]


class LegacyStickyTaskAssignor:
    """Kafka's ``LegacyStickyTaskAssignor``; never asks for a probing rebalance.

    ``must_preserve_active`` returns every previous active to its owner even over quota (what
    :class:`~assignor.placement.fallback_prior.FallbackPriorTaskAssignor` needs). Rack-aware
    optimisation is not applied (``rack.aware.assignment.strategy`` is always ``none`` here).
    """

    def __init__(self, must_preserve_active: bool = False) -> None:
        self.must_preserve_active = must_preserve_active

    def place_tasks(
        self,
        clients: Mapping[ProcessId, ClientState],
        all_tasks: Collection[TaskId],
        stateful_tasks: Collection[TaskId],
        config: AssignorConfig,
    ) -> TaskAssignment:
        if not clients:
            return TaskAssignment(clients={}, probing_rebalance_needed=False)
        run = _Run(clients, all_tasks, stateful_tasks, self.must_preserve_active)
        run.assign_active()
        run.assign_standby(config.num_standby_replicas)
        return TaskAssignment(clients=run.result(), probing_rebalance_needed=False)
