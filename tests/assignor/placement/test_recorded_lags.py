"""What the workspace records on its one pass over the lags decides exactly as the per-task path.

``Workspace`` numbers unnamed tasks by their int rank instead of hashing ``TaskId``s, and, given
``acceptable.recovery.lag``, records who reported what, which tasks some client is ahead of the
default on, and who is caught up on each task; ``CaughtUp`` then finds the moves of clients that
reported nothing for a task with set operations and reads the candidates from that record. Here
the whole high-availability placement runs both ways on the same random inputs (the conformance
scenarios' generator, with reports of unknown and named tasks mixed in, and groups after a
member left, the rebalance these paths are for) and every client's tasks, the warm-ups, the
probing flag and the lags must be equal. The reference builds no record and no ranks.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Any

import pytest

import assignor.placement.numbering as numbering
import assignor.placement.workspace as workspace
from assignor.config import AssignorConfig
from assignor.placement.caught_up import CaughtUp
from assignor.placement.client_state import ClientState, ConsumerReport, build_client_state
from assignor.placement.high_availability import (
    HighAvailabilityTaskAssignor,
    assign_high_availability,
)
from assignor.placement.lags import LONG_MAX, TaskLags, is_caught_up
from assignor.placement.workspace import Workspace
from protocol.ids import ProcessId, TaskId
from tests.conformance.ha_scenarios import python_inputs, scenario

SEEDS = 300


def _with_strangers(clients: dict[ProcessId, ClientState], rng: random.Random) -> None:
    """Some clients also report tasks this rebalance does not have (an old topology's, or a
    named one's), which the lags must skip."""
    for pid, state in list(clients.items()):
        if rng.random() < 0.3:
            view = state.task_lags
            assert isinstance(view, TaskLags)
            extra: dict[TaskId, int] = {TaskId(99, rng.randrange(5)): rng.choice([-2, 7])}
            if rng.random() < 0.5:
                extra[TaskId(0, 0, topology="named")] = -2
            sums = {**view.offset_sums, **extra}
            clients[pid] = dataclasses.replace(state, task_lags=TaskLags(sums, view.end_sums))


def _member_left(seed: int) -> tuple[dict[ProcessId, ClientState], list[TaskId], AssignorConfig]:
    """A group's second rebalance after its last client left: each survivor reports its
    actives as running and its standbys at a random offset (caught up or not)."""
    rng = random.Random(seed)
    n = rng.randint(2, 12)
    pids = [ProcessId.for_int(rng.randrange(1 << 30)) for _ in range(n)]
    pids = list(dict.fromkeys(pids))
    tasks = [TaskId(s, p) for s in range(rng.randint(1, 3)) for p in range(rng.randint(1, 60))]
    end = {t: rng.choice([0, 50, 100_000]) for t in tasks}
    config = AssignorConfig.model_validate(
        {
            "num.standby.replicas": rng.randint(0, 2),
            "max.warmup.replicas": rng.randint(1, 3),
            "acceptable.recovery.lag": rng.choice([0, 100, 10_000]),
        }
    )
    threads = [rng.randint(1, 2) for _ in pids]

    def clients(previous: Mapping[ProcessId, ClientState] | None) -> dict[ProcessId, ClientState]:
        out = {}
        for pid, t in zip(pids, threads, strict=True):
            offsets: dict[TaskId, int] = {}
            if previous is not None:
                state = previous[pid]
                offsets = {x: rng.choice([0, end[x], end[x] // 2]) for x in state.standby}
                offsets |= {x: -2 for x in state.active}
            reports = [ConsumerReport(f"{pid}-{i}", offsets if i == 0 else {}) for i in range(t)]
            out[pid] = build_client_state(pid, reports, {}, end)
        return out

    first = HighAvailabilityTaskAssignor().place_tasks(clients(None), tasks, tasks, config)
    pids = pids[:-1]
    threads = threads[:-1]
    return clients(first.clients), tasks, config


_Inputs = tuple[dict[ProcessId, ClientState], Any, Any, AssignorConfig]


def _inputs(seed: int, kind: str) -> _Inputs:
    if kind == "member left":
        clients, tasks, config = _member_left(seed)
        return clients, tasks, tasks, config
    s = scenario(seed, max_clients=12)
    clients = python_inputs(s)
    _with_strangers(clients, random.Random(seed))
    return clients, s.tasks, s.stateful, s.config


def _place(inputs: _Inputs, recorded: bool) -> dict[str, Any]:
    clients, tasks, stateful, config = inputs
    acceptable = config.acceptable_recovery_lag if recorded else None
    ws = Workspace(clients, tasks, stateful, acceptable_lag=acceptable)
    probing, warmups = assign_high_availability(ws, config)
    return {
        "clients": ws.results(),
        "probing": probing,
        "warmups": warmups,
        "default": ws.lags.default,
        "special": {t: dict(lags) for t, lags in ws.lags.special.items()},
    }


@pytest.mark.parametrize("kind", ["scenario", "member left"])
def test_recorded_lags_and_ranks_place_as_the_per_task_path(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = 0
    for seed in range(SEEDS):
        inputs = _inputs(seed, kind)
        ours = _place(inputs, recorded=True)
        with monkeypatch.context() as patched:
            for module in (workspace, numbering):  # number tasks by value
                patched.setattr(module, "task_ranks", lambda tasks: None)
            kafka = _place(inputs, recorded=False)
        assert ours == kafka, f"seed {seed} ({kind}) differs"
        moved += ours["probing"]
    # the comparison means something only if many placements scheduled movements
    assert moved > SEEDS // 4, moved


@pytest.mark.parametrize("kind", ["scenario", "member left"])
def test_all_caught_says_whether_a_client_is_caught_up_on_every_task_it_reported(
    kind: str,
) -> None:
    """``lags.all_caught[c]`` lets task movement skip a client's reported tasks without a look
    at each: it must be true exactly when every stateful task the client sent an offset sum
    for has a caught-up lag on it (``lags.is_caught_up`` of ``Lags.lag``), and both answers
    must occur, or the placement test above never takes the shortcut both ways."""
    seen: set[bool] = set()
    for seed in range(SEEDS):
        clients, tasks, stateful, config = _inputs(seed, kind)
        acceptable = config.acceptable_recovery_lag
        ws = Workspace(clients, tasks, stateful, acceptable_lag=acceptable)
        if acceptable >= LONG_MAX:  # every lag is caught up: nothing is recorded
            assert ws.lags.all_caught is None
            continue
        assert ws.lags.all_caught is not None and ws.lags.reported_by is not None
        stateful_numbers = set(ws.stateful)
        for c, sent in enumerate(ws.lags.reported_by):
            expected = all(
                is_caught_up(ws.lags.lag(c, t), acceptable) for t in sent & stateful_numbers
            )
            assert ws.lags.all_caught[c] == expected, f"seed {seed} client {c}"
            seen.add(expected)
    assert seen == {True, False}


def test_most_caught_up_equals_the_walk_in_lag_order() -> None:
    """``CaughtUp.most_caught_up`` walks the reported lags below the default, then the
    clients with the default lag in client order, then the rest, without ``by_lag``'s
    generator; it must answer as the walk of ``by_lag`` does, for random destinations and
    random eligible sets."""
    checked = 0
    for seed in range(SEEDS):
        clients, tasks, stateful, config = _inputs(seed, "scenario")
        ws = Workspace(clients, tasks, stateful, acceptable_lag=config.acceptable_recovery_lag)
        caught = CaughtUp(ws, config.acceptable_recovery_lag)
        rng = random.Random(seed)
        n = len(ws.pids)
        for task in rng.sample(ws.stateful, min(len(ws.stateful), 10)):
            destination = rng.randrange(n)
            allowed = {c for c in range(n) if rng.random() < 0.4}

            def walk(
                caught: CaughtUp, task: int, destination: int, allowed: set[int]
            ) -> int | None:
                for client in caught.by_lag(task):
                    if client == destination:
                        return None
                    if client in allowed:
                        return client
                return None

            found = caught.most_caught_up(task, destination, allowed.__contains__)
            assert found == walk(caught, task, destination, allowed), f"seed {seed} task {task}"
            checked += found is not None
    assert checked > SEEDS


def test_end_sums_read_in_order_equal_the_look_ups() -> None:
    """``_stateful_ends`` reads the end sums in order when they are keyed by the very task
    objects of the workspace, and looks them up otherwise: both must give every task the same
    default lag. The copies here are equal tasks that are not the same objects, in reverse."""
    compared = 0
    for seed in range(SEEDS // 3):
        clients, tasks, stateful, _ = _inputs(seed, "member left")
        ws = Workspace(clients, tasks, stateful, with_lags=False)
        view = ws.clients[0].task_lags
        assert isinstance(view, TaskLags)
        ends = view.end_sums
        keyed = [ws.tasks[t] for t in ws.stateful]
        copies = {
            TaskId(t.subtopology, t.partition, topology=t.topology): s
            for t, s in reversed(list(ends.items()))
        }
        same = workspace._stateful_ends(ends, keyed, ws._rank_index)
        assert same == workspace._stateful_ends(copies, keyed, ws._rank_index), seed
        assert same == workspace._stateful_ends(copies, keyed, None), seed
        compared += len(same)
    assert compared > SEEDS


def _dense(inputs: _Inputs) -> _Inputs:
    """The same inputs with every lag view materialised as a plain dict: the workspace then
    takes its per-task path, which records nothing and shares no map or list."""
    clients, tasks, stateful, config = inputs
    dense = {pid: dataclasses.replace(s, task_lags=dict(s.task_lags)) for pid, s in clients.items()}
    return dense, tasks, stateful, config


def test_shared_reports_and_a_kept_numbering_place_as_the_dense_path() -> None:
    """A client running all it reported shares one map and one list across its tasks, and a
    leader's ``Numbering`` (a hit on the second call: its kept lists) gives each
    workspace its tasks: the placement, the lags and each client's sets must equal those of
    fresh dense workspaces (before and after the placement: no later reporter or step may
    change a shared map)."""
    shared = 0
    for seed in range(SEEDS // 3):
        clients, tasks, stateful, config = _inputs(seed, "member left")
        # the last client (in ``ProcessId`` order) also reports the first one's running tasks,
        # after that client's shared map and list were stored
        order = sorted(clients, key=lambda p: p.sort_key)
        first, last = clients[order[0]], clients[order[-1]]
        view = last.task_lags
        assert isinstance(view, TaskLags)
        sent = view.offset_sums
        extra = {t: view.end_sums[t] // 2 for t in first.previous_active if t not in sent}
        clients = clients | {
            order[-1]: dataclasses.replace(
                last, task_lags=TaskLags({**view.offset_sums, **extra}, view.end_sums)
            )
        }
        inputs = clients, tasks, stateful, config
        kafka = _place(_dense(inputs), recorded=False)
        dense_clients = _dense(inputs)[0]
        dense = Workspace(dense_clients, tasks, stateful)
        numbering = workspace.Numbering()
        for _ in range(2):  # a miss, then a hit
            ws = Workspace(
                clients,
                tuple(tasks),
                frozenset(stateful),
                acceptable_lag=config.acceptable_recovery_lag,
                numbering=numbering,
            )
            maps = list(ws.lags.special.values())
            shared += len(maps) - len({id(m) for m in maps})
            probing, warmups = assign_high_availability(ws, config)
            # (the dense lags keep another default per task: the decisions are compared, and
            # every client's lag on every task)
            ours = {"clients": ws.results(), "probing": probing, "warmups": warmups}
            assert ours == {k: kafka[k] for k in ours}, f"seed {seed} differs"
            lag = CaughtUp(ws, config.acceptable_recovery_lag).lag
            assert all(
                lag(c, t) == dense.lags.lag(c, t) for c in range(len(ws.pids)) for t in ws.stateful
            ), f"seed {seed}: lags differ"
    assert shared > SEEDS, shared  # the shared maps were exercised
