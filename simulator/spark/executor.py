"""What an executor does with its batch of jobs: replay each, return rows of the three tables.

This runs inside Spark's Python workers (``mapPartitions``), but imports no pyspark: a job is a
plain tuple, the answer plain tuples in the column order of :mod:`simulator.spark.columns`, so
the function is tested without a JVM and cloudpickle ships it by reference (the project's code
travels to the executors as a zip, :mod:`simulator.spark.session`).

A replay that raises (our bug or a peer's) becomes a scenario row with ``error`` and the command
that replays it, and the batch goes on: rows out = jobs in, always.

By default the batch replays in a child forked from the warm worker, which the OS frees whole
(:mod:`simulator.spark.forked`: the counters stay here, a child that dies leaves an error row
for the job it was on, a memory bound per child); ``sweep --inline``,
``SIMULATOR_INLINE_REPLAYS=1`` or a platform without ``os.fork`` replay in the worker itself.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any, Protocol

from simulator.metrics import RebalanceRow, ScenarioRow, Violation
from simulator.spark import forked
from simulator.spark.columns import (
    REBALANCE_COLUMNS,
    SCENARIO_COLUMNS,
    VIOLATION_COLUMNS,
    row_values,
    to_tuple,
)
from simulator.spark.forked import ForkPolicy
from simulator.spark.mix import Job, job_cost

#: Longest error text kept in a row (a traceback is in the replay, not the table).
MAX_ERROR_CHARS = 2_000

#: One job's answer: (scenario row, rebalance rows, violation rows), as column-ordered tuples.
Bundle = tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]]]


class Counter(Protocol):
    """What the driver hands in to count finished jobs (a Spark accumulator)."""

    def add(self, term: int) -> None: ...


class Seconds(Protocol):
    """What the driver hands in to add up busy seconds (a Spark accumulator of floats)."""

    def add(self, term: float) -> None: ...


def command_for(family: str, params: dict[str, Any], seed: int, assignor: str) -> str:
    """The replay command of a case that could not even be generated (same form as the
    engine's ``replay_command``)."""
    extra = "".join(f" --param {k}={v}" for k, v in sorted(params.items()))
    return f"python -m simulator run --family {family} --seed {seed} --assignor {assignor}{extra}"


def _keys(job: Job) -> dict[str, Any]:
    case_id, family, params_json, seed, assignor = job
    return {"case_id": case_id, "family": family, "assignor": assignor, "seed": seed,
            "params": params_json}


def _failed(values: dict[str, Any], error: str, command: str) -> Bundle:
    values["error"] = error[:MAX_ERROR_CHARS]
    values["replay"] = command
    return to_tuple(SCENARIO_COLUMNS, values), [], []


def lost_job(job: Job, cause: str) -> Bundle:
    """The row of a job whose forked child died while replaying it: its error and replay
    command, as for a replay that raises."""
    _, family, params_json, seed, assignor = job
    return _failed(_keys(job), cause, command_for(family, json.loads(params_json), seed, assignor))


def run_job(job: Job) -> Bundle:
    """Generate the job's scenario, replay it and lay the results out as table rows."""
    # imported here: the engine's replay pulls in aiokafka, which the driver never needs
    from simulator.engine import replay, replay_command
    from simulator.families import generate

    _, family, params_json, seed, assignor = job
    params = json.loads(params_json)
    keys = _keys(job)
    command = command_for(family, params, seed, assignor)
    values: dict[str, Any] = dict(keys)
    try:
        scenario = generate(family, {**params, "assignor": assignor}, seed)
        values["processes"] = len(scenario.processes)
        values["members"] = sum(p.threads for p in scenario.processes)
        command = replay_command(scenario)
        result = replay(scenario, command=command)
    except Exception as exc:  # a scenario that raises is a finding, not the end of the sweep
        return _failed(values, f"{type(exc).__name__}: {exc}", command)
    values.update({k: v for k, v in row_values(result.summary, ScenarioRow).items()
                   if k not in keys})
    values["replay"] = command
    rebalances = [to_tuple(REBALANCE_COLUMNS, {**row_values(r, RebalanceRow), **keys})
                  for r in result.rebalances]
    violations = [to_tuple(VIOLATION_COLUMNS, {**row_values(v, Violation), **keys})
                  for v in result.violations]
    return to_tuple(SCENARIO_COLUMNS, values), rebalances, violations


def run_batch(done: Counter | None, work: Counter | None, jobs: Iterable[Job],
              policy: ForkPolicy | None = None) -> Iterator[Bundle]:
    """``mapPartitions`` body: every job of the partition, in order, counted here as its rows
    arrive (``done`` +1, ``work`` + its :func:`~simulator.spark.mix.job_cost`), replayed in a
    forked child unless ``policy`` (default: :class:`~simulator.spark.forked.ForkPolicy`()) or
    the platform says inline.

    The assignors log a warning per standby they cannot place; thousands of them from every
    worker would bury the progress bar, and the same facts are in the rows (standby coverage),
    so warnings are off in this worker process.
    """
    logging.disable(logging.WARNING)
    policy = policy if policy is not None else ForkPolicy()
    listed = list(jobs)
    source: Iterable[Bundle] = map(run_job, listed)
    if forked.forking(policy):
        forked.prepare(listed)
        source = forked.replays(listed, run_job, lost_job, policy)
    for job, bundle in zip(listed, source, strict=True):  # a row short or over raises
        if done is not None:
            done.add(1)
        if work is not None:
            work.add(job_cost(job))
        yield bundle


def _cpu_s() -> float:
    """CPU seconds of this process and of the children it has waited for (forked replays)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def run_batches(done: Counter | None, work: Counter | None, busy: Seconds | None,
                batches: Iterable[list[Job]], *, policy: ForkPolicy | None = None,
                cpu: Seconds | None = None) -> Iterator[Bundle]:
    """``mapPartitions`` body when each partition holds whole batches (lists of jobs) rather
    than jobs: the driver parallelizes the batches one per partition, so no shuffle is needed
    to put each batch in its own task (:func:`run_batch` on their jobs, in order).

    ``busy`` gets the seconds from the task's first job to its last row handed on: summed over
    tasks and divided by the replay phase's wall time x the cluster's cores, it is the share of
    the time the cores spent replaying (the rest: Spark between tasks, a core with no task left
    at the end). ``cpu`` gets the CPU seconds the task's worker and its replay children spent
    over the same span: on a shared machine the wall clock counts other jobs' time too."""
    began, began_cpu = time.perf_counter(), _cpu_s()
    yield from run_batch(done, work, chain.from_iterable(batches), policy)
    if busy is not None:
        busy.add(time.perf_counter() - began)
    if cpu is not None:
        cpu.add(_cpu_s() - began_cpu)


__all__ = ["MAX_ERROR_CHARS", "Bundle", "Counter", "Seconds", "command_for", "lost_job",
           "run_batch", "run_batches", "run_job"]
