"""``python -m assignor assign``: the example file, --explain, --output, and bad inputs."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assignor.cli.group_input import GroupInputError, read_group, read_group_json
from assignor.cli.main import main
from assignor.leader.pipeline import assign_group
from protocol.codec import Codec
from protocol.ids import TaskId
from protocol.messages import AssignmentInfo

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "tests" / "data" / "group-example.json"


def example() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return data


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assignor", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_example_file_runs_as_a_subprocess_and_matches_the_pipeline() -> None:
    done = run_cli("assign", "--input", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    description = read_group_json(EXAMPLE.read_text())
    result = assign_group(
        description.topology, description.config, description.group, description.codec
    )
    assert out["error"] == "NONE"
    assert "explain" not in out
    assert set(out["members"]) == set(result.members)
    for member, mine in result.members.items():
        printed = out["members"][member]
        assert printed["partitions"] == [str(tp) for tp in mine.partitions]
        assert bytes.fromhex(printed["user_data_hex"]) == mine.user_data
        info = Codec().decode_assignment(bytes.fromhex(printed["user_data_hex"]))
        assert isinstance(info, AssignmentInfo)
        assert sorted(printed["active_tasks"]) == sorted({str(t) for t in info.active_tasks})
        assert sorted(printed["standby_tasks"]) == sorted(str(t) for t in info.standby_tasks)
        for task, parts in printed["active_tasks"].items():
            assert all(p in printed["partitions"] for p in parts), task
    every_task = [t for m in out["members"].values() for t in m["active_tasks"]]
    assert len(every_task) == len(set(every_task)) == 9


def test_explain_gives_one_reason_per_replica(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    done = run_cli("assign", "--input", str(EXAMPLE), "--explain", "--output", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    out = json.loads(target.read_text())
    entries = out["explain"]
    active = [e for e in entries if e["role"] == "active"]
    assert sorted(e["task"] for e in active) == sorted(
        t for m in out["members"].values() for t in m["active_tasks"]
    )
    for entry in entries:
        assert entry["reason"], entry
        tasks = out["members"][entry["member"]][
            "active_tasks" if entry["role"] == "active" else "standby_tasks"
        ]
        assert entry["task"] in tasks, entry
    reasons = {(e["task"], e["role"]): e["reason"] for e in entries}
    # the example: 1_0 runs on a-1 (-2), 1_2 is caught up only on b-1 while process 3, the
    # balanced target, warms up
    assert reasons[("1_0", "active")].startswith("kept on its previous active owner")
    assert reasons[("1_2", "active")].startswith("moved to a caught-up client")
    assert reasons[("1_2", "warmup")].startswith("warm-up replica")
    assert reasons[("0_0", "active")].startswith("stateless")
    assert out["followup"].startswith("probing rebalance")


def test_explain_on_fallback_and_on_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = example()
    data["changelog_end_offsets"] = None
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    assert main(["assign", "--input", str(path), "--explain"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["assignor"] == "fallback_prior"
    actives = {e["task"]: e["reason"] for e in out["explain"] if e["role"] == "active"}
    assert "lags unknown" in actives["1_0"]

    data["members"]["a-1"]["subscription"]["error_code"] = "SHUTDOWN_REQUESTED"
    path.write_text(json.dumps(data))
    assert main(["assign", "--input", str(path), "--explain"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["error"] == "SHUTDOWN_REQUESTED"
    assert out["explain"] == []
    assert all(m["error"] == "SHUTDOWN_REQUESTED" for m in out["members"].values())


def test_garbage_user_data_is_reported_as_a_rejected_member(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    data = example()
    data["members"]["zz"] = {"user_data_hex": "00ff"}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    assert main(["assign", "--input", str(path)]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert list(out["rejected_members"]) == ["zz"]
    assert out["members"]["zz"]["error"] == "ASSIGNMENT_ERROR"
    assert out["members"]["a-1"]["error"] == "NONE"
    assert "member zz sent a subscription that cannot be read" in caplog.text


def _mutated(path: str, value: Any, *, delete: bool = False) -> dict[str, Any]:
    data = example()
    *parents, last = path.split("/")
    node: Any = data
    for key in parents:
        node = node[key]
    if delete:
        del node[last]
    else:
        node[last] = value
    return data


BAD_INPUTS = [
    ("members/a-1/subscription/process_id", "not-a-uuid", "members['a-1'].subscription.process_id"),
    ("members/b-1/subscription/task_offset_sums", {"1-2": 5}, "task_offset_sums['1-2']"),
    ("members/b-1/subscription/task_offset_sums", {"1_2": -1}, "task_offset_sums"),
    ("members/a-2/subscription/endpoint", "nohost", "members['a-2'].subscription.endpoint"),
    ("members/c-1/user_data_hex", "xyz", "members['c-1'].user_data_hex"),
    ("members/c-1/subscription", {"process_id": 1}, "members['c-1']: give exactly one"),
    ("members/a-1/colour", "red", "members['a-1']: unknown field(s) colour"),
    ("partition_counts/orders", 0, "partition_counts['orders']"),
    ("changelog_end_offsets/shop-totals-changelog", {"x": 1}, "changelog_end_offsets"),
    ("changelog_end_offsets/bad", 5, "changelog_end_offsets['bad']"),
    ("config/num.standby.replicas", -1, "config['num.standby.replicas']"),
    ("config/no.such.config", 1, "config['no.such.config']"),
    ("topology/subtopologies", "x", "topology: subtopologies"),
    ("leader", "nobody", "leader"),
    ("now_ms", "soon", "now_ms"),
    ("leader_version", 9, "leader_version"),
    ("members", {}, "members"),
]


@pytest.mark.parametrize(("path", "value", "named"), BAD_INPUTS)
def test_bad_input_names_the_json_path(path: str, value: Any, named: str) -> None:
    with pytest.raises(GroupInputError) as caught:
        read_group(_mutated(path, value))
    assert named in str(caught.value)


def test_a_missing_required_field_is_named() -> None:
    with pytest.raises(GroupInputError, match="missing required field 'partition_counts'"):
        read_group(_mutated("partition_counts", None, delete=True))


def test_bad_input_exits_2_with_the_path_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_mutated("members/a-1/subscription/version", 7)))
    done = run_cli("assign", "--input", str(bad))
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"{bad}: members['a-1'].subscription.version" in done.stderr
    not_json = tmp_path / "not.json"
    not_json.write_text("{")
    assert main(["assign", "--input", str(not_json)]) == 2
    assert main(["assign", "--input", str(tmp_path / "absent.json")]) == 2


def test_integer_process_ids_and_nested_offsets_mean_what_the_readme_says() -> None:
    description = read_group(example())
    assert description.group.leader_process_id is not None
    assert description.group.leader_process_id.uuid.int == 1
    offsets = description.group.changelog_end_offsets
    assert offsets is not None
    flat = _mutated(
        "changelog_end_offsets",
        {f"shop-totals-changelog-{p}": o for p, o in enumerate([1000, 1000, 5000])},
    )
    assert read_group(flat).group.changelog_end_offsets == offsets
    sums = copy.deepcopy(example()["members"]["b-1"]["subscription"]["task_offset_sums"])
    assert TaskId.parse(next(iter(sums))) == TaskId(1, 1)


def test_input_dash_reads_standard_input() -> None:
    text = (ROOT / "tests" / "data" / "group-example.json").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "assignor", "assign", "--input", "-"],
        input=text, capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["error"] == "NONE"


def test_offset_sums_for_tasks_the_topology_lacks_are_warned_about() -> None:
    data = json.loads((ROOT / "tests" / "data" / "group-example.json").read_text())
    member = next(m for m in data["members"].values() if "subscription" in m)
    member["subscription"].setdefault("task_offset_sums", {})["77_0"] = 5
    done = subprocess.run(
        [sys.executable, "-m", "assignor", "assign", "--input", "-"],
        input=json.dumps(data), capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "reports offset sums for tasks the topology does not have (77_0)" in done.stderr


def test_a_process_id_clone_is_reported_as_a_refused_member(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = example()
    clone = copy.deepcopy(data["members"]["b-1"])
    clone["subscription"]["endpoint"] = "elsewhere:9999"
    data["members"]["z-clone"] = clone
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    assert main(["assign", "--input", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["refused_members"]) == ["z-clone"]
    assert out["members"]["z-clone"]["error"] == "ASSIGNMENT_ERROR"
    assert out["members"]["b-1"]["error"] == "NONE"


@pytest.mark.parametrize(("leader", "deadline_on"), [("a-1", "a-1"), ("b-1", "b-1"), (2, "b-1")])
def test_leader_is_a_member_id_or_a_process_id_and_carries_the_probing_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], leader: Any, deadline_on: str
) -> None:
    """docs/cli.md: ``leader`` is the leader's member id or process id; the probing deadline
    goes to the leader's process (the example schedules one)."""
    path = tmp_path / "group.json"
    path.write_text(json.dumps(_mutated("leader", leader)))
    assert main(["assign", "--input", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["followup"].startswith("probing rebalance")
    with_deadline = [m for m, v in out["members"].items() if v["next_rebalance_ms"] is not None]
    assert with_deadline == [deadline_on]


def test_an_unwritable_output_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "group.json"
    path.write_text(json.dumps(example()))
    code = main(["assign", "--input", str(path), "--output", str(tmp_path / "no" / "out.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write ") and len(err.strip().splitlines()) == 1
