"""The sweep: a mix's jobs as rows -> replays in executors -> three Parquet tables -> report.

Flow (one Spark job does the replays; everything after reads what it wrote):

1. the driver draws the mix's cases (:mod:`simulator.spark.mix`) and cuts the jobs (case x
   assignor) into batches, biggest groups first;
2. the batches become an RDD, one partition per batch (a ``parallelize`` of one slice per
   batch), and ``mapPartitions`` replays each (:func:`simulator.spark.executor.run_batches`);
   the result is a DataFrame with the explicit :data:`~simulator.spark.schema.BUNDLE_SCHEMA`,
   cached so that each job replays once, and counted: rows out must equal jobs in, or the sweep
   fails;
3. the bundle is split into ``scenarios/``, ``rebalances/`` and ``violations/``, each written as
   Parquet partitioned by ``family`` and ``assignor`` (sorted inside, so files compare); the
   three writes are submitted together (:mod:`simulator.spark.together`);
4. ``run.json`` records what ran (mix, seed, counts, versions, machine, duration);
5. the summaries are computed by Spark from the Parquet (:mod:`simulator.spark.summary`) and the
   report is rendered (:mod:`simulator.report`), exactly as ``report DIR`` would, while Spark
   stops.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from pyspark import AccumulatorParam, StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from simulator.spark import executor, mix, summary
from simulator.spark.forked import ForkPolicy
from simulator.spark.mix import MAX_JOBS
from simulator.spark.progress import progress
from simulator.spark.schema import BUNDLE_SCHEMA
from simulator.spark.session import parallelism, session
from simulator.spark.together import together

#: The tables of a sweep folder, with the columns each is sorted by inside its files.
TABLE_ORDER: dict[str, tuple[str, ...]] = {
    "scenarios": ("case_id",),
    "rebalances": ("case_id", "generation"),
    "violations": ("case_id", "generation", "kind", "detail"),
}
#: one name for the run record, which the summary reads back
RUN_FILE = summary.RUN_FILE


class SweepError(RuntimeError):
    """The sweep could not deliver every row (a bug in the sweep, never a scenario's failure)."""


@dataclass(frozen=True, slots=True)
class SweepOptions:
    """Everything ``python -m simulator sweep`` takes."""

    mix: str = "default"
    families: tuple[str, ...] = ()
    assignors: tuple[str, ...] = ()
    #: cases (each run with every assignor); ``None``: the mix's own count
    scenarios: int | None = None
    seed: int = 0
    out: Path = Path("out/simulate")
    master: str | None = None
    max_batch: int = MAX_JOBS
    #: replay in the executor workers themselves rather than a forked child per batch
    inline: bool = False


class ReplayStats(NamedTuple):
    """What :func:`run_jobs` measured: the replays' seconds (Spark's job up to the last row
    counted, the writes aside), the executors' tasks' seconds inside their batches summed, and
    the forked children (:mod:`simulator.spark.forked`: how many, the largest peak RSS in MB;
    0 and 0 inline), and the CPU seconds of the tasks' workers and children summed."""

    replay_s: float
    busy_s: float
    children: int
    child_peak_rss_mb: float
    cpu_s: float


class _Largest(AccumulatorParam[int]):
    """An accumulator that keeps the largest term (a child's peak RSS in KB)."""

    def zero(self, value: int) -> int:
        return 0

    def addInPlace(self, value1: int, value2: int) -> int:
        return max(value1, value2)


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Where the output went and what the report says."""

    out: Path
    report: Path
    summary: dict[str, Any]


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for package in ("streams-assignor", "pyspark", "pyarrow", "pandas", "matplotlib", "aiokafka",
                    "faust-streaming", "orjson", "pydantic"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def _machine(spark: SparkSession) -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpus": os.cpu_count() or 0,
        "master": spark.sparkContext.master,
        "parallelism": parallelism(spark),
    }


def _write(frame: DataFrame, path: Path, order: Sequence[str]) -> None:
    """Parquet partitioned by family and assignor, one sorted file per partition."""
    (frame.repartition("family", "assignor")
     .sortWithinPartitions(*order)
     .write.mode("overwrite")
     .partitionBy("family", "assignor")
     .parquet(str(path)))


def run_jobs(spark: SparkSession, batches: list[list[mix.Job]], total: int,
             out: Path, *, inline: bool = False) -> ReplayStats:
    """Replay every job in the executors (in a forked child per task unless ``inline``) and
    write the three tables under ``out``; what it measured (:class:`ReplayStats`, the busy
    seconds from :func:`simulator.spark.executor.run_batches`).

    Each batch is one element of a ``parallelize`` of as many slices as batches, so each
    partition (a Spark task) is exactly one batch, in the driver's order: no shuffle (a
    ``partitionBy`` on the batch index cost a Python stage and a shuffle of every job first),
    and tasks start in partition order, the costliest batches first."""
    sc = spark.sparkContext
    done = sc.accumulator(0)
    work = sc.accumulator(0)
    busy = sc.accumulator(0.0)
    cpu = sc.accumulator(0.0)
    children = sc.accumulator(0)
    peak_kb = sc.accumulator(0, _Largest())
    policy = ForkPolicy(inline=inline, children=children, peak_rss_kb=peak_kb)
    all_work = max(1, sum(mix.job_cost(job) for batch in batches for job in batch))
    jobs = sc.parallelize(batches, max(1, len(batches)))
    bundles = spark.createDataFrame(
        jobs.mapPartitions(partial(executor.run_batches, done, work, busy, policy=policy, cpu=cpu)),
        BUNDLE_SCHEMA,
    ).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        began = time.monotonic()
        with progress(total, lambda: int(done.value), lambda: int(work.value) / all_work):
            produced = bundles.count()
        replay_s = time.monotonic() - began
        if produced != total:
            raise SweepError(f"{produced} scenario rows for {total} jobs")
        # the three writes read the cached bundle independently: submitted together
        # (:mod:`simulator.spark.together`), not one after the other
        frames = {"scenarios": bundles.select("scenario.*")}
        for table in ("rebalances", "violations"):
            frames[table] = bundles.select(F.explode(table).alias("row")).select("row.*")
        together(*(partial(_write, frame, out / table, TABLE_ORDER[table])
                   for table, frame in frames.items()))
    finally:
        bundles.unpersist()
    return ReplayStats(replay_s, float(busy.value), int(children.value),
                       round(int(peak_kb.value) / 1024, 1), float(cpu.value))


def command_line(options: SweepOptions, mix_name: str, families: Sequence[str],
                 assignors: Sequence[str], scenarios: int) -> str:
    """The command that runs this sweep again (the master aside: same rows anywhere)."""
    line = f"python -m simulator.spark sweep --mix {mix_name} --scenarios {scenarios}"
    if options.families:
        line += " --families " + ",".join(families)
    if options.assignors:
        line += " --assignors " + ",".join(assignors)
    return line + f" --seed {options.seed} --out {options.out}"


def sweep(options: SweepOptions, spark: SparkSession | None = None) -> SweepResult:
    """Run the sweep ``options`` describe; the report is under ``options.out / 'report'``.

    With ``spark`` given (a session of :func:`simulator.spark.session.session`, or one
    ``spark-submit`` configured), the sweep runs in it and leaves it running; otherwise it starts
    one for ``options.master`` and stops it at the end.
    """
    chosen, families, assignors = mix.resolve(options.mix, options.families, options.assignors)
    count = options.scenarios if options.scenarios is not None else chosen.scenarios
    cases = mix.build_cases(chosen, families, count, options.seed)
    total = len(cases) * len(assignors)
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    began = datetime.now(UTC).isoformat(timespec="seconds")
    with ExitStack() as stack:
        if spark is None:
            spark = stack.enter_context(session(options.master))
        spark_ready_s = time.monotonic() - started
        batches = mix.batches(cases, assignors, parallelism(spark), options.max_batch)
        print(f"sweep: mix {chosen.name}, {len(cases)} scenarios x {len(assignors)} assignors = "
              f"{total} replays in {len(batches)} batches on {spark.sparkContext.master}",
              file=sys.stderr)
        replay_started = time.monotonic()
        stats = run_jobs(spark, batches, total, out, inline=options.inline)
        replays_only_s, busy_s = stats.replay_s, stats.busy_s
        replay_s = time.monotonic() - replay_started
        run = {
            "mix": chosen.name,
            "mix_summary": chosen.summary,
            "seed": options.seed,
            "families": list(families),
            "assignors": list(assignors),
            "scenarios": len(cases),
            "replays": total,
            "batches": len(batches),
            "started": began,
            "spark_start_s": round(spark_ready_s, 1),
            "replay_and_write_s": round(replay_s, 1),
            # the replays alone (Spark's job up to the last row), without the Parquet writes
            "replay_s": round(replays_only_s, 1),
            # share of the replay phase x the cluster's cores that tasks spent replaying
            "cores_busy_share": (round(busy_s / (replays_only_s * parallelism(spark)), 3)
                                 if replays_only_s > 0 else None),
            "replays_per_s": round(total / replay_s, 2) if replay_s > 0 else None,
            # forked replay children (0 with --inline) and the largest one's peak RSS
            "replay_children": stats.children,
            "replay_child_peak_rss_mb": stats.child_peak_rss_mb,
            # CPU seconds of the executors' tasks (workers and replay children): what a loaded
            # machine's wall clock cannot tell
            "replay_cpu_s": round(stats.cpu_s, 1),
            "versions": _versions(),
            "machine": _machine(spark),
            "command": command_line(options, chosen.name, families, assignors, count),
        }
        (out / RUN_FILE).write_text(json.dumps(run, indent=2, sort_keys=True) + "\n",
                                    encoding="utf-8")
        result = summary.summarize(
            spark, out, violations_csv=summary.report_folder(out) / "violations.csv")
        run["duration_s"] = round(time.monotonic() - started, 1)
        (out / RUN_FILE).write_text(json.dumps(run, indent=2, sort_keys=True) + "\n",
                                    encoding="utf-8")
        result["run"] = run
        # The plots are the driver's Python and stopping Spark is mostly the JVM's: done
        # together (the stop, if this sweep started Spark, in a thread; the plots in this one).
        index, _ = together(partial(summary.render_report, out, result), stack.pop_all().close)
    return SweepResult(out, index.parent, result)


__all__ = ["RUN_FILE", "ReplayStats", "SweepError", "SweepOptions", "SweepResult", "run_jobs",
           "sweep"]
