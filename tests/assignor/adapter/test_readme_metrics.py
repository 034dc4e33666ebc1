"""The README's metrics example, as written, exporting a real process's metrics to Prometheus."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from tests.assignor.adapter.test_streams_assignor import _end_offsets, _group, _process, _rebalance

README = Path(__file__).resolve().parents[3] / "README.md"


def _example() -> str:
    text = README.read_text()
    section = text[
        text.index("<!-- section:runtime -->") : text.index("<!-- /section:runtime -->")
    ]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return code


def _samples(registry: CollectorRegistry) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in generate_latest(registry).decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


def test_the_readme_collector_exports_the_process_metrics() -> None:
    namespace: dict[str, Any] = {"__name__": "readme_metrics"}
    exec(compile(_example(), "README.md (runtime section)", "exec"), namespace)
    process = _process(1)  # one standby wanted, no second instance: every standby is short
    process.set_changelog_end_offsets(_end_offsets())
    assignors = _group([process], [2])
    registry = CollectorRegistry()
    registry.register(namespace["RebalanceCollector"](process))
    assert _samples(registry)["streams_rebalances_total"] == 0

    _rebalance(assignors, "m0-0")
    _rebalance(assignors, "m0-0")
    samples = _samples(registry)
    metrics = process.metrics()
    assert samples["streams_rebalances_total"] == metrics.rebalances == 4  # 2 consumers x 2
    assert samples["streams_assign_calls_total"] == 2
    assert samples["streams_assign_seconds_total"] == metrics.assign_seconds_total > 0
    assert samples["streams_standbys_short_total"] == 16
    assert samples["streams_tasks_moved_total"] == samples["streams_errors_total"] == 0
    assert samples["streams_active_tasks"] == 8 and samples["streams_standby_tasks"] == 0
