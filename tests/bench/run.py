"""``make bench`` / ``make bench-quick``: one report of where the leader stands.

Sections (``docs/bench/README.md`` explains how to read them):

1. the peer grid: ours vs Faust's ``PartitionAssignor`` and aiokafka's sticky and round-robin,
   each driven through aiokafka's interface (``tests/bench/drivers.py``), interleaved in one
   worker process per side; first rebalance and the second after an instance leaves;
2. wire bytes of the same runs: JoinGroup metadata and SyncGroup assignment, per member and per
   group;
3. Kafka's ``StreamsAssignmentScaleTest`` grid against Kafka's Java assignor in the harness JVM,
   like for like (HA + threads) and with our full leader path;
4. growth curves of our leader in partitions and in members, against the physical limit;
5. the older benches, verbatim: protocol size vs Kafka v11, the shim's cost, task planning;
6. last, the machine and the verdicts against the published ``docs/bench/latest.json``
   (``tests/bench/compare.py``).

Every timed figure is the median (min-max) of up to ``--runs`` warm runs (5 by default; fewer
only when a point's budget ran out, and then ``n=`` says so, a note names the point and the
summary counts such figures), each target beside its figure with a verdict. The full report has
``FULL_TOTAL_S``: the peer grid, which needs the most, runs last on what the others left.
Benchmarks never fail on timings: the exit status is non-zero only when the bench cannot run.
Results go to ``bench-results/<timestamp>/report.{json,md}``; ``--publish`` also copies both
to ``docs/bench/latest.{md,json}`` (``make bench-compare`` compares a run with the JSON).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from protocol._limits import MAX_HOST_MAP_PARTITIONS  # noqa: E402
from tests.bench.framework import (  # noqa: E402
    CLOSE_CALL_RUNS_FACTOR,
    CLOSE_CALL_SHARE,
    MIN_RUNS,
    Budget,
    Figure,
    Report,
    Section,
    Table,
    Target,
    Worker,
    WorkerFailed,
    close_call,
    fill_cheapest_first,
    interleave,
    number_text,
    ratio,
    short_figures,
)

STEP_COLUMNS = (
    "1 decode subscriptions", "1b screen members (clones, versions)", "2-3 plan tasks",
    "4a client states (lags)", "4b task assignor (HA)", "5 tasks to threads", "6a host maps",
    "6b encode answers", "adapter (answer bytes, summary, metrics)",
    "gc pauses (inside the steps)", "assign() total",
)
KAFKA_VERSION = "4.1.2"  # tests/conformance/pom.xml
LIMIT_MS_PER_10K_TASKS = 3.0  # the physical limit: a few ms per 10,000 tasks

VS_JAVA = Target("ours / Java", must=2.0, goal=1.0)
VS_FAUST = Target("ours / Faust", must=1.0, goal=0.1)
VS_STICKY = Target("ours / aiokafka sticky", must=1.0)
BIG_GROUP_MS = Target("100,000 partitions / 1,000 members, ms", must=10_000.0, goal=1_000.0)

PEER_POINTS = ((1000, 10), (1000, 100), (1000, 1000), (6000, 2), (10000, 100))
QUICK_PEER_POINTS = ((1000, 10), (1000, 100), (6000, 2))
GROWTH_PARTITIONS = (1_000, 10_000, 100_000)
GROWTH_MEMBERS = (10, 100, 1_000, 10_000)
QUICK_GROWTH_PARTITIONS = (1_000, 3_000, 10_000)  # over 100 members only
QUICK_GROWTH_MEMBERS = (10, 100, 1_000)  # over 1,000 partitions
# Seconds per section, shared out over its points (fewer runs where a point is slow, and the
# figure says n=): the full report fits in 30 minutes, the quick one in a few.
BIG_GROWTH_POINTS = ((100_000, 1_000), (10_000, 10_000))  # the growth targets
BIG_POINT_CAP_S = 120.0  # each, in the growth budget: past it the point says 'did not finish'
#: Untimed Java calls per round before its timed ones, at most: Kafka's assignor on
#: ManyThreadsPerClient settles after about 30 calls (HA + threads, medians of ten calls in a
#: row from a cold JVM: 54.6, 49.6, 32.2, 29.1, 28.7 ms in the first round; 84.1, 53.6, 41.1,
#: 40.4, 39.8 ms in the second), where 3 calls had left it at 38 ms or more in some reports
JAVA_WARMUPS = 40
JAVA_WARM_CALL_S = 1.0  # ... ending after one this long (its loops were long enough for the JIT)
JAVA_WARM_TOTAL_S = 6.0  # ... or after the calls took about this long in all
OLDER_TIMEOUT_S = 180.0  # each older bench: about 10-40 s on a quiet machine
#: bench_sweep: two warm Spark sessions, 5 runs of 120 replays a side: about 3 minutes
SWEEP_TIMEOUT_S = 480.0
#: The full report's whole time. The peer grid runs last and gets what the other sections left
#: of it (at least PEERS_FLOOR_S): it needs the most (about 1,200 s for 5 runs of every point
#: on a quiet machine, estimated; 2 x 1,000 Faust consumers alone about 55 s a run that records
#: its members' bytes and 26 s one that reuses them: ``drivers.story_rounds``) and the others stop
#: as soon as their runs are done. Measured at c6b6e01 on a quiet machine: Java about 150 s,
#: growth about 290 s, the older benches about 215 s.
FULL_TOTAL_S = 1800.0
END_MARGIN_S = 30.0  # kept back for the summary and the report's files
PEERS_FLOOR_S = 600.0
FULL_BUDGET_S = {"peers": PEERS_FLOOR_S, "java": 240.0, "growth": 330.0}
QUICK_BUDGET_S = {"peers": 150.0, "java": 60.0, "growth": 60.0}
#: The report's order (the peers run last, see FULL_TOTAL_S, but print first).
SECTION_ORDER = ("peers", "java", "growth", "older")


def limit_ms(tasks: int, standbys: int) -> float:
    """The physical limit of one rebalance: a few ms per 10,000 task replicas placed."""
    return LIMIT_MS_PER_10K_TASKS * tasks * (1 + standbys) / 10_000


def shape_text(shape: dict[str, Any]) -> str:
    topics = "2 copartitioned topics" if shape["topics"] == 2 else "1 topic"
    return (
        f"P={shape['partitions']:,} C={shape['instances']:,} T={shape['threads']} "
        f"s={shape['standbys']} ({topics})"
    )


# --- the peer grid and wire bytes -------------------------------------------------------------


#: ``--points``: only these (partitions, instances) of the peer and Java grids (all when empty)
ONLY_POINTS: set[tuple[int, int]] = set()


def _selected(partitions: int, instances: int) -> bool:
    return not ONLY_POINTS or (partitions, instances) in ONLY_POINTS


def peer_configs(quick: bool) -> list[dict[str, Any]]:
    return [c for c in _peer_configs(quick) if _selected(c["partitions"], c["instances"])]


def _peer_configs(quick: bool) -> list[dict[str, Any]]:
    configs = []
    if quick:
        for p, c in QUICK_PEER_POINTS:
            for s in (0, 1):
                configs.append(dict(partitions=p, instances=c, threads=1, standbys=s, topics=1))
        configs.append(dict(partitions=1000, instances=10, threads=2, standbys=1, topics=1))
        configs.append(dict(partitions=1000, instances=10, threads=1, standbys=1, topics=2))
        return configs
    for p, c in PEER_POINTS:
        for t in (1, 2):
            for s in (0, 1):
                configs.append(dict(partitions=p, instances=c, threads=t, standbys=s, topics=1))
        configs.append(dict(partitions=p, instances=c, threads=1, standbys=1, topics=2))
    return configs


def peer_grid(
    report: Report, workers: dict[str, Worker], quick: bool, runs: int, budget_s: float
) -> None:
    """The peer grid; ``budget_s`` is the whole section's, shared out over its points."""
    section = report.add(
        Section(
            "Peer grid: ours vs Faust and aiokafka, through aiokafka's interface",
            "Leader ms: `assign()` and then aiokafka's `_on_join_leader` encoding each answer "
            "that is not bytes yet (ours returns bytes; Faust and aiokafka return structs), as "
            "one figure, since both run on the event loop back to back; median (min-max) of "
            "interleaved warm runs, each run a fresh group: **first** rebalance, then the "
            "**second** after one instance (its T consumers) leaves. Ratios are medians of "
            "paired runs. aiokafka's sticky and "
            "round-robin have no standbys: a s=1 row compares with the s=0 run of the same "
            "point; they run at T=1 only (for them T=2 is just a group of 2C consumers, and "
            "sticky's cost there would take the report's time budget). `x limit` is ours over "
            "the physical limit "
            f"({LIMIT_MS_PER_10K_TASKS:g} ms per 10,000 task replicas). Ours is hosted as a "
            "real leader's process is (`tests/bench/leader_only.py`): the leader's instance "
            "real, every other member a real assignor reading its own answer with the host "
            "maps cut to its own endpoint, and `ours member ms` is the mean over the leader's "
            "instance and a sample of 5 members reading the full answer; Faust's and "
            "aiokafka's members are all hosted in their workers (theirs keep little state), and "
            "the same sample does its own work in every run, timed (`Faust member ms` is its "
            "mean in both rebalances); the other members read their first answers in a point's "
            "first run, and in a later run whose first answers are byte for byte that run's, "
            "send the second JoinGroup bytes they sent then instead of reading them again "
            "(`tests/bench/drivers.py`: the leader's inputs and answers are the same bytes; the "
            "note below counts such runs). Each "
            "point's first run comes in a first pass over the grid; then, cheapest point first, "
            "each takes its other runs while they fit in the time left (on a slow machine the "
            "costliest points are the ones left short, each marked `n=`). "
            f"Targets: {VS_FAUST.text()}; {VS_STICKY.text()}.",
        )
    )
    table = Table(
        ["point", "rebalance", "ours ms", "Faust ms", "ours/Faust", "verdict", "sticky ms",
         "ours/sticky", "verdict", "round-robin ms", "ours member ms", "Faust member ms",
         "x limit"]
    )
    section.tables.append(table)
    bytes_table = Table(
        ["point", "rebalance", "JoinGroup B/member ours / Faust / sticky",
         "JoinGroup B/group ours / Faust / sticky",
         "SyncGroup B/member (max) ours / Faust / sticky",
         "SyncGroup B/group ours / Faust / sticky"]
    )
    memory_table = Table(["point", "rebalance", "ours peak MiB", "Faust peak MiB"])
    configs = peer_configs(quick)
    deadline = time.perf_counter() + budget_s
    skipped: list[str] = []
    aiokafka_runs: dict[tuple[Any, ...], dict[str, list[Any]]] = {}
    # Pass 1, cheapest first (members x partitions): one round of every point, so the budget
    # reaches every shape of point before the groups of 1,000 members, and each point's cost
    # is then known rather than guessed. A point is not started when one round of it would
    # overrun the deadline by more than a minute (rated by the last point's seconds per cost).
    # Among points of equal cost, fewer members first: the last, 1,000 instances x 2
    # consumers, then starts pass 2 with its members' record still kept in each worker.
    seconds_per_cost = 0.0
    points: list[_PeerPoint] = []
    for config in sorted(configs, key=lambda c: (_peer_cost(c), _members(c))):
        point_started = time.perf_counter()
        if point_started + seconds_per_cost * _peer_cost(config) > deadline + 60:
            skipped.append(shape_text(config))
            continue
        sides = ["ours", "faust"]
        sibling = dict(config, standbys=0)
        key = tuple(sorted(sibling.items()))
        if config["threads"] == 1 and (config["standbys"] == 0 or sibling not in configs):
            sides += ["sticky", "roundrobin"]
        calls = [
            (side, functools.partial(_story, workers[side], side, config))
            for side in sides
        ]
        results = interleave(calls, 1, 0.0)
        round_s = time.perf_counter() - point_started
        seconds_per_cost = round_s / _peer_cost(config)
        if "sticky" in results:
            aiokafka_runs[key] = {s: results[s] for s in ("sticky", "roundrobin")}
        # One traced run per side for the peak (tracing slows it 2-3x), not timed: only at
        # T=1 and where one run is short.
        one_run_s = max(
            sum(r[rnd]["assign_ms"] for rnd in ("first", "second") if rnd in r) / 1000
            for side in ("ours", "faust") for r in results[side][:1]
        )
        traced = {
            side: _story(workers[side], side, config, trace=True)
            for side in ("ours", "faust")
            if config["threads"] == 1 and one_run_s < 5
        }
        points.append(_PeerPoint(config, key, calls, results, round_s, traced))
    # Pass 2: the other runs - 1 rounds of each point, cheapest first, each point taking all of
    # them while they fit in the time left (``fill_cheapest_first``): on a slow machine the most
    # points reach ``runs``, and those left short are the costliest (1,000 members; 10,000
    # partitions), whose ratios are the furthest from their musts. A point's rounds are taken
    # one at a time and its cost re-rated on the last: its first round here records the
    # members' bytes anew (a worker keeps one point's record), and later rounds reuse them
    # (``drivers.story_rounds``), at the 1,000-member points for about half the cost.

    def one_more_round(i: int) -> float:
        started = time.perf_counter()
        for name, got in interleave(points[i].calls, 1, 0.0).items():
            points[i].results[name].extend(got)  # the aiokafka runs' lists are shared
        return time.perf_counter() - started

    round_costs = [p.round_s for p in points]
    fill_cheapest_first(
        round_costs, [runs - len(p.results["ours"]) for p in points], one_more_round,
        lambda: deadline - time.perf_counter(),
    )
    # Pass 3: close calls. A point whose paired ratio against a peer came within
    # ``CLOSE_CALL_SHARE`` of its must in some run takes more rounds, up to
    # ``CLOSE_CALL_RUNS_FACTOR`` times ``runs``, cheapest first, in whatever time pass 2 left
    # (none on a machine too slow for pass 2: then nothing changes), so the verdicts that could
    # turn on one slow run rest on more runs. More runs move a median in neither direction.
    before = [len(p.results["ours"]) for p in points]
    fill_cheapest_first(
        round_costs,
        [CLOSE_CALL_RUNS_FACTOR * runs - n if _peer_close_call(p) else 0
         for p, n in zip(points, before, strict=True)],
        one_more_round,
        lambda: deadline - time.perf_counter(),
    )
    for point, cost in zip(points, round_costs, strict=True):
        point.round_s = cost
    closer = [f"{shape_text(p.config)} {n} -> {len(p.results['ours'])}"
              for p, n in zip(points, before, strict=True) if len(p.results["ours"]) > n]
    section.notes.append(
        f"Close calls (a paired ratio within {1 - CLOSE_CALL_SHARE:.0%} of its must, or past "
        f"it, in some run) took more runs while time was left: "
        + ("; ".join(closer) if closer else "none (none was close, or no time was left)")
        + ".")
    print(section.notes[-1], flush=True)
    peer_runs = [(r.get("members_read", 0), _members(p.config)) for p in points
                 for side in ("faust", "sticky", "roundrobin") for r in p.results.get(side, [])]
    section.notes.append(
        "Runs of Faust and aiokafka in which only the sample read its first answers, the others "
        "sending the recorded second JoinGroup bytes (their first answers byte-identical to "
        f"the recorded run's): {sum(1 for read, n in peer_runs if read < n)} of "
        f"{len(peer_runs)}.")
    print(section.notes[-1], flush=True)
    short = [f"{shape_text(p.config)} n={len(p.results['ours'])} (one round "
             f"{p.round_s:.1f} s)" for p in points if len(p.results["ours"]) < runs]
    if short:
        section.notes.append(f"Fewer than {runs} runs, because the section's {budget_s:.0f} s "
                             "ran out: " + "; ".join(short) + ".")
        print(section.notes[-1], flush=True)
    for point in points:
        config, key, results, traced = point.config, point.key, point.results, point.traced
        peers = aiokafka_runs.get(key, {})
        for rnd in ("first", "second"):
            def series(runs_: list[Any], what: str = "assign_ms", rnd: str = rnd) -> list[Any]:
                return _series(runs_, rnd, what)

            ours = series(results["ours"])
            faust = series(results["faust"])
            sticky = series(peers["sticky"]) if peers else []
            robin = series(peers["roundrobin"]) if peers else []
            ours_fig, faust_fig = Figure.of(ours), Figure.of(faust)
            vs_faust = ratio(ours, faust)
            vs_sticky = ratio(ours, sticky) if sticky else None
            sticky_fig = Figure.of(sticky) if sticky else None
            robin_fig = Figure.of(robin) if robin else None
            ours_member = Figure.of(series(results["ours"], "member_ms"))
            faust_member = Figure.of(series(results["faust"], "member_ms"))
            tasks = config["partitions"]
            limit = limit_ms(tasks, config["standbys"])
            cells = [
                shape_text(config), rnd, _t(ours_fig), _t(faust_fig), _t(vs_faust),
                VS_FAUST.verdict(vs_faust), _t(sticky_fig), _t(vs_sticky),
                VS_STICKY.verdict(vs_sticky) if sticky else "-", _t(robin_fig),
                _t(ours_member), _t(faust_member),
                f"{ours_fig.median / limit:,.0f}x" if ours_fig else "-",
            ]
            data = {
                "kind": "peer", "shape": config, "rebalance": rnd,
                "ours_ms": _d(ours_fig), "faust_ms": _d(faust_fig), "sticky_ms": _d(sticky_fig),
                "roundrobin_ms": _d(robin_fig), "ours_over_faust": _d(vs_faust),
                "ours_over_sticky": _d(vs_sticky), "verdict_faust": VS_FAUST.verdict(vs_faust),
                "verdict_sticky": VS_STICKY.verdict(vs_sticky) if sticky else None,
                "ours_member_ms": _d(ours_member), "faust_member_ms": _d(faust_member),
                "limit_ms": limit,
            }
            Report.row(section, table, cells, data)
            first_run = {s: results[s][0] for s in results} | {
                s: peers[s][0] for s in peers if s not in results
            }
            b = {s: r.get(rnd) for s, r in first_run.items()}
            if all(v is not None for v in b.values()):
                def trio(what: str, b: dict[str, Any] = b) -> str:
                    return " / ".join(
                        f"{b[s][what]:,}" if s in b else "-" for s in ("ours", "faust", "sticky")
                    )

                bytes_table.rows.append([
                    shape_text(config), rnd, trio("join_bytes_max"), trio("join_bytes_group"),
                    trio("sync_bytes_max"), trio("sync_bytes_group"),
                ])
                section.data.append({"kind": "bytes", "shape": config, "rebalance": rnd,
                                     **{s: b[s] for s in b}})
            if traced and all(rnd in t for t in traced.values()):
                memory_table.rows.append([
                    shape_text(config), rnd,
                    f"{traced['ours'][rnd]['peak_mib']:.1f}",
                    f"{traced['faust'][rnd]['peak_mib']:.1f}",
                ])
                section.data.append({"kind": "memory", "shape": config, "rebalance": rnd,
                                     "ours_peak_mib": traced["ours"][rnd]["peak_mib"],
                                     "faust_peak_mib": traced["faust"][rnd]["peak_mib"]})
    grid_order = {shape_text(c): i for i, c in enumerate(configs)}
    for t in (table, bytes_table, memory_table):
        t.rows.sort(key=lambda row: grid_order[row[0]])  # stable: first before second
    if skipped:
        section.notes.append(f"Not measured (the section's {budget_s:.0f} s were spent): "
                             + "; ".join(skipped) + ".")
        print(section.notes[-1], flush=True)
    wire = report.add(Section(
        "Wire bytes: JoinGroup and SyncGroup, ours vs Faust vs aiokafka sticky",
        "Bytes of the ConsumerProtocol structs aiokafka sends (user data included), from the "
        "first run of each peer-grid point: per member (the largest) and summed over the group. "
        "Ours vs Kafka's v11 encoding of the same content is in the protocol-size section.",
    ))
    wire.tables.append(bytes_table)
    print(bytes_table.markdown(), flush=True)
    memory = report.add(Section(
        "Peak memory of the leader's assign() (tracemalloc)",
        "One extra traced run per T=1 peer-grid point where a run takes under 5 s (tracing "
        "slows it 2-3x; not timed); the growth section has ours at larger points.",
    ))
    memory.tables.append(memory_table)
    print(memory_table.markdown(), flush=True)


