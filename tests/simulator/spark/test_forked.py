"""Replays in a forked child per batch (``simulator.spark.forked``), without Spark: the same rows
as inline, counters kept in the parent, a fresh child past the memory bound, no row lost when a
child dies, and the inline fallback."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from simulator.families import FAMILIES
from simulator.spark import executor, forked, mix
from simulator.spark.columns import REBALANCE_COLUMNS, SCENARIO_COLUMNS, VIOLATION_COLUMNS
from simulator.spark.forked import ForkPolicy

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")


class _Sum:
    def __init__(self) -> None:
        self.value = 0

    def add(self, term: int) -> None:
        self.value += term


class _Largest(_Sum):
    def add(self, term: int) -> None:
        self.value = max(self.value, term)


def _without_wall(columns: Any, row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(value for column, value in zip(columns, row, strict=True)
                 if not column.name.endswith(("_wall_ms", "_wall_s")))


def _tables(bundles: list[Any]) -> list[Any]:
    return [(_without_wall(SCENARIO_COLUMNS, s), [_without_wall(REBALANCE_COLUMNS, r) for r in rs],
             [_without_wall(VIOLATION_COLUMNS, v) for v in vs]) for s, rs, vs in bundles]


def test_forked_replays_give_the_inline_rows_and_the_parent_counts_them() -> None:
    cases = mix.build_cases(mix.MIXES["smoke"], tuple(FAMILIES), len(FAMILIES), 3)
    jobs = mix.jobs(cases, mix.default_assignors())[::4]  # every assignor, several families
    assert {job[4] for job in jobs} == set(mix.default_assignors())
    inline_done, inline_work = _Sum(), _Sum()
    inline = list(executor.run_batch(inline_done, inline_work, jobs, ForkPolicy(inline=True)))
    done, work, children, peak = _Sum(), _Sum(), _Sum(), _Largest()
    policy = ForkPolicy(children=children, peak_rss_kb=peak)
    forked_rows = list(executor.run_batch(done, work, jobs, policy))
    assert _tables(forked_rows) == _tables(inline)
    assert all(bundle[0][SCENARIO_COLUMNS.index(_column("error"))] is None
               for bundle in forked_rows)
    assert (done.value, work.value) == (inline_done.value, inline_work.value) == (
        len(jobs), sum(mix.job_cost(job) for job in jobs))
    assert children.value == 1 and peak.value > 0


def _column(name: str) -> Any:
    return next(column for column in SCENARIO_COLUMNS if column.name == name)


def _job(index: int) -> mix.Job:
    return (index, "scale_in", json.dumps({"processes": 2}), 4, "sticky")


def _runner(parent: int, fate: Callable[[mix.Job], None]) -> forked.Runner:
    """Rows that say which process made them; ``fate`` runs first, in a child only."""

    def run(job: mix.Job) -> Any:
        if os.getpid() != parent:
            fate(job)
        return (job[0], os.getpid()), [], []

    return run


def _mourn(job: mix.Job, cause: str) -> Any:
    return (job[0], cause), [], []


def _kill_on(indices: set[int]) -> Callable[[mix.Job], None]:
    def fate(job: mix.Job) -> None:
        if job[0] in indices:
            os.kill(os.getpid(), signal.SIGKILL)

    return fate


def test_past_the_memory_bound_a_fresh_child_takes_the_rest() -> None:
    children = _Sum()
    run = _runner(os.getpid(), lambda job: None)
    rows = list(forked.replays([_job(i) for i in range(4)], run, _mourn,
                               ForkPolicy(max_rss_mb=0, children=children)))
    assert [row[0][0] for row in rows] == [0, 1, 2, 3]
    assert len({row[0][1] for row in rows} | {os.getpid()}) == 5  # one child per job
    assert children.value == 4


def test_a_killed_child_leaves_an_error_row_and_a_fresh_child_goes_on() -> None:
    children = _Sum()
    run = _runner(os.getpid(), _kill_on({1}))
    rows = list(forked.replays([_job(i) for i in range(4)], run, _mourn,
                               ForkPolicy(children=children)))
    assert [row[0][0] for row in rows] == [0, 1, 2, 3]
    assert "killed by SIGKILL" in rows[1][0][1]
    assert rows[0][0][1] != rows[2][0][1] == rows[3][0][1] != os.getpid()
    assert children.value == 2


def test_an_exception_outside_a_replay_is_a_death_with_its_exit_status() -> None:
    def fate(job: mix.Job) -> None:
        if job[0] == 2:
            raise SystemExit("not a replay's exception")

    rows = list(forked.replays([_job(i) for i in range(3)], _runner(os.getpid(), fate), _mourn,
                               ForkPolicy()))
    assert [row[0][0] for row in rows] == [0, 1, 2]
    assert "exited with status 1" in rows[2][0][1]


def test_children_dying_before_any_row_twice_in_a_row_send_the_rest_inline() -> None:
    children = _Sum()
    run = _runner(os.getpid(), _kill_on(set(range(5))))
    rows = list(forked.replays([_job(i) for i in range(5)], run, _mourn,
                               ForkPolicy(children=children)))
    assert [row[0][0] for row in rows] == [0, 1, 2, 3, 4]
    assert all("SIGKILL" in row[0][1] for row in rows[:2])
    assert [row[0][1] for row in rows[2:]] == [os.getpid()] * 3  # inline, in this process
    assert children.value == forked.DEATHS_BEFORE_INLINE


def test_the_sweeps_row_for_a_job_whose_child_died_has_the_replay_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    parent = os.getpid()
    real = executor.run_job

    def run_job(job: mix.Job) -> Any:
        if os.getpid() != parent and job[0] == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(job)

    monkeypatch.setattr(executor, "run_job", run_job)
    done = _Sum()
    jobs = [_job(0), _job(1)]
    bundles = list(executor.run_batch(done, None, jobs, ForkPolicy()))
    lost = dict(zip((c.name for c in SCENARIO_COLUMNS), bundles[0][0], strict=True))
    assert str(lost["error"]).startswith("ChildDied:") and "SIGKILL" in str(lost["error"])
    assert lost["replay"] == executor.command_for("scale_in", {"processes": 2}, 4, "sticky")
    assert bundles[1][0][SCENARIO_COLUMNS.index(_column("error"))] is None
    assert done.value == 2


def test_a_consumer_that_leaves_early_ends_the_child() -> None:
    def fate(job: mix.Job) -> None:
        if job[0] == 1:
            time.sleep(60)

    replays = forked.replays([_job(0), _job(1)], _runner(os.getpid(), fate), _mourn,
                             ForkPolicy())
    child = next(replays)[0][1]
    replays.close()  # what Spark does to a cancelled task's iterator
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(child, 0)


def test_the_inline_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    assert forked.forking(ForkPolicy())
    assert not forked.forking(ForkPolicy(inline=True))
    monkeypatch.setenv(forked.INLINE_ENV, "1")
    assert not forked.forking(ForkPolicy())
    monkeypatch.delenv(forked.INLINE_ENV)
    monkeypatch.delattr(os, "fork")
    assert not forked.forking(ForkPolicy())
    children, done = _Sum(), _Sum()
    bundles = list(executor.run_batch(done, None, [_job(0)], ForkPolicy(children=children)))
    assert len(bundles) == done.value == 1 and children.value == 0
