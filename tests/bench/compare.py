"""``make bench-compare``: what changed between two benchmark reports, and how much of that is
the machine.

Two runs of ``make bench`` seldom see an equally fast machine: on this project's 2-core box
Faust's own times at the same point and version moved 2.6x from one day to the next (5.6 ms,
then 14.9). So the comparison first gauges the machine from the peers' times (their code does
not change between the runs when their versions do not): per peer, the median of new / old
over the figures both runs have. Then, figure by figure, what moved beyond the noise: the
ratios (each taken within one run, interleaved, so they carry across machines), every verdict
that changed, and our own milliseconds, also divided by the machine's change. A figure counts
as moved when the two runs' ranges (min-max) do not overlap; ``--all`` lists every figure.

``python tests/bench/compare.py [OLD] [NEW] [--all]`` (or ``--old``/``--new``): each a
``report.json`` or the folder holding one; OLD defaults to the published
``docs/bench/latest.json`` (the last commit's, when ``make bench`` has just replaced it with NEW
itself), NEW to the newest run under ``bench-results/``. Prints Markdown; exits 2 when a report
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.framework import MIN_RUNS, Figure, Table, number_text, short_figures  # noqa: E402
from tests.bench.run import shape_text  # noqa: E402

PUBLISHED = ROOT / "docs" / "bench" / "latest.json"
RESULTS = ROOT / "bench-results"
#: the packages whose code the gauge reads: the gauge holds only while these are the same
PEER_PACKAGES = ("aiokafka", "faust-streaming", "mode-streaming", "orjson", "python")

#: Points in one run only are named up to this many, counted per section beyond
LISTED_POINTS = 8

Kind = Literal["ratio", "ours", "peer"]


class ReportError(Exception):
    """A report that cannot be read: the message names the file and what is wrong."""


@dataclass(frozen=True)
class Entry:
    """One figure of a report: ``kind`` says whether it is a ratio (ours over a peer, in one
    run), our milliseconds, or a peer's milliseconds (what gauges the machine)."""

    section: str
    point: str
    rebalance: str
    measure: str
    kind: Kind
    figure: Mapping[str, Any]
    verdict: str | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.section, self.point, self.rebalance, self.measure)

    @property
    def median(self) -> float:
        return float(self.figure["median"])

    def text(self) -> str:
        """As the report printed it (``Figure.text``: median, min-max, ``n=`` when short)."""
        runs = self.figure.get("runs")
        return Figure(tuple(runs)).text() if runs else number_text(self.median)


def load(path: Path) -> dict[str, Any]:
    """A report's JSON, from the file or the folder that holds ``report.json``."""
    file = path / "report.json" if path.is_dir() else path
    if not file.is_file():
        raise ReportError(f"{file}: no such report (run `make bench` or `make bench-quick`)")
    try:
        text = file.read_text()
    except OSError as error:
        raise ReportError(f"{file}: not readable as JSON: {error}") from error
    return _parsed(text, file)


def _parsed(text: str, where: object) -> dict[str, Any]:
    """A report from its JSON text, or a ``ReportError`` naming ``where`` and what is wrong."""
    try:
        report = json.loads(text)
    except ValueError as error:
        raise ReportError(f"{where}: not readable as JSON: {error}") from error
    if not isinstance(report, dict) or not isinstance(report.get("sections"), list):
        raise ReportError(f"{where}: not a benchmark report (it has no 'sections' list)")
    return report


def newest_run(results: Path = RESULTS) -> Path:
    """The latest ``bench-results/<timestamp>/`` that holds a report (timestamps sort)."""
    runs = sorted(p for p in results.glob("*/report.json")) if results.is_dir() else []
    if not runs:
        raise ReportError(f"{results}: no run yet (run `make bench` or `make bench-quick`)")
    return runs[-1]


def _is_figure(value: Any) -> bool:
    return isinstance(value, dict) and "median" in value and "min" in value


def _sum(a: Any, b: Any) -> dict[str, Any] | None:
    """Two paired figures added run by run (Java's HA step and its tasks-to-threads step)."""
    if not (_is_figure(a) and _is_figure(b)):
        return None
    runs = [x + y for x, y in zip(a.get("runs") or [], b.get("runs") or [], strict=False)]
    return Figure(tuple(runs or [a["median"] + b["median"]])).data()


