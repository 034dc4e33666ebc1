"""Who is caught up on which task, and the warm-up budget: what both movement steps consult.

Lags are fixed for the whole rebalance, so every answer here is computed once per task and
kept; :mod:`assignor.placement.task_movement` (Kafka's queue-driven steps) and
:mod:`assignor.placement.settled_movement` (the same steps where the queue cannot matter) share
them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import repeat
from operator import itemgetter

from assignor.placement.lags import LONG_MAX, is_caught_up
from assignor.placement.workspace import Workspace
from protocol.messages import LATEST_OFFSET

_NONE_CAUGHT_UP: list[int] = []  # shared by every task nobody is caught up on: never mutated
_UNKNOWN: list[int] = []  # a look-up's "not answered yet"
#: a (client, lag) item as (lag, client), in C: a ``zip(..., strict=True)`` per task parses
#: its keyword on every call
_LAG_CLIENT = itemgetter(1, 0)


class CaughtUp:
    """Which clients are caught up on which stateful task, and the clients in lag order."""

    __slots__ = (
        "_acceptable",
        "_candidate_sets",
        "_candidates",
        "_count",
        "_movable",
        "_none_listed",
        "_order",
        "ws",
    )

    def __init__(self, ws: Workspace, acceptable_recovery_lag: int) -> None:
        self.ws = ws
        self._acceptable = acceptable_recovery_lag
        self._count: dict[int, int] = {}
        self._order: dict[int, list[tuple[int, int]]] = {}
        # ``candidates(t)`` so far; filled at once from the lags' record when it has one
        self._candidates: dict[int, list[int] | None] = self._recorded_candidates()
        self._candidate_sets: dict[int, frozenset[int]] = {}
        self._movable: set[int] | None = None
        self._none_listed = False  # whether ``candidates`` answered ``None`` for some task

    def _recorded_candidates(self) -> dict[int, list[int] | None]:
        """``candidates(t)`` of every task whose default lag is not caught up, from the lags'
        record: ``caught[t]`` (one list per task, as ``candidates`` lists them, or one shared
        empty list, which nobody mutates); the rest are left to ``candidates``."""
        lags = self.ws.lags
        caught = lags.caught
        if caught is None or lags.default_caught is None or lags.acceptable != self._acceptable:
            return {}
        known: dict[int, list[int] | None] = dict.fromkeys(lags.default, _NONE_CAUGHT_UP)
        known.update(caught)
        for task in lags.default_caught:
            del known[task]
        return known

    @property
    def known(self) -> dict[int, list[int] | None]:
        """``candidates(t)`` of the tasks answered so far (read-only: a look-up without a call
        where a loop asks for every task it moves)."""
        return self._candidates

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
        cache = self._candidates
        if task in cache:
            return cache[task]
        lags = self.ws.lags
        reported = lags.special[task]
        acceptable = self._acceptable
        found: list[int] | None = None
        if not is_caught_up(lags.default[task], acceptable) or len(reported) >= len(self.ws.pids):
            if lags.caught is not None and lags.acceptable == acceptable:
                found = lags.caught.get(task) or []  # the same list, recorded with the lags
            elif acceptable == LONG_MAX:
                found = list(reported)
            else:  # ``is_caught_up`` inlined: one test per reporting client
                latest = LATEST_OFFSET
                found = [
                    c for c, lag in reported.items() if lag == latest or 0 <= lag <= acceptable
                ]
        cache[task] = found
        if found is None:
            self._none_listed = True
        return found

    def lists_every_task(self) -> bool:
        """Whether ``known`` answers every stateful task, each with a list: then a step that
        reads it for its tasks need not check each answer for a miss or ``None`` (both a
        pass of a few hundred instructions per task). ``known`` holds stateful tasks only,
        so equal counts are equal sets."""
        return not self._none_listed and len(self._candidates) == len(self.ws.lags.default)

    def candidate_set(self, task: int, candidates: list[int]) -> frozenset[int]:
        """``candidates(task)`` as a set, built once per task rather than once per poll."""
        found = self._candidate_sets.get(task)
        if found is None:
            found = self._candidate_sets[task] = frozenset(candidates)
        return found

    def add_moves(
        self,
        client: int,
        tasks: set[int],
        moves: list[tuple[int, int]],
        keys: list[int] | None,
    ) -> None:
        """Append to ``moves`` (task, client) for each of the client's ``tasks`` it should give
        up, in task order: those it is not caught up on while some client is strictly further
        ahead; and to ``keys`` (unless ``None``: a step whose order cannot matter) each one's
        (caught-up clients, task), Kafka's movement order, as one int (:func:`movement_key`).
        One call per client, not per task (the setup of both movements looks at every assigned
        stateful task); the caught-up test is inlined (``lags.is_caught_up``), and the count
        is the candidates' when they are listed (then they are every caught-up client)."""
        acceptable = self._acceptable
        if acceptable == LONG_MAX:
            return  # every client is caught up on everything: nothing to move
        lags = self.ws.lags
        special = lags.special
        default = lags.default
        everyone = len(self.ws.pids)
        found: list[int] = []
        movable = self._unreported_movable()
        if movable is not None:
            assert lags.reported_by is not None
            # The tasks the client sent no offset sum for, in C: its lag there is the default,
            # which is not caught up on any of ``movable`` and is above some client's lag.
            sent = lags.reported_by[client]
            found = list(movable.intersection(tasks).difference(sent))
            if lags.all_caught is not None and lags.all_caught[client]:
                tasks = set()  # caught up on every task it reported: none of those moves
            else:
                tasks = tasks.intersection(sent)  # the rest, one at a time as below
        for task in tasks:
            reported = special[task]
            if not reported:
                continue  # every client has the default lag: none is strictly further ahead
            lag = reported.get(client, default[task])
            if lag == LATEST_OFFSET or 0 <= lag <= acceptable:
                continue  # caught up
            least = min(reported.values())  # the least lag of any client
            if len(reported) < everyone:
                least = min(least, default[task])
            if least < lag:
                found.append(task)
        found.sort()
        if keys is not None:
            self.add_keys(found, keys)
        moves.extend(zip(found, repeat(client)))

    def add_keys(self, tasks: list[int], keys: list[int]) -> None:
        """Append to ``keys`` each task's (caught-up clients, task), Kafka's movement order,
        as one int (:func:`movement_key`)."""
        known = self._candidates
        for task in tasks:
            listed = known.get(task, _UNKNOWN)
            if listed is _UNKNOWN:
                listed = self.candidates(task)
            count = len(listed) if listed is not None else self.count(task)
            keys.append((count << 32) | task)  # (count, task) as one int: see ``movement_key``

    def _unreported_movable(self) -> set[int] | None:
        """The tasks a client that reported nothing for must give up (its lag is the default:
        not caught up, and some client's lag is below it, so strictly further ahead), if the
        lags recorded what that needs (``None`` otherwise)."""
        movable = self._movable
        if movable is None:
            lags = self.ws.lags
            if (
                lags.below is None
                or lags.default_caught is None
                or lags.acceptable != self._acceptable
            ):
                return None
            movable = self._movable = lags.below - lags.default_caught
        return movable

    def by_lag(self, task: int) -> Iterator[int]:
        """All clients, least lag first, ties by ``ProcessId`` (Kafka's ``tasksToClientByLag``)."""
        order = self._order.get(task)
        lags = self.ws.lags
        special = lags.special[task]
        if order is None:
            order = self._order[task] = sorted(map(_LAG_CLIENT, special.items()))
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
        # The clients whose lag is below the default come first in ``by_lag``, in this
        # order: most answers are found among them without the generator.
        special = self.ws.lags.special[task]
        order = self._order.get(task)
        if order is None:
            if len(special) == 1:  # (one reporter, the usual standby case: nothing to sort)
                order = [_LAG_CLIENT(next(iter(special.items())))]
            else:
                order = sorted(map(_LAG_CLIENT, special.items()))
            self._order[task] = order
        default = self.ws.lags.default[task]
        i = 0
        for lag, client in order:
            if lag >= default:
                break
            if client == destination:
                return None
            if eligible(client):
                return client
            i += 1
        if i == len(order) or order[i][0] > default:
            # No reported lag equals the default (the sparse lags never keep one): next come
            # the clients with the default lag in client order, then the rest of ``order``.
            if len(special) < len(self.ws.pids):
                for client in range(len(self.ws.pids)):
                    if client in special:
                        continue
                    if client == destination:
                        return None
                    if eligible(client):
                        return client
            for _, client in order[i:]:
                if client == destination:
                    return None
                if eligible(client):
                    return client
            return None
        for client in self.by_lag(task):  # (the ones above again: neither, as just seen)
            if client == destination:
                return None
            if eligible(client):
                return client
        return None


    def source_for_active(self, task: int, destination: int) -> int:
        """Kafka's last resort for an active movement: the most caught-up client ahead of the
        destination in lag order (one exists: that is why the movement was scheduled)."""
        found = self.most_caught_up(task, destination, lambda c: True)
        if found is None:
            raise RuntimeError(
                "Tried to move task to more caught-up client as scheduled before but none "
                f"exist (task {self.ws.tasks[task]})"
            )
        return found


def movement_key(caught_up_clients: int, task: int) -> int:
    """Kafka's movement order (caught-up clients, then task) as one int: both are below
    2**32 (task numbers and client counts), so ints compare as the pairs do, and equal ints
    are equal pairs; sorting and hashing ints costs a fraction of tuples'."""
    return (caught_up_clients << 32) | task


class Budget:
    """The warm-up replicas left for this rebalance (Kafka's shared ``AtomicInteger``)."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left

    def take(self) -> bool:
        had = self.left
        self.left -= 1
        return had > 0


def move_active_and_warm_up(
    ws: Workspace,
    task: int,
    source: int,
    destination: int,
    warmups: dict[int, set[int]],
    budget: Budget,
) -> None:
    """Kafka's ``moveActiveAndTryToWarmUp``: the source takes the active; the destination
    keeps a warm-up standby while the budget lasts (its warm-up set exists either way)."""
    ws.assign_active(source, task)
    ws.unassign_active(destination, task)
    warm = warmups.setdefault(destination, set())
    if budget.take():
        ws.assign_standby(destination, task)
        warm.add(task)
