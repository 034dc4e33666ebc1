"""The measuring instrument: worker processes, interleaved runs, figures, targets, the report.

- ``Worker``: one long-lived Python process per side (``tests.bench.worker``), driven over a
  pipe in JSON lines, every call bounded by a timeout; stopped by closing its stdin (then
  killed by pid if it does not exit).
- ``interleave``: calls the sides A, B, A, B ... so the machine's noise hits every side alike;
  at least ``runs`` rounds unless a round costs more than the budget allows (then fewer, and
  the figure says how many); ``rounds_within`` says how many rounds of a known cost a share of
  a budget holds, and ``fill_cheapest_first`` spends what is left on further rounds.
- ``Figure``: median, min and max of the runs; ``ratio`` is the median of the paired ratios
  (run i of A over run i of B), which holds better on a noisy machine than a ratio of medians.
- ``Target``: goal and must bounds on a ratio; ``verdict`` says "meets", "misses goal" or
  "misses must" in plain words.
- ``Report``: sections of text and tables, printed as they come and written as JSON and
  Markdown, with every version, so two runs compare.
"""

from __future__ import annotations

import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HASH_SEED = "0"  # aiokafka's sticky assignor's result depends on set order, so on the seed
CALL_TIMEOUT_S = 1800.0
#: Issue 11: every figure is the median, min and max of at least this many warm runs; a figure
#: on fewer says ``n=`` beside it, and the summary counts them.
MIN_RUNS = 5


class WorkerFailed(RuntimeError):
    """A worker raised, died or did not answer in time: the bench cannot run this figure."""


