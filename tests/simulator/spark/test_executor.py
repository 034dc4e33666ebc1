"""The executor's side without Spark: a job becomes rows of the three tables; a job that raises
becomes a row with its error and replay command; every job is counted."""

from __future__ import annotations

import json

from simulator.spark import executor, mix
from simulator.spark.columns import REBALANCE_COLUMNS, SCENARIO_COLUMNS


class _Count:
    def __init__(self) -> None:
        self.value = 0

    def add(self, term: int) -> None:
        self.value += term


def _by_name(row: tuple[object, ...]) -> dict[str, object]:
    return dict(zip((c.name for c in SCENARIO_COLUMNS), row, strict=True))


def test_a_job_gives_its_scenario_row_and_rebalances() -> None:
    params = json.dumps({"processes": 2, "threads": 1, "partitions": 2, "standbys": 1})
    scenario, rebalances, _ = executor.run_job((3, "scale_out", params, 9, "high_availability"))
    row = _by_name(scenario)
    assert row["error"] is None
    assert (row["case_id"], row["family"], row["assignor"], row["seed"]) == (
        3, "scale_out", "high_availability", 9)
    assert row["rebalances"] == len([r for r in rebalances if r[6] == "stable"])
    assert str(row["replay"]).startswith("python -m simulator run --family scale_out --seed 9")
    assert all(len(r) == len(REBALANCE_COLUMNS) for r in rebalances)


def test_a_job_that_raises_is_a_row_with_the_error_and_the_replay_command() -> None:
    done, work = _Count(), _Count()
    jobs = [(0, "scale_in", json.dumps({"no_such_param": 1}), 4, "sticky"),
            (1, "scale_in", json.dumps({"processes": 2}), 4, "sticky")]
    bundles = list(executor.run_batch(done, work, jobs))
    assert done.value == 2 and len(bundles) == 2
    assert work.value == sum(mix.job_cost(job) for job in jobs) > 0
    failed = _by_name(bundles[0][0])
    assert "no_such_param" in str(failed["error"])
    assert failed["replay"] == ("python -m simulator run --family scale_in --seed 4 "
                                "--assignor sticky --param no_such_param=1")
    assert bundles[0][1] == [] and _by_name(bundles[1][0])["error"] is None


class _Seconds:
    def __init__(self) -> None:
        self.value = 0.0
        self.calls = 0

    def add(self, term: float) -> None:
        self.value += term
        self.calls += 1


def test_a_partition_of_batches_replays_every_job_in_order_and_adds_its_busy_and_cpu_time(
) -> None:
    done, work, busy, cpu = _Count(), _Count(), _Seconds(), _Seconds()
    first = [(0, "scale_in", json.dumps({"processes": 2}), 4, "sticky")]
    second = [(1, "scale_out", json.dumps({"processes": 1}), 5, "roundrobin"),
              (2, "scale_in", json.dumps({"processes": 3}), 6, "high_availability")]
    bundles = list(executor.run_batches(done, work, busy, [first, second], cpu=cpu))
    assert [_by_name(b[0])["case_id"] for b in bundles] == [0, 1, 2]
    assert done.value == 3 and work.value == sum(mix.job_cost(j) for j in first + second)
    assert busy.calls == 1 and busy.value > 0
    assert cpu.calls == 1 and cpu.value > 0