@dataclass
class _PeerPoint:
    """One peer-grid point between the passes: its calls, the runs so far, one round's cost."""

    config: dict[str, Any]
    key: tuple[Any, ...]  # the s=0 sibling's, under which aiokafka's runs are kept
    calls: Sequence[tuple[str, Callable[[], Any]]]
    results: dict[str, list[Any]]
    round_s: float  # wall seconds of its last round (every side once), the first in pass 1
    traced: dict[str, Any]


def _series(runs: list[Any], rnd: str, what: str = "assign_ms") -> list[Any]:
    """One figure of one rebalance, run by run (``None`` where a run has no such rebalance)."""
    return [r[rnd][what] if rnd in r else None for r in runs]


def _peer_close_call(point: _PeerPoint) -> bool:
    """Whether the point's ratio against Faust, or against aiokafka's sticky where the point
    runs it, is a close call (``framework.close_call``) in either rebalance."""
    for rnd in ("first", "second"):
        ours = _series(point.results["ours"], rnd)
        for side, target in (("faust", VS_FAUST), ("sticky", VS_STICKY)):
            theirs = point.results.get(side)
            if theirs and close_call(ratio(ours, _series(theirs, rnd)), target):
                return True
    return False


def _members(config: dict[str, Any]) -> int:
    return int(config["instances"] * config["threads"])


