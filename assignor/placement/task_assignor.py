"""The one interface every task assignor implements (Kafka's ``TaskAssignor``, made pure).

Kafka's assignors mutate the ``ClientState`` objects they are given and return whether a probing
rebalance is needed. Ours take immutable states and return a :class:`TaskAssignment`: the same
clients with their new active and standby tasks, the probing flag, and (for the
high-availability assignor) which standbys are warm-ups. The pipeline composes any of them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState
from protocol.ids import ProcessId, TaskId


@dataclass(frozen=True, slots=True)
class TaskAssignment:
    """What a task assignor decided: tasks per client, and whether to probe again soon."""

    clients: Mapping[ProcessId, ClientState]
    probing_rebalance_needed: bool
    #: standbys placed only to warm a client up for a later move (a subset of its standbys)
    warmups: Mapping[ProcessId, frozenset[TaskId]] = field(default_factory=dict)


class TaskAssignor(Protocol):
    """Decide active and standby tasks per client.

    ``all_tasks`` includes ``stateful_tasks``; every client's ``task_lags`` has an entry for
    every stateful task. Any assignment already present on the input states is ignored.

    Kafka calls the method ``assign``; here it is ``place_tasks`` so that a reader of the leader
    does not confuse it with aiokafka's ``assign(cluster, members)`` (the whole rebalance) or
    with :func:`assignor.assign_group` (the leader's pipeline).
    """

    def place_tasks(
        self,
        clients: Mapping[ProcessId, ClientState],
        all_tasks: Collection[TaskId],
        stateful_tasks: Collection[TaskId],
        config: AssignorConfig,
    ) -> TaskAssignment: ...
