"""Profile one costly default-mix high-availability replay and say where its time goes.

The job (``partitions_added``, 74 processes x 4 threads, 59 rebalances of 296 members, mostly
probing rounds) is the one the engine's per-rebalance cost was measured on. Prints the replay's
cProfile time per part of the code (assignor, protocol, simulator engine, shim, asyncio), then
the top functions. ``--root`` profiles another source tree (an exported older commit), so a
change can be profiled before and after; cProfile roughly doubles the time, so quote shares.

    .venv/bin/python tests/bench/prof_pa.py [--root DIR] [--top 40] [--sort tottime]
        [--job pa|cold|crash|scale] [--warm]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any

JOB: tuple[str, dict[str, Any], int] = ("partitions_added",
       {"partitions": 190, "processes": 74, "recovery_lag": 10000, "standbys": 1,
        "static": False, "threads": 4, "to_partitions": 305, "warmups": 2,
        "assignor": "high_availability"},
       437670890)
#: ``--job``: the default job, issue 13's two bench scenarios that missed its bar, or the default
#: mix's costliest replay.
JOBS: dict[str, tuple[str, dict[str, Any], int]] = {
    "pa": JOB,
    "cold": ("cold_start", {"processes": 200, "threads": 2, "partitions": 256}, 0),
    "crash": ("crash_recover", {"processes": 60, "threads": 2, "partitions": 120, "crash": 2}, 0),
    # the default mix's costliest replay in make simulate at 591cd67 (5.3 s: 203 processes, 61
    # rebalances)
    "scale": ("scale_out",
              {"add": 3, "partitions": 256, "processes": 200, "recovery_lag": 1000, "standbys": 1,
               "static": False, "threads": 2, "warmups": 1, "assignor": "high_availability"},
              308091082),
}
PARTS = (("asyncio", "asyncio"), ("/simulator/shim/", "shim"), ("/simulator/", "engine"),
         ("/assignor/", "assignor"), ("/protocol/", "protocol"), ("aiokafka", "aiokafka"))


def part(filename: str) -> str:
    """Which part of the code a profiled function belongs to."""
    for marker, name in PARTS:
        if marker in filename:
            return name
    return "builtins and the rest"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--job", choices=sorted(JOBS), default="pa")
    parser.add_argument("--warm", action="store_true",
                        help="replay the job once unprofiled first (imports, caches), as the bench")
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    from simulator.engine import replay
    from simulator.families import generate

    scenario = generate(*JOBS[args.job])
    if args.warm:
        replay(scenario)
    profile = cProfile.Profile()
    began = time.perf_counter()
    profile.enable()
    result = replay(scenario)
    profile.disable()
    print(f"{len(result.rebalances)} rebalances, {time.perf_counter() - began:.1f} s profiled")
    stats = pstats.Stats(profile)
    spent: collections.Counter[str] = collections.Counter()
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        spent[part(filename)] += own
    total = sum(spent.values())
    for name, seconds in spent.most_common():
        print(f"  {name:24} {seconds:6.2f} s {seconds / total:6.1%}")
    stats.sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
