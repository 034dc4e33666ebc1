"""One application instance (Kafka's ``KafkaStreams``): identity, local state, consumers, lags.

Kafka Streams runs several stream threads per ``KafkaStreams`` instance, all sharing one process
id and one state directory. Here one :class:`StreamsProcess` stands for that instance and hands
each consumer (thread) its own :class:`~assignor.adapter.streams_assignor.StreamsPartitionAssignor`:
aiokafka keeps no per-assignor state of its own, so nothing may live on the assignor class
(aiokafka #1175). The process holds what its threads share: the topology and config, the process
id, the local-state provider, the snapshot of changelog end offsets the leader's synchronous
``assign()`` needs (refreshed before each join, in ``on_partitions_revoked``, which aiokafka
awaits, and by the leader right before ``assign()``: ``assignor.adapter.assign_time_offsets``),
who runs what, the leader's memory between generations, and the listeners.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Protocol

from aiokafka import ConsumerRebalanceListener

from assignor.adapter.assign_time_offsets import (
    DEFAULT_ASSIGN_END_OFFSETS_TIMEOUT_S,
    check_assign_time_refresh_supported,
)
from assignor.adapter.listeners import AssignmentListener, AssignmentListeners
from assignor.adapter.metrics import MetricsRecorder, RebalanceMetrics
from assignor.adapter.rejoin import check_rejoin_supported
from assignor.adapter.streams_assignor import StreamsPartitionAssignor
from assignor.adapter.topic_creation import (
    check_topic_auto_creation_supported,
    disable_topic_auto_creation,
)
from assignor.config import AssignorConfig
from assignor.leader.guard import LeaderMemory
from assignor.member import MemberAssignment
from assignor.topology.model import Topology
from protocol.codec import Codec
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import LATEST_OFFSET

if TYPE_CHECKING:
    from aiokafka import AIOKafkaConsumer

log = logging.getLogger(__name__)

#: Namespace for process ids derived from (application id, group instance id): a restarting
#: static member must come back under the same process id to find its tasks again.
PROCESS_ID_NAMESPACE = uuid.UUID("6f1c6a52-3c8e-5c53-9d7e-2d6b8f1a0c11")
#: How old the end-offset snapshot may be before a join refreshes it again.
DEFAULT_END_OFFSETS_MAX_AGE_MS = 1_000
#: How long :meth:`StreamsProcess.connect` waits for the cluster (each step) before failing.
DEFAULT_CONNECT_TIMEOUT_S = 30.0


class BrokerUnreachableError(ConnectionError):
    """No broker answered at the bootstrap servers within the time allowed."""


class StateProvider(Protocol):
    """What Kafka's TaskManager knows: the changelog offset sum of each task's local state.

    Return only tasks with local state (``UNKNOWN_OFFSET_SUM`` = -3 if the position is unknown);
    tasks this process runs as active are reported as -2 by the assignor itself.
    """

    def __call__(self) -> Mapping[TaskId, int]: ...


class EndOffsetsReader(Protocol):
    """Reads changelog end offsets (committed offsets for source-topic changelogs)."""

    async def __call__(self) -> Mapping[TopicPartition, int] | None: ...


def derive_process_id(application_id: str, group_instance_id: str | None) -> ProcessId:
    """The same id for the same static member (uuid5), else a fresh random one."""
    if group_instance_id is None:
        return ProcessId.random()
    return ProcessId(uuid.uuid5(PROCESS_ID_NAMESPACE, f"{application_id}\x00{group_instance_id}"))


_EMPTY_STATE: Final[Mapping[TaskId, int]] = MappingProxyType({})


def _copy(state: Mapping[TaskId, int]) -> dict[TaskId, int]:
    """A new dict of ``state``: a dict's or a read-only view's C copy, which keeps the stored
    hashes (no ``TaskId.__hash__`` call per task), else entry by entry."""
    if type(state) is dict or type(state) is MappingProxyType:
        return state.copy()
    return dict(state)


def _no_state() -> Mapping[TaskId, int]:
    return {}


class StreamsProcess:
    """One application instance (Kafka's ``KafkaStreams``): identity, local state, consumers.

    ``testing_probing_interval_ms`` overrides ``probing.rebalance.interval.ms`` below Kafka's
    minimum of 60 s. It exists for tests only and says so in its name.
    """

    def __init__(
        self,
        topology: Topology,
        config: AssignorConfig | None = None,
        *,
        process_id: ProcessId | None = None,
        group_instance_id: str | None = None,
        endpoint: HostInfo | None = None,
        state: StateProvider | None = None,
        codec: Codec | None = None,
        end_offsets_reader: EndOffsetsReader | None = None,
        end_offsets_max_age_ms: int = DEFAULT_END_OFFSETS_MAX_AGE_MS,
        assign_end_offsets_timeout_s: float = DEFAULT_ASSIGN_END_OFFSETS_TIMEOUT_S,
        testing_probing_interval_ms: int | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.topology = topology
        self.config = config or AssignorConfig()
        self.process_id = process_id or derive_process_id(
            topology.application_id, group_instance_id
        )
        self.group_instance_id = group_instance_id
        self.endpoint = endpoint
        self.codec = codec or Codec()
        self._state: StateProvider = state or _no_state
        self._leader_config = self.config
        if testing_probing_interval_ms is not None:
            if testing_probing_interval_ms < 1:
                raise ValueError("testing_probing_interval_ms must be positive")
            # AssignorConfig refuses < 60 s on purpose; a test may bypass it, visibly.
            self._leader_config = self.config.model_copy(
                update={"probing_rebalance_interval_ms": testing_probing_interval_ms}
            )
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._assignors: list[StreamsPartitionAssignor] = []
        self._running: dict[int, frozenset[TaskId]] = {}
        self._standby: dict[int, frozenset[TaskId]] = {}
        #: consumer index -> (first consumer?, its active tasks, the tasks it leaves out (first)
        #: or reports (others)): kept while no consumer's tasks change (see task_offset_sums)
        self._sum_plans: dict[int, tuple[bool, frozenset[TaskId], frozenset[TaskId]]] = {}
        self._metrics = MetricsRecorder()
        self._listeners = AssignmentListeners(self._metrics)
        self._shutdown_requested = False
        self.changelog_end_offsets: Mapping[TopicPartition, int] | None = None
        #: what this process, as leader, noticed in the generations it led (see assign())
        self.leader_memory = LeaderMemory()
        self.end_offsets_fetched_at_ms: int | None = None
        self._reader = end_offsets_reader
        self._max_age_ms = end_offsets_max_age_ms
        if assign_end_offsets_timeout_s <= 0:
            raise ValueError("assign_end_offsets_timeout_s must be positive")
        #: how long the leader waits for end offsets right before assign()
        self.assign_end_offsets_timeout_s = assign_end_offsets_timeout_s
        #: the first failed assign-time fetch is a WARNING, the rest DEBUG
        self.assign_refresh_warned = False
        self._refreshing: asyncio.Task[None] | None = None
        self._closers: list[Callable[[], Any]] = []

    # ------------------------------------------------------------------ consumers

    def new_assignor(self, group_instance_id: str | None = None) -> StreamsPartitionAssignor:
        """A fresh assignor for one more consumer (stream thread) of this process.

        For a consumer you build yourself: pass the assignor as its only
        ``partition_assignment_strategy``, call ``assignor.bind(consumer)`` (follow-up
        rebalances, and the leader's end offsets read right before ``assign()``) and
        ``assignor.adapter.topic_creation.disable_topic_auto_creation(consumer)``
        (no auto-created internal topics); :meth:`create_consumer` does all three."""
        assignor = StreamsPartitionAssignor(self, len(self._assignors), group_instance_id)
        self._assignors.append(assignor)
        return assignor

    @property
    def assignors(self) -> tuple[StreamsPartitionAssignor, ...]:
        return tuple(self._assignors)

    def create_consumer(
        self,
        bootstrap_servers: str,
        *,
        group_instance_id: str | None = None,
        **aiokafka_kwargs: Any,
    ) -> AIOKafkaConsumer:
        """An ``AIOKafkaConsumer`` wired to a new assignor; ``subscribe`` it after ``start()``.

        ``group_id`` defaults to the application id, as in Kafka Streams. The consumer never
        makes the broker auto-create a topic it subscribes to (Kafka Streams'
        ``allow.auto.create.topics=false``; see ``assignor.adapter.topic_creation``). Call
        :meth:`subscribe` (or ``consumer.subscribe(process.source_topics, listener=...)``
        with a listener from :meth:`rebalance_listener`) once the consumer has started.
        """
        from aiokafka import AIOKafkaConsumer

        check_rejoin_supported()
        check_topic_auto_creation_supported()
        check_assign_time_refresh_supported()
        assignor = self.new_assignor(group_instance_id)
        aiokafka_kwargs.setdefault("group_id", self.topology.application_id)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            group_instance_id=assignor.group_instance_id,
            partition_assignment_strategy=(assignor,),
            **aiokafka_kwargs,
        )
        # a subscribed internal topic that is missing must stay missing, not appear with the
        # broker's default count (assignor.adapter.topic_creation)
        disable_topic_auto_creation(consumer)
        assignor.bind(consumer)
        return consumer

    def subscribe(
        self, consumer: AIOKafkaConsumer, listener: ConsumerRebalanceListener | None = None
    ) -> None:
        """Subscribe a started consumer to the topology's source topics (internal ones too)."""
        consumer.subscribe(sorted(self.source_topics), listener=self.rebalance_listener(listener))

    def rebalance_listener(
        self, inner: ConsumerRebalanceListener | None = None
    ) -> ConsumerRebalanceListener:
        """A listener that refreshes the end-offset snapshot before every join, then calls
        ``inner``'s callbacks."""
        return _RefreshingListener(self, inner)

    @property
    def source_topics(self) -> frozenset[str]:
        return self.topology.source_topics

    # ------------------------------------------------------------------ application API

    def add_listener(self, listener: AssignmentListener) -> None:
        """Call ``listener(assignor, assignment)`` after each rebalance, for each consumer.

        ``listener`` is a plain function or an ``async def`` (a callable object whose
        ``__call__`` is ``async def`` counts as one); anything else (not callable, a generator,
        a signature that cannot take the two arguments) is refused here with ``TypeError``,
        rather than never running.

        Ordering. aiokafka calls ``on_assignment`` synchronously, so:

        - plain listeners run inside it, in the order added, before aiokafka calls the
          consumer's ``ConsumerRebalanceListener.on_partitions_assigned``;
        - async listeners are scheduled on the event loop from inside it (never awaited there,
          which would block aiokafka), and run one after the other in the order added. Per
          consumer, a rebalance's async listeners start only when the previous rebalance's
          have finished, so a listener never sees assignments out of order; they may still be
          running when the consumer starts fetching. ``await process.wait_for_listeners()``
          waits for them; :meth:`close` cancels what is left.

        A listener that raises is logged with its traceback and counted in
        :meth:`metrics` (``listener_errors``); the other listeners still run.
        """
        self._listeners.add(listener)

    async def wait_for_listeners(self, timeout_s: float = 30.0) -> None:
        """Wait until the async listeners scheduled so far have finished (at most
        ``timeout_s``; ``TimeoutError`` after that, naming how many are still running)."""
        await self._listeners.wait(timeout_s)

    def metrics(self) -> RebalanceMetrics:
        """An immutable snapshot of this process's rebalance metrics (see
        :class:`~assignor.adapter.metrics.RebalanceMetrics`)."""
        return self._metrics.snapshot(
            active_tasks=len(frozenset().union(*self._running.values())),
            standby_tasks=len(frozenset().union(*self._standby.values())),
        )

    def request_shutdown(self) -> None:
        """Ask the whole application to shut down (Kafka's ``SHUTDOWN_APPLICATION``): every
        consumer of this process rejoins with the error code; the leader tells every member."""
        self._shutdown_requested = True
        for assignor in self._assignors:
            assignor.request_rejoin("shutdown requested")

    @property
    def shutdown_requested(self) -> bool:
        return self._shutdown_requested

    def task_offset_sums(self, index: int) -> dict[TaskId, int]:
        """What consumer ``index`` reports: -2 for what it runs as active, the provider's sums
        for its standbys, and (first consumer only) the rest of the local state. Every task is
        reported once per process, so the leader sees one consistent picture.

        Each consumer of each process asks at every join, and a process's local state outgrows
        its assignment (it keeps what warm-ups restored), while a ``TaskId`` hash is a Python
        call: the first consumer copies the state whole (a dict's copy and a set of its keys
        reuse the stored hashes) and deletes what it leaves out, found by one set
        intersection; the others look up only their own standbys. (The dict's order does not
        reach the bytes: the encoder sorts the sums.)"""
        first = index == (self._assignors[0].index if self._assignors else index)
        plan = self._sum_plans.get(index)
        if plan is None or plan[0] is not first:
            plan = self._sum_plans[index] = self._sum_plan(index, first)
        _, own_active, tasks = plan
        if first:  # everything not active here nor another consumer's standby
            sums = _copy(self._state())
            for task in tasks.intersection(set(sums)):
                del sums[task]
        else:  # the others: their own standbys only, unless some consumer runs them as active
            state = self._state() if tasks else _EMPTY_STATE
            sums = {task: state[task] for task in tasks if task in state}
        for task in own_active:
            sums[task] = LATEST_OFFSET
        return sums

    def _sum_plan(
        self, index: int, first: bool
    ) -> tuple[bool, frozenset[TaskId], frozenset[TaskId]]:
        """Which tasks consumer ``index``'s sums leave out (the first) or report (the others):
        made from every consumer's tasks, which a probing round mostly leaves unchanged."""
        running, standby = self._running, self._standby
        own_active = running.get(index, frozenset())
        # every consumer's active tasks (its own among them: the same set as leaving it out)
        active = own_active.union(*running.values())
        if first:
            others = frozenset().union(*(tasks for i, tasks in standby.items() if i != index))
            return first, own_active, others.difference(standby.get(index, ())).union(active)
        return first, own_active, standby.get(index, frozenset()).difference(active)

    def running_tasks(self) -> dict[int, frozenset[TaskId]]:
        """Active tasks per consumer index, as of each consumer's last assignment."""
        return dict(self._running)

    def standby_tasks(self) -> dict[int, frozenset[TaskId]]:
        return dict(self._standby)

    # ------------------------------------------------------------------ end offsets

    async def connect(
        self,
        bootstrap_servers: str,
        *,
        group_id: str | None = None,
        ensure_internal_topics: bool = True,
        replication_factor: int = 1,
        timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    ) -> None:
        """Reach the cluster, create or validate the internal topics, and read changelog end
        offsets from now on (clients closed by :meth:`close`), taking a first snapshot.

        Raises :class:`BrokerUnreachableError` when no broker answers within ``timeout_s``
        (a wrong address should stop the application at start, not leave it assigning without
        lags), and :class:`~assignor.adapter.admin.InternalTopicsError` when an internal topic
        exists with the wrong partition count or a source topic is missing. With
        ``ensure_internal_topics=False`` the topics are neither created nor checked: the
        application's deployment owns them (consumers still never auto-create them).
        """
        from assignor.adapter.admin import ChangelogOffsetsReader
        from assignor.adapter.admin import ensure_internal_topics as ensure

        reader = ChangelogOffsetsReader(
            bootstrap_servers, self.topology, group_id or self.topology.application_id
        )
        try:
            await asyncio.wait_for(reader.start(), timeout_s)
        except Exception as exc:  # TimeoutError included
            await reader.close()
            reason = "no answer" if isinstance(exc, TimeoutError) else f"{exc}"
            raise BrokerUnreachableError(
                f"cannot reach Kafka at {bootstrap_servers} within {timeout_s:g} s "
                f"({type(exc).__name__}: {reason}); check the bootstrap servers and that the "
                "brokers are up"
            ) from exc
        self.set_end_offsets_reader(reader)
        self.on_close(reader.close)
        if ensure_internal_topics:
            await ensure(
                reader.admin,
                self.topology,
                replication_factor=replication_factor,
                timeout_s=timeout_s,
            )
        await self.refresh_end_offsets(force=True)

    def set_end_offsets_reader(self, reader: EndOffsetsReader | None) -> None:
        self._reader = reader

    def set_changelog_end_offsets(self, offsets: Mapping[TopicPartition, int] | None) -> None:
        """Replace the snapshot the leader will use (None: unknown, the leader falls back)."""
        self.changelog_end_offsets = dict(offsets) if offsets is not None else None
        self.end_offsets_fetched_at_ms = self._clock_ms()

    async def refresh_end_offsets(self, *, force: bool = False) -> None:
        """Refresh the snapshot unless it is fresh; concurrent callers share one fetch."""
        if self._reader is None:
            return
        fetched = self.end_offsets_fetched_at_ms
        if (
            not force
            and fetched is not None
            and self.changelog_end_offsets is not None
            and self._clock_ms() - fetched < self._max_age_ms
        ):
            return
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._refresh())
        await asyncio.shield(self._refreshing)

    async def _refresh(self) -> None:
        assert self._reader is not None
        try:
            offsets = await self._reader()
        except Exception:  # the leader copes with None: fallback assignor and a follow-up
            log.exception("could not read changelog end offsets; lags unknown until next try")
            offsets = None
        self.set_changelog_end_offsets(offsets)

    def on_close(self, closer: Callable[[], Any]) -> None:
        """Register a (possibly async) cleanup for :meth:`close`."""
        self._closers.append(closer)

    async def close(self) -> None:
        """Cancel follow-ups and async listeners still running, and release what
        :meth:`on_close` registered (admin clients...)."""
        for assignor in self._assignors:
            assignor.followups.cancel()
        await self._listeners.cancel()
        for closer in reversed(self._closers):
            result = closer()
            if asyncio.iscoroutine(result):
                await result
        self._closers.clear()

    # ------------------------------------------------------------------ used by assignors

    def _leader_input_config(self) -> AssignorConfig:
        return self._leader_config

    def _now_ms(self) -> int:
        return self._clock_ms()

    def _record(self, index: int, assignment: MemberAssignment) -> None:
        """Keep consumer ``index``'s tasks; the sums' plans stay while nobody's tasks change
        (the kept sets stay too: equal, built from the same tasks in the same order)."""
        active = frozenset(assignment.active_tasks)
        standby = frozenset(assignment.standby_tasks)
        if self._running.get(index) != active or self._standby.get(index) != standby:
            self._sum_plans.clear()
            self._running[index] = active
            self._standby[index] = standby

    def _notify(self, assignor: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        """Run the plain listeners now and schedule the async ones (see :meth:`add_listener`)."""
        self._listeners.notify(assignor, assignment)


class _RefreshingListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """aiokafka awaits ``on_partitions_revoked`` before every join: refresh lags there."""

    def __init__(self, process: StreamsProcess, inner: ConsumerRebalanceListener | None) -> None:
        self._process = process
        self._inner = inner

    async def on_partitions_revoked(self, revoked: Iterable[Any]) -> None:
        try:
            await self._process.refresh_end_offsets()
        except Exception:
            log.exception("refreshing changelog end offsets failed")
        if self._inner is not None:
            result = self._inner.on_partitions_revoked(revoked)
            if asyncio.iscoroutine(result):
                await result

    async def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        if self._inner is not None:
            result = self._inner.on_partitions_assigned(assigned)
            if asyncio.iscoroutine(result):
                await result


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "BrokerUnreachableError",
    "EndOffsetsReader",
    "StateProvider",
    "StreamsProcess",
    "derive_process_id",
]
