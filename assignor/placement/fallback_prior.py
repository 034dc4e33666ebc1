"""Kafka's ``FallbackPriorTaskAssignor``: what the leader runs when task lags are unknown.

Without lags the high-availability assignor cannot tell who is caught up, so Kafka keeps every
previous active where it was (legacy sticky with ``must_preserve_active``), spreads the rest as
the legacy sticky assignor does, and always asks for a probing rebalance so a lag-aware
assignment follows as soon as lags can be read again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from assignor.placement.legacy_sticky import LegacyStickyTaskAssignor
from assignor.placement.task_assignor import TaskAssignment
from protocol.ids import ProcessId, TaskId


class FallbackPriorTaskAssignor:
    """Previous actives stay put; always requests a follow-up (probing) rebalance."""

    def __init__(self) -> None:
        self._delegate = LegacyStickyTaskAssignor(must_preserve_active=True)

    def place_tasks(
        self,
        clients: Mapping[ProcessId, ClientState],
        all_tasks: Collection[TaskId],
        stateful_tasks: Collection[TaskId],
        config: AssignorConfig,
    ) -> TaskAssignment:
        result = self._delegate.place_tasks(clients, all_tasks, stateful_tasks, config)
        return TaskAssignment(clients=result.clients, probing_rebalance_needed=True)
