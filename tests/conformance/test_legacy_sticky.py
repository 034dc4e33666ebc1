"""Legacy sticky and fallback-prior assignors against Kafka's, on seeded random clusters.

Kafka's result depends on HashMap/HashSet iteration order. The Python side replays those
orders under the same construction the Java op uses (client map filled in request order, task
sets in task order), so the results are compared exactly. Independently of any order, every
scenario is also checked for the invariants the issue names: each task active exactly once,
standbys never beside their active, the requested replicas where capacity allows, per-client
balance within Kafka's bound, and stickiness at least Java's. Mismatches print their seed;
rerun one with ``LEGACY_SEED=<seed>``.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Mapping
from typing import Any

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from assignor.placement.fallback_prior import FallbackPriorTaskAssignor
from assignor.placement.legacy_sticky import LegacyStickyTaskAssignor
from protocol.ids import ProcessId, TaskId
from tests.support.jvm import HarnessError, JavaHarness

BATCH = 200


def scenario(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tasks = [
        TaskId(s, p) for s in range(rng.randint(1, 6)) for p in range(rng.randint(1, 16))
    ]
    stateful = [t for t in tasks if rng.random() < 0.7]
    old = tasks + [TaskId(50, p) for p in range(3)]  # previously held, gone now
    n_clients = rng.randint(1, 20)
    clients = []
    for i in range(n_clients):
        pid = uuid.UUID(int=rng.getrandbits(128)) if rng.random() < 0.8 else uuid.UUID(int=i + 1)
        churn = rng.random()
        prev_active = sorted({t for t in old if rng.random() < churn / n_clients * 1.5})
        prev_standby = sorted(
            {t for t in old if t not in prev_active and rng.random() < churn / n_clients}
        )
        clients.append({
            "process": str(pid),
            "capacity": rng.choice([1, 1, 1, 2, 3, 4]),
            "prev_active": [str(t) for t in prev_active],
            "prev_standby": [str(t) for t in prev_standby],
        })
    return {
        "clients": clients,
        "all_tasks": [str(t) for t in tasks],
        "stateful_tasks": [str(t) for t in stateful],
        "standbys": rng.choice([0, 0, 1, 1, 2, 3]),
        "fallback": rng.random() < 0.3,
    }


def python_answer(s: dict[str, Any]) -> dict[str, Any]:
    clients: dict[ProcessId, ClientState] = {}
    stateful = [TaskId.parse(t) for t in s["stateful_tasks"]]
    for c in s["clients"]:
        pid = ProcessId(c["process"])
        clients[pid] = ClientState(
            process_id=pid,
            capacity=c["capacity"],
            previous_active=frozenset(TaskId.parse(t) for t in c["prev_active"]),
            previous_standby=frozenset(TaskId.parse(t) for t in c["prev_standby"]),
            task_lags=dict.fromkeys(stateful, 0),
        )
    config = AssignorConfig.model_validate({"num.standby.replicas": s["standbys"]})
    assignor = FallbackPriorTaskAssignor() if s["fallback"] else LegacyStickyTaskAssignor()
    all_tasks = [TaskId.parse(t) for t in s["all_tasks"]]
    result = assignor.place_tasks(clients, all_tasks, stateful, config)
    return {
        "probing": result.probing_rebalance_needed,
        "clients": {
            str(pid): {
                "active": [str(t) for t in sorted(state.active)],
                "standby": [str(t) for t in sorted(state.standby)],
            }
            for pid, state in result.clients.items()
        },
    }


def invariant_problems(s: dict[str, Any], answer: Mapping[str, Any]) -> list[str]:
    """What must hold whatever the iteration order; empty when all is well."""
    problems = []
    clients = answer["clients"]
    actives = [t for c in clients.values() for t in c["active"]]
    if sorted(actives) != sorted(s["all_tasks"]):
        problems.append("not every task is active exactly once")
    for pid, c in clients.items():
        both = set(c["active"]) & set(c["standby"])
        if both:
            problems.append(f"{pid} holds {sorted(both)} as active and standby")
    for task in s["stateful_tasks"]:
        replicas = sum(task in c["standby"] for c in clients.values())
        if replicas != min(s["standbys"], len(clients) - 1):
            problems.append(f"task {task} has {replicas} standbys")
    stateless = set(s["all_tasks"]) - set(s["stateful_tasks"])
    if any(set(c["standby"]) & stateless for c in clients.values()):
        problems.append("a stateless task has a standby")
    if not s["fallback"]:
        # Balance: quota = floor(tasks / threads); no client gets more actives than one above
        # quota per thread (the fallback keeps every previous active, so it is exempt).
        capacity = {c["process"]: c["capacity"] for c in s["clients"]}
        quota = len(s["all_tasks"]) // sum(capacity.values())
        for pid, c in clients.items():
            if len(c["active"]) > capacity[pid] * (quota + 1):
                problems.append(f"{pid} has {len(c['active'])} actives, above the quota")
    return problems


def kept_actives(s: dict[str, Any], answer: Mapping[str, Any]) -> int:
    prev = {c["process"]: set(c["prev_active"]) for c in s["clients"]}
    return sum(len(prev[pid] & set(c["active"])) for pid, c in answer["clients"].items())


def test_legacy_sticky_and_fallback_equal_java(
    java_harness: JavaHarness, conformance_scenarios: int
) -> None:
    only = os.environ.get("LEGACY_SEED")
    seeds = [int(only)] if only else list(range(conformance_scenarios))
    problems: list[str] = []
    exact = 0
    for start in range(0, len(seeds), BATCH):
        chunk = seeds[start : start + BATCH]
        batch = [scenario(seed) for seed in chunk]
        answers = java_harness.call_many("legacy_sticky", batch)
        for seed, s, java in zip(chunk, batch, answers, strict=True):
            if isinstance(java, HarnessError):
                problems.append(f"seed {seed}: Java failed: {java.java_error}")
                continue
            try:
                mine = python_answer(s)
            except Exception as error:
                problems.append(f"seed {seed}: Python failed: {error!r}")
                continue
            for what in invariant_problems(s, mine):
                problems.append(f"seed {seed}: Python breaks an invariant: {what}")
            if kept_actives(s, mine) < kept_actives(s, java):
                problems.append(f"seed {seed}: Python is less sticky than Java")
            if mine == java:
                exact += 1
            else:
                problems.append(f"seed {seed}: differs from Java: java={java} python={mine}")
    assert not problems, (
        f"{len(problems)} problems, {exact}/{len(seeds)} exact (rerun with LEGACY_SEED=<seed>):\n"
        + "\n".join(problems[:8])
    )
