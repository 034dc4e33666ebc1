"""Suite-wide settings: hypothesis profiles (ci by default, deep for make test-deep), and tests
marked ``deep`` that only ``make test-deep`` runs."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "deep", max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck)
)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave ``deep`` tests out of every profile but ``deep``: deselected, not skipped, so a CI
    run's skips only ever mean something is missing (which CI turns into a failure)."""
    if PROFILE == "deep":
        return
    deep = [item for item in items if item.get_closest_marker("deep") is not None]
    if deep:
        config.hook.pytest_deselected(items=deep)
        items[:] = [item for item in items if item.get_closest_marker("deep") is None]
