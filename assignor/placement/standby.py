"""Where standby replicas go: least-loaded clients, optionally spread over client tags.

Two placements, as in Kafka (``DefaultStandbyTaskAssignor``, ``ClientTagAwareStandbyTaskAssignor``
of KIP-708), chosen by whether ``rack.aware.assignment.tags`` is set:

* default: each replica of each stateful task (task order) goes to the least-loaded client
  (load = active + standby tasks per thread, ties by ``ProcessId``) that holds no copy yet;
* tag-aware: the replicas of a task go first to clients whose tag values differ from those of
  every client already holding the task, one tag key at a time; a key whose values are all
  used up stops counting. What could not be placed that way falls back to the default rule.

In these two placements the least-loaded order never goes stale (only the client just taken
changes), so an ordered list gives exactly the answers of Kafka's heap.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Mapping

from assignor._java.hash_codes import spread, task_id_hash
from assignor._java.hash_table import hash_set_order
from assignor.placement.workspace import Workspace

log = logging.getLogger(__name__)

_SHORTFALL = (
    "Unable to assign %d of %d standby tasks for task [%s]. There is not enough available "
    "capacity. You should increase the number of application instances to maintain the "
    "requested number of standby replicas."
)


class _LeastLoaded:
    """Clients ordered by ``ws.keys`` = (assigned load, client); exact while keys stay fresh."""

    __slots__ = ("_keys", "_order", "_ws")

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws
        self._keys: dict[int, tuple[float, int]] = {}
        self._order: list[tuple[float, int]] = []

    def offer(self, client: int) -> None:
        old = self._keys.get(client)
        if old is not None:
            del self._order[bisect.bisect_left(self._order, old)]
        key = self._ws.keys[client]
        self._keys[client] = key
        bisect.insort(self._order, key)

    def offer_all(self, clients: range | list[int]) -> None:
        for client in clients:
            self.offer(client)

    def poll(self, task: int, also_used: set[int] | None = None) -> int | None:
        """The lightest client without ``task`` (and, if given, not in ``also_used``)."""
        ws = self._ws
        active = ws.active
        standby = ws.standby
        order = self._order
        for i, (_, client) in enumerate(order):
            if task in active[client] or task in standby[client]:
                continue
            if also_used is not None and client in also_used:
                continue
            del order[i]
            del self._keys[client]
            return client
        return None


def assign_standbys_default(ws: Workspace, replicas: int) -> None:
    """``DefaultStandbyTaskAssignor``: ``replicas`` copies of each stateful task."""
    if _copies_everywhere(ws, replicas):
        return
    if _equal_capacities(ws):
        _default_equal_capacities(ws, replicas)
        return
    # ``_place`` over a ``_LeastLoaded`` of every client, for each task, with the poll, the
    # assignment and the re-offer inlined (a thousand tasks, three method calls each): the
    # order list holds every client's current key except between a poll and its re-offer.
    order = sorted(ws.keys)
    active = ws.active
    standby = ws.standby
    count = ws.count
    capacity = ws.capacity
    keys = ws.keys
    touched = ws.touched
    for task in ws.stateful:
        remaining = replicas
        while remaining > 0:
            for i, (_, client) in enumerate(order):  # noqa: B007 (i: the slot found)
                if task not in active[client] and task not in standby[client]:
                    break
            else:
                break  # no client without a copy is left
            del order[i]
            standby[client].add(task)
            n = count[client] + 1
            count[client] = n
            key = keys[client] = (n / capacity[client], client)
            touched.append(client)
            bisect.insort(order, key)
            remaining -= 1
        if remaining > 0:
            log.debug(_SHORTFALL, remaining, replicas, ws.tasks[task])


def _equal_capacities(ws: Workspace) -> bool:
    """Every client has the same number of threads (the usual group)."""
    return len(set(ws.capacity)) == 1


def _default_equal_capacities(ws: Workspace, replicas: int) -> None:
    """``assign_standbys_default`` when every client has the same capacity ``k``: a load
    ``n / k`` orders as the count ``n`` does (dividing by one positive number keeps the order,
    and distinct counts below 2**53 stay distinct doubles), so the order list holds each
    client's (count, client) as one int, ``count << 32 | client`` (fewer than 2**32 clients),
    which compares in C without building a tuple and a double per placement. Keys and
    ``touched`` are brought up to date once per client at the end: nothing reads them
    before (``tests/assignor/placement/test_standby.py`` compares this with the general
    placement on random workspaces). The counts are read back from the order's keys at
    the end too, and the least-loaded client is tried before any scan: at 1,000 tasks a
    count, a set insertion and an ``enumerate`` per placement were a third of the loop."""
    active = ws.active
    standby = ws.standby
    count = ws.count
    order = sorted((n << 32) | c for c, n in enumerate(count))
    low = (1 << 32) - 1
    one = 1 << 32
    insort = bisect.insort
    for task in ws.stateful:
        remaining = replicas
        while remaining > 0:
            key = order[0]
            client = key & low
            i = 0
            if task in active[client] or task in standby[client]:
                for i, key in enumerate(order):  # noqa: B007 (i: the slot found)
                    client = key & low
                    if task not in active[client] and task not in standby[client]:
                        break
                else:
                    break  # no client without a copy is left
            del order[i]
            standby[client].add(task)
            insort(order, key + one)
            remaining -= 1
        if remaining > 0:
            log.debug(_SHORTFALL, remaining, replicas, ws.tasks[task])
    placed = count.copy()
    for key in order:
        placed[key & low] = key >> 32
    capacity = ws.capacity
    for client, n in enumerate(placed):
        if n != count[client]:  # (counts only grow: the clients that took a copy)
            count[client] = n
            ws.keys[client] = (n / capacity[client], client)
            ws.touched.append(client)


def _place(ws: Workspace, clients: _LeastLoaded, task: int, remaining: int, replicas: int) -> int:
    while remaining > 0:
        client = clients.poll(task)
        if client is None:
            break
        ws.assign_standby(client, task)
        remaining -= 1
        clients.offer(client)
    if remaining > 0:
        # per task at DEBUG: the leader logs one WARNING with the total (pipeline)
        log.debug(_SHORTFALL, remaining, replicas, ws.tasks[task])
    return remaining


def _copies_everywhere(ws: Workspace, replicas: int) -> bool:
    """Kafka's default placement in one pass per client, when every client lacking a task is
    to get a copy of it; ``False`` (nothing changed) when that is not so.

    Why it is exact: for each task Kafka polls the least-loaded client without a copy until it
    has placed ``replicas`` or none is left. When no more clients lack the task than
    ``replicas``, every one of them gets it, in whatever order the loads put them, so the
    loads after that task, and by induction the whole result, do not depend on the loads at
    all. That holds for every task when there are at most ``replicas + 1`` clients and each
    task is already held by one (its active): a group of two clients with one standby, or
    one client left. ``tests/assignor/placement/test_standby.py`` checks it against the
    task-by-task placement on random workspaces.
    """
    n = len(ws.pids)
    stateful = ws.stateful
    if n > replicas + 1 or not set().union(*ws.active, *ws.standby).issuperset(stateful):
        return False
    wanted = set(stateful)
    if log.isEnabledFor(logging.DEBUG):
        holders = dict.fromkeys(stateful, 0)
        for held in (*ws.active, *ws.standby):
            for task in wanted.intersection(held):
                holders[task] += 1
        for task in stateful:
            remaining = replicas - (n - holders[task])
            if remaining > 0:
                log.debug(_SHORTFALL, remaining, replicas, ws.tasks[task])
    for client in range(n):
        lacking = wanted.difference(ws.active[client], ws.standby[client])
        if lacking:
            ws.assign_new_standbys(client, lacking)
    return True


def assign_standbys_tag_aware(ws: Workspace, replicas: int, rack_tags: tuple[str, ...]) -> None:
    """``ClientTagAwareStandbyTaskAssignor`` with the clients' own ``client_tags``."""
    tags: list[Mapping[str, str]] = [c.client_tags for c in ws.clients]
    configured = set(rack_tags)
    values_of_key: dict[str, set[str]] = {}
    clients_with: dict[tuple[str, str], set[int]] = {}
    for c, client_tags in enumerate(tags):
        for key, value in client_tags.items():
            values_of_key.setdefault(key, set()).add(value)
            clients_with.setdefault((key, value), set()).add(c)

    clients = _LeastLoaded(ws)
    everyone = range(len(ws.pids))
    remaining_by_task: dict[int, int] = dict.fromkeys(ws.stateful, replicas)
    owner = {t: c for c in everyone for t in ws.active[c]}
    for task in ws.stateful:
        active_client = owner.get(task)
        if active_client is None:
            continue
        clients.offer_all(everyone)
        used_clients = 1
        remaining = remaining_by_task[task]
        used_entries: dict[tuple[str, str], set[int]] = {}
        excluded: set[int] = set()
        last = active_client
        while True:
            for key, value in tags[last].items():
                if key not in configured:
                    log.debug(
                        "Client tag with key [%s] will be ignored when computing rack aware "
                        "standby task assignment because it is not part of the configured "
                        "rack awareness %s.",
                        key,
                        sorted(configured),
                    )
                    continue
                all_values = values_of_key[key]
                if len(all_values) <= used_clients:
                    for v in all_values:
                        used_entries.pop((key, v), None)
                else:
                    used_entries[(key, value)] = clients_with[(key, value)]
            excluded = set().union(*used_entries.values()) if used_entries else set()
            client = clients.poll(task, excluded)
            if client is None:
                break
            used_clients += 1
            remaining -= 1
            ws.assign_standby(client, task)
            last = client
            if remaining <= 0:
                break
        if remaining > 0:
            remaining_by_task[task] = remaining
            log.warning(
                "Rack aware standby task assignment was not able to assign %d of %d standby "
                "tasks for the active task [%s] with the rack aware assignment tags %s. "
                "Standby task assignment will fall back to assigning standby tasks to the "
                "least loaded clients.",
                remaining,
                replicas,
                ws.tasks[task],
                list(rack_tags),
            )
        else:
            del remaining_by_task[task]

    if not remaining_by_task:
        return
    clients.offer_all(everyone)
    # Kafka walks its HashMap<TaskId, Integer> of pending tasks: hash-table order of a map that
    # once held every stateful task, whose placed tasks were removed in task order (the table
    # never shrinks; in a tree bin a removal can reorder the rest).
    hashes = [spread(task_id_hash(ws.tasks[t])) for t in ws.stateful]
    placed = [i for i, t in enumerate(ws.stateful) if t not in remaining_by_task]
    order = [ws.stateful[i] for i in hash_set_order(hashes, ws.stateful, removed=placed)]
    for task in order:
        pending = remaining_by_task.get(task)
        if pending is not None:
            remaining_by_task[task] = _place(ws, clients, task, pending, replicas)


def tag_movement_allowed(ws: Workspace, source: int, destination: int) -> bool:
    """A standby may move between clients only if the destination has all the source's tags."""
    destination_tags = ws.clients[destination].client_tags
    return all(
        destination_tags.get(key) == value
        for key, value in ws.clients[source].client_tags.items()
    )
