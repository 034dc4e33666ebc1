"""The group state machine (``group_machine``) under both task assignors.

Budgets per hypothesis profile: ``ci`` (``make test``) 50 runs of up to 12 steps, ``deep``
(``make test-deep``) a hundred times the examples, of up to 20 steps; the machine whose members
send subscriptions at the size limits runs 3 short examples, and 500 under ``deep``.
"""

from __future__ import annotations

import json
import os
from random import Random

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from simulator.engine import replay
from simulator.scenarios import CrashEvent, JoinEvent, scenario_from_data
from tests.properties import group_machine
from tests.properties.group_machine import (
    HighAvailabilityMachine,
    LegacyStickyMachine,
    LimitsMachine,
    SteppedReplay,
    machine_groups,
    scenario_for,
)

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
#: (examples, steps per example) per profile
_BUDGET = {"ci": (50, 12), "dev": (20, 12), "deep": (5000, 20)}.get(_PROFILE, (50, 12))

MACHINE_SETTINGS = settings(
    max_examples=_BUDGET[0],
    stateful_step_count=_BUDGET[1],
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large],
)

TestHighAvailabilityGroup = HighAvailabilityMachine.TestCase
TestHighAvailabilityGroup.settings = MACHINE_SETTINGS
TestLegacyStickyGroup = LegacyStickyMachine.TestCase
TestLegacyStickyGroup.settings = MACHINE_SETTINGS
#: subscriptions at the size limits cost the leader ~0.3 s a rebalance: a few short runs under
#: ``make test``, a tenth of the deep budget under ``make test-deep``
_LIMITS_BUDGET = (500, 20) if _PROFILE == "deep" else (3, 6)
TestGroupWithSubscriptionsAtTheLimits = LimitsMachine.TestCase
TestGroupWithSubscriptionsAtTheLimits.settings = settings(
    MACHINE_SETTINGS, max_examples=_LIMITS_BUDGET[0], stateful_step_count=_LIMITS_BUDGET[1])


def test_a_failure_prints_a_scenario_the_engine_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scenario in a failure message is a valid file for ``python -m simulator run``: the
    engine replays the same events and ends with the same processes up."""
    monkeypatch.setattr(group_machine, "note", lambda _text: None)
    group = find(machine_groups("high_availability"), lambda g: len(g.processes) >= 2,
                 settings=settings(database=None, phases=[Phase.generate]), random=Random(0))
    sim = SteppedReplay(scenario_for(group, seed=1))
    try:
        assert sim.settle(600)
        sim.apply(lambda at: JoinEvent(at=at, process="spare0"))
        sim.wait(5.0)
        sim.apply(lambda at: CrashEvent(at=at, process="p0"))
        assert sim.settle(3600)
        text = sim.scenario_json()
        live = sorted(name for name, s in sim.replay.sims.items() if s.up)
    finally:
        sim.close()
    result = replay(scenario_from_data(json.loads(text)))
    assert [e.kind for e in result.scenario.events] == ["join", "crash"]
    assert result.summary.converged and not result.violations
    assert result.rebalances[-1].processes == len(live)
