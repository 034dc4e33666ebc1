"""HTML, PNG, Markdown and JSON from a sweep summary (see :mod:`simulator.report`)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display, the same pixels on any machine

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

Summary = dict[str, Any]

#: Scenario-table metrics drawn as distributions: (summary metric, file, title, log scale).
_BOX_PLOTS: tuple[tuple[str, str, str, bool], ...] = (
    ("unavailable_task_s", "unavailability.png",
     "Task unavailability per scenario (task-seconds with no caught-up active owner)", True),
    ("restored_records", "restored.png", "Records restored by new active owners per scenario",
     True),
    ("rebalances", "rebalances.png", "Rebalances (stable generations) until stable", False),
    ("balance_thread", "balance.png",
     "Final balance: max - min active tasks per thread (0 = perfectly even)", False),
)
#: Every PNG the report draws.
PLOTS: tuple[str, ...] = (*(p[1] for p in _BOX_PLOTS), "moves_per_change.png",
                          "assign_wall.png")
_COLORS = ("#1b6ca8", "#5fa8d3", "#9bd0f0", "#d1495b", "#edae49", "#66a182", "#8d6a9f",
           "#444444")


def _fmt(value: Any) -> str:
    """Numbers as a person reads them: integers with separators, others to 3 significant."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()
                                  and abs(value) < 1e15):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _headline(summary: Summary, family: str) -> list[dict[str, Any]]:
    rows = {h["assignor"]: h for h in summary["headline"] if h["family"] == family}
    return [rows[a] for a in summary["assignors"] if a in rows]


def _color(summary: Summary, assignor: str) -> str:
    return _COLORS[summary["assignors"].index(assignor) % len(_COLORS)]


def _boxes(ax: Axes, summary: Summary, groups: Sequence[str],
           stats_of: Callable[[str, str], dict[str, Any] | None], log: bool) -> None:
    """One box per (group, assignor): quartiles, median, whiskers min..p95, a dot at the max."""
    assignors = summary["assignors"]
    width = 0.8 / max(1, len(assignors))
    highest = 0.0
    for a_index, assignor in enumerate(assignors):
        boxes, positions = [], []
        for g_index, group in enumerate(groups):
            stats = stats_of(group, assignor)
            if not stats or stats.get("p50") is None:
                continue
            boxes.append({"med": stats["p50"], "q1": stats["q1"], "q3": stats["q3"],
                          "whislo": stats["min"], "whishi": stats["p95"],
                          "fliers": [stats["max"]], "label": ""})
            highest = max(highest, float(stats["max"] or 0.0))
            positions.append(g_index - 0.4 + width * (a_index + 0.5))
        if not boxes:
            continue
        drawn = ax.bxp(boxes, positions=positions, widths=width * 0.85, patch_artist=True,
                       showfliers=True, manage_ticks=False)
        for patch in drawn["boxes"]:
            patch.set_facecolor(_color(summary, assignor))
        for flier in drawn["fliers"]:
            flier.set_markerfacecolor(_color(summary, assignor))
            flier.set_markersize(4)
        ax.plot([], [], color=_color(summary, assignor), linewidth=8, label=assignor)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_xlim(-0.6, len(groups) - 0.4)
    if log:
        ax.set_yscale("symlog", linthresh=1.0)
    # every metric drawn is a count or a duration; head room above the maxima for the legend
    ax.set_ylim(0, (highest * 8 if log else highest * 1.3) if highest > 0 else 1)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncols=min(5, len(assignors)), loc="upper left")


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)


def _box_plot(summary: Summary, metric: str, title: str, log: bool, path: Path) -> None:
    families = ["all", *summary["families"]]
    stats = {(h["family"], h["assignor"]): h[metric] for h in summary["headline"]}
    fig, ax = plt.subplots(figsize=(max(8.0, 1.3 * len(families)), 4.5))
    _boxes(ax, summary, families, lambda f, a: stats.get((f, a)), log)
    ax.set_title(title + ("  (symlog scale)" if log else ""), fontsize=10)
    _save(fig, path)


def _moves_plot(summary: Summary, path: Path) -> None:
    families = ["all", *summary["families"]]
    stats = {(m["family"], m["assignor"]): m["moves"] for m in summary["moves_per_change"]}
    fig, ax = plt.subplots(figsize=(max(8.0, 1.3 * len(families)), 4.5))
    _boxes(ax, summary, families, lambda f, a: stats.get((f, a)), True)
    ax.set_title("Task movements (active + standby) per rebalance that changed the membership"
                 "  (symlog scale)", fontsize=10)
    _save(fig, path)