def entries(report: Mapping[str, Any]) -> dict[tuple[str, str, str, str], Entry]:
    """Every comparable figure of a report by (section, point, rebalance, measure)."""
    found: dict[tuple[str, str, str, str], Entry] = {}

    def add(section: str, point: str, rebalance: str, measure: str, kind: Kind,
            figure: Any, verdict: str | None = None) -> None:
        if _is_figure(figure):
            entry = Entry(section, point, rebalance, measure, kind, figure, verdict)
            found.setdefault(entry.key, entry)

    for section in report["sections"]:
        for row in section.get("data") or []:
            kind, rebalance = row.get("kind"), str(row.get("rebalance", ""))
            if kind == "peer":
                point = shape_text(row["shape"])
                add("peer grid", point, rebalance, "ours ms", "ours", row.get("ours_ms"))
                add("peer grid", point, rebalance, "Faust ms", "peer", row.get("faust_ms"))
                add("peer grid", point, rebalance, "aiokafka sticky ms", "peer",
                    row.get("sticky_ms"))
                add("peer grid", point, rebalance, "aiokafka round-robin ms", "peer",
                    row.get("roundrobin_ms"))
                add("peer grid", point, rebalance, "ours / Faust", "ratio",
                    row.get("ours_over_faust"), row.get("verdict_faust"))
                add("peer grid", point, rebalance, "ours / aiokafka sticky", "ratio",
                    row.get("ours_over_sticky"), row.get("verdict_sticky"))
            elif kind == "java":
                point = str(row["point"])
                add("Java grid", point, rebalance, "our full leader ms", "ours",
                    row.get("ours_leader_ms"))
                add("Java grid", point, rebalance, "Java HA + threads ms", "peer",
                    _sum(row.get("java_ha_ms"), row.get("java_threads_ms")))
                add("Java grid", point, rebalance, "full leader / Java", "ratio",
                    row.get("leader_over_java"), row.get("verdict"))
            elif kind == "growth":
                point = f"P={row['partitions']:,} C={row['members']:,}"
                add("growth", point, rebalance, "ours ms", "ours", row.get("ours_ms"))
    return found


def _peer_name(entry: Entry) -> str:
    return entry.measure.removesuffix(" ms")


def machine_change(
    old: Mapping[tuple[str, str, str, str], Entry], new: Mapping[tuple[str, str, str, str], Entry]
) -> dict[str, list[float]]:
    """Per peer, new / old of its medians over the figures both runs have (a figure that repeats
    another's runs, as aiokafka's s=1 rows repeat the s=0 run, counted once)."""
    changes: dict[str, list[float]] = {}
    seen: set[tuple[str, tuple[float, ...]]] = set()
    for key, entry in new.items():
        before = old.get(key)
        if entry.kind != "peer" or before is None or before.median <= 0:
            continue
        name = _peer_name(entry)
        runs = (name, tuple(entry.figure.get("runs") or [entry.median]))
        if runs in seen:
            continue
        seen.add(runs)
        changes.setdefault(name, []).append(entry.median / before.median)
    return changes


#: Fewest runs on each side for a figure to be judged moved: one or two runs have no spread
#: worth the name, so two single runs would "move" at any difference.
JUDGED_RUNS = 3


def judged(entry: Entry) -> bool:
    return len(entry.figure.get("runs") or []) >= JUDGED_RUNS


def moved(before: Entry, after: Entry) -> bool:
    """Whether the two runs' ranges (min-max) do not overlap, each on at least
    ``JUDGED_RUNS`` runs: beyond what the runs' own spread explains."""
    return judged(before) and judged(after) and bool(
        after.figure["min"] > before.figure["max"] or after.figure["max"] < before.figure["min"])


def _spread(values: Iterable[float]) -> str:
    kept = sorted(values)
    return (f"{statistics.median(kept):.2f}x ({kept[0]:.2f}-{kept[-1]:.2f}) "
            f"over {len(kept)} figure{'s' if len(kept) != 1 else ''}")


