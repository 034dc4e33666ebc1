"""The scenario model: files a person writes, read back identically, errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.scenarios import (
    ScenarioError,
    load_scenario,
    save_scenario,
    scenario_from_data,
)
from tests.simulator.support import small_scenario

EXAMPLE = Path(__file__).parents[2] / "examples" / "scenarios" / "rolling-restart.toml"


def test_the_example_file_reads_with_its_topology_processes_and_events() -> None:
    scenario = load_scenario(EXAMPLE)
    assert [p.name for p in scenario.processes] == ["pod-0", "pod-1", "pod-2", "pod-3"]
    assert all(p.static and p.threads == 2 for p in scenario.processes)
    assert [e.kind for e in scenario.events] == ["restart"] * 4
    topology = scenario.build_topology()
    assert topology.repartition_topics == (("shop-by-region-repartition", None),)
    assert scenario.assignor_config().num_standby_replicas == 1
    assert scenario.assignor_config(scenario.processes[0]).client_tags == {"zone": "zone-a"}


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_save_then_load_gives_the_same_scenario(tmp_path: Path, suffix: str) -> None:
    scenario = load_scenario(EXAMPLE)
    path = tmp_path / f"copy{suffix}"
    save_scenario(scenario, path)
    assert load_scenario(path) == scenario


def test_every_event_kind_round_trips_through_toml(tmp_path: Path) -> None:
    events = [
        {"kind": "join", "at": 1, "process": "b"},
        {"kind": "leave", "at": 2, "process": "a"},
        {"kind": "crash", "at": 3, "process": "a", "wipe": True},
        {"kind": "restart", "at": 4, "process": "a", "down_s": 5, "graceful": False},
        {"kind": "pause", "at": 5, "process": "a", "duration_s": 60},
        {"kind": "upgrade", "at": 6, "process": "a", "version": 2},
        {"kind": "add_partitions", "at": 7, "topics": {"input": 8}},
        {"kind": "lose_tag", "at": 8, "key": "rack", "value": "r1"},
    ]
    scenario = small_scenario(events=events)
    path = tmp_path / "all.toml"
    save_scenario(scenario, path)
    assert load_scenario(path) == scenario


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["events"].append({"kind": "crash", "at": 1, "process": "zz"}),
         "events[0].process: no process named 'zz'"),
        (lambda d: d["events"].append({"kind": "restart", "at": 1, "process": "a",
                                       "down_s": -1}),
         "events[0].restart.down_s"),
        (lambda d: d["events"].append({"kind": "explode", "at": 1}), "events[0]"),
        (lambda d: d["processes"][0].update(protocol_version=9),
         "processes[0].protocol_version"),
        (lambda d: d["processes"][0].update(endpoint="nohost"), "processes[0].endpoint"),
        (lambda d: d["processes"][0].update(initial_state={"x": 1}),
         "'x' is not a task id like '1_0'"),
        (lambda d: d["config"].update({"num.standby.replicas": -1}), "num.standby.replicas"),
        (lambda d: d["partitions"].update(other=3), "partitions: ['other']"),
        (lambda d: d["topology"]["subtopologies"][0].update(source_topics=[]),
         "subtopologies[0].source_topics"),
        (lambda d: d["timeouts"].update({"heartbeat.interval.ms": 50_000}),
         "heartbeat.interval.ms must be below session.timeout.ms"),
    ],
)
def test_a_bad_scenario_names_the_file_and_the_field(change: object, expected: str) -> None:
    data = small_scenario().to_data()
    data["topology"] = dict(data["topology"])
    data["topology"]["subtopologies"] = [dict(s) for s in data["topology"]["subtopologies"]]
    change(data)  # type: ignore[operator]
    with pytest.raises(ScenarioError) as caught:
        scenario_from_data(data, source="mine.toml")
    message = str(caught.value)
    assert message.startswith("mine.toml: ")
    assert expected in message


def test_unreadable_files_say_why(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(ScenarioError, match=r"bad\.toml: not valid TOML"):
        load_scenario(bad)
    other = tmp_path / "scenario.yaml"
    other.write_text("{}")
    with pytest.raises(ScenarioError, match=r"ends in \.toml or \.json"):
        load_scenario(other)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.json")