class Worker:
    """One side's long-lived Python process (``python -m tests.bench.worker``)."""

    def __init__(self, name: str, python: str = sys.executable) -> None:
        self.name = name
        env = dict(os.environ, PYTHONHASHSEED=HASH_SEED, PYTHONPATH=str(ROOT))
        self._proc = subprocess.Popen(
            [python, "-m", "tests.bench.worker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if os.environ.get("BENCH_QUIET") else None,
            text=True,
            bufsize=1,
        )
        self._answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._answers.put(line)
        self._answers.put(None)

    def call(self, op: str, timeout: float = CALL_TIMEOUT_S, **args: Any) -> Any:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
            self._proc.stdin.flush()
        except OSError as error:
            raise WorkerFailed(f"worker {self.name} is gone: {error}") from error
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise WorkerFailed(
                f"worker {self.name}: {op} gave no answer in {timeout:.0f} s"
            ) from None
        if line is None:
            raise WorkerFailed(f"worker {self.name} exited during {op}")
        answer = json.loads(line)
        if "error" in answer:
            raise WorkerFailed(f"worker {self.name}: {op} failed:\n{answer['error']}")
        return answer["ok"]

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait(timeout=30)


def interleave(
    calls: Sequence[tuple[str, Callable[[], Any]]], runs: int, budget_s: float
) -> dict[str, list[Any]]:
    """Call every side once per round, in order (A, B, A, B ...), for ``runs`` rounds, or fewer
    when the rounds so far have used ``budget_s`` (at least one round always runs)."""
    results: dict[str, list[Any]] = {name: [] for name, _ in calls}
    started = time.perf_counter()
    for _ in range(runs):
        for name, call in calls:
            results[name].append(call())
        if time.perf_counter() - started > budget_s:
            break
    return results


def rounds_within(share_s: float, round_s: float, most: int) -> int:
    """How many rounds of ``round_s`` seconds to take within ``share_s``, at most ``most``:
    rounded to the nearest, so that a point whose share falls just short of a round still
    takes it, and a point that would overrun its share by more than half a round does not
    take time from the points after it."""
    if round_s <= 0:
        return most
    return max(0, min(most, int(share_s / round_s + 0.5)))


def fill_cheapest_first(
    round_s: list[float], missing: Sequence[int], run_round: Callable[[int], float],
    left_s: Callable[[], float],
) -> None:
    """Further rounds of several points within the time left, the cheapest point first, each
    taking all of its ``missing[i]`` rounds while one more fits (``rounds_within``, rated on
    ``round_s[i]``, which each round's own cost replaces: ``run_round(i)`` runs one round of
    point ``i`` and returns its seconds). When the time cannot hold every round, this leaves
    the fewest points short: a share in proportion to each point's cost left every point short
    on a slow day (a report's 17 of 25 peer points at one or two runs, the cheapest among
    them at one round of 1.1 s)."""
    for i in sorted(range(len(round_s)), key=round_s.__getitem__):
        for _ in range(missing[i]):
            if rounds_within(left_s(), round_s[i], 1) == 0:
                break
            round_s[i] = run_round(i)


class Budget:
    """Seconds for a section, shared out over its points as they come: each point gets an
    equal share of what is left, so the report ends on time however slow the machine is."""

    def __init__(self, total_s: float, points: int, floor_s: float = 5.0) -> None:
        self._deadline = time.perf_counter() + total_s
        self._left = max(points, 1)
        self._floor = floor_s

    def next(self) -> float:
        share = (self._deadline - time.perf_counter()) / self._left
        self._left = max(self._left - 1, 1)
        return max(share, self._floor)


@dataclass(frozen=True)
class Figure:
    """Milliseconds (or any measure) of n runs."""

    values: tuple[float, ...]

    @staticmethod
    def of(values: Sequence[float | None]) -> Figure | None:
        kept = tuple(v for v in values if v is not None)
        return Figure(kept) if kept else None

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def text(self, unit: str = "") -> str:
        n = len(self.values)
        low, high = number_text(min(self.values)), number_text(max(self.values))
        spread = f" ({low}-{high})" if n > 1 else ""
        runs = f" n={n}" if n < MIN_RUNS else ""
        return f"{number_text(self.median)}{unit}{spread}{runs}"

    def data(self) -> dict[str, Any]:
        """The figure in ``report.json``: its runs too, so the summary can count short ones."""
        return {
            "median": self.median,
            "min": min(self.values),
            "max": max(self.values),
            "runs": list(self.values),
        }


def ratio(ours: Sequence[float | None], theirs: Sequence[float | None]) -> Figure | None:
    """The paired ratios ours[i] / theirs[i]."""
    return Figure.of(
        [a / b if a is not None and b else None for a, b in zip(ours, theirs, strict=False)]
    )


def number_text(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3f}"


@dataclass(frozen=True)
class Target:
    """A bound on a ratio: ``goal`` is what the issue aims at, ``must`` what it requires."""

    name: str
    must: float
    goal: float | None = None

    def verdict(self, figure: Figure | None) -> str:
        if figure is None:
            return "not measured"
        value = figure.median
        if value > self.must:
            return f"misses must (<= {self.must:g})"
        if self.goal is not None and value > self.goal:
            return f"misses goal (<= {self.goal:g})"
        return "meets"

    def text(self) -> str:
        goal = f"goal <= {self.goal:g}, " if self.goal is not None else ""
        return f"{self.name}: {goal}must <= {self.must:g}"


#: A ratio is a close call when some run of it came within this share of its must, or past it:
#: its verdict could turn on the machine's noise (``close_call``).
CLOSE_CALL_SHARE = 0.9
#: The runs a close call's point may take in all, as a multiple of ``--runs``, while the report
#: has time left: a median of 15 runs moves less with one slow run than a median of 5.
CLOSE_CALL_RUNS_FACTOR = 3


def close_call(figure: Figure | None, target: Target) -> bool:
    """Whether some run of ``figure`` (a ratio) came within ``CLOSE_CALL_SHARE`` of the
    target's must, or past it. Runs, not the median: a median just inside the must with one
    run over it is the verdict most worth more runs."""
    return figure is not None and max(figure.values) >= CLOSE_CALL_SHARE * target.must


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


@dataclass
class Section:
    title: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: list[dict[str, Any]] = field(default_factory=list)

    def markdown(self) -> str:
        parts = [f"## {self.title}", ""]
        if self.intro:
            parts += [self.intro, ""]
        for table in self.tables:
            parts += [table.markdown(), ""]
        parts += [f"{note}\n" for note in self.notes]
        return "\n".join(parts)


class Report:
    """Sections printed as they fill in, then written as ``report.json`` and ``report.md``."""

    def __init__(self, title: str, header: dict[str, Any]) -> None:
        self.title = title
        self.header = header
        self.sections: list[Section] = []

    def add(self, section: Section) -> Section:
        self.sections.append(section)
        print(f"\n## {section.title}\n", flush=True)
        if section.intro:
            print(section.intro + "\n", flush=True)
        return section

    @staticmethod
    def row(section: Section, table: Table, cells: list[str], data: dict[str, Any]) -> None:
        if not table.rows:
            print(table.markdown(), flush=True)
        table.rows.append(cells)
        section.data.append(data)
        print("| " + " | ".join(cells) + " |", flush=True)

    def markdown(self) -> str:
        lines = [f"# {self.title}", ""]
        for key, value in self.header.items():
            if isinstance(value, dict):
                value = ", ".join(f"{k} {v}" for k, v in value.items())
            lines.append(f"- **{key}**: {value}")
        lines.append("")
        return "\n".join(lines) + "\n".join(s.markdown() for s in self.sections)

    def payload(self) -> dict[str, Any]:
        """The report as ``report.json`` holds it (what ``tests/bench/compare.py`` reads)."""
        return {
            "title": self.title,
            **self.header,
            "sections": [
                {
                    "title": s.title,
                    "intro": s.intro,
                    "tables": [{"columns": t.columns, "rows": t.rows} for t in s.tables],
                    "notes": s.notes,
                    "data": s.data,
                }
                for s in self.sections
            ],
        }

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        payload = self.payload()
        (folder / "report.json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
        (folder / "report.md").write_text(self.markdown())


def short_figures(data: Any) -> int:
    """How many figures (``Figure.data()`` dicts, found at any depth) rest on fewer than
    :data:`MIN_RUNS` runs."""
    if isinstance(data, dict):
        if isinstance(data.get("runs"), list) and "median" in data:
            return int(len(data["runs"]) < MIN_RUNS)
        return sum(short_figures(v) for v in data.values())
    if isinstance(data, list):
        return sum(short_figures(v) for v in data)
    return 0
