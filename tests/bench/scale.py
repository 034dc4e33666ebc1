"""Our side of Kafka's ``StreamsAssignmentScaleTest`` grid, as worker ops.

Two figures per point and round, both against Kafka's ``HighAvailabilityTaskAssignor.assign`` +
``assignTasksToThreads`` timed in the harness JVM:

- like for like (the figures ``bench_assignor_scale`` has always printed): our
  ``HighAvailabilityTaskAssignor.assign`` on pre-built client states, then
  ``distribute_client_tasks`` for every client;
- the full leader path: our ``assign()`` through aiokafka's interface (decode every
  subscription, the pipeline, encode every answer), C processes of T consumers each, the second
  rebalance with the same members reporting what the first decided (actives -2, standbys 0
  against changelog end offsets of 100,000, as in Kafka's test).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from assignor.config import AssignorConfig
from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.task_assignor import TaskAssignment
from assignor.placement.threads import distribute_client_tasks
from protocol.ids import TaskId
from tests.bench import drivers
from tests.bench.bench_assignor_scale import GRID, _clients, _java_request

POINTS = {name: (partitions, clients, threads, standbys)
          for name, partitions, clients, threads, standbys in GRID}

_prepared: dict[str, Any] = {}


def _prepare(name: str) -> dict[str, Any]:
    """Client states of both rounds (round 2 from what round 1 decided), built once."""
    if name not in _prepared:
        partitions, n_clients, threads, standbys = POINTS[name]
        tasks = [TaskId(0, p) for p in range(partitions)]
        config = AssignorConfig.model_validate({"num.standby.replicas": standbys})
        first = _clients(n_clients, threads, tasks, None)
        result = HighAvailabilityTaskAssignor().place_tasks(first, tasks, tasks, config)
        second = _clients(n_clients, threads, tasks, result)
        _prepared[name] = {"tasks": tasks, "config": config, "clients": {1: first, 2: second}}
    prepared: dict[str, Any] = _prepared[name]
    return prepared


OPS: dict[str, Callable[..., Any]] = {}


def op(fn: Callable[..., Any]) -> Callable[..., Any]:
    OPS[fn.__name__] = fn
    return fn


@op
def scale_java_request(name: str, round_no: int) -> dict[str, Any]:
    prepared = _prepare(name)
    request: dict[str, Any] = _java_request(
        prepared["clients"][round_no], prepared["tasks"], prepared["config"]
    )
    return request


@op
def scale_like_for_like(name: str, round_no: int) -> dict[str, float]:
    """One run of our HA assignment + tasks to threads on the prepared client states."""
    prepared = _prepare(name)
    clients = prepared["clients"][round_no]
    gc.collect()  # a long-lived worker's earlier garbage is not this run's cost
    started = time.perf_counter()
    result: TaskAssignment = HighAvailabilityTaskAssignor().place_tasks(
        clients, prepared["tasks"], prepared["tasks"], prepared["config"]
    )
    ha = time.perf_counter()
    for state in result.clients.values():
        distribute_client_tasks(state)
    done = time.perf_counter()
    return {"ha_ms": (ha - started) * 1000, "threads_ms": (done - ha) * 1000}


@op
def scale_leader(name: str, trace: bool = False) -> dict[str, Any]:
    """One run of the full leader path: a fresh group's first rebalance, then the second with
    the same members (nothing leaves, as in Kafka's test)."""
    partitions, n_clients, threads, standbys = POINTS[name]
    shape = drivers.Shape(partitions, n_clients, threads, standbys)
    cluster = drivers.cluster_for(shape)
    instances = drivers.ours(shape, drivers.topology_for(shape), standby_offset=0)
    everyone = [m for group in instances for m in group]
    first = drivers.rebalance(everyone, cluster, trace=trace)
    second = drivers.rebalance(everyone, cluster, trace=trace)
    return {"first": first.summary(), "second": second.summary()}


def median(values: list[float]) -> float:
    return statistics.median(values)
