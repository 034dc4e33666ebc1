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
