"""The high-availability assignor: its promises as rules, plus the cases that define KIP-441.

Exact equality with Kafka is the conformance suite's job; here hypothesis drives random clusters
through single rebalances (validity, warm-up budget) and through repeated rebalances in which
warm-ups catch up, as Kafka's ``TaskAssignorConvergenceTest`` does (convergence and balance).
"""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState, ConsumerReport, build_client_state
from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.lags import LONG_MAX
from assignor.placement.task_assignor import TaskAssignment
from protocol.ids import ProcessId, TaskId

HA = HighAvailabilityTaskAssignor()
Cluster = tuple[dict[ProcessId, ClientState], list[TaskId], list[TaskId], AssignorConfig]
P1, P2, P3 = ProcessId.for_int(1), ProcessId.for_int(2), ProcessId.for_int(3)
T0, T1 = TaskId(0, 0), TaskId(0, 1)


def _client(pid: ProcessId, lags: Mapping[TaskId, int], capacity: int = 1) -> ClientState:
    return ClientState(pid, capacity, task_lags=dict(lags))


def test_no_clients_no_assignment() -> None:
    result = HA.place_tasks({}, [T0], [T0], AssignorConfig())
    assert result.clients == {} and not result.probing_rebalance_needed


def test_active_goes_back_to_the_caught_up_client_and_the_other_warms_up() -> None:
    # Round-robin would give T0 to P1, but only P2 has its state.
    clients = {P1: _client(P1, {T0: 50_000}), P2: _client(P2, {T0: -2})}
    result = HA.place_tasks(clients, [T0], [T0], AssignorConfig())
    assert result.clients[P2].active == {T0}
    assert result.clients[P1].standby == {T0}
    assert result.warmups == {P1: frozenset({T0})}
    assert result.probing_rebalance_needed


def test_balanced_and_caught_up_needs_no_probing() -> None:
    clients = {P1: _client(P1, {T0: -2, T1: 0}), P2: _client(P2, {T0: 0, T1: -2})}
    result = HA.place_tasks(clients, [T0, T1], [T0, T1], AssignorConfig())
    assert result.clients[P1].active == {T0}
    assert result.clients[P2].active == {T1}
    assert not result.probing_rebalance_needed
    assert result.warmups == {}


def test_warm_up_budget_is_shared_and_bounded() -> None:
    tasks = [TaskId(0, p) for p in range(4)]
    # P3 holds everything; P1 and P2 are far behind: 2-3 actives must move to P3.
    clients = {
        P1: _client(P1, dict.fromkeys(tasks, 99_999)),
        P2: _client(P2, dict.fromkeys(tasks, 99_999)),
        P3: _client(P3, dict.fromkeys(tasks, -2)),
    }
    config = AssignorConfig.model_validate({"max.warmup.replicas": 1})
    result = HA.place_tasks(clients, tasks, tasks, config)
    assert result.clients[P3].active == set(tasks)
    assert sum(len(w) for w in result.warmups.values()) == 1
    assert result.probing_rebalance_needed


def test_unknown_lag_counts_as_most_caught_up() -> None:
    # Kafka's quirk: -3 sorts before every real lag, so P2 gets the task back.
    clients = {P1: _client(P1, {T0: 5_000}), P2: _client(P2, {T0: -3})}
    config = AssignorConfig.model_validate({"acceptable.recovery.lag": 100})
    result = HA.place_tasks(clients, [T0], [T0], config)
    assert result.clients[P2].active == {T0}
    assert result.clients[P1].standby == {T0}


def test_unbounded_recovery_lag_keeps_the_balanced_assignment() -> None:
    clients = {P1: _client(P1, {T0: 10**12}), P2: _client(P2, {T0: -2})}
    config = AssignorConfig.model_validate({"acceptable.recovery.lag": LONG_MAX})
    result = HA.place_tasks(clients, [T0], [T0], config)
    assert result.clients[P1].active == {T0}
    assert not result.probing_rebalance_needed


def test_stateless_tasks_go_to_the_fewest_actives_per_thread() -> None:
    stateless = [TaskId(1, p) for p in range(5)]
    clients = {P1: _client(P1, {}, capacity=4), P2: _client(P2, {}, capacity=1)}
    result = HA.place_tasks(clients, stateless, [], AssignorConfig())
    assert len(result.clients[P1].active) == 4
    assert len(result.clients[P2].active) == 1
    assert not result.clients[P1].standby and not result.clients[P2].standby


