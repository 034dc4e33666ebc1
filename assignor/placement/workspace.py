"""The scratch space a task assignor works in: clients and tasks as small ints.

Kafka's assignors mutate ``ClientState`` objects and compare ``ProcessId``/``TaskId`` objects in
their inner loops. Python cannot afford that at 1,000 clients, so an assignor first numbers
clients in ``ProcessId`` order and tasks in ``TaskId`` order (the orders Kafka's ``TreeMap`` and
``TreeSet`` use, so comparing the numbers is comparing the ids), does all its work on plain
lists and sets of ints, and turns the result back into immutable :class:`ClientState` values.
Only a :class:`~assignor.placement.numbering.Numbering` outlives one ``assign`` call."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from operator import eq, is_
from types import MappingProxyType
from typing import cast

from assignor.placement.client_state import ClientState
from assignor.placement.lags import LONG_MAX, TaskLags
from assignor.placement.numbering import EndDefaults, Numbering, number_tasks, task_ranks
from protocol.ids import ProcessId, TaskId
from protocol.messages import LATEST_OFFSET, UNKNOWN_OFFSET_SUM

_NO_REPORTS: Mapping[int, int] = MappingProxyType({})


@dataclass(slots=True)
class Lags:
    """Every client's lag on every stateful task, stored sparsely.

    ``default[t]`` is the lag of most clients on task ``t``; ``special[t]`` maps the clients
    whose lag differs to their lag. With Kafka's inputs the default is the end-offset sum (the
    lag of a client with no local state) and only the clients that reported the task differ.
    """

    default: dict[int, int] = field(default_factory=dict)
    special: dict[int, Mapping[int, int]] = field(default_factory=dict)
    #: What the sparse path learns on its one pass over the reports, so that task movement
    #: need not look at every (client, task) again (``caught_up.CaughtUp``); ``None`` when
    #: not built. ``reported_by[c]``: the numbers of the tasks client ``c`` sent an offset sum
    #: for (any task not among them has the default lag on ``c``; -1 stands for a task that is
    #: not one of this rebalance's). ``below``: the tasks some client's lag is below the
    #: default on.
    reported_by: list[set[int]] | None = None
    below: set[int] | None = None
    #: with ``caught``: ``all_caught[c]``, whether client ``c`` is caught up on every stateful
    #: task it reported (a survivor of a rebalance: its actives running, its standbys within
    #: the acceptable lag), so task movement need not look at those tasks one by one
    all_caught: list[bool] | None = None
    #: with ``acceptable`` given (and below ``Long.MAX_VALUE``): ``caught[t]``, the clients
    #: in ``special[t]`` whose lag is caught up, in client order (a task none is caught up on
    #: has no entry), and ``default_caught``, the tasks whose default lag is caught up
    acceptable: int | None = None
    caught: dict[int, list[int]] | None = None
    default_caught: set[int] | None = None

    def lag(self, client: int, task: int) -> int:
        return self.special[task].get(client, self.default[task])


class Workspace:
    """Mutable assignment state over numbered clients and tasks.

    ``keys[c]`` is ``(assigned load, c)``, the order of Kafka's least-loaded priority sets,
    kept current by every assign/unassign so heaps can read it at any moment; ``touched`` gets
    ``c`` appended whenever ``keys[c]`` is replaced, so a structure that caches keys can tell
    which ones went stale without comparing them all.
    """

    __slots__ = (
        "_numbered",
        "_numbering",
        "_rank_index",
        "_task_index",
        "active",
        "capacity",
        "clients",
        "count",
        "keys",
        "lags",
        "pids",
        "standby",
        "stateful",
        "tasks",
        "touched",
    )

    def __init__(
        self,
        clients: Mapping[ProcessId, ClientState],
        all_tasks: Collection[TaskId],
        stateful_tasks: Collection[TaskId],
        *,
        with_lags: bool = True,
        acceptable_lag: int | None = None,
        numbering: Numbering | None = None,
    ) -> None:
        """``acceptable_lag``: ``acceptable.recovery.lag``, if the caller will ask who is caught
        up (the lags then also record it, on the same pass). ``numbering``: a leader's kept
        numbering of its tasks (:class:`Numbering`), else they are numbered afresh."""
        self.pids: list[ProcessId] = sorted(clients, key=lambda p: p.sort_key)
        self.clients: list[ClientState] = [clients[p] for p in self.pids]
        self.capacity: list[int] = [c.capacity for c in self.clients]
        self._task_index: dict[TaskId, int] | None = None
        numbered = (
            numbering.number(all_tasks, stateful_tasks)
            if numbering is not None
            else number_tasks(all_tasks, stateful_tasks)
        )
        self.tasks, self._rank_index, self.stateful = numbered
        self._numbering, self._numbered = numbering, numbered
        n = len(self.clients)
        self.active: list[set[int]] = [set() for _ in range(n)]
        self.standby: list[set[int]] = [set() for _ in range(n)]
        self.count: list[int] = [0] * n
        self.keys: list[tuple[float, int]] = [(0.0, c) for c in range(n)]
        self.touched: list[int] = []
        self.lags = self._lags(acceptable_lag) if with_lags else Lags()

    @property
    def task_index(self) -> dict[TaskId, int]:
        """Each task's number, by value (built when first asked)."""
        if self._task_index is None:
            self._task_index = {t: i for i, t in enumerate(self.tasks)}
        return self._task_index

    def numbers(self, tasks: Collection[TaskId]) -> list[int]:
        """Each of ``tasks``' number, -1 for one that is not a task of this workspace."""
        rank_index = self._rank_index
        if rank_index is not None:
            ranks = task_ranks(tasks)
            if ranks is not None:  # an unnamed task of the same rank is the same task
                return list(map(rank_index.get, ranks, repeat(-1)))
        return list(map(self.task_index.get, tasks, repeat(-1)))

    # --- lags --------------------------------------------------------------------------------

    def _lags(self, acceptable: int | None) -> Lags:
        lags = Lags()
        tasks = self.tasks
        stateful = self.stateful
        views = [c.task_lags for c in self.clients]
        shared_end = _shared_end_sums(views)
        if shared_end is not None:
            # Sparse path: only clients that reported a task can differ from the end sum.
            defaults, unreported, lowest_end = (
                self._numbering.end_defaults(shared_end, self._numbered, self._end_defaults)
                if self._numbering is not None
                else self._end_defaults(shared_end)
            )
            # tasks nobody reported share one read-only empty map: at 6,000 tasks, 6,000 dicts
            # fewer for the allocator and the cyclic collector
            specials: dict[int, Mapping[int, int]] = unreported.copy()
            reported: dict[int, dict[int, int]] = {}
            lags.default = defaults
            lags.special = specials
            numbers = self.numbers
            reported_by: list[set[int]] = []
            all_caught: list[bool] = []
            below: set[int] = set()
            add_below = below.add
            if acceptable is not None and acceptable >= LONG_MAX:
                acceptable = None  # every lag is caught up: nothing to record
            caught: dict[int, list[int]] = {}
            # ``lags.is_caught_up`` is ``lag == LATEST_OFFSET or low <= lag <= high``
            low, high = (0, acceptable) if acceptable is not None else (1, 0)
            # the sentinels as locals: a global look-up per report is a measurable share here
            latest = LATEST_OFFSET
            unknown = UNKNOWN_OFFSET_SUM
            ends_of = defaults.get
            shared: set[int] = set()  # the tasks whose map and list one client shares (below)
            for c, view in enumerate(views):
                assert isinstance(view, TaskLags)
                sums = view.offset_sums
                # the look-ups in C (``map``), the rest of the loop with no call per report
                found_all = numbers(sums)
                reported_by.append(set(found_all))
                # each report's end sum; None: no longer in the topology, or stateless
                report_ends = list(map(ends_of, found_all))
                if (
                    report_ends
                    # first: for a client that also reports standbys it stops at one of them
                    and all(map(eq, sums.values(), repeat(latest)))
                    and None not in report_ends
                    and min(cast(list[int], report_ends)) > latest
                    and reported.keys().isdisjoint(found_all)
                ):
                    # A client running every task it reported, none reported before: the loop
                    # below would give each task the map {c: -2} and the list [c], so one of
                    # each is shared (read-only, as all these maps and lists are; a later
                    # reporter of the task gets copies), stored in C, no step per report.
                    shared_lags, shared_caught = {c: latest}, [c]
                    reported.update(dict.fromkeys(found_all, shared_lags))
                    below.update(found_all)
                    caught.update(dict.fromkeys(found_all, shared_caught))
                    shared.update(found_all)
                    all_caught.append(True)
                    continue
                behind = False  # some stateful report of this client's is not caught up
                reports = zip(found_all, sums.values(), report_ends, strict=True)
                for found, offset_sum, end in reports:
                    if end is None:
                        continue
                    # ``task_lag`` inlined (a call per report is most of this loop's cost)
                    # (int comparisons, which the interpreter specializes, not ``in`` a tuple)
                    if offset_sum >= 0 or (offset_sum != latest and offset_sum != unknown):
                        if end < offset_sum:
                            # corrupt state is charged the whole end sum: lag == end
                            if end != latest and not low <= end <= high:
                                behind = True
                            continue
                        lag = end - offset_sum
                    else:
                        lag = offset_sum
                    if lag != end:
                        lags_of = reported.get(found)
                        if lags_of is None:
                            # the task's first report: it has no caught list either
                            reported[found] = {c: lag}
                            if lag < end:
                                add_below(found)
                            if lag == latest or low <= lag <= high:
                                caught[found] = [c]
                            else:
                                behind = True
                            continue
                        if found in shared:  # a copy: the map is shared (above)
                            reported[found] = {**lags_of, c: lag}
                        else:
                            lags_of[c] = lag
                        if lag < end:
                            add_below(found)
                        if lag == latest or low <= lag <= high:
                            on = caught.get(found)
                            if on is not None and found not in shared:
                                on.append(c)
                            else:  # new, or a copy of the shared list (as the maps)
                                caught[found] = [c] if on is None else [*on, c]
                        else:
                            behind = True
                    elif end != latest and not low <= end <= high:
                        behind = True  # (its lag is the default: not caught up)
                all_caught.append(not behind)
            specials.update(reported)
            lags.reported_by = reported_by
            lags.below = below
            if acceptable is not None:
                lags.acceptable = acceptable
                lags.caught = caught
                lags.all_caught = all_caught
                lags.default_caught = (
                    set()  # the usual case: no end sum is within the lag
                    if (acceptable + 1 if lowest_end is None else lowest_end) > acceptable
                    else {
                        t for t, e in defaults.items() if e == LATEST_OFFSET or 0 <= e <= acceptable
                    }
                )
            return lags
        for t in stateful:
            task = tasks[t]
            column: list[int] = []
            for c, view in enumerate(views):
                try:
                    column.append(view[task])
                except KeyError:
                    raise ValueError(
                        f"client {self.pids[c]} has no lag for stateful task {task}"
                    ) from None
            default = column[0] if column else 0
            lags.default[t] = default
            lags.special[t] = {c: lag for c, lag in enumerate(column) if lag != default}
        return lags

    def _end_defaults(self, end_sums: Mapping[TaskId, int]) -> EndDefaults:
        """Each stateful task's default lag (its end sum) by number, the map of no reports per
        task, and the smallest end sum (``None`` without stateful tasks)."""
        tasks = self.tasks
        stateful = self.stateful
        ends = _stateful_ends(
            end_sums,
            tasks if len(stateful) == len(tasks) else list(map(tasks.__getitem__, stateful)),
            self._rank_index,
        )
        if None in ends:
            task = tasks[stateful[ends.index(None)]]
            raise ValueError(f"no changelog end-offset sum for stateful task {task}")
        defaults: dict[int, int] = dict(zip(stateful, ends, strict=True))  # type: ignore[arg-type]
        unreported: dict[int, Mapping[int, int]] = dict.fromkeys(stateful, _NO_REPORTS)
        return defaults, unreported, min(defaults.values(), default=None)

    # --- assignment --------------------------------------------------------------------------

    def has(self, client: int, task: int) -> bool:
        return task in self.active[client] or task in self.standby[client]

    # The four below run thousands of times per rebalance, so each inlines ``has`` and the
    # count/key update (a Python call costs as much as the work). ``keys[c]`` and ``touched``
    # must change together: ``ConstrainedPrioritySet`` relies on it.

    def assign_active(self, client: int, task: int) -> None:
        active = self.active[client]
        if task in active or task in self.standby[client]:
            raise ValueError(f"task {self.tasks[task]} is already assigned to {self.pids[client]}")
        active.add(task)
        count = self.count[client] + 1
        self.count[client] = count
        self.keys[client] = (count / self.capacity[client], client)
        self.touched.append(client)

    def assign_new_actives(self, client: int, tasks: list[int]) -> None:
        """``assign_active`` for each of ``tasks`` (distinct) on a client holding none of them,
        in one step (the first round-robin placement: thousands of tasks in a small group)."""
        active = self.active[client]
        if not active.isdisjoint(tasks) or not self.standby[client].isdisjoint(tasks):
            raise ValueError(f"some of tasks {tasks} are already assigned to {self.pids[client]}")
        active.update(tasks)
        count = self.count[client] + len(tasks)
        self.count[client] = count
        self.keys[client] = (count / self.capacity[client], client)
        self.touched.append(client)

    def assign_new_standbys(self, client: int, tasks: set[int]) -> None:
        """``assign_standby`` for each of ``tasks`` on a client holding none of them, in one
        step (standby placement where every client lacking a task gets it)."""
        standby = self.standby[client]
        if not standby.isdisjoint(tasks) or not self.active[client].isdisjoint(tasks):
            raise ValueError(
                f"some of tasks {sorted(tasks)} are already assigned to {self.pids[client]}"
            )
        standby.update(tasks)
        count = self.count[client] + len(tasks)
        self.count[client] = count
        self.keys[client] = (count / self.capacity[client], client)
        self.touched.append(client)

    def unassign_active(self, client: int, task: int) -> None:
        self.active[client].remove(task)
        count = self.count[client] - 1
        self.count[client] = count
        self.keys[client] = (count / self.capacity[client], client)
        self.touched.append(client)

    def assign_standby(self, client: int, task: int) -> None:
        standby = self.standby[client]
        if task in standby or task in self.active[client]:
            raise ValueError(f"task {self.tasks[task]} is already assigned to {self.pids[client]}")
        standby.add(task)
        count = self.count[client] + 1
        self.count[client] = count
        self.keys[client] = (count / self.capacity[client], client)
        self.touched.append(client)

    def unassign_standby(self, client: int, task: int) -> None:
        self.standby[client].remove(task)
        count = self.count[client] - 1
        self.count[client] = count
        self.keys[client] = (count / self.capacity[client], client)
        self.touched.append(client)

    def recount(self, clients: list[int]) -> None:
        """Counts and keys of ``clients`` from their task sets, after a step that changed the
        sets directly because it reads no load until it ends."""
        for client in clients:
            count = len(self.active[client]) + len(self.standby[client])
            self.count[client] = count
            self.keys[client] = (count / self.capacity[client], client)
            self.touched.append(client)

    def swap_standby_and_active(self, task: int, source: int, destination: int) -> None:
        """Task movement's swap: ``source``'s standby of ``task`` becomes its active, and the
        active on ``destination`` becomes a standby (loads unchanged, keys and ``touched`` as
        four separate steps, as Kafka's four calls)."""
        self.unassign_standby(source, task)
        self.assign_active(source, task)
        self.unassign_active(destination, task)
        self.assign_standby(destination, task)

    def results(self) -> dict[ProcessId, ClientState]:
        task_of = self.tasks.__getitem__
        return {
            pid: state.with_assignment(map(task_of, self.active[c]), map(task_of, self.standby[c]))
            for c, (pid, state) in enumerate(zip(self.pids, self.clients, strict=True))
        }


