"""Kafka's TaskAssignorConvergenceTest cases, replayed as whole scenarios through the shim."""

from __future__ import annotations

import os
from typing import Any

import pytest

from simulator.engine import replay
from simulator.families import generate, harness_topology
from simulator.scenarios import Bounds, scenario_from_data

#: Every CI run replays the 500 random perturbations the issue asks for: about 0.12 s a scenario
#: (60 s for all 500 on the loaded 2-core machine) since the leader reads end offsets at assign
#: time and probing stops. ``SIM_PERTURBATIONS=N`` runs more (or fewer, while iterating).
PERTURBATIONS = int(os.environ.get("SIM_PERTURBATIONS", "500"))


def harness(stateless: int, stateful: int, clients: int, events: list[dict[str, Any]],
            extra_clients: int = 0) -> Any:
    topology, partitions = harness_topology(stateless, stateful)
    return scenario_from_data({
        "name": "harness",
        "topology": topology,
        "partitions": partitions,
        "processes": [{"name": f"c{i}", "initial_state": "caught_up", "start": i < clients}
                      for i in range(clients + extra_clients)],
        "config": {"acceptable.recovery.lag": 100, "max.warmup.replicas": 2,
                   "num.standby.replicas": 0, "probing.rebalance.interval.ms": 60_000},
        "dynamics": {"write_rate": 0.0, "initial_records": 150_000, "restore_rate": 100_000.0},
        "events": events,
    })


def test_a_static_assignment_converges_with_the_first_assignment() -> None:
    summary = replay(harness(1, 1, 1, [])).summary
    assert summary.converged and summary.rebalances == 1


def test_assignment_converges_after_adding_a_node() -> None:
    result = replay(harness(7, 11, 1, [{"kind": "join", "at": 60, "process": "c1"}],
                            extra_clients=1))
    summary = result.summary
    assert summary.converged
    assert 1 <= summary.rebalances_after_last_event <= 11 // 2 + 1
    assert result.violations == []
    assert summary.balance_thread <= 1


def test_dropping_a_node_converges() -> None:
    result = replay(harness(11, 13, 7, [{"kind": "leave", "at": 60, "process": "c0"}]))
    summary = result.summary
    assert summary.converged
    assert 1 <= summary.rebalances_after_last_event <= 13 // 2 + 2
    assert result.violations == []


@pytest.mark.parametrize("seed", range(PERTURBATIONS))
def test_random_perturbations_converge_within_kafkas_bound(seed: int) -> None:
    result = replay(generate("perturbation", {}, seed))
    summary = result.summary
    assert result.violations == []
    assert summary.converged, summary.note
    assert summary.within_kafka_bound, (summary.rebalances_after_last_event, summary.kafka_bound)


@pytest.mark.parametrize("warmups", [1, 2, 4])
def test_a_scale_out_moves_most_tasks_and_max_warmup_replicas_of_them_per_probing_round(
        warmups: int) -> None:
    """Why big high-availability replays of the default mix do not settle within the hour
    (docs/simulator.md, findings): Kafka's balanced target deals stateful tasks round-robin over
    the clients in process-id order, ignoring who ran them, so one more process re-targets most
    tasks (here 8 of 12 where 2 would balance 7 processes), and KIP-441 moves them at most
    ``max.warmup.replicas`` warm-ups per probing rebalance. Rounds after the event = moves /
    warm-ups + 1 (the last, which only confirms); a big group needs hundreds."""
    result = replay(generate("scale_out", {
        "processes": 6, "threads": 1, "partitions": 6, "standbys": 0, "add": 1,
        "warmups": warmups, "recovery_lag": 1_000}, seed=1))
    summary = result.summary
    assert summary.converged and result.violations == []
    moved = sum(r.active_moved for r in result.rebalances)
    assert (summary.stateful_tasks, moved) == (12, 8)
    probing = [r for r in result.rebalances if r.followup.startswith("probing")]
    assert [r.warmups for r in probing] == [warmups] * (moved // warmups)
    assert summary.rebalances_after_last_event == moved // warmups + 1


def test_a_migration_cut_short_by_the_bound_says_so_in_its_note() -> None:
    """The same scale-out with one warm-up a round and a bound of 150 s (two probing rounds):
    the note names the cause, KIP-441 movements still pending at every rebalance since the
    event, with what moved and the warm-up budget, not only that the run was not stable."""
    scenario = generate("scale_out", {
        "processes": 6, "threads": 1, "partitions": 6, "standbys": 0, "add": 1,
        "warmups": 1, "recovery_lag": 1_000}, seed=1)
    short = scenario.model_copy(update={"bounds": Bounds(settle_s=150.0)})
    summary = replay(short).summary
    assert not summary.converged
    assert summary.note.startswith("non-convergence: not stable 150.0 s after the last event")
    after = summary.rebalances_after_last_event
    assert f"KIP-441 movements pending: each of the {after} rebalances since scheduled" in (
        summary.note)
    assert summary.note.endswith("max.warmup.replicas=1)")
