"""Conformance tests compare the Python assignors with the real kafka-streams classes.

Every test in this folder is marked ``conformance``. The JVM is started once per session; tools
missing means skip locally and fail in CI (``tests.support.requirements.require_tools``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jvm import JavaHarness, build_harness, scenario_count
from tests.support.requirements import require_tools

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.conformance)


@pytest.fixture(scope="session")
def java_harness() -> Iterator[JavaHarness]:
    require_tools("java", "javac", "mvn")
    harness = JavaHarness(build_harness())
    try:
        yield harness
    finally:
        harness.close()


@pytest.fixture(scope="session")
def conformance_scenarios() -> int:
    """Random scenarios per conformance test (``CONFORMANCE_SCENARIOS``, default 1000)."""
    return scenario_count()
