"""The high-availability step alone, in the rebalance after one member left (issue 11).

Figure: milliseconds of ``HighAvailabilityTaskAssignor.place_tasks`` for the group that remains
after the last of C single-thread clients left, each reporting what the first rebalance gave it
(actives as running; standbys at offset 0 of 100,000, so beyond the default
``acceptable.recovery.lag`` of 10,000 and not caught up), over one stateful topic of P
partitions. That is where task movement dominates: the leaving member's tasks land on clients
that are not caught up and move back, one constrained poll after another.

Process ids are small ints (as the other benches use) or random UUIDs (as real instances have):
with UUIDs, clients share hash buckets, so Kafka's constrained-poll resets depend on the queue's
pop order and the emulation has more to replay. Run alone:
``PYTHONPATH=. .venv/bin/python tests/bench/bench_movement.py [P C standbys uuid ...]``.
"""

from __future__ import annotations

import gc
import logging
import random
import statistics
import sys
import time
import uuid

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState, ConsumerReport, build_client_state
from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.task_assignor import TaskAssignment
from protocol.ids import ProcessId, TaskId

END_OFFSET = 100_000
POINTS = (  # partitions, clients, standbys, random UUID process ids
    (1_000, 10, 0, False),
    (1_000, 10, 0, True),
    (1_000, 100, 1, True),
    (10_000, 100, 0, False),
    (10_000, 100, 0, True),
    (1_000, 1_000, 1, True),
)


def _clients(
    pids: list[ProcessId], tasks: list[TaskId], previous: TaskAssignment | None
) -> dict[ProcessId, ClientState]:
    end = dict.fromkeys(tasks, END_OFFSET)
    clients = {}
    for c, pid in enumerate(pids):
        offsets: dict[TaskId, int] = {}
        if previous is not None:
            state = previous.clients[pid]
            offsets = {t: 0 for t in state.standby} | {t: -2 for t in state.active}
        clients[pid] = build_client_state(pid, [ConsumerReport(f"c-{c}", offsets)], {}, end)
    return clients


def member_left(
    partitions: int, n_clients: int, standbys: int, uuids: bool
) -> tuple[dict[ProcessId, ClientState], list[TaskId], AssignorConfig]:
    """The inputs of the rebalance after the last client left."""
    rng = random.Random(1)
    pids = [
        ProcessId(uuid.UUID(int=rng.getrandbits(128))) if uuids else ProcessId.for_int(c + 1)
        for c in range(n_clients)
    ]
    tasks = [TaskId(0, p) for p in range(partitions)]
    config = AssignorConfig.model_validate({"num.standby.replicas": standbys})
    first = HighAvailabilityTaskAssignor().place_tasks(
        _clients(pids, tasks, None), tasks, tasks, config
    )
    return _clients(pids[:-1], tasks, first), tasks, config


def time_point(
    partitions: int, n_clients: int, standbys: int, uuids: bool, runs: int
) -> list[float]:
    clients, tasks, config = member_left(partitions, n_clients, standbys, uuids)
    times = []
    for _ in range(runs):
        gc.collect()
        started = time.perf_counter()
        HighAvailabilityTaskAssignor().place_tasks(clients, tasks, tasks, config)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    logging.disable(logging.WARNING)  # the standby shortfall warnings are not the point here
    args = sys.argv[1:]
    points: tuple[tuple[int, int, int, bool], ...] = POINTS
    if args:
        values = [int(a) for a in args]
        points = tuple(
            (values[i], values[i + 1], values[i + 2], bool(values[i + 3]))
            for i in range(0, len(values), 4)
        )
    for partitions, n_clients, standbys, uuids in points:
        times = time_point(partitions, n_clients, standbys, uuids, runs=3)
        ids = "UUID" if uuids else "int"
        print(
            f"P={partitions:>6} C={n_clients:>5} standbys={standbys} ids={ids:<4} "
            f"HA after a member left: {statistics.median(times):9.1f} ms "
            f"(min {min(times):.1f}, max {max(times):.1f})"
        )


if __name__ == "__main__":
    main()
