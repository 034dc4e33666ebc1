"""Many rebalances, replayed through the coordinator shim in virtual time, and measured.

This module is the public API: a scenario as data (:class:`Scenario`, :func:`load_scenario`,
:func:`save_scenario`), seeded families (:func:`generate`, :func:`family_params`), one scenario
through the shim with the real assignor objects (:func:`replay` -> :class:`ReplayResult`), and the
rows it measures (:class:`RebalanceRow`, :class:`ScenarioRow`, :class:`Violation`). The
coordinator shim itself is :mod:`simulator.shim`; the Spark sweep is ``simulator.spark``.

Importing this package imports nothing heavy: names load on first use, so neither aiokafka nor
pyspark is imported until a replay or a sweep needs it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.engine import ReplayResult, replay, replay_command
    from simulator.families import FamilyError, family_params, generate
    from simulator.metrics import RebalanceRow, ScenarioRow, Violation, check_invariants
    from simulator.scenarios import Scenario, ScenarioError, load_scenario, save_scenario

_NAMES = {
    "FamilyError": "simulator.families",
    "family_params": "simulator.families",
    "generate": "simulator.families",
    "RebalanceRow": "simulator.metrics",
    "ScenarioRow": "simulator.metrics",
    "Violation": "simulator.metrics",
    "check_invariants": "simulator.metrics",
    "ReplayResult": "simulator.engine",
    "replay": "simulator.engine",
    "replay_command": "simulator.engine",
    "Scenario": "simulator.scenarios",
    "ScenarioError": "simulator.scenarios",
    "load_scenario": "simulator.scenarios",
    "save_scenario": "simulator.scenarios",
}


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'simulator' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "FamilyError",
    "RebalanceRow",
    "ReplayResult",
    "Scenario",
    "ScenarioError",
    "ScenarioRow",
    "Violation",
    "check_invariants",
    "family_params",
    "generate",
    "load_scenario",
    "replay",
    "replay_command",
    "save_scenario",
]
