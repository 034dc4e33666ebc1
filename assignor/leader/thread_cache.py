"""Each client's split of its tasks over its threads, kept from one rebalance to the next.

Kafka's tasks-to-threads step (``assignor.placement.threads.distribute_tasks``) is a pure
function of a client's consumers, its stateful actives, standbys and stateless actives, and
each consumer's previous tasks in lag order. In a probing rebalance most clients get exactly the
tasks they had, their consumers report exactly what they were given, and the split comes out
the same again; computing it was a twentieth of a high-availability replay of a hundred
clients. :class:`ThreadCache` keeps each client's last inputs and split, and answers a client
whose inputs are equal with a copy of the split.

Exactness: the inputs are compared by value with ``==`` (frozensets of tasks compare by their
stored hashes, the tuples of tasks element by element, identity first), never hashed anew; the
kept splits are dropped whenever the plan (``layout.stateful``, by identity) changes, so the
tasks an answer holds are always the current plan's own objects, which the leader's encode
finds by ``id``. The lag order of previous tasks is computed before the comparison, so a change
of lags that reorders them is a miss.

Bounded: one entry per client of the last rebalance (a rebalance replaces the whole table).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from assignor.placement.threads import (
    AssignedClient,
    ThreadAssignment,
    distribute_client_tasks,
    distribute_tasks,
)
from protocol.ids import ProcessId, TaskId

_Key = tuple[Any, ...]


class ThreadCache:
    """The last rebalance's split per client (one per leader; aiokafka calls it from one loop)."""

    __slots__ = ("_kept", "_stateful")

    def __init__(self) -> None:
        self._stateful: frozenset[TaskId] | None = None
        self._kept: dict[ProcessId, tuple[_Key, ThreadAssignment]] = {}

    def split(
        self,
        clients: Mapping[ProcessId, AssignedClient],
        stateful: frozenset[TaskId],
        *,
        every_task_stateful: bool = False,
    ) -> dict[ProcessId, ThreadAssignment]:
        """``distribute_client_tasks(client, stateful, every_task_stateful=...)`` for every
        client."""
        kept = self._kept if stateful is self._stateful else {}
        fresh: dict[ProcessId, tuple[_Key, ThreadAssignment]] = {}
        result: dict[ProcessId, ThreadAssignment] = {}

        for pid, client in clients.items():
            before = kept.get(pid)

            def distribute(
                consumers: Sequence[str],
                stateful_active: Iterable[TaskId],
                standby: Iterable[TaskId],
                stateless_active: Iterable[TaskId],
                prev_by_lag: Mapping[str, Sequence[TaskId]],
                pid: ProcessId = pid,
                before: tuple[_Key, ThreadAssignment] | None = before,
            ) -> ThreadAssignment:
                key = (consumers, stateful_active, standby, stateless_active, prev_by_lag)
                if before is not None and before[0] == key:
                    split = before[1]
                else:
                    split = distribute_tasks(
                        consumers, stateful_active, standby, stateless_active, prev_by_lag
                    )
                fresh[pid] = (key, split)
                return _copy(split)

            result[pid] = distribute_client_tasks(
                client, stateful, distribute, every_task_stateful=every_task_stateful
            )
        self._stateful, self._kept = stateful, fresh
        return result


def _copy(split: ThreadAssignment) -> ThreadAssignment:
    """A split whose mappings are new (the lists inside are never changed once made)."""
    return ThreadAssignment(active=dict(split.active), standby=dict(split.standby))


__all__ = ["ThreadCache"]
