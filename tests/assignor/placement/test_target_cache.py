"""The kept balanced target: a copy must equal what a fresh computation puts on the workspace."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from typing import Any

import pytest

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from assignor.placement.high_availability import _balanced_target
from assignor.placement.target_cache import TargetCache
from assignor.placement.workspace import Workspace
from protocol.ids import ProcessId, TaskId

_ZONES = ("a", "b", "c")


_targets = [TargetCache()]  # the leader's one cache; each test starts with an empty one


@pytest.fixture(autouse=True)
def _no_kept_target() -> Iterator[None]:
    _targets[0] = TargetCache()
    yield


def _group(rng: random.Random) -> tuple[dict[ProcessId, ClientState], list[TaskId], int, bool]:
    clients = {
        ProcessId.for_int(i): ClientState(
            ProcessId.for_int(i),
            rng.randint(1, 4),
            client_tags={"zone": rng.choice(_ZONES)},
        )
        for i in rng.sample(range(1, 1_000), rng.randint(1, 9))
    }
    tasks = [TaskId(s, p) for s in range(rng.randint(1, 3)) for p in range(rng.randint(1, 12))]
    return clients, tasks, rng.randint(0, 2), rng.random() < 0.5


def _config(replicas: int, tagged: bool) -> AssignorConfig:
    tags = ["zone"] if tagged else []
    return AssignorConfig(num_standby_replicas=replicas, rack_aware_assignment_tags=tags)


def _state(ws: Workspace) -> tuple[Any, ...]:
    return (ws.active, ws.standby, ws.count, ws.keys, ws.touched)


def _place(
    clients: dict[ProcessId, ClientState], tasks: list[TaskId], config: AssignorConfig
) -> tuple[Workspace, bool]:
    ws = Workspace(clients, tasks, tasks, with_lags=False)
    copied = _targets[0].place(
        ws,
        config.num_standby_replicas,
        tuple(config.rack_aware_assignment_tags),
        lambda fresh: _balanced_target(fresh, config),
    )
    return ws, copied


def _fresh(
    clients: dict[ProcessId, ClientState], tasks: list[TaskId], config: AssignorConfig
) -> Workspace:
    ws = Workspace(clients, tasks, tasks, with_lags=False)
    _balanced_target(ws, config)
    return ws


@pytest.mark.parametrize("seed", range(40))
def test_a_copy_equals_a_fresh_target(seed: int) -> None:
    rng = random.Random(seed)
    clients, tasks, replicas, tagged = _group(rng)
    config = _config(replicas, tagged)
    first, copied = _place(clients, tasks, config)
    assert not copied
    # equal inputs in new objects (as a probing rebalance decodes them again): a copy
    again = {ProcessId(str(p.uuid)): ClientState(ProcessId(str(p.uuid)), c.capacity,
                                                   client_tags=dict(c.client_tags))
             for p, c in clients.items()}
    second, copied = _place(again, [TaskId(t.subtopology, t.partition) for t in tasks], config)
    assert copied
    assert _state(second) == _state(_fresh(clients, tasks, config)) == _state(first)
    # the copy is the workspace's own: changing it leaves the kept target alone
    second.active[0].add(10_000)
    third, copied = _place(clients, tasks, config)
    assert copied and 10_000 not in third.active[0]


@pytest.mark.parametrize("seed", range(40))
def test_any_changed_input_computes_again(seed: int) -> None:
    rng = random.Random(1_000 + seed)
    clients, tasks, replicas, tagged = _group(rng)
    config = _config(replicas, tagged)
    _place(clients, tasks, config)
    pid = rng.choice(sorted(clients, key=lambda p: p.sort_key))
    state = clients[pid]
    change = rng.choice(("capacity", "tasks", "replicas", "tags", "client", "tag names"))
    if change == "capacity":
        clients = {**clients, pid: ClientState(pid, state.capacity + 1,
                                               client_tags=state.client_tags)}
    elif change == "tasks":
        tasks = [*tasks, TaskId(7, 0)]
    elif change == "replicas":
        config = _config(replicas + 1, tagged)
    elif change == "tags":
        if not (replicas and tagged):
            config = _config(replicas or 1, True)
        other = _ZONES[(_ZONES.index(state.client_tags["zone"]) + 1) % 3]
        clients = {**clients, pid: ClientState(pid, state.capacity, client_tags={"zone": other})}
    elif change == "client":
        extra = ProcessId.for_int(5_000)
        clients = {**clients, extra: ClientState(extra, 1, client_tags={"zone": "a"})}
    else:
        config = AssignorConfig(num_standby_replicas=replicas or 1,
                                rack_aware_assignment_tags=["zone", "rack"] if tagged else ["zone"])
    ws, copied = _place(clients, tasks, config)
    assert not copied
    assert _state(ws) == _state(_fresh(clients, tasks, config))


def test_a_copy_logs_what_a_fresh_target_logs(caplog: pytest.LogCaptureFixture) -> None:
    # two clients for three replicas: a shortfall per task, logged at DEBUG each rebalance
    clients = {ProcessId.for_int(i): ClientState(ProcessId.for_int(i), 1) for i in (1, 2)}
    tasks = [TaskId(0, p) for p in range(3)]
    config = _config(3, False)
    with caplog.at_level(logging.DEBUG, logger="assignor.placement.standby"):
        _place(clients, tasks, config)
        fresh = [r.getMessage() for r in caplog.records]
        caplog.clear()
        _, copied = _place(clients, tasks, config)
        again = [r.getMessage() for r in caplog.records]
    assert copied
    assert fresh and again == fresh
    # at WARNING the records were never made: a later DEBUG level must not reuse that entry
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="assignor.placement.standby"):
        _, copied = _place(clients, tasks, config)
    assert not copied and not caplog.records
    with caplog.at_level(logging.DEBUG, logger="assignor.placement.standby"):
        _, copied = _place(clients, tasks, config)
    assert not copied and [r.getMessage() for r in caplog.records] == fresh


def test_only_a_fresh_workspace_takes_a_target() -> None:
    clients = {ProcessId.for_int(1): ClientState(ProcessId.for_int(1), 1)}
    ws = Workspace(clients, [TaskId(0, 0)], [TaskId(0, 0)], with_lags=False)
    ws.assign_active(0, 0)
    with pytest.raises(ValueError):
        TargetCache().place(ws, 0, (), lambda fresh: None)