def _header_table(old: Mapping[str, Any], new: Mapping[str, Any]) -> Table:
    table = Table(["", "old", "new"])
    for field in ("started", "mode", "commit", "took", "machine"):
        table.rows.append([field, str(old.get(field, "-")), str(new.get(field, "-"))])
    if "budget" in old or "budget" in new:  # (``--budget``: absent when 1x)
        table.rows.append(["budget", str(old.get("budget", "1x")), str(new.get("budget", "1x"))])
    old_versions, new_versions = old.get("versions") or {}, new.get("versions") or {}
    for name in sorted(set(old_versions) | set(new_versions)):
        if old_versions.get(name) != new_versions.get(name):
            table.rows.append([name, str(old_versions.get(name, "-")),
                               str(new_versions.get(name, "-"))])
    if old.get("java") != new.get("java"):
        table.rows.append(["java", str(old.get("java", "-")), str(new.get("java", "-"))])
    short = [sum(short_figures(s.get("data")) for s in r["sections"]) for r in (old, new)]
    table.rows.append([f"figures on < {MIN_RUNS} runs", str(short[0]), str(short[1])])
    return table


@dataclass
class Comparison:
    """What :func:`compare` and :func:`brief` print: the machine's gauge, then the figures."""

    changes: dict[str, list[float]]  # per peer, new / old of its figures
    gauge: float | None  # the median over every peer's figures
    peer_versions_differ: bool
    verdicts: Table
    ratios: Table  # those that moved (all with ``show_all``)
    ours: Table
    unjudged: int  # ratios and ours on fewer than JUDGED_RUNS runs in a report
    ratio_changes: list[float]  # new / old of each ratio listed
    ours_vs_machine: list[float]  # new / old over the gauge, of each of ours listed
    only_old: list[tuple[str, str]]
    only_new: list[tuple[str, str]]


def comparison(
    old: Mapping[str, Any], new: Mapping[str, Any], *, show_all: bool = False
) -> Comparison:
    before, after = entries(old), entries(new)
    changes = machine_change(before, after)
    gauge = statistics.median([v for values in changes.values() for v in values]) if changes \
        else None
    result = Comparison(
        changes, gauge,
        any((old.get("versions") or {}).get(p) != (new.get("versions") or {}).get(p)
            for p in PEER_PACKAGES),
        Table(["section", "point", "rebalance", "figure", "old", "new"]),
        Table(["section", "point", "rebalance", "figure", "old", "new", "new / old"]),
        Table(["section", "point", "rebalance", "figure", "old", "new", "new / old",
               "vs machine"]),
        0, [], [],
        sorted({k[:2] for k in before} - {k[:2] for k in after}),
        sorted({k[:2] for k in after} - {k[:2] for k in before}),
    )
    for key, entry in after.items():
        previous = before.get(key)
        if previous is None:
            continue
        if entry.kind != "peer" and not (judged(entry) and judged(previous)):
            result.unjudged += 1
        if entry.verdict != previous.verdict and (entry.verdict or previous.verdict):
            result.verdicts.rows.append([*key, f"{previous.text()}: {previous.verdict}",
                                         f"{entry.text()}: {entry.verdict}"])
        if entry.kind == "peer" or not (show_all or moved(previous, entry)):
            continue
        change = entry.median / previous.median if previous.median else float("inf")
        cells = [*key, previous.text(), entry.text(), f"{change:.2f}x"]
        if entry.kind == "ratio":
            result.ratios.rows.append(cells)
            result.ratio_changes.append(change)
        else:
            result.ours.rows.append([*cells, f"{change / gauge:.2f}x" if gauge else "-"])
            if gauge:
                result.ours_vs_machine.append(change / gauge)
    return result


def _machine_lines(result: Comparison, column: bool = True) -> list[str]:
    if not result.changes:
        return ["No peer figure in both runs: our milliseconds are not adjusted."]
    lines = [f"- {name}: {_spread(values)}" for name, values in sorted(result.changes.items())]
    divides = ", what the `vs machine` column divides by" if column else ""
    lines.append(f"- all peers: **{result.gauge:.2f}x**{divides}")
    if result.peer_versions_differ:
        lines.append("- the peers' or Python's versions differ between the runs: their times "
                     "changed with their code too, so the gauge is only indicative")
    return lines


