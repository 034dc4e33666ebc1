"""Kafka's ``LegacyStickyTaskAssignor`` (the pre-2.6 default): stickiness first, lags ignored.

Actives go back to their previous owner while it is under its quota of
``tasks // total_threads`` per thread (always, for the fallback assignor), then to a previous
standby owner under quota, then - task by task in order - to the previous owner unless it is
full while others are not, else to the least-loaded client that gains a *new pair* of
co-located tasks (spreading tasks that were seen together). Standbys then go, replica by
replica, to the least-loaded clients without the task.

Kafka walks ``HashMap``/``HashSet`` orders here (previous owners, unassigned tasks, candidate
clients), and those orders decide ties. We replay them with :mod:`assignor.java_hash`,
assuming Kafka's sets of all tasks and of stateful tasks were filled in task order and the
client map in the order given (which only matters for keys whose hashes share a bucket). Under
those assumptions the result equals Java's; the conformance tests also check the invariants
that do not depend on any order: each task active exactly once, standbys never beside their
active, per-client balance, and stickiness at least Java's.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from assignor.client_state import ClientState, task_key
from assignor.config import AssignorConfig
from assignor.java_hash import JavaHashSet, int32, process_hash, task_hash
from assignor.task_assignor import TaskAssignment
from protocol.ids import ProcessId, TaskId

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class _Client:
    """Scratch state of one client during one assignment (tasks as ranks in task order)."""

    process_id: ProcessId
    capacity: int
    active: set[int] = field(default_factory=set)
    standby: set[int] = field(default_factory=set)
    assigned: list[int] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.assigned)

    def has(self, task: int) -> bool:
        return task in self.active or task in self.standby

    def more_available_capacity_than(self, other: _Client) -> bool:
        """Kafka's ``hasMoreAvailableCapacityThan``: lower load (a double), then more threads."""
        mine = len(self.assigned) / self.capacity
        theirs = len(other.assigned) / other.capacity
        if mine != theirs:
            return mine < theirs
        return self.capacity > other.capacity