def _stateful_ends(
    end_sums: Mapping[TaskId, int],
    stateful: list[TaskId],
    rank_index: dict[int, int] | None,
) -> list[int | None]:
    """Each stateful task's end-offset sum (``None`` if missing): read in order when the sums
    are keyed by the very same task objects in the same order (the leader builds both from one
    task plan: an identity test per task, in C), else by rank when all have one, else by
    value."""
    if len(end_sums) == len(stateful) and all(map(is_, end_sums, stateful)):
        return list(end_sums.values())
    if rank_index is not None:
        end_ranks = task_ranks(end_sums)
        stateful_ranks = task_ranks(stateful)
        if end_ranks is not None and stateful_ranks is not None:
            by_rank = dict(zip(end_ranks, end_sums.values(), strict=True))
            return list(map(by_rank.get, stateful_ranks))
    return list(map(end_sums.get, stateful))


def _shared_end_sums(views: list[Mapping[TaskId, int]]) -> Mapping[TaskId, int] | None:
    """The end sums all clients' lag views share, if they are all :class:`TaskLags` of one."""
    if not views or not all(isinstance(v, TaskLags) for v in views):
        return None
    first = views[0]
    assert isinstance(first, TaskLags)
    end = first.end_sums
    for view in views:
        assert isinstance(view, TaskLags)
        if view.end_sums is not end:
            return None
    return end
