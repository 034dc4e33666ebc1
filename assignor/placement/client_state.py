"""One Kafka Streams instance as the task assignors see it (Kafka's ``ClientState``).

A *client* is a process (one ``ProcessId``), however many consumers (stream threads) it runs;
its capacity is its number of consumers. The assignors read what the client held before and how
far behind it is on every stateful task, and write which tasks it gets now. Kafka mutates one
object for all of that; here a :class:`ClientState` is immutable, the assignors work on their
own private scratch structures and hand back new states (:meth:`ClientState.with_assignment`).

Building one from the members' subscriptions follows ``ClientState.initializePrevTasks`` and
``computeTaskLags``: previous actives come first from the partitions a consumer owned, then from
offset sums reported as ``-2`` (running); any other reported task was a previous standby.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import compress, repeat
from operator import attrgetter, itemgetter, sub
from types import MappingProxyType
from typing import Final

from assignor.placement.lags import TaskLags
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import LATEST_OFFSET, UNKNOWN_OFFSET_SUM, SubscriptionInfo

log = logging.getLogger(__name__)

_EMPTY: Final[Mapping[str, str]] = MappingProxyType({})
_NO_TASKS: frozenset[TaskId] = frozenset()
_RANK = attrgetter("_rank")  # Kafka's task order as one int, kept by unnamed tasks
_THIRD = itemgetter(2)


def prev_tasks_by_lag(previous: Iterable[TaskId], lags: Mapping[TaskId, int]) -> tuple[TaskId, ...]:
    """Of ``previous``, the tasks that are stateful now (have a lag), least lag first, then in
    Kafka's task order: the order Kafka's ``ClientState.prevTasksByLag`` gives a thread."""
    if isinstance(lags, TaskLags):
        ordered = _by_lag_and_rank(previous, lags)
        if ordered is not None:
            return ordered
    known = [t for t in previous if t in lags]
    if len(known) > 1:  # one task (each of 1,000 threads holding one): no lag to look up
        known.sort(key=lambda t: (lags[t], t.sort_key))
    return tuple(known)


def _by_lag_and_rank(previous: Iterable[TaskId], lags: TaskLags) -> tuple[TaskId, ...] | None:
    """:func:`prev_tasks_by_lag` on a :class:`TaskLags` view, with the look-ups and the lag
    arithmetic in C (``map``) rather than a view call, a lag call and a key call per task;
    ``None`` when a task is named (it has no ``_rank``: the general path orders it). The tasks
    sort as (lag, ``_rank``) pairs, the rank being Kafka's task order as one distinct int, so
    two pairs never tie and the tasks themselves are never compared."""
    given = previous if isinstance(previous, (list, tuple)) else list(previous)
    all_ends = list(map(lags.end_sums.get, given))  # None: not stateful now
    end_sums = [e for e in all_ends if e is not None]
    known = (
        list(given)
        if len(end_sums) == len(given)
        else list(compress(given, [e is not None for e in all_ends]))
    )
    if len(known) <= 1:
        return tuple(known)
    try:
        ranks = list(map(_RANK, known))
    except AttributeError:
        return None
    sums = list(map(lags.offset_sums.get, known, repeat(0)))
    found = list(map(sub, end_sums, sums))  # ``task_lag`` where the sum is within the end
    if min(sums) < 0 or max(map(sub, sums, end_sums)) > 0:  # sentinels, corrupt sums:
        found = [  # ``task_lag`` inlined
            s if s in (LATEST_OFFSET, UNKNOWN_OFFSET_SUM) else (e if e < s else e - s)
            for s, e in zip(sums, end_sums, strict=True)
        ]
    return tuple(map(_THIRD, sorted(zip(found, ranks, known, strict=True))))


@dataclass(frozen=True, slots=True)
class ClientState:
    """A client's inputs to the task assignors and, once assigned, its active and standby tasks.

    ``task_lags`` holds the lag of *every* stateful task of the topology (it is what makes a
    task stateful for this client, as in Kafka's ``isStateful``); it is usually a
    :class:`~assignor.placement.lags.TaskLags` view, but any mapping works (tests pass plain dicts).
    """

    process_id: ProcessId
    capacity: int
    consumers: tuple[str, ...] = ()
    previous_active: frozenset[TaskId] = _NO_TASKS
    previous_standby: frozenset[TaskId] = _NO_TASKS
    task_lags: Mapping[TaskId, int] = field(default_factory=dict)
    #: stateful tasks each consumer reported an offset sum for (Kafka: previous stateful tasks);
    #: a consumer that reported none is absent (readers take ``.get(consumer, frozenset())``)
    previous_tasks_by_consumer: Mapping[str, frozenset[TaskId]] = field(default_factory=dict)
    #: previous active tasks per consumer, from the partitions each consumer owned
    previous_active_by_consumer: Mapping[str, frozenset[TaskId]] = field(default_factory=dict)
    owned_partitions: Mapping[TopicPartition, str] = field(default_factory=dict)
    client_tags: Mapping[str, str] = field(default_factory=dict)
    host_info: HostInfo | None = None
    rack: str | None = None
    active: frozenset[TaskId] = _NO_TASKS
    standby: frozenset[TaskId] = _NO_TASKS

    def __post_init__(self) -> None:
        if self.capacity <= 0:
            raise ValueError(
                f"client {self.process_id}: capacity must be at least 1 (one per consumer), "
                f"got {self.capacity}"
            )
        both = self.active & self.standby
        if both:
            raise ValueError(
                f"client {self.process_id}: tasks {sorted(both)} are assigned both as active "
                "and as standby"
            )

    # --- what the assignors read -------------------------------------------------------------

    def lag_for(self, task: TaskId) -> int:
        """The lag on a stateful task; ``KeyError`` naming the task for a stateless one."""
        try:
            return self.task_lags[task]
        except KeyError:
            raise KeyError(f"client {self.process_id} has no lag for task {task}") from None

    def is_stateful(self, task: TaskId) -> bool:
        return task in self.task_lags

    def prev_tasks_by_lag(self, consumer: str) -> tuple[TaskId, ...]:
        """A consumer's previous stateful tasks, least lag first (then task order).

        Tasks no longer stateful in the current topology are dropped, as in Kafka. This is the
        input the thread-level stickiness of ``assignTasksToThreads`` needs.
        """
        return prev_tasks_by_lag(
            self.previous_tasks_by_consumer.get(consumer, _NO_TASKS), self.task_lags
        )

    def previous_owner_of(self, partition: TopicPartition) -> str | None:
        return self.owned_partitions.get(partition)

    # --- what the assignors wrote ------------------------------------------------------------

    @property
    def assigned(self) -> frozenset[TaskId]:
        return self.active | self.standby

    @property
    def assigned_count(self) -> int:
        return len(self.active) + len(self.standby)

    @property
    def active_load(self) -> float:
        """Active tasks per thread (a Java double, compared as such)."""
        return len(self.active) / self.capacity

    @property
    def assigned_load(self) -> float:
        """Active plus standby tasks per thread."""
        return self.assigned_count / self.capacity

    @property
    def stateful_active(self) -> frozenset[TaskId]:
        return frozenset(t for t in self.active if t in self.task_lags)

    @property
    def stateless_active(self) -> frozenset[TaskId]:
        return frozenset(t for t in self.active if t not in self.task_lags)

    def with_assignment(
        self, active: Iterable[TaskId] = (), standby: Iterable[TaskId] = ()
    ) -> ClientState:
        """The same client with this assignment (replacing any earlier one).

        ``dataclasses.replace`` without its look at every field's metadata (a placement calls
        this once per client: several microseconds each at hundreds of clients): every field,
        read in C, passed back to the constructor, which checks the new tasks as before."""
        values = _INIT_VALUES(self)
        # (mypy cannot count the fields in a starred tuple)
        return type(self)(  # type: ignore[call-arg]
            *values[:_ACTIVE], frozenset(active), frozenset(standby), *values[_ACTIVE + 2 :]
        )

    def without_assignment(self) -> ClientState:
        return replace(self, active=_NO_TASKS, standby=_NO_TASKS)

    def __repr__(self) -> str:
        return (
            f"ClientState({self.process_id}, capacity={self.capacity}, "
            f"active={sorted(self.active)}, standby={sorted(self.standby)}, "
            f"prev_active={sorted(self.previous_active)}, "
            f"prev_standby={sorted(self.previous_standby)})"
        )


#: every field of a ``ClientState`` in constructor order, read at once; ``active`` and
#: ``standby`` are adjacent there
_FIELD_NAMES = [f.name for f in fields(ClientState)]
_INIT_VALUES = attrgetter(*_FIELD_NAMES)
_ACTIVE = _FIELD_NAMES.index("active")
assert _FIELD_NAMES[_ACTIVE + 1] == "standby" and all(f.init for f in fields(ClientState))


@dataclass(frozen=True, slots=True)
class ConsumerReport:
    """One consumer's part of its client's state: what its subscription said and what it owned."""

    consumer_id: str
    task_offset_sums: Mapping[TaskId, int] = field(default_factory=dict)
    owned_partitions: Sequence[TopicPartition] = ()

    @classmethod
    def from_subscription(
        cls, consumer_id: str, info: SubscriptionInfo, owned: Sequence[TopicPartition] = ()
    ) -> ConsumerReport:
        return cls(consumer_id, info.task_offset_sums, tuple(owned))


def build_client_state(
    process_id: ProcessId,
    consumers: Sequence[ConsumerReport],
    task_for_partition: Mapping[TopicPartition, TaskId],
    end_offset_sums: Mapping[TaskId, int],
    *,
    client_tags: Mapping[str, str] | None = None,
    host_info: HostInfo | None = None,
    rack: str | None = None,
    known_tasks_only: bool = False,
) -> ClientState:
    """Kafka's client bookkeeping, in one pure step: consumers -> previous tasks -> lags.

    ``end_offset_sums`` has one entry per stateful task (see :mod:`assignor.placement.lags`); its
    keys are what makes a task stateful. Consumers are taken in the given order: when two report the
    same task or partition, the later wins, as with Kafka's ``putAll``. ``known_tasks_only``
    is Kafka's named-topology filter: forget partitions and tasks the leader does not know.
    """
    if not consumers:
        raise ValueError(f"client {process_id} has no consumers")
    offset_sums: dict[TaskId, int] = {}
    by_consumer: dict[str, frozenset[TaskId]] = {}
    owned: dict[TopicPartition, str] = {}
    for consumer in consumers:
        offset_sums.update(consumer.task_offset_sums)
        if consumer.task_offset_sums:
            by_consumer[consumer.consumer_id] = frozenset(consumer.task_offset_sums)
        for partition in consumer.owned_partitions:
            owned[partition] = consumer.consumer_id
    if known_tasks_only:
        owned = {tp: c for tp, c in owned.items() if tp in task_for_partition}

    prev_active: set[TaskId] = set()
    active_by_consumer: dict[str, set[TaskId]] = {}
    for partition in sorted(owned):
        task = task_for_partition.get(partition)
        if task is None:
            log.error("No task found for topic partition %s", partition)
            continue
        prev_active.add(task)
        active_by_consumer.setdefault(owned[partition], set()).add(task)
    prev_standby: set[TaskId] = set()
    for task, offset_sum in offset_sums.items():
        if task in prev_active:
            continue
        if offset_sum == LATEST_OFFSET:
            prev_active.add(task)
        else:
            prev_standby.add(task)
    if known_tasks_only:
        known = set(task_for_partition.values())
        prev_active &= known
        prev_standby &= known

    return ClientState(
        process_id=process_id,
        capacity=len(consumers),
        consumers=tuple(sorted(c.consumer_id for c in consumers)),
        previous_active=frozenset(prev_active),
        previous_standby=frozenset(prev_standby),
        task_lags=TaskLags(offset_sums, end_offset_sums),
        previous_tasks_by_consumer=by_consumer,
        previous_active_by_consumer={c: frozenset(t) for c, t in active_by_consumer.items()},
        owned_partitions=owned,
        client_tags=dict(client_tags) if client_tags else _EMPTY,
        host_info=host_info,
        rack=rack,
    )

