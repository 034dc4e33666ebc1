"""Our leader's ``assign()`` split in two: the task placement and everything else (decode, task
plan, client bookkeeping, encode, logs), for two checkouts of the project, interleaved.

    .venv/bin/python tests/bench/bench_leader_path.py --against /tmp/old 1000,10,1,1,1 6000,2

A point is ``P,C[,T[,s[,topics]]]`` as in ``make bench``'s peer grid (tests/bench/drivers.py),
driven through aiokafka's interface exactly as there. Each checkout runs in its own worker
process (its own imports), called A, B, A, B ...; printed are medians over paired runs of
``new/old`` for the whole ``assign()`` and for ``assign()`` minus placement (the placement
steps, ``run_task_assignor`` and ``distribute_client_tasks``, are timed by wrapping them where
the pipeline calls them: the pipeline module, or the leader's thread cache in checkouts that
have it). Without ``--against`` it prints this checkout's figures alone. ``--scale``
runs Kafka's scale-test story instead, as ``make bench``'s Java grid times our full leader
(``leader_only``). For issue 11's leader-path work, whose part is the "minus placement" figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[2]

# The worker: imports the checkout it runs in (its cwd), answers one JSON line per point.
_WORKER = """
import json, logging, os, sys, time
sys.path.insert(0, os.getcwd())
logging.disable(logging.WARNING)
import assignor.leader.pipeline as pipeline
from tests.bench.drivers import Shape, cluster_for, new_group, rebalance
spent = [0.0]
def timed(fn):
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began
    return wrapper
pipeline.run_task_assignor = timed(pipeline.run_task_assignor)
if hasattr(pipeline, "distribute_client_tasks"):  # a checkout before the leader's thread cache
    pipeline.distribute_client_tasks = timed(pipeline.distribute_client_tasks)
else:  # per client, through the leader's kept splits (assignor.leader.thread_cache)
    import assignor.leader.thread_cache as thread_cache
    thread_cache.distribute_client_tasks = timed(thread_cache.distribute_client_tasks)
SCALE = sys.argv[1] == "scale"
def story(shape):
    if SCALE:  # Kafka's scale test as make bench's Java grid runs it: leader hosted alone
        from tests.bench.leader_only import leader_rounds
        rounds = {}
        spent[0] = 0.0
        for name, result in leader_rounds(shape, leave=False, standby_offset=0):
            rounds[name] = [result.assign_ms, result.assign_ms - spent[0] * 1000]
            spent[0] = 0.0
        return rounds
    cluster = cluster_for(shape)
    instances = new_group("ours", shape)
    rounds = {}
    for name, members in (("first", [m for g in instances for m in g]),
                          ("second", [m for g in instances[:-1] for m in g])):
        spent[0] = 0.0
        assign_ms = rebalance(members, cluster).assign_ms
        rounds[name] = [assign_ms, assign_ms - spent[0] * 1000]
    return rounds
story(Shape(100, 3, 1, 1, 1))
for line in sys.stdin:
    print(json.dumps(story(Shape(**json.loads(line)))), flush=True)
"""


def _point(text: str) -> dict[str, int]:
    names = ("partitions", "instances", "threads", "standbys", "topics")
    return dict(zip(names, (int(v) for v in text.split(",")), strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", type=_point, help="P,C[,T[,s[,topics]]]")
    parser.add_argument("--against", type=Path, help="the other checkout (the 'old' side)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=240.0, help="per point")
    parser.add_argument(
        "--scale",
        action="store_true",
        help="Kafka's scale-test story as make bench's Java grid runs it (the same clients "
        "again in the second rebalance, standbys at offset 0, only the leader's process hosted)",
    )
    args = parser.parse_args()
    sides = {"new": HERE} | ({"old": args.against.resolve()} if args.against else {})
    workers = {
        name: subprocess.Popen(
            [sys.executable, "-c", _WORKER, "scale" if args.scale else "grid"],
            cwd=where,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name, where in sides.items()
    }
    try:
        for point in args.points:
            runs: dict[str, list[dict[str, list[float]]]] = {name: [] for name in sides}
            deadline = time.monotonic() + args.budget_s
            for _ in range(args.runs):
                if time.monotonic() > deadline:
                    break
                for name, worker in workers.items():
                    assert worker.stdin is not None and worker.stdout is not None
                    worker.stdin.write(json.dumps(point) + "\n")
                    worker.stdin.flush()
                    runs[name].append(json.loads(worker.stdout.readline()))
            for rebalance in ("first", "second"):
                print(_line(point, rebalance, runs), flush=True)
    finally:
        for worker in workers.values():
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait(timeout=60)


def _line(point: dict[str, int], rebalance: str, runs: dict[str, list[Any]]) -> str:
    def figure(side: str, index: int) -> list[float]:
        return [run[rebalance][index] for run in runs[side]]

    text = f"{point} {rebalance:6s} n={len(runs['new'])}"
    for index, what in ((0, "assign"), (1, "minus placement")):
        new = figure("new", index)
        text += f" | {what} ms {statistics.median(new):.1f}"
        if "old" in runs:
            old = figure("old", index)
            ratios = sorted(n / o for n, o in zip(new, old, strict=True))
            text += (
                f" (old {statistics.median(old):.1f}, new/old {statistics.median(ratios):.2f}"
                f" [{ratios[0]:.2f}-{ratios[-1]:.2f}])"
            )
    return text


if __name__ == "__main__":
    main()