def _peer_cost(config: dict[str, Any]) -> int:
    """A point's rough cost: members times partitions (times topics)."""
    return int(config["instances"] * config["threads"] * config["partitions"] * config["topics"])


def _story(worker: Worker, side: str, shape: dict[str, Any], **options: Any) -> Any:
    """One run of a side: ours hosts only the leader's process (``leader_only``), the peers
    every member (``drivers.story``)."""
    if side == "ours":
        return worker.call("leader_story", shape=shape, **options)
    return worker.call("story", side=side, shape=shape, **options)


def _t(figure: Figure | None) -> str:
    return figure.text() if figure is not None else "-"


def _d(figure: Figure | None) -> dict[str, Any] | None:
    return figure.data() if figure is not None else None


# --- Kafka's scale grid against Java ------------------------------------------------------------


def java_grid(report: Report, worker: Worker, quick: bool, runs: int, budget_s: float) -> None:
    """Kafka's scale grid; ``budget_s`` is the whole section's (the JVM warm-up outside it)."""
    from tests.bench.bench_assignor_scale import GRID

    # Issue 11's points first (6,000 partitions / 2 clients; 1,000 threads per client), the
    # costliest for Java's side last, so a spent budget leaves those out rather than these.
    first_names = ("LargePartitionCount", "ManyThreadsPerClient")
    points = sorted(
        (
            g
            for g in GRID
            if not (quick and g[1] * g[2] * g[3] > 20_000) and _selected(g[1], g[2])
        ),
        key=lambda g: (g[0] not in first_names, first_names.index(g[0]) if g[0] in first_names
                       else 0),
    )
    budget = Budget(budget_s, len(points))
    section = report.add(Section(
        "Kafka's StreamsAssignmentScaleTest grid: ours vs Kafka's Java assignor",
        "Rounds: **first** (from nothing), **second** (the same clients reporting what the "
        "first decided). Java: `HighAvailabilityTaskAssignor.assign` + `assignTasksToThreads` "
        f"(kafka-streams {KAFKA_VERSION}) in one long-lived JVM, JIT warmed up, one run per call, "
        "interleaved with ours. *Like for like*: our HA assignment + tasks to threads on "
        "pre-built client states (the figures `bench_assignor_scale` always printed). *Full "
        "leader*: our whole `assign()` through aiokafka's interface (decode, pipeline, "
        "encode), with only the leader's process hosted (its T consumers real, the other "
        "members light, as in the growth section), the figure the target applies to: "
        f"{VS_JAVA.text()}.",
    ))
    table = Table(
        ["point", "round", "ours HA ms", "Java HA ms", "HA ratio", "ours threads ms",
         "Java threads ms", "like-for-like ratio", "ours full leader ms", "full leader / Java",
         "verdict"]
    )
    section.tables.append(table)
    steps_table = Table(["point", "round", *STEP_COLUMNS, "Java HA + threads ms"])
    section.tables.append(steps_table)
    section.notes.append(
        "The second table is one more run of our full leader with each step timed "
        "(`tests/bench/steps.py`: wall ms inside each step; `gc pauses` is the collector's "
        "share of them, not extra time; `adapter` is the rest of `assign()`): what the full "
        "leader spends beyond the assignment itself."
    )
    try:
        from tests.support.jvm import JavaHarness, build_harness

        harness = JavaHarness(build_harness())
    except Exception as error:  # no JVM or Maven: say so, run ours alone
        section.notes.append(f"Java reference unavailable: {error}")
        print(section.notes[-1], flush=True)
        harness = None
    deadline = time.perf_counter() + budget_s
    try:
        for name, partitions, n_clients, threads, standbys in points:
            if time.perf_counter() > deadline:  # the report ends on time: say what was left
                section.notes.append(f"{name} not measured: the section's {budget_s:.0f} s "
                                     "were spent.")
                print(section.notes[-1], flush=True)
                continue
            requests = {r: worker.call("scale_java_request", name=name, round_no=r) for r in (1, 2)}
            if harness is not None:
                for r in (1, 2):
                    _warm_java(harness, requests[r])

            def java(
                r: int, requests: dict[int, Any] = requests
            ) -> dict[str, float] | None:
                if harness is None:
                    return None
                answer = harness.call("ha", dict(requests[r], bench={"warmup": 0, "runs": 1}),
                                      timeout=1800)
                return {"ha_ms": answer["millis"][0], "threads_ms": answer["threads_millis"][0]}

            calls: list[tuple[str, Callable[[], Any]]] = []
            for r in (1, 2):
                calls.append((f"ours{r}", functools.partial(
                    worker.call, "scale_like_for_like", name=name, round_no=r)))
                calls.append((f"java{r}", functools.partial(java, r)))
            shape = dict(partitions=partitions, instances=n_clients, threads=threads,
                         standbys=standbys, topics=1)
            # As Kafka's test: the second round with the same clients, standbys reporting
            # offset 0 (lag 100,000, beyond acceptable.recovery.lag, so not caught up), so the
            # HA assignor has real work in both rounds.
            leader_call = functools.partial(worker.call, "leader_story", shape=shape,
                                            leave=False, standby_offset=0)
            calls.append(("leader", leader_call))
            share = budget.next()
            began = time.perf_counter()
            results = interleave(calls, runs, share)
            # A close call (some run of the full leader's ratio within CLOSE_CALL_SHARE of the
            # must, or past it) takes more rounds in what is left of the point's share.
            left = share - (time.perf_counter() - began)
            if left > 0 and any(close_call(_java_full_ratio(results, r, rnd), VS_JAVA)
                                for r, rnd in ((1, "first"), (2, "second"))):
                more = interleave(calls, (CLOSE_CALL_RUNS_FACTOR - 1) * runs, left)
                for side, got in more.items():
                    results[side].extend(got)
                section.notes.append(
                    f"{name}: a close call, {len(results['leader'])} runs.")
            # The by-step run counts against the section's budget: skipped once it is spent.
            steps = leader_call(steps=True) if time.perf_counter() < deadline else None
            for r, rnd in ((1, "first"), (2, "second")):
                ours_ha = [x["ha_ms"] for x in results[f"ours{r}"]]
                ours_thr = [x["threads_ms"] for x in results[f"ours{r}"]]
                java_runs = results[f"java{r}"]
                java_ha = [x["ha_ms"] if x else None for x in java_runs]
                java_thr = [x["threads_ms"] if x else None for x in java_runs]
                ours_total = [a + b for a, b in zip(ours_ha, ours_thr, strict=True)]
                java_total = _java_totals(java_runs)
                leader = [x[rnd]["assign_ms"] for x in results["leader"]]
                full = ratio(leader, java_total)
                point = (f"{name}: P={partitions:,} C={n_clients:,} T={threads:,} "
                         f"s={standbys}")
                cells = [
                    point, rnd, _t(Figure.of(ours_ha)), _t(Figure.of(java_ha)),
                    _t(ratio(ours_ha, java_ha)), _t(Figure.of(ours_thr)),
                    _t(Figure.of(java_thr)), _t(ratio(ours_total, java_total)),
                    _t(Figure.of(leader)), _t(full), VS_JAVA.verdict(full),
                ]
                Report.row(section, table, cells, {
                    "kind": "java", "point": name, "rebalance": rnd,
                    "ours_ha_ms": _d(Figure.of(ours_ha)), "java_ha_ms": _d(Figure.of(java_ha)),
                    "ours_threads_ms": _d(Figure.of(ours_thr)),
                    "java_threads_ms": _d(Figure.of(java_thr)),
                    "like_for_like_ratio": _d(ratio(ours_total, java_total)),
                    "ours_leader_ms": _d(Figure.of(leader)), "leader_over_java": _d(full),
                    "verdict": VS_JAVA.verdict(full),
                })
                if steps is None:
                    continue
                spent = steps[rnd]["steps_ms"]
                java_med = Figure.of(java_total)
                steps_table.rows.append(
                    [point, rnd]
                    + [number_text(spent.get(label, 0.0)) for label in STEP_COLUMNS]
                    + [number_text(java_med.median) if java_med else "-"]
                )
                section.data.append({"kind": "java_steps", "point": name, "rebalance": rnd,
                                     "steps_ms": spent})
        print(steps_table.markdown(), flush=True)
    finally:
        if harness is not None:
            harness.close()


