"""Kafka Streams' default task assignor (KIP-441), reproducing Kafka's decisions exactly.

The idea: never make an application wait for state to restore. First a perfectly balanced
assignment is computed without looking at where state lives (stateful actives dealt round-robin
in ``ProcessId`` order, then evened out per thread; standbys on the least-loaded clients). Then
every active or standby that landed on a client far behind (lag above
``acceptable.recovery.lag``) is moved back to a caught-up client, and the intended client gets a
*warm-up* replica to restore in the background (at most ``max.warmup.replicas``). If anything
had to move, the leader asks for a *probing rebalance* after ``probing.rebalance.interval.ms``,
by which time the warm-ups may have caught up and the balanced assignment can take over.
Stateless tasks go last, each to the client with the fewest actives per thread.

Loads are ``tasks / threads`` as IEEE doubles, compared as Java compares them. The rack-aware
traffic optimiser (``rack.aware.assignment.strategy``) is not part of this implementation.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Collection, Mapping

from assignor.config import AssignorConfig
from assignor.placement.caught_up import Budget, CaughtUp
from assignor.placement.client_state import ClientState
from assignor.placement.standby import (
    assign_standbys_default,
    assign_standbys_tag_aware,
    tag_movement_allowed,
)
from assignor.placement.target_cache import TargetCache
from assignor.placement.task_assignor import TaskAssignment
from assignor.placement.task_movement import assign_active_movements, assign_standby_movements
from assignor.placement.workspace import Workspace
from protocol.ids import ProcessId, TaskId

log = logging.getLogger(__name__)


class HighAvailabilityTaskAssignor:
    """The default :class:`~assignor.placement.task_assignor.TaskAssignor`."""

    name = "high_availability"

    __slots__ = ("_targets",)

    def __init__(self, targets: TargetCache | None = None) -> None:
        #: the leader's kept balanced target (``None``: computed afresh every time)
        self._targets = targets

    def place_tasks(
        self,
        clients: Mapping[ProcessId, ClientState],
        all_tasks: Collection[TaskId],
        stateful_tasks: Collection[TaskId],
        config: AssignorConfig,
    ) -> TaskAssignment:
        if not clients:
            return TaskAssignment(clients={}, probing_rebalance_needed=False)
        # One client: no client is ever strictly further ahead than it, so no movement is
        # scheduled and nothing reads a lag; the workspace skips them (at 6,000 tasks they
        # are half its cost). That also skips the lags' consistency checks, which the
        # pipeline's inputs always pass.
        lone = len(clients) == 1
        ws = Workspace(
            clients,
            all_tasks,
            stateful_tasks,
            with_lags=not lone,
            acceptable_lag=config.acceptable_recovery_lag,
            numbering=self._targets.numbering if self._targets is not None else None,
        )
        probing, warmups = assign_high_availability(
            ws, config, movements=not lone, targets=self._targets
        )
        result = ws.results()
        probing_text = "" if probing else " no"
        log.debug("Decided on assignment with%s followup probing rebalance.", probing_text)
        return TaskAssignment(
            clients=result,
            probing_rebalance_needed=probing,
            warmups={
                ws.pids[c]: frozenset(ws.tasks[t] for t in tasks)
                for c, tasks in warmups.items()
                if tasks
            },
        )


def assign_high_availability(
    ws: Workspace,
    config: AssignorConfig,
    *,
    movements: bool = True,
    targets: TargetCache | None = None,
) -> tuple[bool, dict[int, set[int]]]:
    """All of KIP-441 on a workspace; returns (probing rebalance needed, warm-ups per client).
    ``movements=False``: the caller knows none can be scheduled (a lone client). ``targets``:
    the leader's kept balanced target, reused when its inputs are equal."""
    if targets is None:
        _balanced_target(ws, config)
    else:
        targets.place(
            ws,
            config.num_standby_replicas,
            tuple(config.rack_aware_assignment_tags),
            lambda fresh: _balanced_target(fresh, config),
        )
    if not movements:
        _assign_stateless(ws)
        return False, {}
    caught = CaughtUp(ws, config.acceptable_recovery_lag)
    budget = Budget(config.max_warmup_replicas)
    warmups: dict[int, set[int]] = {}
    active_moves = assign_active_movements(ws, caught, warmups, budget)
    standby_moves = assign_standby_movements(ws, caught, warmups, budget)
    _assign_stateless(ws)
    return active_moves + standby_moves > 0, warmups


