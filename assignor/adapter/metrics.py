"""Rebalance metrics of one :class:`~assignor.adapter.process.StreamsProcess`, as a snapshot.

A user wants to see rebalances on a dashboard next to the rest of the application, with the
metrics library they already use. So the library keeps plain counters and hands out an
immutable :class:`RebalanceMetrics` value on demand (``StreamsProcess.metrics()``); exporting
them (Prometheus, StatsD, OpenTelemetry...) is a few lines of the user's code, shown in the
README with ``prometheus_client``. Nothing here depends on a metrics library.

Everything is counted by this process only: the leader's counters move in the process whose
consumer led the generation, the member counters in every process.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RebalanceMetrics:
    """Counters since the process was created (monotonic) and two gauges (current tasks).

    Member side (every process):

    - ``rebalances``: assignments received by this process's consumers; one group rebalance
      counts once per consumer (aiokafka tells a consumer nothing else about a generation);
    - ``assignment_errors``: of those, assignments carrying an error (shutdown requested,
      missing topics, a refused member, an unreadable answer);
    - ``listener_errors``: listener calls that raised (logged with their traceback);
    - ``active_tasks`` / ``standby_tasks``: tasks this process holds now (gauges).

    Leader side (the process whose consumer ran ``assign()``):

    - ``assign_calls``, ``assign_seconds_total``, ``assign_seconds_last``,
      ``assign_seconds_max``: how long aiokafka's event loop was held by ``assign()``;
    - ``tasks_moved``: active tasks given to a process other than the one that ran them before
      (the member that reported running it is still in the group), summed over rebalances;
    - ``warmups_placed``: warm-up replicas placed (KIP-441), summed;
    - ``probing_rebalances_scheduled``: decisions that asked for a probing rebalance;
    - ``standbys_short``: standby replicas that could not be placed for lack of clients, summed;
    - ``assign_errors``: ``assign()`` runs that answered every member with an error (including
      an unexpected exception, which never escapes to aiokafka).
    """

    rebalances: int = 0
    assignment_errors: int = 0
    listener_errors: int = 0
    active_tasks: int = 0
    standby_tasks: int = 0
    assign_calls: int = 0
    assign_seconds_total: float = 0.0
    assign_seconds_last: float = 0.0
    assign_seconds_max: float = 0.0
    tasks_moved: int = 0
    warmups_placed: int = 0
    probing_rebalances_scheduled: int = 0
    standbys_short: int = 0
    assign_errors: int = 0

    @property
    def errors(self) -> int:
        """Every error counted above: leader, member and listener."""
        return self.assign_errors + self.assignment_errors + self.listener_errors

    def as_dict(self) -> dict[str, Any]:
        """Field name -> value, with ``errors`` too (JSON-ready)."""
        return {**asdict(self), "errors": self.errors}


class MetricsRecorder:
    """The mutable counters behind :class:`RebalanceMetrics`; one per process, one event loop."""

    def __init__(self) -> None:
        self._counts: dict[str, float] = {}

    def add(self, **increments: float) -> None:
        for name, amount in increments.items():
            self._counts[name] = self._counts.get(name, 0) + amount

    def received(self, error: bool) -> None:
        """``add(rebalances=1, assignment_errors=int(error))``, without the keyword dict and
        its loop: every consumer counts every answer it receives."""
        counts = self._counts
        counts["rebalances"] = counts.get("rebalances", 0) + 1
        counts["assignment_errors"] = counts.get("assignment_errors", 0) + int(error)

    def assign_timed(self, seconds: float) -> None:
        self.add(assign_calls=1, assign_seconds_total=seconds)
        self._counts["assign_seconds_last"] = seconds
        self._counts["assign_seconds_max"] = max(
            seconds, self._counts.get("assign_seconds_max", 0.0)
        )

    def snapshot(self, *, active_tasks: int, standby_tasks: int) -> RebalanceMetrics:
        counts: dict[str, Any] = {
            name: (value if name.startswith("assign_seconds") else int(value))
            for name, value in self._counts.items()
        }
        return RebalanceMetrics(
            **counts, active_tasks=active_tasks, standby_tasks=standby_tasks
        )


__all__ = ["MetricsRecorder", "RebalanceMetrics"]