def _java_totals(java_runs: list[Any]) -> list[float | None]:
    """Java's HA + tasks-to-threads ms of each run (``None`` where the call failed)."""
    return [x["ha_ms"] + x["threads_ms"] if x else None for x in java_runs]


def _java_full_ratio(results: dict[str, list[Any]], r: int, rnd: str) -> Figure | None:
    """Our full leader over Java's HA + threads, run by run, in round ``r`` (``rnd``)."""
    leader = [x[rnd]["assign_ms"] for x in results["leader"]]
    return ratio(leader, _java_totals(results[f"java{r}"]))


def _warm_java(
    harness: Any, request: dict[str, Any], clock: Callable[[], float] = time.perf_counter
) -> None:
    """Warm the JVM on one round's request before its timed calls: one call, and if it ran
    shorter than ``JAVA_WARM_CALL_S`` (its loops too short for the JIT to have compiled them
    yet) more in one request, as many as take about ``JAVA_WARM_TOTAL_S`` at the first one's
    pace, up to ``JAVA_WARMUPS`` in all. At LargeNumConsumers and ManyStandbys one Java call
    takes 5-11 s: one warms it (three took a minute of the section's budget before any timed
    run); at ManyThreadsPerClient a call takes 30-80 ms and the JIT needs about 30."""
    began = clock()
    harness.call("ha", dict(request, bench={"warmup": 1, "runs": 0}), timeout=1800)
    first_s = clock() - began
    if first_s >= JAVA_WARM_CALL_S:
        return
    more = min(JAVA_WARMUPS - 1, int(JAVA_WARM_TOTAL_S / max(first_s, 1e-3)))
    if more > 0:
        harness.call("ha", dict(request, bench={"warmup": more, "runs": 0}), timeout=1800)


