"""The sweep's numbers, computed by Spark from the Parquet tables alone.

Everything the report shows is an aggregation here (group-bys, ``rollup``, ``percentile_approx``,
a window for membership changes); the driver only collects the few hundred result rows and turns
them into plain data (:func:`summarize`), which :mod:`simulator.report` renders without Spark.
The same function serves the sweep and ``report DIR``, so a report rebuilt from a folder is the
report the sweep printed.

Percentiles are Spark's ``percentile_approx`` with accuracy 10,000: exact for the sweep sizes here
(fewer values per group than the accuracy), approximate (relative error 1/10,000 of the rank) on
bigger ones.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from simulator.report import render
from simulator.scenarios import OUR_ASSIGNORS
from simulator.spark.mix import all_assignors
from simulator.spark.schema import SCHEMAS
from simulator.spark.together import together

RUN_FILE = "run.json"
ACCURACY = 10_000
#: Quantiles kept per group: box plots use all, the headline p50 / p95.
QUANTILES = (0.25, 0.5, 0.75, 0.95)
#: Headline metrics: scenario-table column, label, unit.
METRICS: tuple[tuple[str, str, str], ...] = (
    ("unavailable_task_s", "task unavailability", "task-seconds"),
    ("restored_records", "records restored", "records"),
    ("rebalances", "rebalances until stable", "generations"),
    ("active_moves", "active task movements", "tasks"),
    ("balance_thread", "final balance (max - min active tasks per thread)", "tasks"),
)
VIOLATION_CSV_COLUMNS = ("assignor", "family", "seed", "case_id", "kind", "generation", "time_s",
                         "detail", "replay")
EXAMPLES = 60


def read_table(spark: SparkSession, out: Path, table: str) -> DataFrame:
    """A table of a sweep folder, read with its explicit schema."""
    return spark.read.schema(SCHEMAS[table]).parquet(str(out / table))


def _stats(column: str) -> list[Column]:
    return [
        F.percentile_approx(column, list(QUANTILES), ACCURACY).alias(f"{column}__q"),
        F.min(column).alias(f"{column}__min"),
        F.max(column).alias(f"{column}__max"),
    ]


def _unpack(row: dict[str, Any], column: str) -> dict[str, float | None]:
    quantiles = row.get(f"{column}__q") or [None] * len(QUANTILES)
    q1, p50, q3, p95 = (None if v is None else float(v) for v in quantiles)
    low, high = row.get(f"{column}__min"), row.get(f"{column}__max")
    return {"min": None if low is None else float(low), "q1": q1, "p50": p50, "q3": q3,
            "p95": p95, "max": None if high is None else float(high)}


def _assignor_order(present: set[str]) -> list[str]:
    known = [a for a in all_assignors() if a in present]
    return known + sorted(present - set(known))


def _headline(scenarios: DataFrame) -> list[dict[str, Any]]:
    """Per (assignor, family) and per assignor over all families (``family == 'all'``)."""
    aggregates = [
        F.count(F.lit(1)).alias("replays"),
        F.sum(F.col("error").isNotNull().cast("long")).alias("errors"),
        F.sum(F.coalesce(F.col("violations"), F.lit(0))).alias("violations"),
        F.sum(F.col("converged").cast("long")).alias("converged"),
        F.sum(F.col("within_kafka_bound").cast("long")).alias("within_kafka_bound"),
    ]
    for column, _, _ in METRICS:
        aggregates += _stats(column)
    rows = (scenarios.rollup("assignor", "family").agg(*aggregates)
            .where(F.col("assignor").isNotNull()).collect())
    out = []
    for row in rows:
        data = row.asDict()
        entry: dict[str, Any] = {
            "assignor": data["assignor"], "family": data["family"] or "all",
            "replays": int(data["replays"]), "errors": int(data["errors"] or 0),
            "violations": int(data["violations"] or 0), "converged": int(data["converged"] or 0),
            "within_kafka_bound": None if data["within_kafka_bound"] is None
            else int(data["within_kafka_bound"]),
        }
        for column, _, _ in METRICS:
            entry[column] = _unpack(data, column)
        out.append(entry)
    return out


def _moves_per_change(rebalances: DataFrame) -> list[dict[str, Any]]:
    """Task movements (active + standby) of each stable rebalance whose member count changed."""
    order = Window.partitionBy("case_id", "assignor").orderBy("generation")
    stable = rebalances.where(F.col("outcome") == "stable")
    changes = (stable.withColumn("previous", F.lag("members").over(order))
               .where(F.col("previous").isNotNull() & (F.col("members") != F.col("previous")))
               .withColumn("moves", F.col("active_moved") + F.col("standby_moved")))
    rows = (changes.rollup("assignor", "family")
            .agg(F.count(F.lit(1)).alias("changes"), *_stats("moves"))
            .where(F.col("assignor").isNotNull()).collect())
    return [{"assignor": r["assignor"], "family": r["family"] or "all",
             "changes": int(r["changes"]), "moves": _unpack(r.asDict(), "moves")} for r in rows]


def _assign_wall(rebalances: DataFrame) -> list[dict[str, Any]]:
    """Median and p95 ``assign()`` wall time per assignor and group size (powers of two)."""
    sized = (rebalances.where(F.col("assign_wall_ms").isNotNull() & (F.col("members") > 0))
             .withColumn("size", F.pow(F.lit(2.0), F.floor(F.log2(F.col("members"))))
                         .cast("long")))
    rows = (sized.groupBy("assignor", "size")
            .agg(F.count(F.lit(1)).alias("n"),
                 F.percentile_approx("assign_wall_ms", [0.5, 0.95], ACCURACY).alias("q"))
            .orderBy("assignor", "size").collect())
    return [{"assignor": r["assignor"], "members": int(r["size"]), "n": int(r["n"]),
             "p50_ms": float(r["q"][0]), "p95_ms": float(r["q"][1])} for r in rows]


def _ours_first() -> Column:
    return F.when(F.col("assignor").isin(*OUR_ASSIGNORS), 0).otherwise(1)


def _violations(violations: DataFrame) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Counts per (assignor, family, kind), and the first example of each."""
    counts = [r.asDict() for r in violations.groupBy("assignor", "family", "kind").count()
              .orderBy(_ours_first(), "assignor", "family", "kind").collect()]
    first = Window.partitionBy("assignor", "family", "kind").orderBy("case_id", "generation",
                                                                    "detail")
    examples = (violations.withColumn("n", F.row_number().over(first)).where(F.col("n") == 1)
                .orderBy(_ours_first(), "assignor", "family", "kind").limit(EXAMPLES)
                .select("assignor", "family", "seed", "kind", "generation", "detail", "replay"))
    return counts, [r.asDict() for r in examples.collect()]


