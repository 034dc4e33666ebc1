"""The Python high-availability assignor against Kafka's own, on random seeded scenarios.

Each scenario (see ``ha_scenarios``) is assigned by both; active, standby and warm-up tasks per
client and the probing-rebalance flag must be equal. ``CONFORMANCE_SCENARIOS`` sets how many
(1,000 by default, 100,000 in ``make conformance``); ``CONFORMANCE_SEED`` fixes the first seed
(otherwise it is random and printed). A mismatch names the seed that reproduces it:
``scenario(seed)`` in ``tests/conformance/ha_scenarios.py``.
"""

from __future__ import annotations

import os
import random
from typing import Any

from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.task_assignor import TaskAssignment
from tests.conformance.ha_scenarios import Scenario, java_request, python_inputs, scenario
from tests.support.jvm import HarnessError, JavaHarness

BATCH = 25


def _python_answer(s: Scenario) -> dict[str, Any]:
    result: TaskAssignment = HighAvailabilityTaskAssignor().place_tasks(
        python_inputs(s), s.tasks, s.stateful, s.config
    )
    clients = {
        str(pid): {
            "active": sorted(str(t) for t in state.active),
            "standby": sorted(str(t) for t in state.standby),
            "warmups": sorted(str(t) for t in result.warmups.get(pid, ())),
        }
        for pid, state in result.clients.items()
    }
    return {"clients": clients, "probing": result.probing_rebalance_needed}


def _normalise(java: dict[str, Any]) -> dict[str, Any]:
    clients = {
        pid: {key: sorted(value[key]) for key in ("active", "standby", "warmups")}
        for pid, value in java["clients"].items()
    }
    return {"clients": clients, "probing": java["probing"]}


def _diff(python: dict[str, Any], java: dict[str, Any]) -> str:
    lines = []
    if python["probing"] != java["probing"]:
        lines.append(f"probing: python={python['probing']} java={java['probing']}")
    for pid in sorted(set(python["clients"]) | set(java["clients"])):
        mine = python["clients"].get(pid, {})
        theirs = java["clients"].get(pid, {})
        for key in ("active", "standby", "warmups"):
            a, b = set(mine.get(key, ())), set(theirs.get(key, ()))
            if a != b:
                lines.append(
                    f"{pid} {key}: python-only={sorted(a - b)} java-only={sorted(b - a)}"
                )
    return "\n  ".join(lines)


def _first_seed() -> int:
    fixed = os.environ.get("CONFORMANCE_SEED")
    return int(fixed) if fixed else random.SystemRandom().randrange(2**31)


def test_high_availability_equals_kafka(
    java_harness: JavaHarness, conformance_scenarios: int
) -> None:
    first = _first_seed()
    failures: list[str] = []
    checked = 0
    for start in range(first, first + conformance_scenarios, BATCH):
        seeds = range(start, min(start + BATCH, first + conformance_scenarios))
        scenarios = [scenario(seed) for seed in seeds]
        answers = java_harness.call(
            "ha", {"scenarios": [java_request(s) for s in scenarios]}, timeout=600
        )
        for s, java in zip(scenarios, answers, strict=True):
            checked += 1
            if "error" in java:
                failures.append(f"seed {s.seed}: Java failed: {java['error']}")
                continue
            try:
                python = _python_answer(s)
            except Exception as error:  # report every seed, not just the first crash
                failures.append(f"seed {s.seed}: Python raised {error!r}")
                continue
            expected = _normalise(java)
            if python != expected:
                failures.append(f"seed {s.seed}:\n  {_diff(python, expected)}")
        if len(failures) >= 10:
            break
    assert not failures, (
        f"{len(failures)} of {checked} scenarios differ from Kafka (first seed {first}); "
        "reproduce with tests.conformance.ha_scenarios.scenario(seed):\n" + "\n".join(failures)
    )


def test_java_errors_are_reported(java_harness: JavaHarness) -> None:
    """A malformed scenario comes back as a per-scenario error, not a dead harness."""
    answers = java_harness.call("ha", {"scenarios": [{"clients": []}]})
    assert "error" in answers[0]
    try:
        java_harness.call("ha", {"tasks": []})
    except HarnessError as error:
        assert "request has no field" in str(error)
    else:
        raise AssertionError("a request without clients must fail")