# --- growth --------------------------------------------------------------------------------------


def growth(report: Report, quick: bool, runs: int, budget_s: float) -> None:
    """Our leader over partitions and members. Each point runs in a fresh worker hosting only
    the leader's process (``tests/bench/leader_only.py``): the worker's peak resident memory
    is then that point's, and a point that overruns what is left of the section's budget is
    stopped (its worker killed by pid) and reported as such, so the section ends on time."""
    section = report.add(Section(
        "Growth of our leader's assign(): partitions and members",
        "One topic, standbys 1, T=1: the first rebalance, the second after an instance leaves, "
        "and a **stable** third with the same members (a probing rebalance that moves nothing: "
        "the host maps come out equal to the last ones, in new objects, which is where a "
        "leader-side cache that compares them per member shows). Each point runs in its own "
        "worker that hosts **only the leader's process**; every other member is a real "
        "assignor reading its own answer with the host maps cut to its own endpoint (its next "
        "JoinGroup bytes are those of a fully fed member: `tests/bench/test_bench_framework.py`"
        "), and a sample of 5 members reads the full answer (`member ms`, their own "
        "`metadata()` + `on_assignment()`). Median (min-max) ms of warm runs; `n=` when the "
        "point's share of the budget allowed fewer runs. `x limit` is the distance from the "
        f"physical limit ({LIMIT_MS_PER_10K_TASKS:g} ms per 10,000 task replicas); `ms per "
        "10k replicas` shows the growth rate. `RSS MiB`: the worker's peak resident memory "
        "(leader, light members, every answer); `traced MiB`: tracemalloc's peak inside "
        "`assign()` (one extra run, where a run is short). Target at 100,000 partitions over "
        f"1,000 members: {BIG_GROUP_MS.text()} (in ms, both rebalances).",
    ))
    table = Table(["curve", "P", "C", "rebalance", "ours ms", "ms per 10k replicas", "x limit",
                   "member ms", "RSS MiB", "traced MiB", "verdict"])
    section.tables.append(table)
    points: list[tuple[str, int, int]] = []
    if quick:
        points += [("partitions over 100 members", p, 100) for p in QUICK_GROWTH_PARTITIONS]
        points += [("members over 1,000 partitions", 1_000, c) for c in QUICK_GROWTH_MEMBERS]
    else:
        for c in (100, 1000):
            points += [(f"partitions over {c:,} members", p, c) for p in GROWTH_PARTITIONS]
        points += [("members over 10,000 partitions", 10_000, c) for c in GROWTH_MEMBERS]
    # Cheap points first: the last, slowest ones get what is left (at least one run each);
    # a point on both curves is measured once. Of equal members x partitions, fewer partitions
    # first: 10,000 over 1,000 members runs a story in about 2 s, 100,000 over 100 in 13 s
    # (its stable round alone 8 s), and the hash order that broke the tie put the dear one
    # first on a slow day, leaving no time for the other.
    unique = sorted({(p, c) for _, p, c in points}, key=lambda pc: (pc[0] * pc[1], pc[0]))
    # The two big points first, each capped (first and second rebalance, one run):
    # cheap-first order left them no time at all on a loaded machine.
    big_points = [pc for pc in BIG_GROWTH_POINTS if pc in unique] if not quick else []
    unique = big_points + [pc for pc in unique if pc not in big_points]
    deadline = time.perf_counter() + budget_s
    budget: Budget | None = None  # the other points share what the big ones left
    for p, c in unique:
        big = (p, c) in big_points
        left = deadline - time.perf_counter()
        if big:
            left = min(left, BIG_POINT_CAP_S)
        elif budget is None:
            budget = Budget(left, len(unique) - len(big_points))
        if left < 20:
            section.notes.append(f"P={p:,} C={c:,} not measured: the section's time budget "
                                 f"({budget_s:.0f} s) was spent.")
            print(section.notes[-1], flush=True)
            continue
        # Group host maps over the codec's limit go out as each member's own entry (version
        # 4); these points still run without endpoints so that their figures compare with the
        # earlier reports, and the note says so.
        endpoints = p * 2 <= MAX_HOST_MAP_PARTITIONS
        if not endpoints:
            section.notes.append(
                f"P={p:,} C={c:,} runs without endpoints (no host maps), as in earlier reports: "
                f"its group host maps would list {p * 2:,} partitions, over the codec's limit "
                f"of {MAX_HOST_MAP_PARTITIONS:,} (`protocol/_limits.py`), so with endpoints "
                "each member would get its own entry only (version 4)."
            )
            print(section.notes[-1], flush=True)
        shape = dict(partitions=p, instances=c, threads=1, standbys=1, topics=1,
                     endpoints=endpoints)
        started = time.perf_counter()
        try:
            # A big point takes its runs within three quarters of its cap: a run started
            # later could be cut off at the cap, and its time would be lost.
            share = 0.75 * left if big or budget is None else budget.next()
            results, traced, stopped = _growth_point(shape, runs, share, left, stable=not big)
        except WorkerFailed as error:  # the warm-up itself failed
            results, traced, stopped = [], None, str(error)[:200]
        if stopped:
            section.notes.append(f"P={p:,} C={c:,}: {stopped} "
                                 f"({time.perf_counter() - started:.0f} s in all).")
            print(section.notes[-1], flush=True)
        if not results:
            continue
        if len(results) < runs and not stopped:
            section.notes.append(
                f"P={p:,} C={c:,}: n={len(results)} of {runs}: its share of the section's time "
                f"({share:.0f} s) ran out ({time.perf_counter() - started:.0f} s in all).")
            print(section.notes[-1], flush=True)
        for curve, p2, c2 in points:  # print as measured: a failure later keeps these
            if (p2, c2) == (p, c):
                _growth_rows(section, table, curve, p, c, results, traced)


