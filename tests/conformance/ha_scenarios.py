"""Seeded random inputs for the high-availability assignor, in both Python and Java form.

One seed gives one scenario: clients (1-50, 1-8 threads each, random or small-int process ids),
a topology (1-10 subtopologies, 1-32 partitions each, some stateful), changelog end-offset
sums, a previous assignment expressed the way members report it (offset sums per consumer:
-2 for a running active, -3 unknown, a sum at or beyond the end for standbys and corrupt state),
the assignor config (standbys 0-3, warm-ups 1-4, several recovery lags) and, for some seeds,
client tags with ``rack.aware.assignment.tags``. ``python_inputs`` and ``java_request`` describe
the same scenario to each side.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState, ConsumerReport, build_client_state
from assignor.placement.lags import LONG_MAX
from protocol.ids import ProcessId, TaskId

TAG_KEYS = ("zone", "cluster", "rack", "host")


@dataclass(frozen=True)
class Client:
    pid: ProcessId
    consumers: tuple[tuple[str, dict[TaskId, int]], ...]
    tags: dict[str, str]


@dataclass(frozen=True)
class Scenario:
    seed: int
    clients: tuple[Client, ...]
    tasks: tuple[TaskId, ...]
    stateful: tuple[TaskId, ...]
    end: dict[TaskId, int]
    config: AssignorConfig


def _pid(rng: random.Random, used: set[ProcessId], small: bool) -> ProcessId:
    while True:
        if small:
            pid = ProcessId.for_int(rng.randint(0, 200))
        else:
            pid = ProcessId(uuid.UUID(int=rng.getrandbits(128)))
        if pid not in used:
            used.add(pid)
            return pid


def scenario(seed: int, *, max_clients: int = 50) -> Scenario:
    rng = random.Random(seed)
    small_ids = rng.random() < 0.3
    used: set[ProcessId] = set()
    n_clients = rng.randint(1, max_clients)
    subtopologies = rng.randint(1, 10)
    tasks: list[TaskId] = []
    stateful: list[TaskId] = []
    for sub in range(subtopologies):
        is_stateful = rng.random() < 0.7
        for partition in range(rng.randint(1, 32)):
            task = TaskId(sub, partition)
            tasks.append(task)
            if is_stateful:
                stateful.append(task)

    lags_failed = rng.random() < 0.05
    end: dict[TaskId, int] = {}
    for task in stateful:
        if lags_failed:
            end[task] = -3
            continue
        kind = rng.random()
        if kind < 0.1:
            end[task] = 0
        elif kind < 0.15:
            end[task] = LONG_MAX
        elif kind < 0.6:
            end[task] = rng.randint(0, 20_000)
        else:
            end[task] = rng.randint(0, 2_000_000)

    config = AssignorConfig.model_validate(
        {
            "num.standby.replicas": rng.randint(0, 3),
            "max.warmup.replicas": rng.randint(1, 4),
            "acceptable.recovery.lag": rng.choice([0, 100, 10_000, 10_000, 1_000_000, LONG_MAX]),
        }
    )

    threads = [rng.randint(1, 8) for _ in range(n_clients)]
    pids = [_pid(rng, used, small_ids) for _ in range(n_clients)]
    reports: list[list[dict[TaskId, int]]] = [[{} for _ in range(t)] for t in threads]
    churn = rng.random()
    for task in stateful:
        # The previous owner (if any) reports -2; a few other clients report local state.
        if rng.random() < 0.8:
            owner = rng.randrange(n_clients)
            reports[owner][rng.randrange(threads[owner])][task] = -2
        for _ in range(rng.randint(0, 3)):
            if rng.random() > churn:
                continue
            holder = rng.randrange(n_clients)
            roll = rng.random()
            top = max(end[task], 0)
            if roll < 0.1:
                value = -3
            elif roll < 0.15 and top < LONG_MAX - 1000:
                value = top + rng.randint(1, 1000)  # beyond the end: corrupt state
            elif roll < 0.2:
                value = -2
            else:
                value = rng.randint(0, top) if top < LONG_MAX else rng.randint(0, 2**62)
            reports[holder][rng.randrange(threads[holder])][task] = value

    tags: list[dict[str, str]] = [{} for _ in range(n_clients)]
    if rng.random() < 0.4:
        keys = rng.sample(TAG_KEYS, rng.randint(1, 3))
        pools = {key: [f"{key}-{i}" for i in range(rng.randint(1, 4))] for key in keys}
        for client_tags in tags:
            for key in keys:
                if rng.random() < 0.95:
                    client_tags[key] = rng.choice(pools[key])
        rack_tags = rng.sample(keys, rng.randint(1, len(keys)))
        config = config.model_copy(update={"rack_aware_assignment_tags": tuple(rack_tags)})

    clients = tuple(
        Client(
            pid=pids[c],
            consumers=tuple((f"consumer-{c}-{j}", reports[c][j]) for j in range(threads[c])),
            tags=tags[c],
        )
        for c in range(n_clients)
    )
    return Scenario(seed, clients, tuple(tasks), tuple(stateful), end, config)


def python_inputs(s: Scenario) -> dict[ProcessId, ClientState]:
    """The clients as the pipeline would build them (Kafka's bookkeeping, sparse lags)."""
    return {
        client.pid: build_client_state(
            client.pid,
            [ConsumerReport(cid, offsets) for cid, offsets in client.consumers],
            {},
            s.end,
            client_tags=client.tags,
        )
        for client in s.clients
    }


def java_request(s: Scenario) -> dict[str, Any]:
    return {
        "clients": [
            {
                "pid": str(client.pid),
                "consumers": [
                    {"id": cid, "offsets": {str(t): v for t, v in offsets.items()}}
                    for cid, offsets in client.consumers
                ],
                "tags": client.tags,
            }
            for client in s.clients
        ],
        "tasks": [str(t) for t in s.tasks],
        "stateful": [str(t) for t in s.stateful],
        "end": {str(t): v for t, v in s.end.items()},
        "config": {
            "acceptable.recovery.lag": s.config.acceptable_recovery_lag,
            "max.warmup.replicas": s.config.max_warmup_replicas,
            "num.standby.replicas": s.config.num_standby_replicas,
            "probing.rebalance.interval.ms": s.config.probing_rebalance_interval_ms,
            "rack.aware.assignment.tags": list(s.config.rack_aware_assignment_tags),
        },
    }
