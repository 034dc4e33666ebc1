"""Fallback-prior: previous actives never move, and a probing rebalance is always requested."""

from __future__ import annotations

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from assignor.placement.fallback_prior import FallbackPriorTaskAssignor
from assignor.placement.legacy_sticky import LegacyStickyTaskAssignor
from protocol.ids import ProcessId, TaskId

TASKS = [TaskId(0, p) for p in range(6)]


def states() -> dict[ProcessId, ClientState]:
    heavy = ClientState(
        process_id=ProcessId.for_int(1),
        capacity=1,
        previous_active=frozenset(TASKS[:5]),
        task_lags=dict.fromkeys(TASKS, 0),
    )
    empty = ClientState(
        process_id=ProcessId.for_int(2), capacity=1, task_lags=dict.fromkeys(TASKS, 0)
    )
    return {heavy.process_id: heavy, empty.process_id: empty}


def test_keeps_every_previous_active_and_asks_for_a_probing_rebalance() -> None:
    config = AssignorConfig.model_validate({"num.standby.replicas": 1})
    result = FallbackPriorTaskAssignor().place_tasks(states(), TASKS, TASKS, config)
    assert result.probing_rebalance_needed is True
    assert result.clients[ProcessId.for_int(1)].active >= frozenset(TASKS[:5])
    assert result.clients[ProcessId.for_int(2)].active == frozenset({TASKS[5]})
    for state in result.clients.values():
        assert not state.active & state.standby


def test_legacy_sticky_alone_rebalances_the_same_input() -> None:
    config = AssignorConfig()
    result = LegacyStickyTaskAssignor().place_tasks(states(), TASKS, TASKS, config)
    assert result.probing_rebalance_needed is False
    assert len(result.clients[ProcessId.for_int(2)].active) == 3