def _growth_point(
    shape: dict[str, Any], runs: int, budget_s: float, left_s: float, *, stable: bool = True
) -> tuple[list[Any], Any, str]:
    """Up to ``runs`` stories of one point, round by round in a fresh worker, within
    ``budget_s`` (at least one story) and never past ``left_s``: a round still running then is
    stopped with its worker, and the rounds already done are kept. Returns the stories, one
    traced story (or None) and what stopped the point early ("" if nothing did)."""
    worker = Worker("growth")
    deadline = time.perf_counter() + left_s
    results: list[dict[str, Any]] = []
    story: dict[str, Any] = {}
    try:
        worker.call("leader_story", shape=dict(shape, partitions=1000, instances=10))  # warm
        started = time.perf_counter()
        for _ in range(runs):
            worker.call("leader_open", shape=shape, stable=stable)
            story = {}
            while (got := worker.call(
                "leader_next", timeout=max(deadline - time.perf_counter(), 1.0)
            )) is not None:
                story[got["name"]] = got
                story["rss_mib"] = got["rss_mib"]
            results.append(story)
            if time.perf_counter() - started > budget_s:
                break
        # One traced run for the peak (tracing slows it 2-3x), unless a run already takes long.
        one_run_s = sum(results[0][r]["assign_ms"] for r in ("first", "second")) / 1000
        traced = None
        if one_run_s < 5:
            traced = worker.call("leader_story", shape=shape, trace=True,
                                 timeout=max(deadline - time.perf_counter(), 1.0))
        return results, traced, ""
    except WorkerFailed as error:
        if not results and "first" in story:
            results.append(story)
        done = ", ".join(k for k in ("first", "second", "stable") if k in story) or "no round"
        return results, None, (f"stopped after {left_s:.0f} s (its cap or the section's end) "
                               f"({done} finished in the run under way): {str(error)[:160]}")
    finally:
        worker.close()