class _Run:
    """One assignment; mirrors the fields Kafka's assignor keeps between its steps."""

    def __init__(
        self,
        clients: Mapping[ProcessId, ClientState],
        all_tasks: Collection[TaskId],
        stateful_tasks: Collection[TaskId],
        must_preserve_active: bool,
    ) -> None:
        self.ordered_tasks = sorted(set(all_tasks) | set(stateful_tasks), key=task_key)
        self.rank = {task: i for i, task in enumerate(self.ordered_tasks)}
        self.n_tasks = len(self.ordered_tasks)
        self.must_preserve_active = must_preserve_active
        # HashMap<ProcessId, ClientState>: iteration by hash bucket.
        self.order = list(JavaHashSet(process_hash, clients))
        self.states = clients
        self.clients = {pid: _Client(pid, clients[pid].capacity) for pid in self.order}
        # HashSet<TaskId>s of all and of stateful tasks, filled in task order.
        self.all_ranks = {self.rank[t] for t in all_tasks}
        self.all_in_java_order = [
            self.rank[t] for t in _task_set(sorted(all_tasks, key=task_key))
        ]
        self.stateful_in_java_order = [
            self.rank[t] for t in _task_set(sorted(stateful_tasks, key=task_key))
        ]
        # Java computes n(n-1)/2 in 32-bit ints (it wraps past 46,341 tasks).
        product = int32(len(self.all_ranks) * (len(self.all_ranks) - 1))
        self.max_pairs = product // 2 if product >= 0 else -(-product // 2)
        self.pairs: set[int] = set()
        self._map_previous()

    def _map_previous(self) -> None:
        """``mapPreviousTaskAssignment``: last previous-active owner wins, key order by hash."""
        self.prev_active_keys: JavaHashSet[TaskId] = JavaHashSet(task_hash)
        self.prev_active: dict[TaskId, ProcessId] = {}
        self.prev_standby: dict[TaskId, JavaHashSet[ProcessId]] = {}
        for pid in self.order:
            state = self.states[pid]
            for task in sorted(state.previous_active, key=task_key):
                self.prev_active_keys.add(task)
                self.prev_active[task] = pid
            for task in sorted(state.previous_standby, key=task_key):
                owners = self.prev_standby.get(task)
                if owners is None:
                    owners = self.prev_standby[task] = JavaHashSet(process_hash)
                owners.add(pid)

    # --- task pairs -------------------------------------------------------------------------

    def _pair(self, a: int, b: int) -> int:
        return a * self.n_tasks + b if a < b else b * self.n_tasks + a

    def _has_new_pair(self, task: int, client: _Client) -> bool:
        if len(self.pairs) == self.max_pairs:
            return False
        pairs, n = self.pairs, self.n_tasks
        for other in client.assigned:
            key = task * n + other if task < other else other * n + task
            if key not in pairs:
                return True
        return False

    def _add_pairs(self, task: int, client: _Client) -> None:
        pairs, n = self.pairs, self.n_tasks
        for other in client.assigned:
            pairs.add(task * n + other if task < other else other * n + task)

    # --- placing one task ---------------------------------------------------------------------

    def _give(self, task: int, client: _Client, active: bool) -> None:
        if client.has(task):
            raise ValueError(
                f"Tried to assign task {self.ordered_tasks[task]}, but it is already assigned "
                f"to client {client.process_id}"
            )
        self._add_pairs(task, client)
        (client.active if active else client.standby).add(task)
        client.assigned.append(task)

    def _has_quota(self, client: _Client, tasks_per_thread: int) -> bool:
        return len(client.active) < client.capacity * tasks_per_thread

    def _should_balance(self, client: _Client) -> bool:
        if client.count < client.capacity:
            return False
        return any(c.more_available_capacity_than(client) for c in self.clients.values())

    def _find_least_loaded(
        self, task: int, candidates: Iterable[ProcessId], check_pairs: bool
    ) -> _Client | None:
        best: _Client | None = None
        for pid in candidates:
            client = self.clients[pid]
            if client.count == 0:
                return client
            better = best is None or client.more_available_capacity_than(best)
            if better and (not check_pairs or self._has_new_pair(task, client)):
                best = client
        return best

    def _least_loaded(self, task: int, candidates: list[ProcessId]) -> _Client | None:
        found = self._find_least_loaded(task, candidates, True)
        return found if found is not None else self._find_least_loaded(task, candidates, False)

    def _least_loaded_previous_standby(
        self, task: int, within: Collection[ProcessId]
    ) -> _Client | None:
        owners = self.prev_standby.get(self.ordered_tasks[task])
        if owners is None:
            return None
        constrained = JavaHashSet.copy_of(process_hash, owners)
        for pid in list(constrained):
            if pid not in within:
                constrained.discard(pid, movable=False)  # retainAll removes via the iterator
        return self._least_loaded(task, list(constrained))

    def _find_client(
        self, task: int, within: list[ProcessId], within_set: set[ProcessId]
    ) -> _Client:
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

    def _allocate(self, task: int, within: list[ProcessId], active: bool) -> None:
        self._give(task, self._find_client(task, within, set(within)), active)

    # --- the two phases -----------------------------------------------------------------------

    def assign_active(self) -> None:
        total_capacity = sum(c.capacity for c in self.clients.values())
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
            task_hash, (self.ordered_tasks[r] for r in self.all_in_java_order)
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
            for pid in owners:
                client = self.clients[pid]
                if self._has_quota(client, tasks_per_thread):
                    self._give(task, client, True)
                    unassigned.discard(task_id, movable=False)
                    break

        everyone = list(self.order)
        for task in sorted(self.rank[t] for t in unassigned):
            self._allocate(task, everyone, True)

    def assign_standby(self, replicas: int) -> None:
        for task in self.stateful_in_java_order:
            for i in range(replicas):
                candidates = list(
                    JavaHashSet(
                        process_hash, (p for p in self.order if not self.clients[p].has(task))
                    )
                )
                if not candidates:
                    log.warning(
                        "Unable to assign %d of %d standby tasks for task [%s]. There is not "
                        "enough available capacity. You should increase the number of threads "
                        "and/or application instances to maintain the requested number of "
                        "standby replicas.",
                        replicas - i,
                        replicas,
                        self.ordered_tasks[task],
                    )
                    break
                self._allocate(task, candidates, False)

    def result(self) -> dict[ProcessId, ClientState]:
        tasks = self.ordered_tasks
        return {
            pid: self.states[pid].with_assignment(
                (tasks[r] for r in client.active), (tasks[r] for r in client.standby)
            )
            for pid, client in self.clients.items()
        }


def _task_set(tasks_in_order: Iterable[TaskId]) -> JavaHashSet[TaskId]:
    return JavaHashSet(task_hash, tasks_in_order)


class LegacyStickyTaskAssignor:
    """Kafka's ``LegacyStickyTaskAssignor``; never asks for a probing rebalance.

    ``must_preserve_active`` returns every previous active to its owner even over quota (what
    :class:`~assignor.fallback_prior.FallbackPriorTaskAssignor` needs). Rack-aware
    optimisation is not applied (``rack.aware.assignment.strategy`` is always ``none`` here).
    """

    def __init__(self, must_preserve_active: bool = False) -> None:
        self.must_preserve_active = must_preserve_active

    def assign(
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
