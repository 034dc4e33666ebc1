"""Count the instructions of prof_pa's replay, or of its member side alone, under callgrind.

Why: cProfile doubles a replay's time and weighs every Python call alike, and wall time on a
shared machine is noise; callgrind's counts repeat to a few tenths of a percent. ``replay``
counts the whole replay (instrumentation on around ``replay()`` only); ``member`` replays the
job unmeasured, then counts every hosted consumer's ``metadata()`` and ``on_assignment()`` of
its last answer again (a probing round's repeated answer), three times over, in a loop.

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=OUT \\
        .venv/bin/python tests/bench/cg_replay.py [replay|member] [--job pa|cold|crash]
    callgrind_annotate OUT | grep -m1 TOTALS

Without valgrind it runs the same steps unmeasured (``callgrind_control`` then fails: pass
``--dry`` to skip it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import prof_pa

from simulator import hosting
from simulator.engine import replay
from simulator.families import generate


def instrument(on: bool, dry: bool) -> None:
    """Switch callgrind's counting for this process."""
    if not dry:
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
                       check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("replay", "member"), nargs="?", default="replay")
    parser.add_argument("--job", choices=sorted(prof_pa.JOBS), default="pa")
    parser.add_argument("--dry", action="store_true", help="no callgrind_control calls")
    args = parser.parse_args()
    scenario = generate(*prof_pa.JOBS[args.job])
    if args.part == "replay":
        instrument(True, args.dry)
        result = replay(scenario)
        instrument(False, args.dry)
        print(f"{len(result.rebalances)} rebalances")
        return
    last: dict[int, tuple[Any, Any]] = {}  # consumer (by id) -> (its assignor, its last answer)
    hosted = hosting.HostedAssignor.on_assignment

    def keep(self: hosting.HostedAssignor, assignment: Any) -> None:
        last[id(self.inner)] = (self.inner, assignment)
        hosted(self, assignment)

    hosting.HostedAssignor.on_assignment = keep  # type: ignore[method-assign]
    replay(scenario)
    hosting.HostedAssignor.on_assignment = hosted  # type: ignore[method-assign]
    members = list(last.values())

    async def again() -> None:  # in a loop: a probing answer schedules a follow-up
        instrument(True, args.dry)
        for _ in range(3):
            for inner, assignment in members:
                inner.metadata(["topic"])
                inner.on_assignment(assignment)
        instrument(False, args.dry)
        for inner, _ in members:
            inner.followups.cancel()

    asyncio.run(again())
    print(f"{len(members)} members, 3 joins and answers each")


if __name__ == "__main__":
    main()
