"""``make bench``: run every ``tests/bench/bench_*.py`` in turn; each prints its own figures.

A benchmark prints the figure it measures and, where a reference exists, the reference measured in
the same run and the ratio. Benchmarks never decide pass or fail on timings; they exit non-zero only
when they cannot run.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    root = here.parent.parent
    sys.path.insert(0, str(root))
    selected = sys.argv[1:]
    for script in sorted(here.glob("bench_*.py")):
        if selected and not any(name in script.stem for name in selected):
            continue
        print(f"\n=== {script.stem} ===", flush=True)
        runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
