"""Moving tasks toward clients that have their state, with warm-ups (KIP-441, Kafka's TaskMovement).

The balanced assignment ignores where state lives. This step undoes that where it hurts: an
active task placed on a client that is not caught up (lag above ``acceptable.recovery.lag``)
while some client is further ahead goes back to a caught-up client, and the intended client
receives a *warm-up* standby instead, so it can catch up and take the task in a later probing
rebalance. The same is done for standbys. At most ``max.warmup.replicas`` warm-ups are handed
out per rebalance, shared by both kinds of movement.

Kafka keeps the candidate clients in a priority queue whose weights change while clients sit in
it, so its picks depend on the queue's array layout;
:mod:`assignor.placement.constrained_priority_set` reproduces that.
"""

from __future__ import annotations

from collections.abc import Callable

from assignor._java.hash_codes import process_id_hash, spread
from assignor._java.priority_queue import JavaPriorityQueue
from assignor.placement.caught_up import Budget, CaughtUp, move_active_and_warm_up
from assignor.placement.constrained_priority_set import ConstrainedPrioritySet
from assignor.placement.settled_movement import settled_active_movements, settled_standby_movements
from assignor.placement.workspace import Workspace


def _client_set(ws: Workspace) -> ConstrainedPrioritySet:
    return ConstrainedPrioritySet(
        ws.keys, [spread(process_id_hash(p)) for p in ws.pids], ws.touched
    )


def _poll(
    clients: ConstrainedPrioritySet,
    caught: CaughtUp,
    task: int,
    extra: Callable[[int], bool] | None,
) -> int | None:
    """Kafka's constrained poll: the lightest caught-up client that ``extra`` (if any) accepts."""
    candidates = caught.candidates(task)
    if candidates is not None:
        if extra is not None:
            candidates = [c for c in candidates if extra(c)]
            if not candidates:
                clients.poll_none_valid()
                return None
            return clients.poll(set(candidates).__contains__, candidates)
        if not candidates:
            clients.poll_none_valid()
            return None
        return clients.poll(caught.candidate_set(task, candidates).__contains__, candidates)
    if extra is None:
        return clients.poll(lambda c: caught.is_caught_up(c, task))
    return clients.poll(lambda c: caught.is_caught_up(c, task) and extra(c))


def _poll_order(keys: list[int]) -> list[int]:
    """The order Kafka's movement queue (a ``PriorityQueue`` offered ``keys`` in turn, then only
    polled) answers in: sorted when no two keys tie; on ties the heap's layout decides."""
    if len(set(keys)) == len(keys):
        return sorted(range(len(keys)), key=keys.__getitem__)
    heap = JavaPriorityQueue(keys)
    for i in range(len(keys)):
        heap.offer(i)
    order = []
    while (head := heap.poll()) is not None:
        order.append(head)
    return order


def assign_active_movements(
    ws: Workspace, caught: CaughtUp, warmups: dict[int, set[int]], budget: Budget
) -> int:
    """Move actives to caught-up clients; return how many movements were needed."""
    keys: list[int] = []
    moves: list[tuple[int, int]] = []
    for client in range(len(ws.pids)):
        caught.add_moves(client, ws.active[client], moves, keys)
    needed = len(moves)
    order = _poll_order(keys)
    if settled_active_movements(ws, caught, moves, order, warmups, budget):
        return needed

    clients = _client_set(ws)
    for client in range(len(ws.pids)):
        clients.offer(client)
    standby = ws.standby
    for head in order:
        task, destination = moves[head]

        def has_standby(c: int, t: int = task) -> bool:
            return t in standby[c]

        source = _poll(clients, caught, task, has_standby)
        if source is not None:
            ws.swap_standby_and_active(task, source, destination)
            clients.offer_all((source, destination))
            continue
        source = _poll(clients, caught, task, None)
        if source is None:
            source = caught.source_for_active(task, destination)
            if task in standby[source]:
                ws.swap_standby_and_active(task, source, destination)
                clients.offer_all((source, destination))
                continue
        move_active_and_warm_up(ws, task, source, destination, warmups, budget)
        clients.offer_all((source, destination))
    return needed


def _order_free(budget: Budget, tasks: list[int]) -> bool:
    """Whether the settled standby step decides the same in any order of its moves
    (``settled_movement``, point 6): no warm-up is left (as after an active step that used
    the budget up) and no task is to move twice (one standby replica)."""
    return budget.left <= 0 and len(set(tasks)) == len(tasks)


def assign_standby_movements(
    ws: Workspace, caught: CaughtUp, warmups: dict[int, set[int]], budget: Budget
) -> int:
    """Move standbys to caught-up clients; return how many moved.

    When :func:`_order_free` holds, the settled step is tried on the moves in the order they
    were found, without Kafka's movement order (its keys and sort); the queue's steps, if
    needed, still get that order.
    """
    moves: list[tuple[int, int]] = []
    for destination in range(len(ws.pids)):
        warm = warmups.get(destination)
        held = ws.standby[destination]
        caught.add_moves(destination, held - warm if warm else held, moves, None)
    tasks = [task for task, _ in moves]
    free = _order_free(budget, tasks)
    if free:
        settled = settled_standby_movements(ws, caught, moves, range(len(moves)), budget)
        if settled is not None:
            return settled
    keys: list[int] = []
    caught.add_keys(tasks, keys)
    order = _poll_order(keys)
    if not free:  # (a settled step that failed changed nothing, and fails in any order)
        settled = settled_standby_movements(ws, caught, moves, order, budget)
        if settled is not None:
            return settled

    clients = _client_set(ws)
    for destination in range(len(ws.pids)):
        clients.offer(destination)
    moved = 0
    active = ws.active
    standby = ws.standby
    for head in order:
        task, destination = moves[head]

        def eligible(c: int, t: int = task) -> bool:
            return t not in active[c] and t not in standby[c]

        source = _poll(clients, caught, task, eligible)
        if source is None:
            source = caught.most_caught_up(task, destination, eligible)
        if source is None:
            continue
        ws.assign_standby(source, task)
        if not budget.take():
            ws.unassign_standby(destination, task)
        clients.offer_all((source, destination))
        moved += 1
    return moved


__all__ = ["assign_active_movements", "assign_standby_movements"]
