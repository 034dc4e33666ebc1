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

from collections.abc import Callable, Iterator

from assignor._java.hash_codes import process_id_hash, spread
from assignor._java.priority_queue import JavaPriorityQueue
from assignor.placement.constrained_priority_set import ConstrainedPrioritySet
from assignor.placement.lags import is_caught_up
from assignor.placement.workspace import Workspace


class CaughtUp:
    """Which clients are caught up on which stateful task, and the clients in lag order."""

    __slots__ = ("_acceptable", "_candidate_sets", "_candidates", "_count", "_min", "_order", "ws")

    def __init__(self, ws: Workspace, acceptable_recovery_lag: int) -> None:
        self.ws = ws
        self._acceptable = acceptable_recovery_lag
        self._count: dict[int, int] = {}
        self._min: dict[int, int] = {}
        self._order: dict[int, list[tuple[int, int]]] = {}
        self._candidates: dict[int, list[int] | None] = {}
        self._candidate_sets: dict[int, frozenset[int]] = {}

    def lag(self, client: int, task: int) -> int:
        lags = self.ws.lags
        return lags.special[task].get(client, lags.default[task])

    def is_caught_up(self, client: int, task: int) -> bool:
        return is_caught_up(self.lag(client, task), self._acceptable)

    def count(self, task: int) -> int:
        """How many clients are caught up on the task."""
        found = self._count.get(task)
        if found is None:
            lags = self.ws.lags
            special = lags.special[task]
            acceptable = self._acceptable
            caught = sum(1 for lag in special.values() if is_caught_up(lag, acceptable))
            if is_caught_up(lags.default[task], acceptable):
                caught += len(self.ws.pids) - len(special)
            found = self._count[task] = caught
        return found

    def candidates(self, task: int) -> list[int] | None:
        """The caught-up clients if few (the reporting ones), ``None`` if most clients are."""
        if task in self._candidates:
            return self._candidates[task]
        lags = self.ws.lags
        found: list[int] | None = None
        acceptable = self._acceptable
        if not is_caught_up(lags.default[task], acceptable) or len(lags.special[task]) >= len(
            self.ws.pids
        ):
            found = [c for c, lag in lags.special[task].items() if is_caught_up(lag, acceptable)]
        self._candidates[task] = found
        return found

    def candidate_set(self, task: int, candidates: list[int]) -> frozenset[int]:
        """``candidates(task)`` as a set, built once per task rather than once per poll."""
        found = self._candidate_sets.get(task)
        if found is None:
            found = self._candidate_sets[task] = frozenset(candidates)
        return found

    def min_lag(self, task: int) -> int:
        found = self._min.get(task)
        if found is None:
            lags = self.ws.lags
            special = lags.special[task]
            values = list(special.values())
            if len(special) < len(self.ws.pids):
                values.append(lags.default[task])
            found = self._min[task] = min(values)
        return found

    def to_move(self, client: int, tasks: set[int]) -> list[int]:
        """The client's ``tasks`` it should give up, in task order: those it is not caught up
        on while some client is strictly further ahead. One call per client, not per task
        (the setup of both movements looks at every assigned stateful task)."""
        lags = self.ws.lags
        special = lags.special
        default = lags.default
        acceptable = self._acceptable
        min_lag = self.min_lag
        found = []
        for task in sorted(tasks):
            reported = special[task]
            if not reported:
                continue  # every client has the default lag: none is strictly further ahead
            lag = reported.get(client, default[task])
            if not is_caught_up(lag, acceptable) and min_lag(task) < lag:
                found.append(task)
        return found

    def by_lag(self, task: int) -> Iterator[int]:
        """All clients, least lag first, ties by ``ProcessId`` (Kafka's ``tasksToClientByLag``)."""
        order = self._order.get(task)
        lags = self.ws.lags
        special = lags.special[task]
        if order is None:
            order = self._order[task] = sorted((lag, c) for c, lag in special.items())
        default = lags.default[task]
        i = 0
        while i < len(order) and order[i][0] < default:
            yield order[i][1]
            i += 1
        if len(special) < len(self.ws.pids):
            for c in range(len(self.ws.pids)):
                while i < len(order) and order[i][0] == default and order[i][1] < c:
                    yield order[i][1]
                    i += 1
                if c not in special:
                    yield c
        while i < len(order):
            yield order[i][1]
            i += 1

    def most_caught_up(
        self, task: int, destination: int, eligible: Callable[[int], bool]
    ) -> int | None:
        """The first eligible client ahead of ``destination`` in lag order, if any."""
        for client in self.by_lag(task):
            if client == destination:
                return None
            if eligible(client):
                return client
        return None


class Budget:
    """The warm-up replicas left for this rebalance (Kafka's shared ``AtomicInteger``)."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left

    def take(self) -> bool:
        had = self.left
        self.left -= 1
        return had > 0


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


def _poll_order(keys: list[tuple[int, int]]) -> list[int]:
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
    clients = _client_set(ws)
    keys: list[tuple[int, int]] = []
    moves: list[tuple[int, int]] = []
    for client in range(len(ws.pids)):
        for task in caught.to_move(client, ws.active[client]):
            keys.append((caught.count(task), task))
            moves.append((task, client))
        clients.offer(client)

    needed = len(moves)
    standby = ws.standby
    for head in _poll_order(keys):
        task, destination = moves[head]

        def has_standby(c: int, t: int = task) -> bool:
            return t in standby[c]

        source = _poll(clients, caught, task, has_standby)
        if source is not None:
            _swap(ws, task, source, destination)
            clients.offer_all((source, destination))
            continue
        source = _poll(clients, caught, task, None)
        if source is None:
            source = caught.most_caught_up(task, destination, lambda c: True)
            if source is None:
                raise RuntimeError(
                    "Tried to move task to more caught-up client as scheduled before but none "
                    f"exist (task {ws.tasks[task]})"
                )
            if task in standby[source]:
                _swap(ws, task, source, destination)
                clients.offer_all((source, destination))
                continue
        ws.assign_active(source, task)
        ws.unassign_active(destination, task)
        warm = warmups.setdefault(destination, set())
        if budget.take():
            ws.assign_standby(destination, task)
            warm.add(task)
        clients.offer_all((source, destination))
    return needed


def assign_standby_movements(
    ws: Workspace, caught: CaughtUp, warmups: dict[int, set[int]], budget: Budget
) -> int:
    """Move standbys to caught-up clients; return how many moved."""
    clients = _client_set(ws)
    keys: list[tuple[int, int]] = []
    moves: list[tuple[int, int]] = []
    for destination in range(len(ws.pids)):
        warm = warmups.get(destination)
        held = ws.standby[destination]
        for task in caught.to_move(destination, held - warm if warm else held):
            keys.append((caught.count(task), task))
            moves.append((task, destination))
        clients.offer(destination)

    moved = 0
    active = ws.active
    standby = ws.standby
    for head in _poll_order(keys):
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


def _swap(ws: Workspace, task: int, source: int, destination: int) -> None:
    """The caught-up standby becomes active; the intended client keeps a standby."""
    ws.unassign_standby(source, task)
    ws.assign_active(source, task)
    ws.unassign_active(destination, task)
    ws.assign_standby(destination, task)

