"""The group state machine (``group_machine``) under both task assignors.

Budgets per hypothesis profile: ``ci`` (``make test``) a handful of short runs, ``deep``
(``make test-deep``) a hundred times the examples and longer runs.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.properties.group_machine import HighAvailabilityMachine, LegacyStickyMachine

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
#: (examples, steps per example) per profile
_BUDGET = {"ci": (8, 6), "dev": (8, 6), "deep": (800, 12)}[_PROFILE]

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
