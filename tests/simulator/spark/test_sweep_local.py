"""A small sweep on local Spark, checked as issue's proof asks: counts, our zero violations, the
Parquet's schema through pandas, the report's files, and the same rows from the same seed."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.simulator.spark.conftest import SMALL

pytestmark = pytest.mark.spark

PANDAS_KIND = {"long": "int64", "double": "float64", "string": "object", "boolean": "bool"}


def _run(spark: Any, out: Path, *, inline: bool = False) -> Any:
    from simulator.spark.sweep import SweepOptions, sweep

    options = SweepOptions(mix=str(SMALL["mix"]), scenarios=int(SMALL["scenarios"]),
                           seed=int(SMALL["seed"]), out=out, inline=inline)
    return sweep(options, spark)


@pytest.fixture(scope="module")
def first(small_sweep: Any) -> Any:
    return small_sweep


def _table(out: Path, name: str) -> Any:
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(out / name), format="parquet", partitioning="hive")
    return dataset.to_table().to_pandas()


def deterministic_rows(out: Path) -> list[dict[str, Any]]:
    """Scenario rows without machine-dependent columns, in a fixed order."""
    from simulator.spark.columns import SCENARIO_COLUMNS, is_machine_dependent

    frame = _table(out, "scenarios")
    names = [c.name for c in SCENARIO_COLUMNS if not is_machine_dependent(c.name)]
    frame = frame.astype({"family": str, "assignor": str})[names]
    frame = frame.sort_values(["case_id", "assignor"]).reset_index(drop=True)
    return json.loads(frame.to_json(orient="records"))


def test_rows_out_are_scenarios_times_assignors(first: Any) -> None:
    from simulator.spark.mix import default_assignors

    frame = _table(first.out, "scenarios")
    assert len(frame) == SMALL["scenarios"] * len(default_assignors())
    assert first.summary["totals"]["replays"] == len(frame)
    per_assignor = frame.groupby("assignor", observed=True)["case_id"].apply(
        lambda ids: tuple(sorted(ids)))
    assert len(set(per_assignor)) == 1, "every assignor meets exactly the same scenarios"
    assert set(frame["family"].astype(str)) == set(first.summary["families"])


def test_our_assignors_have_no_violations_and_no_errors(first: Any) -> None:
    from simulator.scenarios import OUR_ASSIGNORS

    scenarios = _table(first.out, "scenarios")
    ours = scenarios[scenarios["assignor"].astype(str).isin(OUR_ASSIGNORS)]
    assert ours["error"].isna().all(), ours[ours["error"].notna()][["error", "replay"]]
    assert (ours["violations"] == 0).all()
    violations = _table(first.out, "violations")
    assert not violations["assignor"].astype(str).isin(OUR_ASSIGNORS).any()


def test_parquet_reads_back_with_the_documented_schema(first: Any) -> None:
    from simulator.spark.columns import TABLES

    for name, columns in TABLES.items():
        frame = _table(first.out, name)
        assert sorted(frame.columns) == sorted(c.name for c in columns), name
        if frame.empty:
            continue
        for column in columns:
            if column.name in ("family", "assignor"):  # hive partition keys
                continue
            values = frame[column.name].dropna()
            if values.empty:
                continue
            expected = PANDAS_KIND[column.kind]
            if column.nullable and column.kind in ("long", "boolean") \
                    and frame[column.name].isna().any():
                expected = {"long": "float64", "boolean": "object"}[column.kind]
            assert str(frame[column.name].dtype) == expected, (name, column.name)
    files = list((first.out / "scenarios").glob("family=*/assignor=*/*.parquet"))
    assert files, "partitioned by family and assignor"


def _is_png(path: Path) -> bool:
    data = path.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        return False
    width, height = struct.unpack(">II", data[16:24])
    return width > 0 and height > 0 and data.rstrip(b"\x00").endswith(b"IEND\xaeB`\x82")


def test_every_file_the_report_references_exists(first: Any) -> None:
    from simulator.report import PLOTS

    index = first.report / "index.html"
    page = index.read_text(encoding="utf-8")
    images = re.findall(r'<img src="([^"]+)"', page)
    assert sorted(images) == sorted(PLOTS)
    for reference in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert "://" not in reference, "the page opens from disk, with nothing from a network"
        assert (index.parent / reference).is_file(), reference
    for image in images:
        assert _is_png(index.parent / image), image
    summary = json.loads((index.parent / "summary.json").read_text(encoding="utf-8"))
    assert summary["totals"]["replays"] == first.summary["totals"]["replays"]
    markdown = (index.parent / "summary.md").read_text(encoding="utf-8")
    assert "| high_availability (ours) |" in markdown
    header = (index.parent / "violations.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "assignor,family,seed,case_id,kind,generation,time_s,detail,replay"
    # what the run cost: the replays alone and how busy the cores were, from run.json
    run = json.loads((first.out / "run.json").read_text(encoding="utf-8"))
    assert run["replay_s"] > 0 and 0 < run["cores_busy_share"] <= 1.5 and run["replay_cpu_s"] > 0
    # replayed in forked children (one or more per Spark task), each one's peak RSS reported
    assert run["replay_children"] >= run["batches"] and run["replay_child_peak_rss_mb"] > 0
    assert re.search(r"of which replays [\d.,]+ s with the cores [\d.]+ busy", page)


def test_violations_carry_the_command_that_replays_them(first: Any) -> None:
    violations = _table(first.out, "violations")
    scenarios = _table(first.out, "scenarios")
    assert scenarios["replay"].str.startswith("python -m simulator run --family ").all()
    if not violations.empty:
        assert violations["replay"].str.startswith("python -m simulator run --family ").all()


def test_same_seed_gives_identical_scenario_rows_inline_and_report_rebuilds(
        first: Any, local_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    from simulator.spark.summary import summarize_and_render

    # the second run replays inline (sweep --inline), the first in forked children
    second = _run(local_spark, tmp_path_factory.mktemp("sweep-b"), inline=True)
    run = json.loads((second.out / "run.json").read_text(encoding="utf-8"))
    assert (run["replay_children"], run["replay_child_peak_rss_mb"]) == (0, 0)
    assert deterministic_rows(second.out) == deterministic_rows(first.out)
    # the report from the Parquet alone has the sweep's numbers
    csv = first.out / "report" / "violations.csv"
    written = csv.read_bytes()
    csv.unlink()
    rebuilt, index = summarize_and_render(local_spark, first.out)
    assert rebuilt["headline"] == first.summary["headline"]
    assert rebuilt["totals"] == first.summary["totals"]
    assert index.is_file()
    assert csv.read_bytes() == written  # written again, beside the aggregations
