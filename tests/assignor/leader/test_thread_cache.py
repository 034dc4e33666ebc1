"""The leader's kept tasks-to-threads splits: every answer equals a fresh split."""

from __future__ import annotations

import random

import pytest

from assignor.leader.thread_cache import ThreadCache
from assignor.placement.client_state import ClientState
from assignor.placement.lags import TaskLags
from assignor.placement.threads import distribute_client_tasks
from protocol.ids import ProcessId, TaskId
from protocol.messages import LATEST_OFFSET

_TASKS = [TaskId(s, p) for s in range(2) for p in range(8)]
_STATEFUL = frozenset(_TASKS[:12])
_END = dict.fromkeys(_STATEFUL, 100)


def _client(rng: random.Random, pid: ProcessId, threads: int) -> ClientState:
    """A client of ``threads`` consumers with a drawn assignment, reports and lags."""
    consumers = tuple(f"{pid}-{i}" for i in range(threads))
    mine = rng.sample(_TASKS, rng.randint(0, 8))
    cut = rng.randint(0, len(mine))
    reported = {c: frozenset(rng.sample(sorted(_STATEFUL), rng.randint(0, 3))) for c in consumers}
    sums = {t: rng.choice((LATEST_OFFSET, 0, 40, 99)) for ts in reported.values() for t in ts}
    return ClientState(
        pid,
        threads,
        consumers=consumers,
        task_lags=TaskLags(sums, _END),
        previous_tasks_by_consumer=reported,
        active=frozenset(mine[:cut]),
        standby=frozenset(t for t in mine[cut:] if t in _STATEFUL),
    )


def _changed(rng: random.Random, client: ClientState) -> ClientState:
    """The same client with one input changed (or none: a probing round where nothing moved)."""
    change = rng.choice(("none", "none", "assignment", "lags", "reports"))
    if change == "assignment":
        return _client(rng, client.process_id, client.capacity)
    if change == "lags":
        assert isinstance(client.task_lags, TaskLags)
        sums = {t: rng.choice((LATEST_OFFSET, 0, 40, 99)) for t in client.task_lags.offset_sums}
        return ClientState(
            client.process_id, client.capacity, consumers=client.consumers,
            task_lags=TaskLags(sums, _END),
            previous_tasks_by_consumer=client.previous_tasks_by_consumer,
            active=client.active, standby=client.standby,
        )
    if change == "reports":
        fresh = _client(rng, client.process_id, client.capacity)
        return ClientState(
            client.process_id, client.capacity, consumers=client.consumers,
            task_lags=fresh.task_lags,
            previous_tasks_by_consumer=fresh.previous_tasks_by_consumer,
            active=client.active, standby=client.standby,
        )
    # equal inputs in new objects, as the next rebalance decodes them
    return ClientState(
        client.process_id, client.capacity, consumers=tuple(client.consumers),
        task_lags=client.task_lags,
        previous_tasks_by_consumer=dict(client.previous_tasks_by_consumer),
        active=frozenset(client.active), standby=frozenset(client.standby),
    )


@pytest.mark.parametrize("seed", range(30))
def test_every_round_answers_a_fresh_split(seed: int) -> None:
    rng = random.Random(seed)
    cache = ThreadCache()
    clients = {
        ProcessId.for_int(i): _client(rng, ProcessId.for_int(i), rng.randint(1, 4))
        for i in range(1, rng.randint(2, 6))
    }
    for _ in range(12):
        got = cache.split(clients, _STATEFUL)
        assert got == {p: distribute_client_tasks(c, _STATEFUL) for p, c in clients.items()}
        # an answer is the caller's: changing it leaves the kept split alone
        for split in got.values():
            split.active.clear()  # type: ignore[attr-defined]
        clients = {p: _changed(rng, c) for p, c in clients.items()}
        if rng.random() < 0.2:  # a client leaves or joins
            clients.pop(next(iter(clients)))
            new = ProcessId.for_int(rng.randint(100, 200))
            clients[new] = _client(rng, new, rng.randint(1, 4))


def test_a_new_plan_drops_the_kept_splits() -> None:
    # tasks equal by value but of another plan: the answer must hold the new plan's objects
    rng = random.Random(5)
    pid = ProcessId.for_int(1)
    client = _client(rng, pid, 3)
    cache = ThreadCache()
    first = cache.split({pid: client}, _STATEFUL)[pid]
    copies = {t: TaskId(t.subtopology, t.partition) for t in _TASKS}
    again = ClientState(
        pid, 3, consumers=client.consumers, task_lags=client.task_lags,
        previous_tasks_by_consumer=client.previous_tasks_by_consumer,
        active=frozenset(copies[t] for t in client.active),
        standby=frozenset(copies[t] for t in client.standby),
    )
    second = cache.split({pid: again}, frozenset(copies[t] for t in _STATEFUL))[pid]
    assert second == first
    held = {id(t) for tasks in second.active.values() for t in tasks}
    assert held <= {id(copies[t]) for t in _TASKS}
    assert not held & {id(t) for t in _TASKS}
