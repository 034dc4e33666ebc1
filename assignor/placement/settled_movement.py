"""Task movement without Kafka's queue, when no poll of the step can depend on its layout.

Kafka's movement steps pick each source client by polling a ``ConstrainedPrioritySet``: the
queue pops clients until one qualifies, and because loads change while clients sit in it, the
pick can depend on the queue's array layout, which
:mod:`assignor.placement.constrained_priority_set` reproduces at a cost of a few microseconds
per step. In the common small-group rebalance (a member left, every survivor is caught up on
the tasks it had, at most one standby per task) no pick depends on the layout, and this module
decides the whole step from the workspace alone. Why that is exact:

1. **Every client is queued at every poll.** Each step offers every client first; a poll that
   answers removes only its answer, and every move re-offers the source and the destination.
   A poll that answers ``None`` has popped every client and offered them all back.
2. **A poll whose qualifying set has one client answers that client, and one with none answers
   ``None``**, whatever the layout (it pops until the one qualifying client or until empty).
   A poll with none empties the queue and refills it by plain inserts with loads that do not
   change in between: the refilled array is a heap by the current loads.
3. **A poll of a heap whose loads are current answers the lightest qualifying client** (by
   (load, ``ProcessId``), distinct), whatever order the refill happened in.
4. **Active movement** polls first for a caught-up client holding a standby of the task, then
   for any caught-up client. Each task is moved once (it is active on one client) and a move
   changes only its own task's standbys, so what the first poll may find is known at the start
   of the step. If it is never more than one client (always so with one standby replica), the
   first poll answers by 2; when it answers ``None`` it was a reset, so the second answers by 3:
   the lightest caught-up client by the current loads. A task no client is caught up on goes,
   as in Kafka, to the most caught-up client in lag order, with no queue involved.
5. **Standby movement** polls for a caught-up client that holds no copy of the task. A move of
   a task only adds holders of that task (the destination, which may lose its copy, is not
   caught up), so what a poll may find only shrinks during the step: if it is at most one
   client at the start for every move, every poll answers by 2.

6. **The standby step's order matters only through the budget and repeated tasks.** Its
   plan looks at each move alone (the step fails, changing nothing, iff some move fails); a
   move reads and writes only its own task's copies, and ``budget.take()`` fails for every
   move once the budget is spent. So when no warm-up is left at the start and no task is to
   move twice (one standby replica), any order gives the same clients, counts and budget,
   and the caller may skip sorting the moves into Kafka's order.

7. **After the last warm-up, the active step's moves commute** when each is a swap or has one
   candidate. Such a move's source is known at the start (the caught-up standby, or the one
   caught-up client), so it reads no load; ``budget.take()`` fails for it and for every move
   after it, so it changes no budget-dependent outcome of a later move; and it reads and
   writes only its own task's copies (each task moves once). Those moves are applied after
   the head (the moves up to the one that spends the last warm-up, which the swaps among them
   do not take) by plain set operations, and the counts of the clients they touched are
   rebuilt from the sets (the count is the number of tasks a client holds). A head move with
   no candidate may turn out a swap (its source comes by lag order) and leave a warm-up to a
   later move: then every move is taken one at a time.

If a step does not meet its condition, nothing has been changed and the caller runs Kafka's
steps on the queue. ``tests/assignor/placement/test_settled_movement.py`` runs both on random
workspaces shaped to meet and to miss the conditions and compares every client's tasks, the
warm-ups, the budget and the counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_, itemgetter
from typing import cast

from assignor.placement.caught_up import Budget, CaughtUp
from assignor.placement.workspace import Workspace

_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_UNKNOWN: list[int] = []  # a look-up's "not recorded": compared by identity only


def settled_active_movements(
    ws: Workspace,
    caught: CaughtUp,
    moves: list[tuple[int, int]],
    order: list[int],
    warmups: dict[int, set[int]],
    budget: Budget,
) -> bool:
    """Kafka's active movements in ``order`` without the queue (the module's point 4), if no
    poll can depend on its layout; ``False`` (nothing changed) otherwise."""
    standby = ws.standby
    ordered = list(map(moves.__getitem__, order))
    tasks = list(map(_FIRST, ordered))
    known = caught.known
    plan = list(map(known.get, tasks, repeat(_UNKNOWN)))
    if not caught.lists_every_task():  # (else no look-up can miss or find ``None``)
        if any(map(is_, plan, repeat(_UNKNOWN))):  # not recorded with the lags: ask
            plan = [known[t] if t in known else caught.candidates(t) for t in tasks]
        if None in plan:
            return False  # most clients are caught up on some task: the queue's order decides
    candidate_lists = cast(list[list[int]], plan)
    holders: list[int | None] | None = None
    if any(standby):  # (no client holds a standby, as without replicas: no holder to find)
        holders = []
        for task, candidates in zip(tasks, candidate_lists, strict=True):
            holder: int | None = None
            for c in candidates:
                if task in standby[c]:
                    if holder is not None:
                        return False  # two caught-up standbys: the first poll may go either way
                    holder = c
            holders.append(holder)

    # Kafka's four kinds of move. Only the counts are kept current in place (the lightest-
    # candidate picks compare (load, client) as the keys do); the keys of every client a move
    # touched are rebuilt from them at the end. No check that a client already holds the task:
    # the plan says so.
    active = ws.active
    count = ws.count
    capacity = ws.capacity
    left = budget.left
    sources: list[int] = []
    add_source = sources.append
    cold: list[int] = []  # destinations that kept no warm-up
    destinations = list(map(_SECOND, ordered))
    # the first ``steps`` moves one at a time, the rest (if any) as point 7 allows
    steps = _stepped(candidate_lists, holders, left)
    for task, destination, candidates, holder in zip(
        tasks[:steps],
        destinations,
        candidate_lists,
        holders if holders is not None else repeat(None),
        strict=False,  # (``repeat`` is endless; the head's ``steps`` moves end the loop)
    ):
        if holder is None and not candidates:
            source = caught.source_for_active(task, destination)
            if task in standby[source]:
                holder = source
        if holder is not None:  # swap: the holder's standby becomes active, loads unchanged
            standby[holder].remove(task)
            active[holder].add(task)
            active[destination].remove(task)
            standby[destination].add(task)
            add_source(holder)
            continue
        if not candidates:
            pass  # ``source`` is the most caught-up client, holding no standby of the task
        elif len(candidates) == 1:
            source = candidates[0]
        elif len(candidates) == 2:
            first, second = candidates
            first_load = count[first] / capacity[first]
            second_load = count[second] / capacity[second]
            if first_load < second_load or (first_load == second_load and first < second):
                source = first
            else:
                source = second
        else:
            source = min(candidates, key=lambda c: (count[c] / capacity[c], c))
        active[source].add(task)
        count[source] += 1
        active[destination].remove(task)
        if left > 0:  # ``budget.take()``: the destination keeps a warm-up standby
            standby[destination].add(task)
            warm = warmups.get(destination)
            if warm is None:
                warmups[destination] = {task}
            else:
                warm.add(task)
        else:
            count[destination] -= 1
            cold.append(destination)
        left -= 1
        add_source(source)
    changed = set(sources).union(destinations[:steps])
    cold_ones = set(cold)
    if steps < len(tasks):
        tail = slice(steps, None)
        left = _apply_tail(
            ws,
            tasks[tail],
            destinations[tail],
            candidate_lists[tail],
            holders[tail] if holders is not None else None,
            left,
            changed,
            cold_ones,
        )
    budget.left = left
    for destination in cold_ones.difference(warmups):
        warmups[destination] = set()  # Kafka's ``computeIfAbsent``: an empty warm-up set
    ordered_changed = sorted(changed)
    keys = ws.keys
    for client in ordered_changed:
        keys[client] = (count[client] / capacity[client], client)
    ws.touched.extend(ordered_changed)  # keys replaced while no queue looked
    return True


def _stepped(
    candidate_lists: list[list[int]], holders: list[int | None] | None, left: int
) -> int:
    """How many moves (from the first) the settled active step takes one at a time: up to
    the one that spends the last warm-up, or all of them unless each later one is a swap or
    has one candidate and each earlier one that is no swap has some (point 7)."""
    n = len(candidate_lists)
    # a move that is no swap takes a warm-up while any is left, so the head ends at the
    # ``left``-th of them; one with no candidate may turn out a swap: then it is all steps
    if holders is None:
        steps = min(max(left, 0), n)
        head = candidate_lists[:steps]
        tail = candidate_lists[steps:]
    else:
        is_plain = list(map(is_, holders, repeat(None)))
        steps = 0
        if left > 0:
            at = list(compress(range(n), is_plain))
            if len(at) < left:
                return n
            steps = at[left - 1] + 1
        head = list(compress(candidate_lists[:steps], is_plain[:steps]))
        tail = list(compress(candidate_lists[steps:], is_plain[steps:]))
    if steps == n or (head and min(map(len, head)) == 0):
        return n
    if tail and set(map(len, tail)) != {1}:  # (one pass, not a min and a max)
        return n
    return steps


def _apply_tail(
    ws: Workspace,
    tasks: list[int],
    destinations: list[int],
    candidate_lists: list[list[int]],
    holders: list[int | None] | None,
    left: int,
    changed: set[int],
    cold: set[int],
) -> int:
    """The moves after the last warm-up (point 7), each a swap or a move to its one
    candidate, by plain set operations with no load kept; the counts of the clients they
    touched are then rebuilt from the sets. Adds those clients to ``changed`` and each
    destination that kept no warm-up to ``cold``; returns the budget left."""
    active = ws.active
    standby = ws.standby
    count = ws.count
    if holders is None:
        for task, destination, (source,) in zip(tasks, destinations, candidate_lists, strict=True):
            active[source].add(task)
            active[destination].remove(task)
        touched = set(destinations)
        cold.update(touched)
        touched.update(map(_FIRST, candidate_lists))
        plain = len(tasks)
    else:
        touched = set()
        add_touched = touched.add
        add_cold = cold.add
        plain = 0
        for task, destination, candidates, holder in zip(
            tasks, destinations, candidate_lists, holders, strict=True
        ):
            if holder is None:
                source = candidates[0]
                active[source].add(task)
                active[destination].remove(task)
                add_cold(destination)
                plain += 1
            else:
                source = holder
                standby[holder].remove(task)
                active[holder].add(task)
                active[destination].remove(task)
                standby[destination].add(task)
            add_touched(source)
            add_touched(destination)
    for client in touched:
        count[client] = len(active[client]) + len(standby[client])
    changed.update(touched)
    return left - plain  # each move that is not a swap takes one


def settled_standby_movements(
    ws: Workspace,
    caught: CaughtUp,
    moves: list[tuple[int, int]],
    order: Sequence[int],
    budget: Budget,
) -> int | None:
    """Kafka's standby movements in ``order`` without the queue (the module's point 5): how
    many moved, or ``None`` (nothing changed) if a poll could depend on the queue's layout."""
    active = ws.active
    standby = ws.standby
    plan: list[tuple[int, int, int | None]] = []
    add_plan = plan.append
    known = caught.known
    # the moves in ``order``: as found when that is the order (no index step per move)
    in_order = type(order) is range and order == range(len(moves))
    ordered = moves if in_order else map(moves.__getitem__, order)
    for task, destination in ordered:
        candidates = known.get(task, _UNKNOWN)
        if candidates is _UNKNOWN:
            candidates = caught.candidates(task)
        if candidates is None:
            return None
        free: int | None = None
        for c in candidates:
            if task not in active[c] and task not in standby[c]:
                if free is not None:
                    return None  # two clients may qualify: the queue's layout decides
                free = c
        add_plan((task, destination, free))

    # No look at loads in this loop: copies move by plain set operations (each source holds
    # no copy, each destination holds one) and the loads are recounted once at the end.
    moved = 0
    left = budget.left
    changed: set[int] = set()
    for task, destination, free in plan:
        source: int | None = None
        if free is not None and task not in standby[free]:  # it may have taken a copy by now
            source = free
        if source is None:

            def eligible(c: int, t: int = task) -> bool:
                return t not in active[c] and t not in standby[c]

            source = caught.most_caught_up(task, destination, eligible)
            if source is None:
                continue
        standby[source].add(task)
        changed.add(source)
        if left <= 0:  # ``budget.take()`` fails: the destination keeps no warm-up
            standby[destination].remove(task)
            changed.add(destination)
        left -= 1
        moved += 1
    budget.left = left
    ws.recount(sorted(changed))
    return moved
