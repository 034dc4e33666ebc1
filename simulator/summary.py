"""A replay's rows: one per rebalance of the group, and the scenario's summary row.

Functions over what the replay recorded (the coordinator's journal records, the leader's
decisions, the state model's counters), so a row says only what the run saw.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from assignor.topology.tasks import TaskLayout
from protocol.ids import TaskId, sorted_tasks
from simulator.decisions import Decision
from simulator.metrics import (
    Ownership,
    RebalanceRow,
    ScenarioRow,
    Violation,
    check_invariants,
    percentile,
)
from simulator.scenarios import ProcessSpec, Scenario
from simulator.shim import RebalanceRecord
from simulator.state import StateModel


@dataclass(frozen=True, slots=True)
class History:
    """The group's rebalances as rows, with the invariant violations and the moves they made."""

    rows: list[RebalanceRow]
    violations: list[Violation]
    #: the ownership of the last stable generation the leader decided
    final: Ownership | None
    active_moves: int
    standby_moves: int


def rebalance_history(
    scenario_name: str,
    records: Iterable[RebalanceRecord],
    decisions: Mapping[int, Decision],
    command: str,
) -> History:
    """One row per generation that was not empty; moves and invariants of the stable ones."""
    rows: list[RebalanceRow] = []
    violations: list[Violation] = []
    previous: Ownership | None = None
    active_moves = standby_moves = 0
    final: Ownership | None = None
    for record in (r for r in records if r.outcome != "empty"):
        decision = decisions.get(record.generation)
        moved_active = moved_standby = 0
        if decision is not None and record.outcome == "stable":
            ownership = decision.ownership
            if previous is not None:
                before = previous.active_process()
                moved_active = sum(
                    1 for t, p in ownership.active_process().items()
                    if t in before and before[t] != p
                )
                moved_standby = len(ownership.standby_pairs() - previous.standby_pairs())
            active_moves += moved_active
            standby_moves += moved_standby
            violations.extend(check_invariants(
                ownership, decision.tasks,
                generation=record.generation, time_s=record.ended_at, replay=command,
            ))
            previous = final = ownership
        rows.append(RebalanceRow(
            scenario=scenario_name,
            generation=record.generation,
            outcome=record.outcome,
            started_s=round(record.started_at, 6),
            ended_s=round(record.ended_at, 6),
            members=len(record.members),
            processes=decision.processes if decision else 0,
            leader=f"{decision.leader[0]}/{decision.leader[1]}" if decision else "",
            assignor=decision.assignor if decision else "",
            protocol_version=decision.protocol_version if decision else None,
            join_bytes=sum(len(b) for b in record.metadata.values()),
            sync_bytes=sum(len(b) for b in record.assignments.values()),
            active_moved=moved_active,
            standby_moved=moved_standby,
            warmups=decision.warmups if decision else 0,
            followup=decision.followup if decision else "",
            restore_records=decision.restore_records if decision else 0,
            reasons="; ".join(record.reasons),
            assign_wall_ms=round(decision.assign_wall_ms, 3) if decision else 0.0,
        ))
    return History(rows, violations, final, active_moves, standby_moves)


def scenario_row(
    scenario: Scenario,
    history: History,
    *,
    layout: TaskLayout,
    state: StateModel,
    specs: Mapping[str, ProcessSpec],
    ours: bool,
    converged: bool,
    last_event: float,
    end: float,
    note: str,
    wall_s: float,
) -> ScenarioRow:
    """The scenario's summary: rebalances, convergence against Kafka's bound, unavailability,
    restoration and the final assignment's shape."""
    rows = history.rows
    config = scenario.assignor_config()
    stateful = len(layout.stateful)
    standbys = config.num_standby_replicas
    stable_rows = [r for r in rows if r.outcome == "stable"]
    after = [r for r in stable_rows if r.started_s >= last_event]
    ha = ours and scenario.assignor == "high_availability"
    if ha and not converged:
        note += migration_cause(after, config.max_warmup_replicas)
    bound = 2 * (stateful + stateful * standbys) if ha else None
    unavailable = state.unavailable_s
    # the first most unavailable task in task order: sorted by the int rank unnamed tasks keep
    # and keyed in C (512 ``TaskId.__lt__`` and key lambdas a cold start otherwise)
    worst = max(sorted_tasks(unavailable), key=unavailable.__getitem__, default=None)
    balance_thread, balance_process, coverage, spread = final_shape(
        history.final,
        standbys,
        layout.stateful,
        config.rack_aware_assignment_tags,
        specs,
    )
    return ScenarioRow(
        scenario=scenario.name,
        family=str(scenario.origin.get("family", "file")),
        seed=scenario.seed,
        assignor=scenario.assignor,
        rebalances=len(stable_rows),
        aborted=len(rows) - len(stable_rows),
        rebalances_after_last_event=len(after),
        converged=converged,
        kafka_bound=bound,
        within_kafka_bound=(converged and len(after) <= bound) if bound is not None else None,
        time_to_stable_s=round(end - last_event, 6) if converged else None,
        end_s=round(end, 6),
        tasks=len(layout.tasks),
        stateful_tasks=stateful,
        unavailable_task_s=round(sum(unavailable.values()), 6),
        unavailable_p99_s=round(percentile(list(unavailable.values()), 0.99), 6),
        unavailable_max_s=round(unavailable[worst], 6) if worst is not None else 0.0,
        worst_task=str(worst) if worst is not None else "",
        restored_records=int(state.restored),
        standby_records=int(state.standby_replayed),
        active_moves=history.active_moves,
        standby_moves=history.standby_moves,
        balance_thread=balance_thread,
        balance_process=balance_process,
        standby_coverage=coverage,
        tag_spread=spread,
        violations=len(history.violations),
        hash_seed=os.environ.get("PYTHONHASHSEED", "random"),
        note=note,
        replay_wall_s=round(wall_s, 3),
    )


