"""Guard for engine speed work: replay a fixed set of jobs and dump or compare their rows.

A change that makes the engine, the shim or the state model cheaper must leave every scenario,
rebalance and violation row identical, field for field (wall-clock fields and the hash seed
aside). ``dump FILE`` writes the rows of the fixed job set (the smoke mix, every assignor, plus
an even spread of default-mix jobs of 20-200 processes) as JSON lines; ``compare FILE`` replays
them again and names the first job whose rows differ. Not a pytest test: the set takes minutes.

    .venv/bin/python tests/bench/rows_check.py dump /tmp/rows.jsonl
    .venv/bin/python tests/bench/rows_check.py compare /tmp/rows.jsonl [ASSIGNOR]

``compare`` with an assignor replays only that assignor's jobs (a change that touches one peer).
``--forked`` (either mode) replays the jobs as a sweep's executor does by default, in forked
children (``simulator.spark.forked``), instead of calling ``run_job`` in this process.

    .venv/bin/python tests/bench/rows_check.py compare /tmp/rows.jsonl --forked
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from simulator.families import FAMILIES
from simulator.spark.columns import REBALANCE_COLUMNS, SCENARIO_COLUMNS, VIOLATION_COLUMNS, Column
from simulator.spark.executor import Bundle, run_batch, run_job
from simulator.spark.forked import ForkPolicy
from simulator.spark.mix import MIXES, Job, build_cases, default_assignors, jobs

#: Columns that depend on the machine or the wall clock, left out of the comparison.
WALL = ("_wall_ms", "_wall_s")
DEFAULT_SPREAD = 80


def job_set(spread: int = DEFAULT_SPREAD) -> list[Job]:
    """The smoke mix with every default assignor, then ``spread`` default-mix jobs of 20+
    processes evenly spaced in cost order (the 40 costliest left out: they take minutes)."""
    smoke = jobs(build_cases(MIXES["smoke"], tuple(FAMILIES), 24, 0), default_assignors())
    default = jobs(build_cases(MIXES["default"], tuple(FAMILIES), 2000, 0), default_assignors())
    large = [j for j in default[40:] if json.loads(j[2]).get("processes", 1) >= 20]
    step = max(1, len(large) // spread)
    return smoke + large[::step][:spread]


def _clean(columns: tuple[Column, ...], row: tuple[Any, ...]) -> dict[str, Any]:
    return {c.name: v for c, v in zip(columns, row, strict=True)
            if not c.name.endswith(WALL) and c.name != "hash_seed"}


def rows_of(job: Job, bundle: Bundle | None = None) -> dict[str, Any]:
    """One job's rows (``bundle``, or its replay here) without wall-clock fields."""
    scenario, rebalances, violations = bundle if bundle is not None else run_job(job)
    return {"job": list(job), "scenario": _clean(SCENARIO_COLUMNS, scenario),
            "rebalances": [_clean(REBALANCE_COLUMNS, r) for r in rebalances],
            "violations": [_clean(VIOLATION_COLUMNS, v) for v in violations]}


def main(argv: list[str]) -> int:
    forked = "--forked" in argv
    argv = [arg for arg in argv if arg != "--forked"]
    if len(argv) not in (2, 3) or argv[0] not in ("dump", "compare"):
        print(__doc__)
        return 2
    if os.environ.get("PYTHONHASHSEED") != "0":  # aiokafka's sticky iterates sets of strings
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    mode, path = argv[:2]
    only = argv[2] if len(argv) == 3 and mode == "compare" else None
    selected = job_set()
    expected: list[dict[str, Any]] = []
    if mode == "compare":
        expected = [json.loads(line) for line in Path(path).read_text().splitlines()]
        if [e["job"] for e in expected] != [list(j) for j in selected]:
            print("the job set changed since the dump")
            return 1
    out: list[str] = []
    began = time.perf_counter()
    bad = 0
    wanted = [(i, job) for i, job in enumerate(selected) if only is None or job[4] == only]
    bundles: Iterator[Bundle | None] = (
        run_batch(None, None, [job for _, job in wanted], ForkPolicy()) if forked
        else (None for _ in wanted))
    last = time.perf_counter()
    for (index, job), bundle in zip(wanted, bundles, strict=True):
        got = json.loads(json.dumps(rows_of(job, bundle), default=str))
        spent, last = time.perf_counter() - last, time.perf_counter()
        print(f"{index:4} {spent:7.2f}s {job[1]} {job[2]} {job[4]}", file=sys.stderr, flush=True)
        if mode == "dump":
            out.append(json.dumps(got, sort_keys=True))
        elif got != expected[index]:
            bad += 1
            print(f"DIFFERS: {job}", flush=True)
            for key in ("scenario", "rebalances", "violations"):
                if got[key] != expected[index][key]:
                    print(f"  {key}: got {str(got[key])[:600]}")
                    print(f"  want {str(expected[index][key])[:600]}")
    if mode == "dump":
        Path(path).write_text("\n".join(out) + "\n")
    count = sum(1 for j in selected if only is None or j[4] == only)
    print(f"{count} jobs, {bad} differ, {time.perf_counter() - began:.0f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
