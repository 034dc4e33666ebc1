"""``python -m simulator``: the example file, JSON for machines, errors naming the field,
determinism across processes and hash seeds, and an import that stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.metrics import RebalanceRow, ScenarioRow, Violation, deterministic_view

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "scenarios" / "rolling-restart.toml"


def run_cli(*args: str, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    return subprocess.run([sys.executable, "-m", "simulator", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def stable_fields(document: dict[str, Any]) -> dict[str, Any]:
    return {
        "rebalances": [deterministic_view(RebalanceRow(**r)) for r in document["rebalances"]],
        "summary": deterministic_view(ScenarioRow(**document["summary"])),
        "violations": [deterministic_view(Violation(**v)) for v in document["violations"]],
    }


def test_the_example_scenario_runs_and_prints_its_log_and_row(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--scenario", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "scenario rolling-restart (high_availability)" in out
    assert "converged                    True" in out
    assert "violations                   0" in out


def test_json_output_holds_the_rows_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--family", "scale_out", "--seed", "4", "--param", "processes=2",
                 "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["scenario"]["origin"] == {"family": "scale_out",
                                              "params": {"processes": 2}, "seed": 4}
    assert document["summary"]["family"] == "scale_out"
    assert document["rebalances"][0]["generation"] == 1
    assert {"join_bytes", "sync_bytes", "restore_records", "assign_wall_ms"} <= set(
        document["rebalances"][0])


def test_bad_input_exits_2_naming_the_field(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(EXAMPLE.read_text().replace('down_s = 20.0', 'down_s = "soon"', 1))
    assert main(["run", "--scenario", str(bad)]) == 2
    assert f"error: {bad}: events[0].restart.down_s" in capsys.readouterr().err
    assert main(["run", "--family", "scale_in", "--param", "remove"]) == 2
    assert "expected key=value" in capsys.readouterr().err


def test_families_lists_every_family_with_its_parameters(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["families", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {"rolling_restart", "scale_out", "scale_in", "crash_recover", "perturbation"} <= set(
        listing)
    assert listing["crash_recover"]["params"]["down_s"] == 120.0


def test_two_processes_with_different_hash_seeds_give_identical_rows() -> None:
    args = ("run", "--family", "rolling_restart", "--seed", "5", "--param", "processes=3",
            "--json")
    first, second = run_cli(*args, hash_seed="1"), run_cli(*args, hash_seed="2024")
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert one["summary"]["hash_seed"] == "1" and two["summary"]["hash_seed"] == "2024"
    assert len(one["rebalances"]) > 1
    assert stable_fields(one) == stable_fields(two)


def test_sticky_runs_with_a_pinned_hash_seed() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "run", "--family", "scale_in", "--assignor",
         "sticky", "--param", "processes=3", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["hash_seed"] == "0"


def test_importing_the_simulator_never_imports_pyspark() -> None:
    code = ("import sys, simulator, simulator.cli, simulator.replay, simulator.families; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
