"""Tasks -> threads equals Kafka's ``assignTasksToThreads`` exactly, on seeded random clients.

Each scenario is one client (1-8 consumers, sometimes 20-300) with random assigned actives and
standbys and random per-consumer offset sums (including -2, -3 and corrupt sums beyond the
end); one family packs many tasks into one hash bucket so Java's HashSet resizes early and
builds tree bins. The Java
side is the real, package-private static method, called by reflection (see ``ThreadsOp.java``).
Every mismatch names its seed; rerun one with ``THREADS_SEED=<seed>``.
"""

from __future__ import annotations

import os
import random
import uuid
from typing import Any

from assignor.placement.client_state import prev_tasks_by_lag
from assignor.placement.lags import task_lag
from assignor.placement.threads import distribute_tasks
from protocol.ids import TaskId
from protocol.messages import LATEST_OFFSET, UNKNOWN_OFFSET_SUM
from tests.support.jvm import HarnessError, JavaHarness

BATCH = 500


def _tasks(rng: random.Random) -> list[TaskId]:
    topology = rng.choice([None] * 9 + ["orders"])
    if rng.random() < 0.15:
        # Many tasks in one bucket: equal low bits of the hash (31 is odd, so equal partitions
        # modulo the stride collide), enough of them to trigger resizes and tree bins.
        stride = rng.choice([16, 32, 64, 128])
        base = rng.randrange(stride)
        count = rng.randint(9, 30)
        tasks = [TaskId(0, base + stride * k, topology=topology) for k in range(count)]
        tasks += [TaskId(rng.randrange(3), rng.randrange(64), topology=topology)
                  for _ in range(rng.randint(0, 40))]
        return sorted(set(tasks))
    return [
        TaskId(sub, p, topology=topology)
        for sub in range(rng.randint(1, 10))
        for p in range(rng.randint(1, 32))
    ]


def scenario(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tasks = _tasks(rng)
    stateful_share = rng.random()
    stateful = [t for t in tasks if rng.random() < stateful_share]
    end = {t: rng.choice([0, rng.randrange(1, 10_000), 2**62]) for t in stateful}
    # Mostly 1-8 threads; sometimes many (Kafka's ManyThreadsPerClient has 1,000), so the
    # floor is often 0 and most threads take nothing or one task.
    threads = rng.randint(1, 8) if rng.random() < 0.85 else rng.randint(20, 300)
    consumers = [f"consumer-{rng.randrange(10**6):06d}-{i}" for i in range(threads)]
    rng.shuffle(consumers)
    active_share = rng.random()
    active = [t for t in tasks if rng.random() < active_share]
    taken = set(active)
    standby = [t for t in stateful if t not in taken and rng.random() < 0.5]
    gone = TaskId(99, 0, topology=tasks[0].topology)  # reported, but not in the topology now
    offsets: dict[str, dict[TaskId, int]] = {}
    for consumer in consumers:
        reported = [t for t in stateful if rng.random() < rng.random()]
        if rng.random() < 0.2:
            reported.append(gone)
        offsets[consumer] = {
            t: rng.choice(
                [LATEST_OFFSET, UNKNOWN_OFFSET_SUM, rng.randrange(0, 10_050), 0]
            )
            for t in reported
        }
    return {
        "process": str(uuid.UUID(int=rng.getrandbits(128))),
        "consumers": consumers,
        "offset_sums": {c: {str(t): s for t, s in o.items()} for c, o in offsets.items()},
        "end_offset_sums": {str(t): s for t, s in end.items()},
        "active": [str(t) for t in active],
        "standby": [str(t) for t in standby],
        "_offsets": offsets,
        "_end": end,
        "_active": active,
        "_standby": standby,
    }


def python_answer(s: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    merged: dict[TaskId, int] = {}
    for consumer in s["consumers"]:  # later consumers overwrite, as Kafka's putAll does
        merged.update(s["_offsets"][consumer])
    end = s["_end"]
    lags = {t: task_lag(merged.get(t, 0), e) for t, e in end.items()}
    prev = {c: prev_tasks_by_lag(s["_offsets"][c], lags) for c in s["consumers"]}
    stateful = [t for t in s["_active"] if t in end]
    stateless = [t for t in s["_active"] if t not in end]
    result = distribute_tasks(s["consumers"], stateful, s["_standby"], stateless, prev)
    return {
        "active": {c: [str(t) for t in ts] for c, ts in result.active.items()},
        "standby": {c: [str(t) for t in ts] for c, ts in result.standby.items()},
    }


def java_answer(raw: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    return {
        "active": {c: raw["stateful"][c] + raw["stateless"][c] for c in raw["stateful"]},
        "standby": dict(raw["standby"]),
    }


def _wire(s: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if not k.startswith("_")}


def test_threads_equal_java(java_harness: JavaHarness, conformance_scenarios: int) -> None:
    only = os.environ.get("THREADS_SEED")
    seeds = [int(only)] if only else list(range(conformance_scenarios))
    mismatches: list[str] = []
    for start in range(0, len(seeds), BATCH):
        batch = [scenario(seed) for seed in seeds[start : start + BATCH]]
        answers = java_harness.call_many("threads", [_wire(s) for s in batch])
        for seed, s, raw in zip(seeds[start : start + BATCH], batch, answers, strict=True):
            if isinstance(raw, HarnessError):
                mismatches.append(f"seed {seed}: Java failed: {raw.java_error}")
                continue
            expected = java_answer(raw)
            try:
                got = python_answer(s)
            except Exception as error:  # report with the seed, keep going
                mismatches.append(f"seed {seed}: Python failed: {error!r}")
                continue
            if got != expected:
                mismatches.append(f"seed {seed}: java={expected} python={got}")
    assert not mismatches, (
        f"{len(mismatches)} of {len(seeds)} thread distributions differ from Java "
        f"(rerun one with THREADS_SEED=<seed>):\n" + "\n".join(mismatches[:10])
    )