def _growth_rows(
    section: Section, table: Table, curve: str, p: int, c: int, results: list[Any], traced: Any
) -> None:
    rss = max(r["rss_mib"] for r in results)
    errors = sorted({r[rnd]["error"] for r in results for rnd in ("first", "second", "stable")
                     if r.get(rnd, {}).get("error")})
    for rnd in ("first", "second", "stable"):
        big = p == 100_000 and c == 1000 and rnd != "stable"
        point = f"{p:,}" + (" (no endpoints)" if p * 2 > MAX_HOST_MAP_PARTITIONS else "")
        fig = Figure.of([r[rnd]["assign_ms"] for r in results if rnd in r])
        member = Figure.of([r[rnd]["member_ms"] for r in results if rnd in r])
        if (fig is None or member is None) and rnd == "stable" and p * c >= 10**8:
            continue  # the big points run first and second only
        if fig is None or member is None:
            Report.row(section, table, [
                curve, point, f"{c:,}", rnd, "not finished", "-", "-", "-", f"{rss:,.0f}", "-",
                "misses must (did not finish)" if big else "-",
            ], {"kind": "growth", "curve": curve, "partitions": p, "members": c,
                "rebalance": rnd, "ours_ms": None, "rss_mib": rss, "errors": errors})
            continue
        limit = limit_ms(p, 1)
        peak = traced[rnd]["peak_mib"] if traced and rnd in traced else None
        Report.row(section, table, [
            curve, point, f"{c:,}", rnd, fig.text(),
            f"{fig.median / (p * 2 / 10_000):.1f}", f"{fig.median / limit:,.0f}x",
            number_text(member.median), f"{rss:,.0f}",
            f"{peak:.1f}" if peak is not None else "-",
            f"leader answered {errors[0][:120]}" if errors
            else BIG_GROUP_MS.verdict(fig) if big else "-",
        ], {"kind": "growth", "curve": curve, "partitions": p, "members": c,
            "rebalance": rnd, "ours_ms": fig.data(), "member_ms": member.data(),
            "limit_ms": limit, "rss_mib": rss, "peak_mib": peak, "errors": errors})


# --- the older benches -----------------------------------------------------------------------


def older_benches(report: Report, quick: bool) -> None:
    for script, title in (
        ("bench_protocol_size.py", "Protocol size: ours vs Kafka v11 (bench_protocol_size)"),
        ("bench_shim.py", "The shim's own cost per member per rebalance (bench_shim)"),
        ("bench_simulator.py", "The simulator's scenarios per second and where time goes "
                               "(bench_simulator)"),
        ("bench_sweep.py", "The Spark sweep on local[1] and local[2]: per core and speed-up "
                           "(bench_sweep)"),
        ("bench_tasks.py", "Steps 2-3: task planning at 6,000 partitions (bench_tasks)"),
    ):
        section = report.add(Section(title))
        env = dict(os.environ, PYTHONPATH=str(ROOT), BENCH_QUICK="1" if quick else "0")
        timeout_s = SWEEP_TIMEOUT_S if script == "bench_sweep.py" else OLDER_TIMEOUT_S
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, str(ROOT / "tests" / "bench" / script)], cwd=ROOT, env=env,
                capture_output=True, text=True, timeout=timeout_s, check=False,
            )
        except subprocess.TimeoutExpired as expired:  # the report ends on time regardless
            out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else ""
            section.notes.append(f"```\n{out.strip()}\n```\n(stopped after "
                                 f"{timeout_s:.0f} s: the machine is too loaded)")
            print(section.notes[-1], flush=True)
            continue
        text = done.stdout.strip() or done.stderr.strip()[-2000:]
        section.notes.append(f"```\n{text}\n```\n({time.perf_counter() - started:.0f} s, exit "
                             f"{done.returncode})")
        section.data.append({"kind": "verbatim", "script": script, "stdout": done.stdout,
                             "exit": done.returncode})
        print(section.notes[-1], flush=True)


# --- summary ---------------------------------------------------------------------------------


def summary(report: Report) -> None:
    """Per target: its points, verdicts, the worst point, and how many of its figures rest on
    fewer than ``MIN_RUNS`` runs (the issue asks for none); then the same count for every
    section, so a report that ran short says where."""
    section = Section("Summary: targets and verdicts")
    table = Table(["target", "points", "meets", "misses goal", "misses must", "worst",
                   f"figures on < {MIN_RUNS} runs"])
    section.tables.append(table)
    rows: dict[str, list[tuple[str, float, str, int]]] = {}
    for s in report.sections:
        for d in s.data:
            point = shape_text(d["shape"]) if "shape" in d else d.get("point", "")
            where = f"{point} {d.get('rebalance', '')}"
            if d.get("kind") == "peer":
                if d["ours_over_faust"]:
                    rows.setdefault(VS_FAUST.name, []).append(
                        (where, d["ours_over_faust"]["median"], d["verdict_faust"],
                         short_figures([d["ours_over_faust"], d["ours_ms"], d["faust_ms"]])))
                if d["ours_over_sticky"]:
                    rows.setdefault(VS_STICKY.name, []).append(
                        (where, d["ours_over_sticky"]["median"], d["verdict_sticky"],
                         short_figures([d["ours_over_sticky"], d["ours_ms"], d["sticky_ms"]])))
            if d.get("kind") == "java" and d["leader_over_java"]:
                rows.setdefault(VS_JAVA.name, []).append(
                    (where, d["leader_over_java"]["median"], d["verdict"],
                     short_figures([d["leader_over_java"], d["ours_leader_ms"]])))
            if (d.get("kind") == "growth" and d["partitions"] == 100_000
                    and d["members"] == 1000 and d["rebalance"] != "stable"
                    and d["curve"].startswith("partitions")):
                where = f"P=100,000 C=1,000 {d['rebalance']}"
                if d["ours_ms"] is None:  # did not finish before the section's deadline
                    rows.setdefault(BIG_GROUP_MS.name, []).append(
                        (where + " (did not finish)", float("inf"), "misses must", 1))
                else:
                    ms = d["ours_ms"]["median"]
                    rows.setdefault(BIG_GROUP_MS.name, []).append(
                        (where, ms, BIG_GROUP_MS.verdict(Figure((ms,))),
                         short_figures(d["ours_ms"])))
    for name, found in rows.items():
        worst = max(found, key=lambda f: f[1])
        count = {v: sum(1 for f in found if f[2].startswith(v)) for v in
                 ("meets", "misses goal", "misses must")}
        table.rows.append([name, str(len(found)), str(count["meets"]), str(count["misses goal"]),
                           str(count["misses must"]),
                           f"{worst[1]:,.2f} at {worst[0]}" if worst[1] != float("inf")
                           else worst[0], str(sum(f[3] for f in found))])
    short = {s.title: short_figures(s.data) for s in report.sections}
    section.notes.append(
        f"Figures on fewer than {MIN_RUNS} runs, every section: "
        + (", ".join(f"{title} {n}" for title, n in short.items() if n) or "none")
        + " (a figure's `n=` says how many it rests on)."
    )
    report.sections.insert(0, section)
    print("\n## " + section.title + "\n\n" + table.markdown() + "\n\n" + section.notes[-1],
          flush=True)