def _errors(scenarios: DataFrame) -> list[dict[str, Any]]:
    failed = (scenarios.where(F.col("error").isNotNull())
              .orderBy(_ours_first(), "assignor", "family", "case_id").limit(EXAMPLES)
              .select("assignor", "family", "seed", "error", "replay"))
    return [r.asDict() for r in failed.collect()]


#: what a scenario row's ``note`` says when KIP-441 movements were still pending at the bound
MIGRATING = "KIP-441 movements pending"


def report_folder(out: Path) -> Path:
    """Where the report of the sweep folder ``out`` goes (made if missing)."""
    report = out / "report"
    report.mkdir(parents=True, exist_ok=True)
    return report


def summarize(spark: SparkSession, out: Path, *,
              violations_csv: Path | None = None) -> dict[str, Any]:
    """Every number of the report, from the Parquet under ``out`` (and ``run.json`` if there).

    With ``violations_csv``, that file is written (:func:`write_violations_csv`) beside the
    aggregations, submitted with them: the CSV is mostly the driver's Python reading rows while
    the aggregations are mostly the JVM's, so together they took 2.4-2.9 s where one after the
    other took 2.9-3.8 s (the default mix's folder, 45,782 violations, four rounds alternated in
    one warm session; the same bytes either way).
    """
    scenarios = read_table(spark, out, "scenarios").cache()
    rebalances = read_table(spark, out, "rebalances")
    violations = read_table(spark, out, "violations")
    totals_query = scenarios.agg(
        F.countDistinct("case_id").alias("scenarios"),
        F.count(F.lit(1)).alias("replays"),
        F.sum(F.col("error").isNotNull().cast("long")).alias("errors"),
        F.sum(F.coalesce(F.col("violations"), F.lit(0))).alias("violations"),
        F.sum((~F.coalesce(F.col("converged"), F.lit(False))).cast("long")).alias("not_converged"),
        # of those, high-availability migrations the bound cut short (``summary.migration_cause``)
        F.sum(F.coalesce(F.col("note").contains(MIGRATING), F.lit(False)).cast("long"))
        .alias("not_converged_migrating"),
        F.min("processes").alias("min_processes"), F.max("processes").alias("max_processes"),
        F.max("members").alias("max_members"), F.max("tasks").alias("max_tasks"),
    )
    # independent aggregations, each a small Spark job: submitted together
    # (:mod:`simulator.spark.together`), the same numbers as one after the other; the CSV, the
    # one long job of driver Python, first, in this thread, rather than queued behind four
    # aggregations (2.5-3.1 s against 2.8-4.0, four rounds alternated, the default mix's folder)
    csv = [] if violations_csv is None else [
        lambda: write_violations_csv(spark, out, violations_csv)]
    done = together(
        *csv,
        totals_query.first,
        lambda: _violations(violations),
        lambda: _headline(scenarios),
        rebalances.count,
        lambda: _errors(scenarios),
        lambda: _assign_wall(rebalances),
        lambda: _moves_per_change(rebalances),
    )
    totals, (counts, examples), headline, rebalance_rows, errors, assign_wall, moves = \
        done[len(csv):]
    assert totals is not None  # an aggregation without grouping always has one row
    run_path = out / RUN_FILE
    run = json.loads(run_path.read_text(encoding="utf-8")) if run_path.exists() else {}
    result: dict[str, Any] = {
        "run": run,
        "totals": {k: (0 if v is None else int(v)) for k, v in totals.asDict().items()},
        "rebalance_rows": rebalance_rows,
        "assignors": _assignor_order({h["assignor"] for h in headline}),
        "ours": [a for a in OUR_ASSIGNORS],
        "families": sorted({h["family"] for h in headline} - {"all"}),
        "metrics": [{"name": n, "label": label, "unit": unit} for n, label, unit in METRICS],
        "headline": sorted(headline, key=lambda h: (h["family"], h["assignor"])),
        "violation_counts": counts,
        "violation_examples": examples,
        "errors": errors,
        "assign_wall": assign_wall,
        "moves_per_change": moves,
    }
    scenarios.unpersist()
    return result


