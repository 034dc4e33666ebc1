"""The README's "Property-based suite" example runs as written, and fails on a broken assignor."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings

from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.task_assignor import TaskAssignment

ROOT = Path(__file__).resolve().parents[2]
#: the section moved from the README to its docs page; its examples still run here
README = ROOT / "docs" / "properties.md"


def _example() -> dict[str, Any]:
    text = README.read_text(encoding="utf-8")
    section = text.split("<!-- section:properties -->")[1].split("<!-- /section:properties -->")[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict[str, Any] = {"__name__": "readme_properties_example"}
    exec(compile(block, str(README), "exec"), namespace)
    return namespace


def _tests(namespace: dict[str, Any]) -> list[Any]:
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert tests, "the README example defines no test"
    return tests


def test_the_readme_property_example_passes() -> None:
    for test in _tests(_example()):
        test()


def test_the_readme_property_example_catches_standbys_beside_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the standbys dropped, the README's property fails."""
    original = HighAvailabilityTaskAssignor.place_tasks

    def broken(self: HighAvailabilityTaskAssignor, *args: Any, **kwargs: Any) -> TaskAssignment:
        result = original(self, *args, **kwargs)
        clients = {p: c.with_assignment(c.active, ()) for p, c in result.clients.items()}
        return dataclasses.replace(result, clients=clients, warmups={})

    monkeypatch.setattr(HighAvailabilityTaskAssignor, "place_tasks", broken)
    # no shrinking: the failure is the point, not its smallest form. The example's own
    # @settings inherits what it does not set from the profile loaded when it is defined.
    current = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.register_profile("readme-no-shrink", parent=settings.get_profile(current),
                              phases=[Phase.generate], database=None)
    settings.load_profile("readme-no-shrink")
    try:
        tests = _tests(_example())
    finally:
        settings.load_profile(current)
    with pytest.raises((AssertionError, KeyError)):
        for test in tests:
            test()
