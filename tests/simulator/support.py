"""Small scenarios for the engine's tests: one source topic, one store, a few partitions."""

from __future__ import annotations

from typing import Any

from simulator.scenarios import Scenario, scenario_from_data

SIMPLE_TOPOLOGY: dict[str, Any] = {
    "application_id": "app",
    "subtopologies": [{"id": 0, "source_topics": ["input"], "stores": ["store"],
                       "changelog_topics": ["app-store-changelog"]}],
}


def small_scenario(
    processes: list[dict[str, Any]] | None = None,
    events: list[dict[str, Any]] | None = None,
    **overrides: Any,
) -> Scenario:
    """Two caught-up dynamic processes of one thread on 4 partitions, unless told otherwise."""
    data: dict[str, Any] = {
        "name": "small",
        "seed": 1,
        "topology": SIMPLE_TOPOLOGY,
        "partitions": {"input": 4},
        "processes": processes if processes is not None else [
            {"name": "a", "initial_state": "caught_up"},
            {"name": "b", "initial_state": "caught_up"},
        ],
        "config": {"probing.rebalance.interval.ms": 60_000},
        "dynamics": {"write_rate": 10.0, "restore_rate": 1000.0, "standby_trail": 10.0,
                     "initial_records": 20_000},
        "bounds": {"settle_s": 1200.0, "max_rebalances": 60},
        "events": events or [],
    }
    data.update(overrides)
    return scenario_from_data(data, source="test")
