"""``tests/bench/compare.py`` on made-up reports: the machine's gauge, what counts as moved, the
verdicts that changed, points in one run only, and clear errors for what is not a report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.bench import compare, run
from tests.bench.framework import Report, Section

SHAPE = {"partitions": 1000, "instances": 10, "threads": 1, "standbys": 0, "topics": 1}
SHAPE_S1 = dict(SHAPE, standbys=1)


def figure(*runs: float) -> dict[str, Any]:
    ordered = sorted(runs)
    return {"median": ordered[len(ordered) // 2], "min": ordered[0], "max": ordered[-1],
            "runs": list(runs)}


def scaled(runs: tuple[float, ...], by: float) -> tuple[float, ...]:
    return tuple(r * by for r in runs)


def peer_row(shape: dict[str, Any], ours: tuple[float, ...], faust: tuple[float, ...],
             sticky: tuple[float, ...], verdict: str = "misses goal (<= 0.1)") -> dict[str, Any]:
    return {
        "kind": "peer", "shape": shape, "rebalance": "second",
        "ours_ms": figure(*ours), "faust_ms": figure(*faust), "sticky_ms": figure(*sticky),
        "roundrobin_ms": None,
        "ours_over_faust": figure(*(a / b for a, b in zip(ours, faust, strict=True))),
        "ours_over_sticky": figure(*(a / b for a, b in zip(ours, sticky, strict=True))),
        "verdict_faust": verdict, "verdict_sticky": "meets",
    }


def report(rows: list[dict[str, Any]], **header: Any) -> dict[str, Any]:
    return {"title": "t", "started": "s", "commit": "c", "versions": {"aiokafka": "0.14.0"},
            **header, "sections": [{"title": "x", "data": rows}]}


OURS = (10.0, 10.5, 11.0, 10.2, 10.8)
FAUST = (20.0, 21.0, 22.0, 20.5, 21.5)
STICKY = (100.0, 101.0, 102.0, 100.5, 101.5)


def test_the_gauge_is_the_peers_change_and_counts_a_repeated_run_once() -> None:
    # twice as slow a machine: every peer's time doubled; the s=1 row repeats the s=0 row's
    # sticky runs (as aiokafka's s=1 rows do), so sticky counts one figure, not two
    old = report([peer_row(SHAPE, OURS, FAUST, STICKY), peer_row(SHAPE_S1, OURS, FAUST, STICKY)])
    new = report([
        peer_row(SHAPE, scaled(OURS, 2), scaled(FAUST, 2), scaled(STICKY, 2)),
        peer_row(SHAPE_S1, scaled(OURS, 2), scaled(FAUST, 2.2), scaled(STICKY, 2)),
    ])
    changes = compare.machine_change(compare.entries(old), compare.entries(new))
    assert changes["aiokafka sticky"] == pytest.approx([2.0])
    assert sorted(changes["Faust"]) == pytest.approx([2.0, 2.2])
    text = compare.compare(old, new)
    assert "all peers: **2.00x**" in text
    # ours doubled too: moved in ms, but not against the machine; the ratio at s=0 did not move
    assert "| 2.00x | 1.00x |" in text


def test_a_figure_moves_only_when_the_ranges_part_on_enough_runs() -> None:
    before = compare.Entry("s", "p", "r", "m", "ours", figure(10, 11, 12))
    overlapping = compare.Entry("s", "p", "r", "m", "ours", figure(11.5, 12.5, 13))
    apart = compare.Entry("s", "p", "r", "m", "ours", figure(13, 14, 15))
    single = compare.Entry("s", "p", "r", "m", "ours", figure(30))
    assert not compare.moved(before, overlapping)
    assert compare.moved(before, apart)
    assert compare.moved(apart, before)
    assert not compare.moved(before, single)  # one run has no spread to judge by
    old = report([peer_row(SHAPE, OURS, FAUST, STICKY)])
    new = report([peer_row(SHAPE, (30.0,), (21.0,), (101.0,))])
    assert "Not judged: 3 of the figures above" in compare.compare(old, new)


def test_ratios_that_moved_and_verdicts_that_changed_are_listed() -> None:
    old = report([peer_row(SHAPE, OURS, FAUST, STICKY)])
    slower = scaled(OURS, 2.5)  # ours / Faust from about 0.5 to about 1.24
    new = report([peer_row(SHAPE, slower, FAUST, STICKY, verdict="misses must (<= 1)")])
    text = compare.compare(old, new)
    verdicts = text.split("## Verdicts that changed")[1].split("##")[0]
    assert "ours / Faust" in verdicts
    assert "misses goal (<= 0.1)" in verdicts and "misses must (<= 1)" in verdicts
    ratios = text.split("## Ratios")[1].split("##")[0]
    assert "| ours / Faust |" in ratios and "| 2.50x |" in ratios
    # unchanged peers: the gauge is 1, so ours against the machine is its own change
    assert "| 2.50x | 2.50x |" in text
    assert "None moved." not in ratios
    same = compare.compare(old, old)
    assert same.count("None moved.") == 2 and "None.\n" in same


def test_points_in_one_run_only_are_named_or_counted() -> None:
    java = {"kind": "java", "point": "ManyThreadsPerClient", "rebalance": "first",
            "ours_leader_ms": figure(50, 51, 52), "java_ha_ms": figure(10, 11, 12),
            "java_threads_ms": figure(20, 21, 22), "leader_over_java": figure(1.6, 1.7, 1.8),
            "verdict": "misses goal (<= 1)"}
    old = report([peer_row(SHAPE, OURS, FAUST, STICKY), java])
    new = report([peer_row(SHAPE, OURS, FAUST, STICKY)])
    assert "Points only in the old run (1): Java grid: ManyThreadsPerClient." in \
        compare.compare(old, new)
    # Java's two steps are added run by run into the figure that gauges the machine
    entry = compare.entries(old)[("Java grid", "ManyThreadsPerClient", "first",
                                   "Java HA + threads ms")]
    assert entry.figure["runs"] == [30, 32, 34] and entry.kind == "peer"
    many = report([peer_row(dict(SHAPE, partitions=p), OURS, FAUST, STICKY)
                   for p in range(1, 12)])
    assert "Points only in the old run: peer grid 11." in compare.compare(many, report([]))


def test_versions_that_differ_are_shown_and_weaken_the_gauge() -> None:
    old = report([peer_row(SHAPE, OURS, FAUST, STICKY)])
    new = report([peer_row(SHAPE, OURS, FAUST, STICKY)], versions={"aiokafka": "0.15.0"})
    text = compare.compare(old, new)
    assert "| aiokafka | 0.14.0 | 0.15.0 |" in text
    assert "| budget |" not in text
    longer = report([peer_row(SHAPE, OURS, FAUST, STICKY)], budget="2x every section's")
    assert "| budget | 1x | 2x every section's |" in compare.compare(old, longer)
    assert "the gauge is only indicative" in text
    assert "only indicative" not in compare.compare(old, old)


def test_what_is_not_a_report_is_refused_by_name(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing"
    assert compare.main([str(missing), str(missing)]) == 2
    assert f"{missing}: no such report" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert compare.main([str(broken), str(broken)]) == 2
    assert "not readable as JSON" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"title": "x"}))
    assert compare.main([str(other), str(other)]) == 2
    assert "not a benchmark report" in capsys.readouterr().err
    with pytest.raises(compare.ReportError, match="no run yet"):
        compare.newest_run(tmp_path / "results")


def test_a_folder_stands_for_its_report_and_the_newest_run_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    for stamp, commit in (("20260101T000000Z", "older"), ("20260102T000000Z", "newer")):
        folder = results / stamp
        folder.mkdir(parents=True)
        (folder / "report.json").write_text(json.dumps(
            report([peer_row(SHAPE, OURS, FAUST, STICKY)], commit=commit)))
    assert compare.newest_run(results) == results / "20260102T000000Z" / "report.json"
    assert compare.main([str(results / "20260101T000000Z"),
                         str(results / "20260102T000000Z")]) == 0
    assert "| commit | older | newer |" in capsys.readouterr().out


def test_a_report_ends_with_the_machine_and_verdicts_against_the_published_one(
    tmp_path: Path,
) -> None:
    def made(rows: list[dict[str, Any]]) -> Report:
        made = Report("t", {"started": "now", "commit": "new", "mode": "full"})
        made.sections.append(Section("peers", data=rows))
        return made

    published = tmp_path / "latest.json"
    alone = made([peer_row(SHAPE, OURS, FAUST, STICKY)])
    run.against_published(alone, published)  # nothing published yet: nothing added
    assert [s.title for s in alone.sections] == ["peers"]

    published.write_text(json.dumps(report([peer_row(SHAPE, OURS, FAUST, STICKY)],
                                           commit="old", mode="full", took="1800 s")))
    slow = made([peer_row(SHAPE, scaled(OURS, 3), scaled(FAUST, 2), scaled(STICKY, 2),
                          verdict="misses must (<= 1)")])
    run.against_published(slow, published)
    added = slow.sections[-1]
    assert added.title == f"Against the published report ({published})"
    assert "commit old, full, took 1800 s" in added.intro
    assert "all peers: **2.00x**" in added.intro
    assert "misses must (<= 1)" in added.intro and "Verdicts that changed:" in added.intro
    assert "2 ratios moved (2 up, against ours; 0 down)" in added.intro
    assert "1 of our figures in ms (1 of them slower than the machine explains)" in added.intro

    published.write_text("[]")
    broken = made([])
    run.against_published(broken, published)
    assert broken.sections[-1].intro.startswith("Not compared: ")
    assert "not a benchmark report" in broken.sections[-1].intro


def test_right_after_make_bench_the_default_old_is_the_committed_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    this_run = report([peer_row(SHAPE, OURS, FAUST, STICKY)], started="B", commit="new")
    published = tmp_path / "latest.json"
    published.write_text(json.dumps(this_run))  # `make bench` has just replaced it
    results = tmp_path / "results" / "20260102T000000Z"
    results.mkdir(parents=True)
    (results / "report.json").write_text(json.dumps(this_run))
    monkeypatch.setattr(compare, "PUBLISHED", published)
    monkeypatch.setattr(compare, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(compare, "committed_published", lambda: report(
        [peer_row(SHAPE, OURS, FAUST, STICKY)], started="A", commit="old"))
    assert compare.main(["--new", str(results)]) == 0
    captured = capsys.readouterr()
    assert "| started | A | B |" in captured.out
    assert "comparing with the one the last commit holds" in captured.err
    # an OLD named on purpose is taken as it is, even when it is the same run
    assert compare.main(["--old", str(published), "--new", str(results)]) == 0
    assert "| started | B | B |" in capsys.readouterr().out
    monkeypatch.setattr(compare, "committed_published", lambda: None)  # not committed yet
    assert compare.main(["--new", str(results)]) == 0
    assert "| started | B | B |" in capsys.readouterr().out
