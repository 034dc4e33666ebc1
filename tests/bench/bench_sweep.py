"""The Spark sweep on one core and on two: replays per second per core, and the speed-up.

Issue 14 asks ``make bench`` for the sweep's scaling: the same replays (the ``medium`` mix's
groups of 1-24 processes, every default assignor) on ``local[1]`` and on ``local[2]``, each side
in its own long-lived worker process holding its own Spark session (its own JVM and Python
workers), driven A, B, A, B ... so the machine's noise hits both alike. One run is one
:func:`simulator.spark.sweep.run_jobs` of the same jobs, sliced for that side's cores as a sweep
slices them (:func:`simulator.spark.mix.batches`): Spark's job up to the last row (``replays/s``),
then with the Parquet writes (``with writes``), and the share of the replay phase x cores that
the tasks spent replaying (``cores busy``: the rest is Spark's time around each task and a core
with nothing left to run at the end).

Why a long-lived session per side rather than a whole ``simulator sweep`` per run (as before):
a sweep's JVM start, its Python workers' first imports (aiokafka, Faust) and its summary and
report cost 20-30 s a run and are the same on one core as on two, so with 100 replays a run
(10-20 s) they decided the ratio: 1.86x one report, 1.19x the next. Each side's first run warms
its session and is not counted; every counted run replays the same jobs in warm Python workers,
as the bulk of ``make simulate``'s 2,000 scenarios does. Figures only; no pass or fail: on a
shared machine read the ratio (a median of paired runs), not the seconds.

``BENCH_QUICK=1``: fewer scenarios and two runs a side.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUICK = os.environ.get("BENCH_QUICK", "0") not in ("", "0")
#: cases of the medium mix (each replayed with every default assignor)
SCENARIOS = 12 if QUICK else 24
#: counted runs a side (issue 11: every figure on at least 5)
RUNS = 2 if QUICK else 5
#: the warm-up run's cases: one of each family (the fewest a mix takes), enough batches that
#: both of local[2]'s Python workers start
WARM_SCENARIOS = 11
SIDES = (1, 2)
SEED = 0
#: No new pair of runs starts past this (the warm-up included): about 150 s on a quiet machine,
#: so a loaded one ends with fewer runs, said beside the figures, rather than at run.py's kill.
BUDGET_S = 300.0

_sessions: dict[int, tuple[AbstractContextManager[Any], Any]] = {}


def sweep_once(cores: int, scenarios: int, seed: int = SEED) -> dict[str, float]:
    """One replay job of ``scenarios`` medium cases on this worker's ``local[cores]`` session
    (started on the first call, kept for the next): what :func:`run_jobs` reports, timed."""
    from simulator.spark import mix
    from simulator.spark.session import parallelism, session
    from simulator.spark.sweep import run_jobs

    if cores not in _sessions:
        context = session(f"local[{cores}]", app_name=f"bench sweep local[{cores}]")
        _sessions[cores] = (context, context.__enter__())
    spark = _sessions[cores][1]
    chosen, families, assignors = mix.resolve("medium", None, None)
    cases = mix.build_cases(chosen, families, scenarios, seed)
    batches = mix.batches(cases, assignors, parallelism(spark))
    total = len(cases) * len(assignors)
    out = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        began = time.perf_counter()
        stats = run_jobs(spark, batches, total, out)
        replay_s, busy_s = stats.replay_s, stats.busy_s
        with_writes_s = time.perf_counter() - began
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {"replays": float(total), "replay_s": replay_s, "with_writes_s": with_writes_s,
            "busy": busy_s / (replay_s * parallelism(spark)) if replay_s > 0 else 0.0,
            "batches": float(len(batches))}


def close_sessions() -> None:
    """Stop this worker's Spark sessions (their JVMs)."""
    for context, _ in _sessions.values():
        context.__exit__(None, None, None)
    _sessions.clear()


OPS: dict[str, Callable[..., Any]] = {"sweep_once": sweep_once, "close_sessions": close_sessions}


def _spread(values: list[float], digits: int = 2) -> str:
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def main() -> None:
    from tests.bench.framework import Worker

    workers = {cores: Worker(f"sweep local[{cores}]") for cores in SIDES}
    seen: dict[int, list[dict[str, float]]] = {cores: [] for cores in SIDES}
    began = time.perf_counter()
    try:
        for cores, worker in workers.items():  # warm: the JVM, Python workers, imports
            worker.call("sweep_once", cores=cores, scenarios=WARM_SCENARIOS, timeout=900)
        warm_s = time.perf_counter() - began
        for _ in range(RUNS):
            for cores, worker in workers.items():  # A, B, A, B
                seen[cores].append(
                    worker.call("sweep_once", cores=cores, scenarios=SCENARIOS, timeout=900))
            if time.perf_counter() - began > BUDGET_S:
                break
        for worker in workers.values():
            worker.call("close_sessions", timeout=120)
    finally:
        for worker in workers.values():
            worker.close()
    replays = seen[1][0]["replays"]
    runs = len(seen[1])
    short = (f" (n={runs}: the bench's {BUDGET_S:.0f} s ran out)" if runs < RUNS else "")
    print(f"medium mix, {SCENARIOS} scenarios x every default assignor = {replays:.0f} replays "
          f"a run; {runs} runs a side{short}, interleaved, each side in its own warm Spark "
          f"session (warm-up {warm_s:.0f} s, not counted); median (min-max)")
    print(f"{'master':9} {'batches':>7} {'replays/s':>10} {'min-max':>12} {'per core':>9} "
          f"{'min-max':>12} {'with writes':>12} {'cores busy':>11}")
    rate = {c: [r["replays"] / r["replay_s"] for r in seen[c]] for c in SIDES}
    for cores in SIDES:
        per_core = [v / cores for v in rate[cores]]
        writes = [r["replays"] / r["with_writes_s"] for r in seen[cores]]
        busy = [r["busy"] for r in seen[cores]]
        print(f"local[{cores}] {seen[cores][0]['batches']:7.0f} "
              f"{statistics.median(rate[cores]):10.2f} {_spread(rate[cores]):>12} "
              f"{statistics.median(per_core):9.2f} {_spread(per_core):>12} "
              f"{statistics.median(writes):12.2f} {statistics.median(busy):10.0%} "
              f"({_spread([b * 100 for b in busy], 0)} %)")
    paired = [b / a for a, b in zip(rate[1], rate[2], strict=True)]
    writes_paired = [
        (y["replays"] / y["with_writes_s"]) / (x["replays"] / x["with_writes_s"])
        for x, y in zip(seen[1], seen[2], strict=True)
    ]
    print(f"speed-up local[2] / local[1] (median of paired runs): "
          f"{statistics.median(paired):.2f}x ({_spread(paired)}) on the replays, "
          f"{statistics.median(writes_paired):.2f}x ({_spread(writes_paired)}) with the writes "
          f"(linear: 2.00x; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at "
          "the end)")


if __name__ == "__main__":
    main()