def compare(old: Mapping[str, Any], new: Mapping[str, Any], *, show_all: bool = False) -> str:
    """The comparison as Markdown (see the module's docstring)."""
    result = comparison(old, new, show_all=show_all)
    parts = ["# Benchmark comparison", "", _header_table(old, new).markdown(), "",
             "## The machine, from the peers' own times (new / old)", "",
             *_machine_lines(result), ""]
    which = "every figure in both runs" if show_all else \
        "figures whose ranges (min-max) do not overlap; `--all` lists every one"
    parts += ["## Verdicts that changed", "",
              result.verdicts.markdown() if result.verdicts.rows else "None.", "",
              f"## Ratios (ours over a peer, within each run): {which}", "",
              result.ratios.markdown() if result.ratios.rows else "None moved.", "",
              f"## Our milliseconds: {which}", "",
              "`vs machine` divides new / old by the peers' change above: below 1, ours got "
              "faster than the machine explains.", "",
              result.ours.markdown() if result.ours.rows else "None moved.", ""]
    if result.unjudged and not show_all:
        parts += [f"Not judged: {result.unjudged} of the figures above (ratios and ours) rest "
                  f"on fewer than {JUDGED_RUNS} runs in one report or both.", ""]
    for label, points in (("only in the old run", result.only_old),
                          ("only in the new run", result.only_new)):
        if len(points) > LISTED_POINTS:  # (a partial run against a full one: counted)
            by_section = Counter(section for section, _ in points)
            listed = ", ".join(f"{section} {n}" for section, n in sorted(by_section.items()))
            parts += [f"Points {label}: {listed}.", ""]
        elif points:
            listed = "; ".join(f"{section}: {point}" for section, point in points)
            parts += [f"Points {label} ({len(points)}): {listed}.", ""]
    return "\n".join(parts)


def brief(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """A few lines for the end of a report: the machine against the run it compares with, the
    verdicts that changed, and how many figures moved (``make bench-compare`` lists them)."""
    result = comparison(old, new)
    ratios_up = sum(1 for change in result.ratio_changes if change > 1)
    ours_up = sum(1 for change in result.ours_vs_machine if change > 1)
    parts = [f"Against the report of {old.get('started', '?')} (commit "
             f"{old.get('commit', '?')}, {old.get('mode', '?')}, took {old.get('took', '?')}). "
             "The machine, from the peers' own times, new / old:", "",
             *_machine_lines(result, column=False),
             ""]
    if result.verdicts.rows:
        parts += ["Verdicts that changed:", "", result.verdicts.markdown(), ""]
    else:
        parts += ["No verdict changed.", ""]
    parts.append(
        f"Beyond the runs' spread (ranges apart, each on {JUDGED_RUNS} runs or more): "
        f"{len(result.ratios.rows)} ratios moved ({ratios_up} up, against ours; "
        f"{len(result.ratios.rows) - ratios_up} down), and {len(result.ours.rows)} of our "
        f"figures in ms ({ours_up} of them slower than the machine explains). "
        "`make bench-compare` lists them.")
    return "\n".join(parts)


def committed_published() -> dict[str, Any] | None:
    """``docs/bench/latest.json`` as the last commit holds it, or ``None`` (no git, or not
    committed yet)."""
    shown = subprocess.run(["git", "show", "HEAD:docs/bench/latest.json"], cwd=ROOT,
                           capture_output=True, text=True, check=False)
    if shown.returncode != 0:
        return None
    try:
        return _parsed(shown.stdout, "HEAD:docs/bench/latest.json")
    except ReportError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old_path", nargs="?", type=Path, metavar="OLD",
                        help="report.json or its folder (default: docs/bench/latest.json)")
    parser.add_argument("new_path", nargs="?", type=Path, metavar="NEW",
                        help="report.json or its folder (default: the newest under "
                             "bench-results/)")
    parser.add_argument("--old", type=Path, help="OLD, as an option (the Makefile's OLD=)")
    parser.add_argument("--new", type=Path, help="NEW, as an option (the Makefile's NEW=)")
    parser.add_argument("--all", action="store_true", help="every figure, not only moved ones")
    args = parser.parse_args(argv)
    old_path = args.old or args.old_path
    new_path = args.new or args.new_path
    try:
        new = load(new_path if new_path is not None else newest_run())
        old = load(old_path if old_path is not None else PUBLISHED)
    except ReportError as error:
        print(f"bench-compare: {error}", file=sys.stderr)
        return 2
    if old_path is None and old.get("started") == new.get("started"):
        # `make bench` has just published this very run: the one it replaced is the commit's
        committed = committed_published()
        if committed is not None and committed.get("started") != new.get("started"):
            print("bench-compare: docs/bench/latest.json is this run (make bench published "
                  "it); comparing with the one the last commit holds", file=sys.stderr)
            old = committed
    print(compare(old, new, show_all=args.all))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
