"""Standby placement: least-loaded by default, spread over client tags when configured."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import assignor.placement.standby as standby_module
from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.standby import (
    assign_standbys_default,
    assign_standbys_tag_aware,
    tag_movement_allowed,
)
from assignor.placement.workspace import Workspace
from protocol.ids import ProcessId, TaskId


def _clients(tags: list[dict[str, str]], capacity: int = 1) -> dict[ProcessId, ClientState]:
    return {
        ProcessId.for_int(i): ClientState(ProcessId.for_int(i), capacity, client_tags=t)
        for i, t in enumerate(tags, start=1)
    }


def _workspace(clients: dict[ProcessId, ClientState], tasks: list[TaskId]) -> Workspace:
    ws = Workspace(clients, tasks, tasks, with_lags=False)
    for i, task in enumerate(ws.stateful):
        ws.assign_active(i % len(ws.pids), task)
    return ws


def test_default_puts_replicas_on_least_loaded_clients_without_a_copy() -> None:
    tasks = [TaskId(0, p) for p in range(6)]
    ws = _workspace(_clients([{}] * 4), tasks)
    assign_standbys_default(ws, 2)
    for t in ws.stateful:
        holders = [c for c in range(4) if ws.has(c, t)]
        assert len(holders) == 3
    # 6 actives + 12 standbys over 4 clients of one thread: loads differ by at most one
    assert max(ws.count) - min(ws.count) <= 1


def test_default_reports_a_shortfall(caplog: pytest.LogCaptureFixture) -> None:
    tasks = [TaskId(0, 0)]
    ws = _workspace(_clients([{}] * 2), tasks)
    # per task at DEBUG: the leader logs one WARNING with the total
    with caplog.at_level(logging.DEBUG, logger="assignor.placement.standby"):
        assign_standbys_default(ws, 3)
    assert ws.standby[1] == {0}
    assert "Unable to assign 2 of 3 standby tasks for task [0_0]" in caplog.text


SIX_CLIENTS = [
    {"zone": z, "cluster": c} for c in ("k8s-1", "k8s-2") for z in ("eu-1a", "eu-1b", "eu-1c")
]


def test_tag_aware_spreads_replicas_over_zones_and_clusters() -> None:
    """KIP-708's example: 3 zones x 2 clusters, two standbys per task."""
    tasks = [TaskId(0, p) for p in range(6)]
    ws = _workspace(_clients(SIX_CLIENTS), tasks)
    assign_standbys_tag_aware(ws, 2, ("zone", "cluster"))
    for t in ws.stateful:
        active = next(c for c in range(6) if t in ws.active[c])
        standbys = [c for c in range(6) if t in ws.standby[c]]
        assert len(standbys) == 2
        zones = {SIX_CLIENTS[c]["zone"] for c in [active, *standbys]}
        assert len(zones) == 3, "active and both standbys sit in three different zones"
        clusters = {SIX_CLIENTS[c]["cluster"] for c in [active, *standbys]}
        assert clusters == {"k8s-1", "k8s-2"}


def test_tag_aware_falls_back_to_least_loaded(caplog: pytest.LogCaptureFixture) -> None:
    # Every other client shares a zone or a cluster with the active one: no ideal spot.
    tags = [
        {"zone": "z1", "cluster": "c1"},
        {"zone": "z1", "cluster": "c2"},
        {"zone": "z2", "cluster": "c1"},
    ]
    ws = _workspace(_clients(tags), [TaskId(0, 0)])
    with caplog.at_level(logging.WARNING, logger="assignor.placement.standby"):
        assign_standbys_tag_aware(ws, 1, ("zone", "cluster"))
    assert ws.standby[1] == {0}  # least loaded, then lowest ProcessId
    assert ws.standby[2] == set()
    assert "was not able to assign 1 of 1 standby tasks" in caplog.text


def test_movement_needs_all_source_tags_on_destination() -> None:
    tags = [{"zone": "a", "rack": "1"}, {"zone": "a", "rack": "1", "x": "y"}, {"zone": "a"}]
    ws = _workspace(_clients(tags), [TaskId(0, 0)])
    assert tag_movement_allowed(ws, 0, 1)
    assert not tag_movement_allowed(ws, 0, 2)
    assert tag_movement_allowed(ws, 2, 0)


