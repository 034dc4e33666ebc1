"""The group state machine (``group_machine``) under both task assignors.

Budgets per hypothesis profile: ``ci`` (``make test``) 50 runs of up to 12 steps, ``deep``
(``make test-deep``) a hundred times the examples, of up to 20 steps.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.properties.group_machine import HighAvailabilityMachine, LegacyStickyMachine

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
