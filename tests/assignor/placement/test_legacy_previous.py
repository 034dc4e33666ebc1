"""Legacy sticky's previous-assignment maps: their orders equal Kafka's HashMaps, replayed.

``_Run._map_previous`` computes each order from the keys' hashes in one sort (or a replay when
a bucket could grow a tree); here every insertion is replayed into the emulated table, as the
step once did, and both must iterate alike, with colliding process ids that force tree bins.
"""

from __future__ import annotations

import random

import pytest

from assignor._java.hash_codes import process_id_hash, task_id_hash
from assignor._java.hash_table import JavaHashSet, buckets_stay_small, copy_capacity
from assignor.placement.client_state import ClientState
from assignor.placement.legacy_sticky import _Run
from protocol.ids import ProcessId, TaskId

_TASKS = [TaskId(s, p) for s in range(3) for p in range(40)]


def _pid(rng: random.Random, colliding: bool) -> ProcessId:
    if colliding:  # hash codes that are multiples of 1,024: one bucket up to that table length
        return ProcessId.from_halves(0, 1_024 * rng.randrange(1, 64))  # (below 2^16: unspread)
    return ProcessId.from_halves(rng.getrandbits(63), rng.getrandbits(63))


def _clients(rng: random.Random) -> dict[ProcessId, ClientState]:
    colliding = rng.random() < 0.5
    pool = _TASKS[: rng.choice((2, 6, 20, len(_TASKS)))]  # a small pool: many owners per task
    clients = {}
    for _ in range(rng.randint(1, 80)):
        pid = _pid(rng, colliding)
        held = rng.sample(pool, rng.randint(0, len(pool)))
        cut = rng.randint(0, len(held)) if rng.random() < 0.5 else 0  # (standbys only)
        clients[pid] = ClientState(
            pid,
            rng.randint(1, 3),
            previous_active=frozenset(held[:cut]),
            previous_standby=frozenset(held[cut:]),
        )
    return clients


@pytest.mark.parametrize("seed", range(40))
def test_previous_maps_iterate_as_kafkas(seed: int) -> None:
    rng = random.Random(seed)
    clients = _clients(rng)
    run = _Run(clients, _TASKS, _TASKS, must_preserve_active=False)

    active_keys: JavaHashSet[TaskId] = JavaHashSet(task_id_hash)
    owner: dict[TaskId, int] = {}
    standby: dict[TaskId, JavaHashSet[ProcessId]] = {}
    for i, pid in enumerate(run.pids):
        for task in sorted(clients[pid].previous_active):
            active_keys.add(task)
            owner[task] = i
        for task in sorted(clients[pid].previous_standby):
            standby.setdefault(task, JavaHashSet(process_id_hash)).add(pid)

    assert run.prev_active_keys == list(active_keys)
    assert run.prev_active == owner
    assert run.prev_standby == {
        task: [run.index[pid] for pid in owners] for task, owners in standby.items()
    }
    # and the copy Kafka makes of each (``new HashSet<>(owners)``), by the task's rank
    assert run.prev_standby_copy == {
        run.rank[task]: [
            run.index[pid] for pid in JavaHashSet.copy_of(process_id_hash, list(owners))
        ]
        for task, owners in standby.items()
    }


@pytest.mark.parametrize("seed", range(40))
def test_the_quick_bucket_check_answers_as_the_full_one(seed: int) -> None:
    # ``_stays_small`` answers from all clients' buckets when it can: never otherwise than
    # ``buckets_stay_small`` on the members themselves, with colliding ids making both answers
    rng = random.Random(2_000 + seed)
    clients = _clients(rng)
    run = _Run(clients, _TASKS, _TASKS, must_preserve_active=False)
    count = len(run.pids)
    for _ in range(20):
        members = rng.sample(range(count), rng.randint(0, count))
        if rng.random() < 0.5:
            members.sort()  # in the client map's order, as the standby step passes them
        capacity = rng.choice((None, copy_capacity(len(members)), 16, 64))
        expected = buckets_stay_small([run.spread[i] for i in members], capacity)
        assert run._stays_small(members, capacity) == expected