def write_violations_csv(spark: SparkSession, out: Path, target: Path) -> int:
    """Every violation and every replay error (kind ``error``), ours first; rows written."""
    violations = read_table(spark, out, "violations").select(*VIOLATION_CSV_COLUMNS)
    errors = (read_table(spark, out, "scenarios").where(F.col("error").isNotNull())
              .select("assignor", "family", "seed", "case_id", F.lit("error").alias("kind"),
                      F.lit(None).cast("long").alias("generation"),
                      F.lit(None).cast("double").alias("time_s"),
                      F.col("error").alias("detail"), "replay"))
    rows = (violations.unionByName(errors)
            .orderBy(_ours_first(), "assignor", "family", "case_id", "generation", "kind",
                     "detail"))
    written = 0
    with target.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(VIOLATION_CSV_COLUMNS)
        for row in rows.toLocalIterator():
            writer.writerow(["" if v is None else v for v in row])
            written += 1
    return written


def render_report(out: Path, result: dict[str, Any]) -> Path:
    """The report under :func:`report_folder` from ``result`` alone (its ``index.html``);
    ``violations.csv`` is :func:`summarize`'s, when asked for. (Run beside the plots, the CSV
    job saved nothing measurable: both are mostly the driver's Python, one interpreter lock.)"""
    return render(result, report_folder(out))


def summarize_and_render(spark: SparkSession, out: Path) -> tuple[dict[str, Any], Path]:
    """``python -m simulator report DIR``: the numbers with ``violations.csv``, then the
    report; the summary and the report's ``index.html``."""
    result = summarize(spark, out, violations_csv=report_folder(out) / "violations.csv")
    return result, render_report(out, result)


__all__ = ["METRICS", "read_table", "render_report", "report_folder", "summarize",
           "summarize_and_render", "write_violations_csv"]
