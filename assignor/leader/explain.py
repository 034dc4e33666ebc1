"""Why each task went where it went, read back from the leader's ``LeaderResult``.

An operator looking at a rebalance asks "why did task 1_3 move?". The answer is in what the
leader saw (each client's previous tasks and lags, ``clients_before``) and what it decided
(``task_assignment`` with its warm-ups, ``threads``). This module only reads those; it never
re-runs an assignor, so the explanation cannot disagree with the assignment it explains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from assignor.placement.lags import is_caught_up
from protocol.ids import ProcessId, TaskId, sorted_tasks
from protocol.messages import LATEST_OFFSET, UNKNOWN_OFFSET_SUM

if TYPE_CHECKING:  # the pipeline imports this module to log its decisions
    from assignor.leader.model import LeaderResult


@dataclass(frozen=True, slots=True)
class Placement:
    """One replica of one task: ``role`` is ``active``, ``standby`` or ``warmup``."""

    task: TaskId
    role: str
    process_id: ProcessId
    member: str | None
    reason: str


def explain(result: LeaderResult, config: AssignorConfig) -> list[Placement]:
    """One :class:`Placement` per replica, by task then active/warm-up/standby; empty on error."""
    assignment = result.task_assignment
    layout = result.layout
    if assignment is None or layout is None:
        return []
    before = result.clients_before
    after = assignment.clients
    members = _members_by_task(result)
    placements: list[Placement] = []
    for task in sorted(layout.tasks):
        stateful = task in layout.stateful
        for pid in sorted(after, key=lambda p: p.sort_key):
            client = after[pid]
            warm = task in assignment.warmups.get(pid, frozenset())
            if task in client.active:
                role, reason = "active", _why_active(task, pid, stateful, result, config)
            elif task in client.standby:
                role = "warmup" if warm else "standby"
                reason = _why_standby(task, pid, warm, before, config)
            else:
                continue
            placements.append(Placement(task, role, pid, members.get((pid, task)), reason))
    order = {"active": 0, "warmup": 1, "standby": 2}
    placements.sort(key=lambda p: (p.task, order[p.role], p.process_id.sort_key))
    return placements


@dataclass(frozen=True, slots=True)
class RebalanceSummary:
    """What one decision of the leader changed, in numbers (the leader's one INFO line).

    - ``moved``: active tasks now on another process than the one that reported running them
      (that process is still in the group, so its state for the task goes cold);
    - ``placed``: active tasks no current member reported running (first start, or their
      process left);
    - ``warmups``: warm-up replicas placed; ``probing``: a probing rebalance was asked for;
    - ``standbys_short``: standby replicas ``num.standby.replicas`` asks for that found no client
      (in ``short_tasks`` tasks).
    """

    assignor: str
    tasks: int
    clients: int
    moved: tuple[TaskId, ...]
    placed: int
    warmups: int
    probing: bool
    standbys_short: int
    short_tasks: int

    def line(self) -> str:
        moved = ", ".join(str(t) for t in self.moved[:10])
        if len(self.moved) > 10:
            moved += f", ... ({len(self.moved) - 10} more)"
        return (
            f"rebalance decided by {self.assignor}: {self.tasks} tasks on {self.clients} "
            f"clients; {len(self.moved)} moved{f' ({moved})' if moved else ''}, "
            f"{self.placed} newly placed, {self.warmups} warm-ups, "
            f"{self.standbys_short} standbys short; "
            f"{'probing rebalance scheduled' if self.probing else 'no probing rebalance'}"
        )


def summarize(result: LeaderResult, config: AssignorConfig) -> RebalanceSummary | None:
    """The numbers of one decision; ``None`` when the leader answered with an error."""
    assignment = result.task_assignment
    layout = result.layout
    if assignment is None or layout is None:
        return None
    # Whole-set operations only: a set's elements keep their hashes, so nothing here calls
    # ``TaskId.__hash__`` (a Python function) per task. A task reported running by two clients
    # counts as the first one's, as the pipeline's client order has them.
    before = result.clients_before
    first_owner: dict[ProcessId, frozenset[TaskId]] = {
        pid: client.previous_active for pid, client in before.items()
    }
    reported: set[TaskId] = set().union(*first_owner.values())
    if len(reported) != sum(map(len, first_owner.values())):  # a task reported twice
        reported.clear()
        for pid, client in before.items():
            mine = client.previous_active - reported
            first_owner[pid] = mine
            reported |= mine
    moved: list[TaskId] = []
    placed = 0
    standing: list[frozenset[TaskId]] = []  # each client's standbys that are not warm-ups
    for pid, client in assignment.clients.items():
        # Its actives it did not run before (few after the first rebalance): those someone
        # else ran moved, the rest are newly placed (``first_owner`` is within ``reported``).
        new = client.active - first_owner.get(pid, _NO_TASKS)
        came = new & reported
        moved.extend(came)
        placed += len(new) - len(came)
        warm = assignment.warmups.get(pid)
        standing.append(client.standby - warm if warm else client.standby)
    wanted = config.num_standby_replicas
    shortfalls = _standby_shortfalls(layout.stateful, standing, wanted)
    return RebalanceSummary(
        assignor=result.assignor,
        tasks=len(layout.tasks),
        clients=len(assignment.clients),
        moved=tuple(sorted_tasks(moved)),
        placed=placed,
        warmups=sum(len(w) for w in assignment.warmups.values()),
        probing=assignment.probing_rebalance_needed,
        standbys_short=sum(shortfalls),
        short_tasks=len(shortfalls),
    )


_NO_TASKS: frozenset[TaskId] = frozenset()


def _standby_shortfalls(
    stateful: frozenset[TaskId], standing: list[frozenset[TaskId]], wanted: int
) -> list[int]:
    """For each stateful task with fewer than ``wanted`` standbys, how many it lacks."""
    if wanted <= 0:
        return []
    if wanted == 1:  # the common setting: a task lacks one standby when no client holds one
        return [1] * len(stateful.difference(*standing))
    holders = Counter(chain.from_iterable(standing))
    return [s for s in (wanted - holders[t] for t in stateful) if s > 0]


def _members_by_task(result: LeaderResult) -> dict[tuple[ProcessId, TaskId], str]:
    where: dict[tuple[ProcessId, TaskId], str] = {}
    for pid, threads in result.threads.items():
        for consumers in (threads.active, threads.standby):
            for member, tasks in consumers.items():
                for task in tasks:
                    where[(pid, task)] = member
    return where


def _lag_text(lag: int) -> str:
    if lag == LATEST_OFFSET:
        return "running it now"
    if lag == UNKNOWN_OFFSET_SUM:
        return "lag unknown"
    return f"lag {lag}"


def _previous_owners(task: TaskId, before: Mapping[ProcessId, ClientState]) -> list[ProcessId]:
    return sorted(
        (pid for pid, c in before.items() if task in c.previous_active), key=lambda p: p.sort_key
    )


def _why_active(
    task: TaskId,
    pid: ProcessId,
    stateful: bool,
    result: LeaderResult,
    config: AssignorConfig,
) -> str:
    before = result.clients_before
    client = before[pid]
    was_here = task in client.previous_active
    if not stateful:
        base = "stateless: given to the client with the fewest active tasks per thread"
        return base + (" (it also ran it before)" if was_here else "")
    if result.assignor == "fallback_prior":
        if was_here:
            return "kept on its previous active owner (lags unknown: fallback-prior assignor)"
        return "no previous owner to keep it; placed by the sticky fallback (lags unknown)"
    if result.assignor == "legacy_sticky":
        if was_here:
            return "kept on its previous active owner (legacy sticky assignor)"
        if task in client.previous_standby:
            return "moved to its previous standby (legacy sticky assignor)"
        return "placed on the least loaded client (legacy sticky assignor)"

    acceptable = config.acceptable_recovery_lag
    lag = client.task_lags[task]
    if is_caught_up(lag, acceptable):
        if was_here:
            return f"kept on its previous active owner ({_lag_text(lag)})"
        owners = [p for p in _previous_owners(task, before) if p != pid]
        origin = (
            f"; its previous owner {owners[0]} gave it up for balance"
            if owners
            else "; no current client ran it before"
        )
        return (
            f"moved to a caught-up client: {_lag_text(lag)} <= acceptable.recovery.lag "
            f"{acceptable}{origin}"
        )
    caught = [
        p for p, c in before.items() if p != pid and is_caught_up(c.task_lags[task], acceptable)
    ]
    if caught:
        return (
            f"placed here ({_lag_text(lag)}) although {len(caught)} other client(s) are caught "
            "up: the warm-up budget (max.warmup.replicas) left it at its balanced target"
        )
    # the sentinels -2 and -3 compare below every real lag, as in the assignor
    if lag == min(c.task_lags[task] for c in before.values()):
        return (
            f"no caught-up client (acceptable.recovery.lag {acceptable}); this client has the "
            f"least lag ({_lag_text(lag)})"
        )
    return (
        f"no caught-up client (acceptable.recovery.lag {acceptable}); placed by balance "
        f"({_lag_text(lag)})"
    )


def _why_standby(
    task: TaskId,
    pid: ProcessId,
    warm: bool,
    before: Mapping[ProcessId, ClientState],
    config: AssignorConfig,
) -> str:
    client = before[pid]
    lag = client.task_lags.get(task)
    lag_text = "stateless" if lag is None else _lag_text(lag)
    if warm:
        return (
            f"warm-up replica: this client is the balanced target but not caught up "
            f"({lag_text} > acceptable.recovery.lag {config.acceptable_recovery_lag}); it "
            "restores in the background until the probing rebalance moves the active here"
        )
    if config.rack_aware_assignment_tags:
        spread = f" spread over tags {', '.join(config.rack_aware_assignment_tags)}"
    else:
        spread = ""
    if task in client.previous_standby or task in client.previous_active:
        return f"standby kept where its state already is ({lag_text}){spread}"
    return f"standby on a least loaded client other than the active's process ({lag_text}){spread}"


__all__ = ["Placement", "RebalanceSummary", "explain", "summarize"]