def _assign_wall_plot(summary: Summary, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8.0, 4.5))
    for assignor in summary["assignors"]:
        points = sorted((p["members"], p["p50_ms"], p["p95_ms"]) for p in summary["assign_wall"]
                        if p["assignor"] == assignor and p["p50_ms"] > 0)
        if not points:
            continue
        sizes = [p[0] for p in points]
        color = _color(summary, assignor)
        ax.plot(sizes, [p[1] for p in points], marker="o", color=color, label=assignor)
        ax.plot(sizes, [p[2] for p in points], linestyle=":", color=color)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("group members (bucketed to powers of two)")
    ax.set_ylabel("assign() wall time, ms")
    ax.set_title("Leader's assign() time against group size: median (line), p95 (dotted)",
                 fontsize=10)
    ax.grid(alpha=0.3, which="both")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    _save(fig, path)


def draw_plots(summary: Summary, folder: Path) -> list[str]:
    """Every PNG of :data:`PLOTS` into ``folder``; returns their file names."""
    for metric, name, title, log in _BOX_PLOTS:
        _box_plot(summary, metric, title, log, folder / name)
    _moves_plot(summary, folder / "moves_per_change.png")
    _assign_wall_plot(summary, folder / "assign_wall.png")
    return list(PLOTS)


# -- tables, as (header, rows) shared by the HTML and the Markdown ---------------------------------

Table = tuple[list[str], list[list[str]]]


def _migrating(totals: Mapping[str, Any]) -> str:
    """The not-converged runs whose note says KIP-441 movements were pending at every rebalance
    up to the bound: migrations still under way, Kafka's behaviour (docs/simulator.md)."""
    migrating = totals.get("not_converged_migrating") or 0
    if not migrating:
        return ""
    return (f" ({_fmt(migrating)} of them high-availability migrations still under way at the "
            "bound: KIP-441 movements pending every round, see their note)")


def run_table(summary: Summary) -> Table:
    run, totals = summary.get("run", {}), summary["totals"]
    versions = run.get("versions", {})
    machine = run.get("machine", {})
    rows = [
        ["mix", f"{run.get('mix', '?')}: {run.get('mix_summary', '')}"],
        ["scenarios", f"{_fmt(totals['scenarios'])} x {len(summary['assignors'])} assignors = "
                      f"{_fmt(totals['replays'])} replays; {_fmt(summary['rebalance_rows'])} "
                      "rebalances"],
        ["groups", f"{_fmt(totals['min_processes'])} to {_fmt(totals['max_processes'])} "
                   f"processes, up to {_fmt(totals['max_members'])} members and "
                   f"{_fmt(totals['max_tasks'])} tasks"],
        ["families", ", ".join(summary["families"])],
        ["assignors", ", ".join(summary["assignors"])
         + f" (ours: {', '.join(a for a in summary['assignors'] if a in summary['ours'])})"],
        ["seed", _fmt(run.get("seed"))],
        ["errors / violations / not converged",
         f"{_fmt(totals['errors'])} / {_fmt(totals['violations'])} / "
         f"{_fmt(totals['not_converged'])}{_migrating(totals)}"],
        ["duration", f"{_fmt(run.get('duration_s'))} s (Spark start "
                     f"{_fmt(run.get('spark_start_s'))} s; replays and Parquet "
                     f"{_fmt(run.get('replay_and_write_s'))} s, of which replays "
                     f"{_fmt(run.get('replay_s'))} s with the cores "
                     f"{_fmt(run.get('cores_busy_share'))} busy; "
                     f"{_fmt(run.get('replays_per_s'))} replays/s)"],
        ["machine", f"{machine.get('platform', '?')}, {machine.get('cpus', '?')} CPUs, master "
                    f"{machine.get('master', '?')} (parallelism "
                    f"{machine.get('parallelism', '?')})"],
        ["versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))],
        ["started", str(run.get("started", "?"))],
        ["command", str(run.get("command", "?"))],
    ]
    return ["", ""], rows


def headline_table(summary: Summary, family: str) -> Table:
    """Assignors of one family (or ``all``): median / p95 / max of each metric."""
    header = ["assignor", "replays", "errors", "violations", "converged"]
    header += [f"{m['label']} p50 / p95 / max" for m in summary["metrics"]]
    rows = []
    for h in _headline(summary, family):
        row = [h["assignor"] + (" (ours)" if h["assignor"] in summary["ours"] else ""),
               _fmt(h["replays"]), _fmt(h["errors"]), _fmt(h["violations"]),
               f"{_fmt(h['converged'])} / {_fmt(h['replays'] - h['errors'])}"]
        for m in summary["metrics"]:
            s = h[m["name"]]
            row.append(f"{_fmt(s['p50'])} / {_fmt(s['p95'])} / {_fmt(s['max'])}")
        rows.append(row)
    return header, rows


def short_table(summary: Summary) -> Table:
    """The headline over all families, one line per assignor (what ``make simulate`` prints)."""
    header = ["assignor", "replays", "errors", "violations", "unavail. p50/p95 s",
              "restored p50", "rebalances p50", "moves p50", "balance p50"]
    rows = []
    for h in _headline(summary, "all"):
        rows.append([h["assignor"], _fmt(h["replays"]), _fmt(h["errors"]), _fmt(h["violations"]),
                     f"{_fmt(h['unavailable_task_s']['p50'])}/"
                     f"{_fmt(h['unavailable_task_s']['p95'])}",
                     _fmt(h["restored_records"]["p50"]), _fmt(h["rebalances"]["p50"]),
                     _fmt(h["active_moves"]["p50"]), _fmt(h["balance_thread"]["p50"])])
    return header, rows


def violations_table(summary: Summary) -> Table:
    rows = [[v["assignor"], v["family"], v["kind"], _fmt(v["count"])]
            for v in summary["violation_counts"]]
    return ["assignor", "family", "kind", "count"], rows


def examples_table(summary: Summary) -> Table:
    rows = [[e["assignor"], e["family"], e["kind"], e["detail"], e["replay"]]
            for e in summary["violation_examples"]]
    rows += [[e["assignor"], e["family"], "error", e["error"], e["replay"]]
             for e in summary["errors"]]
    return ["assignor", "family", "kind", "detail", "replay with"], rows


def text_table(table: Table) -> str:
    """Aligned plain text (the terminal)."""
    header, rows = table
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True))]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
              for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _md_table(table: Table) -> str:
    header, rows = table

    def cells(values: Sequence[str]) -> str:
        return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"

    return "\n".join([cells(header), cells(["---"] * len(header)), *map(cells, rows)])