# --- rules over random clusters ----------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    n_clients = draw(st.integers(1, 8))
    subtopologies = draw(st.integers(1, 4))
    tasks: list[TaskId] = []
    stateful: list[TaskId] = []
    for sub in range(subtopologies):
        partitions = draw(st.integers(1, 6))
        is_stateful = draw(st.booleans())
        for p in range(partitions):
            tasks.append(TaskId(sub, p))
            if is_stateful:
                stateful.append(TaskId(sub, p))
    lag = st.one_of(st.sampled_from([-2, -3, 0]), st.integers(0, 200_000))
    clients = {}
    for c in range(n_clients):
        pid = ProcessId.for_int(draw(st.integers(0, 2**40)) * 16 + c)
        clients[pid] = _client(pid, {t: draw(lag) for t in stateful}, draw(st.integers(1, 4)))
    config = AssignorConfig.model_validate(
        {
            "num.standby.replicas": draw(st.integers(0, 3)),
            "max.warmup.replicas": draw(st.integers(1, 4)),
            "acceptable.recovery.lag": draw(st.sampled_from([0, 100, 10_000])),
        }
    )
    return clients, tasks, stateful, config


def _check_valid(
    result: TaskAssignment, tasks: list[TaskId], stateful: list[TaskId], config: AssignorConfig
) -> None:
    states = result.clients
    n_clients = len(states)
    for task in tasks:
        active = [p for p, c in states.items() if task in c.active]
        assert len(active) == 1, f"{task} must be active exactly once, is on {active}"
        standby = [p for p, c in states.items() if task in c.standby]
        if task not in stateful:
            assert not standby, f"stateless {task} has standbys"
        else:
            assert len(standby) >= min(config.num_standby_replicas, n_clients - 1)
    extra = sum(
        len([p for p, c in states.items() if t in c.standby])
        - min(config.num_standby_replicas, n_clients - 1)
        for t in stateful
    )
    assert extra <= config.max_warmup_replicas
    warmups = sum(len(w) for w in result.warmups.values())
    assert warmups <= config.max_warmup_replicas
    for pid, warm in result.warmups.items():
        assert warm <= states[pid].standby
    if not result.probing_rebalance_needed:
        assert warmups == 0 and extra == 0


@given(clusters())
def test_every_assignment_is_valid(
    cluster: Cluster,
) -> None:
    clients, tasks, stateful, config = cluster
    _check_valid(HA.place_tasks(clients, tasks, stateful, config), tasks, stateful, config)


def _next_round(
    result: TaskAssignment, end: dict[TaskId, int]
) -> dict[ProcessId, ClientState]:
    """Members report what they held: actives as running (-2), replicas fully restored."""
    clients = {}
    for pid, state in result.clients.items():
        offsets = {t: end[t] for t in state.standby} | {t: -2 for t in state.active if t in end}
        consumers = [
            ConsumerReport(f"{pid}-{i}", offsets if i == 0 else {}) for i in range(state.capacity)
        ]
        clients[pid] = build_client_state(pid, consumers, {}, end)
    return clients


@settings(max_examples=60)
@given(clusters())
def test_rebalances_converge_to_a_balanced_assignment(
    cluster: Cluster,
) -> None:
    clients, tasks, stateful, config = cluster
    end = dict.fromkeys(stateful, 100_000)
    clients = {
        pid: build_client_state(
            pid,
            [ConsumerReport(f"{pid}-{i}", {}) for i in range(state.capacity)],
            {},
            end,
        )
        for pid, state in clients.items()
    }
    limit = 2 * (len(stateful) + len(stateful) * config.num_standby_replicas) + 2
    result = HA.place_tasks(clients, tasks, stateful, config)
    for _ in range(limit):
        if not result.probing_rebalance_needed:
            break
        _check_valid(result, tasks, stateful, config)
        result = HA.place_tasks(_next_round(result, end), tasks, stateful, config)
    assert not result.probing_rebalance_needed, f"no convergence within {limit} rebalances"
    _check_valid(result, tasks, stateful, config)
    states = list(result.clients.values())
    active_loads = [c.active_load for c in states]
    assert max(active_loads) - min(active_loads) <= 1.0
    if len({c.capacity for c in states}) == 1:
        # Kafka's convergence test (equal threads): stateful load per thread also within one.
        stateful_set = set(stateful)
        stateful_loads = [len(c.assigned & stateful_set) / c.capacity for c in states]
        assert max(stateful_loads) - min(stateful_loads) <= 1.0
