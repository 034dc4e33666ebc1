"""Legacy sticky assignor: Kafka's own scenarios (LegacyStickyTaskAssignorTest) and properties.

Exact equality with Java on random clusters lives in tests/conformance/test_legacy_sticky.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from assignor.placement.legacy_sticky import LegacyStickyTaskAssignor
from assignor.placement.task_assignor import TaskAssignment
from protocol.ids import ProcessId, TaskId


def t(text: str) -> TaskId:
    return TaskId.parse(text)


def pid(n: int) -> ProcessId:
    return ProcessId.for_int(n)


def client(
    n: int, capacity: int = 1, active: Iterable[str] = (), standby: Iterable[str] = ()
) -> ClientState:
    return ClientState(
        process_id=pid(n),
        capacity=capacity,
        previous_active=frozenset(t(x) for x in active),
        previous_standby=frozenset(t(x) for x in standby),
    )


def run(
    clients: list[ClientState],
    tasks: Iterable[str],
    stateful: Iterable[str] = (),
    standbys: int = 0,
    preserve: bool = False,
) -> TaskAssignment:
    config = AssignorConfig.model_validate({"num.standby.replicas": standbys})
    all_tasks = [t(x) for x in tasks]
    stateful_tasks = [t(x) for x in stateful]
    states = {
        c.process_id: ClientState(
            process_id=c.process_id,
            capacity=c.capacity,
            previous_active=c.previous_active,
            previous_standby=c.previous_standby,
            task_lags=dict.fromkeys(stateful_tasks, 0),
        )
        for c in clients
    }
    return LegacyStickyTaskAssignor(preserve).place_tasks(states, all_tasks, stateful_tasks, config)


def actives(result: TaskAssignment, n: int) -> set[str]:
    return {str(x) for x in result.clients[pid(n)].active}


def test_does_not_migrate_active_tasks() -> None:
    result = run([client(1, active=["0_0"]), client(2, active=["0_1"])], ["0_0", "0_1", "0_2"])
    assert result.probing_rebalance_needed is False
    assert "0_0" in actives(result, 1) and "0_1" in actives(result, 2)
    flipped = run([client(1, active=["0_1"]), client(2, active=["0_2"])], ["0_0", "0_1", "0_2"])
    assert "0_1" in actives(flipped, 1) and "0_2" in actives(flipped, 2)


def test_new_process_takes_one_task_without_reshuffling() -> None:
    result = run(
        [client(1, active=["0_0", "0_2"]), client(2, active=["0_1"]), client(3)],
        ["0_0", "0_1", "0_2"],
    )
    assert actives(result, 2) == {"0_1"}
    assert len(actives(result, 1)) == 1 and len(actives(result, 3)) == 1


def test_assigns_by_capacity() -> None:
    result = run([client(1, capacity=1), client(2, capacity=2)], ["0_0", "0_1", "0_2"])
    assert len(actives(result, 1)) == 1 and len(actives(result, 2)) == 2


def test_previous_standby_owner_gets_the_active() -> None:
    result = run(
        [client(1, active=["0_0"], standby=["0_1"]), client(2, active=["0_2"])],
        ["0_0", "0_1", "0_2", "0_3"],
    )
    assert "0_1" in actives(result, 1)


def test_must_preserve_keeps_actives_over_quota() -> None:
    clients = [client(1, active=["0_0", "0_1", "0_2"]), client(2)]
    preserved = run(clients, ["0_0", "0_1", "0_2"], ["0_0", "0_1", "0_2"], preserve=True)
    assert actives(preserved, 1) == {"0_0", "0_1", "0_2"} and actives(preserved, 2) == set()
    balanced = run(clients, ["0_0", "0_1", "0_2"], ["0_0", "0_1", "0_2"])
    assert len(actives(balanced, 2)) >= 1


def test_standbys_go_elsewhere_and_stop_when_no_client_is_free() -> None:
    result = run([client(1), client(2)], ["0_0", "0_1"], ["0_0", "0_1"], standbys=3)
    for state in result.clients.values():
        assert not state.active & state.standby
    replicas = sum(len(state.standby) for state in result.clients.values())
    assert replicas == 2  # one per task: only one other client exists


cluster = st.integers(1, 8).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 3), min_size=n, max_size=n),
        st.lists(st.tuples(st.integers(0, 3), st.integers(0, 11)), unique=True, min_size=1),
        st.integers(0, 2),
        st.randoms(use_true_random=False),
    )
)


@given(cluster)
def test_every_task_active_once_and_standbys_apart(
    case: tuple[list[int], list[tuple[int, int]], int, object],
) -> None:
    capacities, task_pairs, standbys, rng = case
    tasks = [f"{s}_{p}" for s, p in task_pairs]
    clients = []
    for i, cap in enumerate(capacities):
        mine = [x for x in tasks if rng.random() < 0.3]  # type: ignore[attr-defined]
        clients.append(client(i + 1, cap, active=mine))
    result = run(clients, tasks, tasks, standbys)
    assigned = sorted(str(x) for s in result.clients.values() for x in s.active)
    assert assigned == sorted(tasks)
    for state in result.clients.values():
        assert not state.active & state.standby
    for task in tasks:
        holders = sum(t(task) in s.standby for s in result.clients.values())
        assert holders == min(standbys, len(capacities) - 1)
