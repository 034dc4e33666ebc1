"""Workspace bookkeeping: the bulk first placement leaves what one-by-one placement leaves."""

from __future__ import annotations

import pytest

from assignor.placement.client_state import ClientState
from assignor.placement.workspace import Workspace
from protocol.ids import ProcessId, TaskId


def _workspace(n_clients: int, n_tasks: int) -> Workspace:
    clients = {
        ProcessId.for_int(i): ClientState(ProcessId.for_int(i), 1 + i % 2) for i in range(n_clients)
    }
    tasks = [TaskId(0, p) for p in range(n_tasks)]
    return Workspace(clients, tasks, tasks, with_lags=False)


def test_bulk_actives_equal_one_by_one() -> None:
    bulk, single = _workspace(3, 10), _workspace(3, 10)
    for client in range(3):
        bulk.assign_new_actives(client, bulk.stateful[client::3])
    for i, task in enumerate(single.stateful):
        single.assign_active(i % 3, task)
    assert bulk.active == single.active
    assert bulk.count == single.count
    assert bulk.keys == single.keys


@pytest.mark.parametrize("held_as", ["active", "standby"])
def test_bulk_actives_refuse_a_task_already_held(held_as: str) -> None:
    ws = _workspace(2, 4)
    (ws.assign_active if held_as == "active" else ws.assign_standby)(0, 2)
    with pytest.raises(ValueError, match="already assigned"):
        ws.assign_new_actives(0, [1, 2])
