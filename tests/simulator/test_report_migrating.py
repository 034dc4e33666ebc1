"""The report's run table counts, among the runs that did not converge, the high-availability
migrations the bound cut short (their note says KIP-441 movements were pending every round)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from simulator.metrics import RebalanceRow
from simulator.report.render import run_table
from simulator.spark.summary import MIGRATING
from simulator.summary import migration_cause


def _summary(not_converged: int, migrating: int | None) -> dict[str, Any]:
    totals: dict[str, Any] = {"scenarios": 2, "replays": 4, "errors": 0, "violations": 0,
                              "not_converged": not_converged, "min_processes": 1,
                              "max_processes": 3, "max_members": 6, "max_tasks": 8}
    if migrating is not None:
        totals["not_converged_migrating"] = migrating
    return {"run": {}, "totals": totals, "assignors": ["high_availability"],
            "ours": ["high_availability"], "families": ["scale_out"], "rebalance_rows": 9}


def _cell(summary: dict[str, Any]) -> str:
    _, rows = run_table(summary)
    return next(value for key, value in rows if key == "errors / violations / not converged")


def test_the_not_converged_cell_names_the_migrations_cut_short() -> None:
    assert _cell(_summary(3, 2)) == (
        "0 / 0 / 3 (2 of them high-availability migrations still under way at the bound: "
        "KIP-441 movements pending every round, see their note)")


def test_without_such_runs_or_from_an_older_summary_the_cell_is_the_count() -> None:
    assert _cell(_summary(3, 0)) == "0 / 0 / 3"
    assert _cell(_summary(3, None)) == "0 / 0 / 3"


def test_the_summary_counts_the_phrase_the_note_writes() -> None:
    # the Spark summary matches notes by this phrase: the note must carry it
    row = RebalanceRow(scenario="s", generation=2, outcome="stable", started_s=60.0,
                       ended_s=63.0, members=2, processes=2, leader="a/0",
                       assignor="high_availability", protocol_version=4, join_bytes=1,
                       sync_bytes=1, active_moved=1, standby_moved=0, warmups=1,
                       followup="probing rebalance in 60000 ms", restore_records=0,
                       reasons="", assign_wall_ms=0.0)
    assert MIGRATING in migration_cause([row], 1)
    assert migration_cause([replace(row, followup="")], 1) == ""
