"""Estimate a mix's single-core replay time from a stratified sample, and compare two trees.

The default mix's 10,000 jobs take too long to time one by one, and their cost is very uneven
(a few 200-process groups take minutes, most jobs milliseconds), so the jobs are ordered by the
mix's own cost (:func:`simulator.spark.mix.job_cost`), cut into strata (the 20 costliest, the
next 80, ...), a seeded sample of each is replayed, and each stratum counts as its mean times
its size. Times are the replaying process's CPU time (``time.process_time``): on a
machine shared with other work, wall time says more about the neighbours than the change.
``--root`` names a source tree to import (e.g. an exported older commit), so the same
sample can be timed before and after a change; each tree runs in its own process.

    .venv/bin/python tests/bench/estimate_mix.py --per 4 [--root /tmp/base] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

#: Upper ends of the strata in the cost order (the last one takes the rest).
BOUNDS = (20, 100, 400, 1500)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--per", type=int, default=4, help="jobs sampled per stratum")
    parser.add_argument("--mix", default="default")
    parser.add_argument("--seed", type=int, default=1, help="seed of the sample")
    parser.add_argument("--skip-top", type=int, default=0,
                        help="leave the first N strata out (they take minutes)")
    parser.add_argument("--json", help="write the per-job times here")
    args = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":  # aiokafka's sticky iterates sets of strings
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    sys.path.insert(0, args.root)
    from simulator.families import FAMILIES
    from simulator.spark.executor import run_job
    from simulator.spark.mix import MIXES, build_cases, default_assignors, job_cost, jobs

    logging.disable(logging.WARNING)  # as the executors do
    mix = MIXES[args.mix]
    every = jobs(build_cases(mix, tuple(FAMILIES), mix.scenarios, 0), default_assignors())
    order = sorted(range(len(every)), key=lambda i: -job_cost(every[i]))
    bounds = [0, *[b for b in BOUNDS if b < len(order)], len(order)]
    rng = random.Random(args.seed)
    total = 0.0
    timed: list[dict[str, Any]] = []
    for stratum, (low, high) in enumerate(itertools.pairwise(bounds)):
        members = order[low:high]
        sample = rng.sample(members, min(args.per, len(members)))
        if stratum < args.skip_top:
            continue
        spent = []
        for i in sample:
            job = every[i]
            began = time.process_time()
            run_job(job)
            spent.append(time.process_time() - began)
            params = json.loads(job[2])
            timed.append({"stratum": f"{low}-{high}", "job": list(job), "s": spent[-1]})
            print(f"  {low}-{high}: {spent[-1]:7.2f}s {job[1]} p={params.get('processes')} "
                  f"t={params.get('threads')} {job[4]}", file=sys.stderr, flush=True)
        mean = sum(spent) / len(spent)
        total += mean * len(members)
        print(f"stratum {low}-{high}: mean {mean:.2f}s x {len(members)} = "
              f"{mean * len(members):.0f}s", flush=True)
    print(f"estimated single-core total {total:.0f}s", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"total_s": total, "jobs": timed}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