def migration_cause(after: list[RebalanceRow], warmups: int) -> str:
    """Why a high-availability run did not settle, when every rebalance after the last event
    scheduled a probing rebalance: KIP-441's movements were pending every round (the leader asks
    for a probing rebalance exactly when its active or standby movement step still has a
    replica to move), each round warming up at most ``max.warmup.replicas`` replicas toward a
    balanced target that ignores where state is (docs/simulator.md, findings). Empty when some
    round asked for none (then the cause is elsewhere: restoring tasks, a member coming and
    going)."""
    if not after or not all(r.followup.startswith("probing") for r in after):
        return ""
    last = after[-1]
    rounds = f"each of the {len(after)} rebalances" if len(after) > 1 else "the rebalance"
    active, standby = sum(r.active_moved for r in after), sum(r.standby_moved for r in after)
    return (f" (KIP-441 movements pending: {rounds} since scheduled a probing rebalance; "
            f"{active} active and {standby} standby replicas moved, the last round "
            f"{last.active_moved}/{last.standby_moved}, max.warmup.replicas={warmups})")


def final_shape(
    final: Ownership | None,
    standbys: int,
    stateful: frozenset[TaskId],
    tags: tuple[str, ...],
    specs: Mapping[str, ProcessSpec],
) -> tuple[int, float, float, float | None]:
    """The final assignment's balance (per thread, per process thread), standby coverage and
    the share of standbys whose client tags all differ from their active's (None untagged)."""
    if final is None:
        return 0, 0.0, 0.0, None
    per_thread = [len(tasks) for tasks in final.active.values()]
    balance_thread = max(per_thread) - min(per_thread) if per_thread else 0
    per_process: dict[str, int] = {}
    threads: dict[str, int] = {}
    for member, tasks in final.active.items():
        process = final.process(member)
        per_process[process] = per_process.get(process, 0) + len(tasks)
        threads[process] = threads.get(process, 0) + 1
    loads = [per_process[p] / threads[p] for p in per_process]
    balance_process = round(max(loads) - min(loads), 6) if loads else 0.0
    processes = len(per_process)
    wanted = len(stateful) * min(standbys, max(0, processes - 1))
    pairs = final.standby_pairs()
    have = len({(t, p) for t, p in pairs if t in stateful})
    coverage = round(min(1.0, have / wanted), 6) if wanted else 1.0
    spread: float | None = None
    if tags and pairs:
        owner = final.active_process()
        apart = sum(
            1 for task, process in pairs
            if task in owner and all(
                specs[process].tags.get(tag) != specs[owner[task]].tags.get(tag)
                for tag in tags
            )
        )
        spread = round(apart / len(pairs), 6)
    return balance_thread, balance_process, coverage, spread


def replay_command(scenario: Scenario, path: str | None = None) -> str:
    """The command line that replays ``scenario``: its family and seed, or its file."""
    origin = scenario.origin
    if "family" in origin:
        given = sorted(origin.get("params", {}).items())
        params = " ".join(f"--param {k}={v}" for k, v in given if k != "assignor")
        return (f"python -m simulator run --family {origin['family']} --seed {scenario.seed} "
                f"--assignor {scenario.assignor}" + (f" {params}" if params else ""))
    where = path or f"<file of scenario {scenario.name}>"
    return f"python -m simulator run --scenario {where}"


__all__ = [
    "Decision", "History", "final_shape", "rebalance_history", "replay_command", "scenario_row",
]
