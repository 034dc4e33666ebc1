"""The Spark sweep on one core and on two: scenarios per second per core, and the speed-up.

Issue 14 asks ``make bench`` for the sweep's scaling: the same sweep (the ``medium`` mix's groups
of 1-24 processes, every assignor) runs with ``--master local[1]`` and ``--master local[2]``,
interleaved A, B, A, B, each in its own process (a fresh JVM and fresh Python workers), and
timed from the sweep's own ``run.json``: the replays alone (``replay_s``: Spark's job up to the
last row), then with the Parquet writes (``replay_and_write_s``), and the share of the replay
phase x cores that the tasks spent replaying (``cores_busy_share``; the rest is Spark's time
around each task and a core with nothing left to run). Spark's start, the summaries and the
report are left out. Figures only; no pass or fail. The machine is shared, so the ratio is the
figure to read, not the seconds. The writes are the JVM's and barely use a second core: on a
sweep this small they are a third of the time, which is why the speed-up with them is lower.

``BENCH_QUICK=1``: fewer scenarios and one run per side.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUICK = os.environ.get("BENCH_QUICK", "0") not in ("", "0")
#: cases of the medium mix (each replayed with every assignor)
SCENARIOS = 12 if QUICK else 20
RUNS = 1 if QUICK else 2
SIDES = (1, 2)


def one_sweep(cores: int, out: Path) -> dict[str, float]:
    """One sweep in its own process; its replay time and replays from ``run.json``."""
    command = [sys.executable, "-m", "simulator", "sweep", "--mix", "medium", "--scenarios",
               str(SCENARIOS), "--master", f"local[{cores}]", "--out", str(out)]
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"sweep on local[{cores}] failed:\n{done.stderr[-2000:]}")
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return {"replays": float(run["replays"]), "replay_s": float(run["replay_s"]),
            "with_writes_s": float(run["replay_and_write_s"]),
            "busy": float(run["cores_busy_share"]), "total_s": time.perf_counter() - began}


def main() -> None:
    figures = ("replays/s", "with writes", "cores busy")
    seen: dict[str, dict[int, list[float]]] = {f: {cores: [] for cores in SIDES} for f in figures}
    replays = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as scratch:
        for run in range(RUNS):
            for cores in SIDES:  # A, B, A, B
                result = one_sweep(cores, Path(scratch) / f"run{run}-local{cores}")
                replays = result["replays"]
                seen["replays/s"][cores].append(replays / result["replay_s"])
                seen["with writes"][cores].append(replays / result["with_writes_s"])
                seen["cores busy"][cores].append(result["busy"])
    print(f"medium mix, {SCENARIOS} scenarios x every assignor = {replays:.0f} replays; "
          f"{RUNS} run(s) per side, interleaved; replays/s of the replays alone, then with the "
          "Parquet writes (run.json)")
    print(f"{'master':10} {'replays/s':>10} {'per core':>9} {'min-max':>14} {'with writes':>12} "
          f"{'cores busy':>11}")
    for cores in SIDES:
        values = seen["replays/s"][cores]
        median = statistics.median(values)
        print(f"local[{cores}]   {median:10.2f} {median / cores:9.2f} "
              f"{min(values):6.2f}-{max(values):<6.2f} "
              f"{statistics.median(seen['with writes'][cores]):12.2f} "
              f"{statistics.median(seen['cores busy'][cores]):10.0%}")
    speedup = statistics.median(seen["replays/s"][2]) / statistics.median(seen["replays/s"][1])
    with_writes = (statistics.median(seen["with writes"][2])
                   / statistics.median(seen["with writes"][1]))
    print(f"speed-up local[2] / local[1]: {speedup:.2f}x on the replays, {with_writes:.2f}x with "
          f"the writes (linear: 2.00x; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores at the end)")


if __name__ == "__main__":
    main()