def _html_table(table: Table, code_last: bool = False) -> str:
    header, rows = table
    out = ["<table>"]
    if any(header):
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        cells = []
        for index, value in enumerate(row):
            text = html.escape(str(value))
            if code_last and index == len(row) - 1:
                text = f"<code>{text}</code>"
            cells.append(f"<td>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


_READING = (
    "Each scenario ran once per assignor: the same group, the same timeline, the same seed. "
    "Numbers are per scenario: p50 is the median scenario, p95 the 95th percentile, max the "
    "worst. Task unavailability sums, over tasks, the virtual seconds a task had no caught-up "
    "active owner (aiokafka's protocol is eager: every rebalance stops every task). Records "
    "restored count what new active owners replayed from changelogs before processing. "
    "Rebalances count stable generations of the whole run. Movements count tasks whose active "
    "process changed. Balance is max - min active tasks per thread at the end. Violations are "
    "broken invariants of stable generations (a task active twice, unowned, a standby beside its "
    "active, a copartitioned task split across members), each with the command that replays it."
)
_BOXES = ("Boxes: quartiles and median; whiskers from the minimum to the 95th percentile; the dot "
          "is the maximum. 'all' pools every family.")


def _html(summary: Summary, plots: Sequence[str]) -> str:
    sections = [
        "<h1>streams-assignor: rebalance simulation report</h1>",
        f"<p>{html.escape(_READING)}</p>",
        "<h2>What was run</h2>", _html_table(run_table(summary)),
        "<h2>Headline: all families</h2>", _html_table(headline_table(summary, "all")),
    ]
    for family in summary["families"]:
        sections += [f"<h3>{html.escape(family)}</h3>",
                     _html_table(headline_table(summary, family))]
    sections += ["<h2>Plots</h2>", f"<p>{html.escape(_BOXES)}</p>"]
    sections += [f'<p><img src="{html.escape(name)}" alt="{html.escape(name)}"></p>'
                 for name in plots]
    sections += ["<h2>Violations</h2>",
                 "<p>All of them, and every replay error, are in "
                 '<a href="violations.csv">violations.csv</a>.</p>',
                 _html_table(violations_table(summary)),
                 "<h3>First example of each (assignor, family, kind), and errors</h3>",
                 _html_table(examples_table(summary), code_last=True)]
    style = ("body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:0.5em 0;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
             "th{background:#f0f0f0}img{max-width:100%}code{font-size:12px}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>streams-assignor simulation</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n")


def _markdown(summary: Summary, plots: Sequence[str]) -> str:
    parts = ["# streams-assignor: rebalance simulation report", "", _READING, "",
             "## What was run", "", _md_table(run_table(summary)), "",
             "## Headline: all families", "", _md_table(headline_table(summary, "all")), ""]
    for family in summary["families"]:
        parts += [f"### {family}", "", _md_table(headline_table(summary, family)), ""]
    parts += ["## Violations", "", _md_table(violations_table(summary)), "",
              "### Examples and errors", "", _md_table(examples_table(summary)), "",
              "## Plots", "", _BOXES, ""]
    parts += [f"![{name}]({name})" for name in plots]
    return "\n".join(parts) + "\n"


def render(summary: Summary, folder: Path) -> Path:
    """Write the report into ``folder`` (created); returns the path of ``index.html``."""
    folder.mkdir(parents=True, exist_ok=True)
    plots = draw_plots(summary, folder)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n",
                                         encoding="utf-8")
    (folder / "summary.md").write_text(_markdown(summary, plots), encoding="utf-8")
    index = folder / "index.html"
    index.write_text(_html(summary, plots), encoding="utf-8")
    return index


__all__ = ["PLOTS", "draw_plots", "headline_table", "render", "short_table", "text_table"]
