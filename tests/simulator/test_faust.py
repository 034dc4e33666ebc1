"""Faust's PartitionAssignor as a peer: real faust.App and assignor objects through the shim."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simulator.engine import ReplayResult, replay
from simulator.families import generate
from simulator.metrics import deterministic_view
from tests.simulator.support import small_scenario
from tests.support.requirements import require

ROOT = Path(__file__).resolve().parents[2]


def _installed() -> bool:
    # faust replaces its module object on import (its __spec__ is None afterwards), so look for
    # it by importing rather than with importlib.util.find_spec
    try:
        importlib.import_module("faust")
    except ImportError:
        return False
    return True


@pytest.fixture(autouse=True)
def faust_installed() -> None:
    require(_installed(), "faust-streaming (the dev extra)")


def run(processes: list[dict[str, Any]] | None = None, events: list[dict[str, Any]] | None = None,
        **overrides: Any) -> ReplayResult:
    overrides.setdefault("config", {"num.standby.replicas": 1})
    return replay(small_scenario(processes, events, assignor="faust", **overrides))


def test_faust_owns_every_task_and_stands_by_elsewhere() -> None:
    result = run(events=[{"kind": "join", "at": 30, "process": "c"}],
                 processes=[{"name": n, "initial_state": "caught_up"} for n in "ab"]
                 + [{"name": "c", "start": False}])
    assert result.violations == []
    assert [r.assignor for r in result.rebalances] == ["faust", "faust"]
    assert result.rebalances[-1].processes == 3
    summary = result.summary
    assert summary.converged
    assert summary.standby_coverage == 1.0  # its standbys came from Faust's own assignment
    assert summary.standby_records > 0  # and followed the changelog in the state model
    assert summary.note == ""  # one thread, no tags, one version: nothing it cannot express


def test_what_faust_cannot_express_is_in_the_row_not_forced() -> None:
    result = run(
        [{"name": "a", "threads": 2, "tags": {"zone": "z1"}, "initial_state": "caught_up"},
         {"name": "b", "protocol_version": 2, "initial_state": "caught_up"}],
        [{"kind": "upgrade", "at": 30, "process": "b", "version": 3}],
    )
    note = result.summary.note
    assert "one consumer per worker, processes of up to 2 threads" in note
    assert "no client-tag awareness" in note
    assert "no protocol versions" in note
    # two workers of one process are two clients to Faust: a standby next to its active is a
    # finding, recorded with the command that replays it
    kinds = {v.kind for v in result.violations}
    assert kinds <= {"standby_on_active_process"}


def test_faust_keeps_the_copartitioned_join_together() -> None:
    """Unlike aiokafka's peers (test_families), Faust groups copartitioned topics."""
    result = replay(generate("scale_in", {"assignor": "faust", "processes": 3}, seed=1))
    assert {v.kind for v in result.violations}.isdisjoint({"copartition_split", "unowned"})
    assert result.summary.converged


def test_faust_rows_do_not_depend_on_the_process_or_its_hash_seed() -> None:
    code = ("import json, sys; from simulator.engine import replay; "
            "from simulator.families import generate; from simulator.metrics import "
            "deterministic_view; r = replay(generate('crash_recover', {'assignor': 'faust', "
            "'processes': 4}, seed=2)); print(json.dumps(deterministic_view(r.summary), "
            "sort_keys=True, default=str))")
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True,
                              capture_output=True, timeout=120, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert deterministic_view(
        replay(generate("crash_recover", {"assignor": "faust", "processes": 4}, seed=2)).summary)


def test_faust_runs_with_its_orjson_codec() -> None:
    """The dev extra installs Faust's ``orjson`` extra: the peer is measured in the configuration
    a Faust user who cares about speed runs, not on the standard library's slower json."""
    require(importlib.util.find_spec("orjson") is not None, "orjson (faust-streaming[orjson])")
    faust_json = importlib.import_module("faust.utils.json")
    assert faust_json.orjson is not None
    assert faust_json.loads(faust_json.dumps({"topic": [1, 2]})) == {"topic": [1, 2]}


def test_faust_router_indexes_are_built_when_read_as_faust_builds_them() -> None:
    """``simulator.faust_peer`` leaves Faust's two router indexes (partition -> worker URL) to
    be built when read: read, they are what Faust's own class holds for the same
    distributions, after the first assignment and after the next one."""
    from faust.assignor.partition_assignor import PartitionAssignor

    from simulator.faust_peer import faust_assignor

    ours = faust_assignor(small_scenario(assignor="faust").build_topology(), "w1", 1)
    faust = PartitionAssignor(ours.app, replicas=1)
    for changelogs, externals in (
        ({"http://w1:6066": {"app-t-changelog": [0, 2]},
          "http://w2:6066": {"app-t-changelog": [1]}},
         {"http://w1:6066": {"input": [1]}, "http://w2:6066": {"input": [0, 2]}}),
        ({"http://w2:6066": {"app-t-changelog": [0, 1, 2]}}, {"http://w1:6066": {"input": [0]}}),
    ):
        for assignor in (ours, faust):
            assignor.changelog_distribution = changelogs
            assignor.external_topic_distribution = externals
        built = {"_tps_url", "_built_tps_url", "_external_tps_url", "_built_external_tps_url"}
        assert not built & set(vars(ours))  # nothing built until read
        assert ours.changelog_distribution == changelogs
        assert ours.external_topic_distribution == externals
        assert ours._tps_url == faust._tps_url and ours._tps_url
        assert ours._external_tps_url == faust._external_tps_url and ours._external_tps_url