@given(
    st.integers(1, 12),
    st.integers(1, 40),
    st.integers(1, 3),
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=12, max_size=12),
)
def test_every_task_gets_its_replicas_when_clients_suffice(
    n_clients: int, n_tasks: int, replicas: int, zones: list[str]
) -> None:
    tasks = [TaskId(0, p) for p in range(n_tasks)]
    clients = _clients([{"zone": z} for z in zones[:n_clients]])
    config = AssignorConfig.model_validate(
        {"num.standby.replicas": replicas, "rack.aware.assignment.tags": ["zone"]}
    )
    lags = {t: -2 for t in tasks}
    clients = {
        p: ClientState(p, 1, task_lags=lags, client_tags=c.client_tags) for p, c in clients.items()
    }
    result = HighAvailabilityTaskAssignor().place_tasks(clients, tasks, tasks, config)
    for task in tasks:
        holders = [p for p, c in result.clients.items() if task in c.standby]
        assert len(holders) == min(replicas, n_clients - 1)
        assert not any(task in result.clients[p].active for p in holders)


def _random_placed(seed: int) -> tuple[Workspace, int]:
    """1-4 clients of 1-3 threads, each stateful task active on a random client (the state
    the default placement starts from), and 1-3 replicas."""
    rng = random.Random(seed)
    n = rng.randint(1, 4)
    clients = {
        ProcessId.for_int(i): ClientState(ProcessId.for_int(i), rng.randint(1, 3))
        for i in range(1, n + 1)
    }
    tasks = [TaskId(s, p) for s in range(rng.randint(1, 3)) for p in range(rng.randint(1, 12))]
    ws = Workspace(clients, tasks, tasks, with_lags=False)
    for task in ws.stateful:
        ws.assign_active(rng.randrange(n), task)
    return ws, rng.randint(1, 3)


def test_default_in_one_pass_equals_task_by_task(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Where every client lacking a task gets it (at most ``replicas + 1`` clients), the
    one-pass placement gives Kafka's task-by-task result: copies, loads and the per-task
    shortfall lines; elsewhere it declines."""
    decided = 0
    for seed in range(300):
        results = []
        for one_pass in (True, False):
            ws, replicas = _random_placed(seed)
            with monkeypatch.context() as patched, caplog.at_level(
                logging.DEBUG, logger="assignor.placement.standby"
            ):
                if not one_pass:
                    patched.setattr(standby_module, "_copies_everywhere", lambda ws, r: False)
                caplog.clear()
                assign_standbys_default(ws, replicas)
                results.append((ws.standby, ws.count, ws.keys, list(caplog.messages)))
        assert results[0] == results[1], f"seed {seed}"
        ws, replicas = _random_placed(seed)
        fits = len(ws.pids) <= replicas + 1
        decided += fits
        assert standby_module._copies_everywhere(ws, replicas) is fits
    assert decided > 50


def _random_equal(seed: int, equal: bool) -> tuple[Workspace, int]:
    """2-12 clients (of one capacity when ``equal``), tasks active on random clients and some
    standbys already placed, and 1-3 replicas: more clients than the one-pass placement
    takes, so the task-by-task placement runs."""
    rng = random.Random(seed)
    n = rng.randint(2, 12)
    threads = rng.randint(1, 3)
    clients = {
        ProcessId.for_int(i): ClientState(
            ProcessId.for_int(i), threads if equal else rng.randint(1, 3)
        )
        for i in range(1, n + 1)
    }
    tasks = [TaskId(s, p) for s in range(rng.randint(1, 3)) for p in range(rng.randint(1, 30))]
    ws = Workspace(clients, tasks, tasks, with_lags=False)
    for task in ws.stateful:
        owner = rng.randrange(n)
        ws.assign_active(owner, task)
        if rng.random() < 0.2:
            ws.assign_standby(rng.choice([c for c in range(n) if c != owner]), task)
    return ws, rng.randint(1, 3)


def _placed(seed: int, equal: bool, fast: bool | None, monkeypatch: pytest.MonkeyPatch,
            caplog: pytest.LogCaptureFixture) -> tuple[Any, ...]:
    """The default placement's result; ``fast``: force the equal-capacity path on or off."""
    ws, replicas = _random_equal(seed, equal)
    with monkeypatch.context() as patched, caplog.at_level(
        logging.DEBUG, logger="assignor.placement.standby"
    ):
        if fast is not None:
            patched.setattr(standby_module, "_equal_capacities", lambda ws: fast)
        caplog.clear()
        assign_standbys_default(ws, replicas)
        messages = list(caplog.messages)
    return ws.standby, ws.count, ws.keys, set(ws.touched), messages


def test_equal_capacities_as_int_keys_equal_the_general_placement(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """With one capacity for all, ordering by count as ints gives the general placement's
    copies, counts, keys, touched clients and shortfall lines; with mixed capacities the same
    shortcut would not (loads then differ from counts), which is why it checks."""
    differ = 0
    for seed in range(300):
        fast = _placed(seed, True, None, monkeypatch, caplog)
        general = _placed(seed, True, False, monkeypatch, caplog)
        assert fast == general, f"seed {seed}"
        broken = _placed(seed, False, True, monkeypatch, caplog)
        differ += broken != _placed(seed, False, False, monkeypatch, caplog)
    assert differ > 10, differ