def against_published(report: Report, published: Path | None = None) -> None:
    """The report's last section: the machine and the verdicts against the published report
    (``tests/bench/compare.py``'s brief), so a reader of a slow day's figures sees it was the
    machine; nothing when there is none to compare with. ``published``: ``compare.PUBLISHED``
    unless given."""
    from tests.bench import compare

    published = published or compare.PUBLISHED
    if not published.is_file():
        return
    shown = published.relative_to(ROOT) if published.is_relative_to(ROOT) else published
    title = f"Against the published report ({shown})"
    try:
        text = compare.brief(compare.load(published), report.payload())
    except (compare.ReportError, KeyError, TypeError, ValueError) as error:
        text = f"Not compared: {error}"
    section = Section(title, text)
    report.sections.append(section)
    print(f"\n## {title}\n\n{text}", flush=True)


# --- main --------------------------------------------------------------------------------------


def header(quick: bool, versions: dict[str, str]) -> dict[str, Any]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    java = "not found"
    if shutil.which("java"):
        java = subprocess.run(["java", "-version"], capture_output=True, text=True,
                              check=False).stderr.splitlines()[0]
    return {
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "mode": "quick" if quick else "full",
        "commit": commit,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average "
                   f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at start",
        "versions": versions,
        "java": f"kafka-streams {KAFKA_VERSION}, {java}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the reduced grid (a few minutes)")
    parser.add_argument("--runs", type=int, default=5, help="warm runs per figure (default 5)")
    parser.add_argument("--budget", type=float, default=1.0,
                        help="scale every section's time budget and the full report's 30 "
                        "minutes (default 1.0)")
    parser.add_argument("--sections", default="peers,java,growth,older",
                        help="comma-separated: peers, java, growth, older")
    parser.add_argument("--points", default="",
                        help="only these grid points, as P,C pairs separated by ';' (e.g. "
                        "'6000,2'): peer and Java grids; for comparing two checkouts")
    parser.add_argument("--out", type=Path, default=None, help="results folder")
    parser.add_argument("--publish", action="store_true",
                        help="copy to docs/bench/latest.md and latest.json")
    args = parser.parse_args(argv)
    quick = args.quick or os.environ.get("BENCH_QUICK", "") not in ("", "0")
    ONLY_POINTS.clear()
    ONLY_POINTS.update(
        (int(p), int(c)) for p, c in (pair.split(",") for pair in args.points.split(";") if pair)
    )
    budgets = {key: value * args.budget for key, value in (QUICK_BUDGET_S if quick
                                                             else FULL_BUDGET_S).items()}
    wanted = set(args.sections.split(","))
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or ROOT / "bench-results" / stamp
    workers = {side: Worker(side) for side in ("ours", "faust", "sticky", "roundrobin")}
    began = time.perf_counter()
    report: Report | None = None
    failure = ""
    try:
        versions = workers["faust"].call("versions")
        if versions.get("faust-streaming") == "not installed":
            print("faust-streaming is not installed: run `make bench` (it installs the bench "
                  "extra)", file=sys.stderr)
            return 2
        report = Report("streams-assignor benchmark report", header(quick, versions))
        if args.budget != 1.0:  # a report on a longer (or shorter) budget says so first
            report.header["budget"] = (
                f"{args.budget:g}x every section's time budget and the full report's "
                f"{FULL_TOTAL_S / 60:.0f} minutes (--budget {args.budget:g})")
        for key, value in report.header.items():
            print(f"{key}: {value}", flush=True)
        warm = dict(partitions=1000, instances=10, threads=1, standbys=1, topics=1)
        for side, worker in workers.items():  # imports and caches warm before anything counts
            worker.call("story", side=side, shape=warm)
        stage_of: dict[int, int] = {}  # id(section) -> its place in SECTION_ORDER
        for stage in ("java", "growth", "older", "peers"):
            if stage not in wanted:
                continue
            before = len(report.sections)
            if stage == "java":
                # Its own worker for ours, warmed as the others: the peer grid's ours worker
                # then comes to the grid with only its warm-up behind it, as before the grid
                # ran last (the scale shapes' caches and heap stay in this one).
                java_worker = Worker("ours-java")
                try:
                    java_worker.call("story", side="ours", shape=warm)
                    java_worker.call("leader_story", shape=warm)
                    java_grid(report, java_worker, quick, args.runs, budgets["java"])
                finally:
                    java_worker.close()
            elif stage == "growth":
                growth(report, quick, args.runs, budgets["growth"])
            elif stage == "older":
                older_benches(report, quick)
            else:
                peers_s = budgets["peers"]
                if not quick:  # what the other sections left of the whole report's time
                    left = began + FULL_TOTAL_S * args.budget - END_MARGIN_S
                    peers_s = max(left - time.perf_counter(), peers_s)
                peer_grid(report, workers, quick, args.runs, peers_s)
            stage_of.update((id(s), SECTION_ORDER.index(stage))
                            for s in report.sections[before:])
        report.sections.sort(key=lambda s: stage_of.get(id(s), len(SECTION_ORDER)))
    except WorkerFailed as error:  # keep what was measured; say where it stopped
        failure = str(error)
        print(f"the bench could not run to the end: {failure}", file=sys.stderr)
    finally:
        for worker in workers.values():
            worker.close()
    if report is None:
        return 2
    if failure:
        report.sections.append(Section("The bench stopped here", f"```\n{failure[-3000:]}\n```"))
    summary(report)
    report.header["took"] = f"{time.perf_counter() - began:.0f} s"
    against_published(report)
    report.write(out)
    print(f"\nreport written to {out}/report.md and report.json", flush=True)
    if args.publish:  # both: ``tests/bench/compare.py`` compares a run with the JSON
        from tests.bench.compare import PUBLISHED

        PUBLISHED.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "report.md", PUBLISHED.with_suffix(".md"))
        shutil.copyfile(out / "report.json", PUBLISHED)
        print(f"published to {PUBLISHED.with_suffix('.md')} and {PUBLISHED.name}", flush=True)
    return 2 if failure else 0


if __name__ == "__main__":
    raise SystemExit(main())