def _balanced_target(ws: Workspace, config: AssignorConfig) -> None:
    """The state-independent part: what a :class:`TargetCache` keeps between rebalances."""
    _assign_stateful_actives(ws)
    _assign_standbys(ws, config)


def _assign_stateful_actives(ws: Workspace) -> None:
    n = len(ws.pids)
    for client in range(n):  # round robin: task i to client i % n
        ws.assign_new_actives(client, ws.stateful[client::n])
    balance(ws, ws.active, ws.unassign_active, ws.assign_active, None)


def _assign_standbys(ws: Workspace, config: AssignorConfig) -> None:
    replicas = config.num_standby_replicas
    if replicas == 0:
        return
    allowed: Callable[[int, int], bool] | None = None
    if config.rack_aware_assignment_tags:
        assign_standbys_tag_aware(ws, replicas, config.rack_aware_assignment_tags)

        def allowed(source: int, destination: int) -> bool:
            return tag_movement_allowed(ws, source, destination)

    else:
        assign_standbys_default(ws, replicas)
    balance(ws, ws.standby, ws.unassign_standby, ws.assign_standby, allowed)


def _should_move(count: list[int], capacity: list[int], source: int, destination: int) -> bool:
    """Kafka's ``shouldMoveATask``: the move must shrink the load skew without reversing it."""
    source_count = count[source]
    source_capacity = capacity[source]
    destination_count = count[destination]
    destination_capacity = capacity[destination]
    skew = source_count / source_capacity - destination_count / destination_capacity
    if skew <= 0:
        return False
    proposed = (source_count - 1.0) / source_capacity - (
        destination_count + 1.0
    ) / destination_capacity
    return 0 <= proposed < skew


def balance(
    ws: Workspace,
    owned: list[set[int]],
    unassign: Callable[[int, int], None],
    assign: Callable[[int, int], None],
    allowed: Callable[[int, int], bool] | None,
) -> None:
    """Kafka's ``balanceTasksOverThreads``: move tasks from heavier to lighter clients.

    Every ordered pair of clients, in ``ProcessId`` order, until a full pass changes nothing;
    the source's tasks are tried in task order. A pair is skipped without a look at its tasks
    when :func:`_should_move` must fail: its ``proposed >= 0`` holds only if the destination's
    load with one more task (``up``) is at most the source's with one fewer, both computed as
    ``_should_move`` computes them (a float difference is >= 0 exactly when the first is >= the
    second). A source below every client's ``up`` is skipped whole, so a pass over clients that
    are already balanced costs one look per client, not one per pair (Kafka builds a sorted copy
    of the source's tasks first; same result).
    """
    count = ws.count
    capacity = ws.capacity
    active = ws.active
    standby = ws.standby
    n = len(ws.pids)
    keep_balancing = True
    while keep_balancing:
        keep_balancing = False
        up = [(count[c] + 1.0) / capacity[c] for c in range(n)]
        lowest_up = min(up, default=0.0)  # a lower bound of every up[c] during the pass
        for source in range(n):
            source_capacity = capacity[source]
            down = (count[source] - 1.0) / source_capacity
            if down < lowest_up:
                continue
            for destination in range(n):
                if up[destination] > down or destination == source:
                    continue
                if not _should_move(count, capacity, source, destination):
                    continue
                if allowed is not None and not allowed(source, destination):
                    continue
                for task in sorted(owned[source]):
                    if not _should_move(count, capacity, source, destination):
                        break
                    if task in active[destination] or task in standby[destination]:
                        continue
                    unassign(source, task)
                    assign(destination, task)
                    keep_balancing = True
                    up[destination] = (count[destination] + 1.0) / capacity[destination]
                    up[source] = (count[source] + 1.0) / source_capacity
                    lowest_up = min(lowest_up, up[source])
                down = (count[source] - 1.0) / source_capacity
                if down < lowest_up:
                    break


def _assign_stateless(ws: Workspace) -> None:
    """Each stateless task, in task order, to the client with the fewest actives per thread."""
    if len(ws.stateful) == len(ws.tasks):
        return  # every task stateful (the usual topology): no set, no pass over the tasks
    stateful = set(ws.stateful)
    stateless = [t for t in range(len(ws.tasks)) if t not in stateful]
    if not stateless:
        return
    capacity = ws.capacity
    heap = [(len(ws.active[c]) / capacity[c], c) for c in range(len(ws.pids))]
    heapq.heapify(heap)
    for task in stateless:
        _, client = heap[0]
        ws.assign_active(client, task)
        heapq.heapreplace(heap, (len(ws.active[client]) / capacity[client], client))
