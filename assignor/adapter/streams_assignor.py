"""The aiokafka shell around the pure pipeline: ``StreamsProcess`` and its per-consumer assignors.

Kafka Streams runs several stream threads per ``KafkaStreams`` instance, all sharing one process
id and one state directory. Here one :class:`StreamsProcess` stands for that instance and hands
each consumer (thread) its own :class:`StreamsPartitionAssignor` instance: aiokafka keeps no
per-assignor state of its own, so nothing may live on the class (aiokafka #1175), and the
assignor must be the only entry of ``partition_assignment_strategy`` (aiokafka #1168).

What happens when:

- before each join (``on_partitions_revoked``, awaited by aiokafka) the process refreshes its
  snapshot of changelog end offsets, so the leader's synchronous ``assign()`` has lags at hand;
- ``metadata()`` encodes this consumer's ``SubscriptionInfo`` (offset sums of local state,
  endpoint, group instance id, which aiokafka would otherwise not pass to the leader);
- ``assign()`` (leader only) runs :func:`assignor.leader.pipeline.assign_group` and never raises;
  what the leader must remember between generations (``LeaderMemory``: process-id clones and
  ignored upgrade instructions, see ``assignor.leader.guard``) lives on the process and is
  replaced only when the leader's own assignment arrives, i.e. when the generation happened;
- ``on_assignment()`` interprets the answer, updates the process's view of who runs what,
  schedules follow-up rebalances and tells the listeners.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from aiokafka import ConsumerRebalanceListener
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from assignor.adapter.rejoin import FollowupScheduler, check_rejoin_supported, request_rejoin
from assignor.config import AssignorConfig
from assignor.leader.guard import LeaderMemory
from assignor.leader.pipeline import GroupInput, LeaderResult, MemberSubscription, assign_group
from assignor.member import MemberAssignment, interpret_assignment
from assignor.topology.model import Topology
from protocol.codec import Codec
from protocol.errors import AssignorError, ProtocolError
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import LATEST_OFFSET, AssignmentInfo, SubscriptionInfo

if TYPE_CHECKING:
    from aiokafka import AIOKafkaConsumer

log = logging.getLogger(__name__)

#: Namespace for process ids derived from (application id, group instance id): a restarting
#: static member must come back under the same process id to find its tasks again.
PROCESS_ID_NAMESPACE = uuid.UUID("6f1c6a52-3c8e-5c53-9d7e-2d6b8f1a0c11")
#: aiokafka's ConsumerProtocol schema version (v0 is the only one it has).
_CONSUMER_PROTOCOL_VERSION = 0
#: How old the end-offset snapshot may be before a join refreshes it again.
DEFAULT_END_OFFSETS_MAX_AGE_MS = 1_000


class StateProvider(Protocol):
    """What Kafka's TaskManager knows: the changelog offset sum of each task's local state.

    Return only tasks with local state (``UNKNOWN_OFFSET_SUM`` = -3 if the position is unknown);
    tasks this process runs as active are reported as -2 by the assignor itself.
    """

    def __call__(self) -> Mapping[TaskId, int]: ...


class EndOffsetsReader(Protocol):
    """Reads changelog end offsets (committed offsets for source-topic changelogs)."""

    async def __call__(self) -> Mapping[TopicPartition, int] | None: ...


AssignmentListener = Callable[["StreamsPartitionAssignor", MemberAssignment], None]


def derive_process_id(application_id: str, group_instance_id: str | None) -> ProcessId:
    """The same id for the same static member (uuid5), else a fresh random one."""
    if group_instance_id is None:
        return ProcessId.random()
    return ProcessId(uuid.uuid5(PROCESS_ID_NAMESPACE, f"{application_id}\x00{group_instance_id}"))


def _no_state() -> Mapping[TaskId, int]:
    return {}


@dataclass(frozen=True, slots=True)
class LeaderRecord:
    """What the leader saw and decided in its last ``assign()`` (for logs, tests and replays)."""

    group: GroupInput
    result: LeaderResult
    elapsed_ms: float


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
        self._listeners: list[AssignmentListener] = []
        self._shutdown_requested = False
        self.changelog_end_offsets: Mapping[TopicPartition, int] | None = None
        #: what this process, as leader, noticed in the generations it led (see assign())
        self.leader_memory = LeaderMemory()
        self.end_offsets_fetched_at_ms: int | None = None
        self._reader = end_offsets_reader
        self._max_age_ms = end_offsets_max_age_ms
        self._refreshing: asyncio.Task[None] | None = None
        self._closers: list[Callable[[], Any]] = []

    # ------------------------------------------------------------------ consumers

    def new_assignor(self, group_instance_id: str | None = None) -> StreamsPartitionAssignor:
        """A fresh assignor for one more consumer (stream thread) of this process."""
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

        ``group_id`` defaults to the application id, as in Kafka Streams. Call
        :meth:`subscribe` (or ``consumer.subscribe(process.source_topics, listener=...)``
        with a listener from :meth:`rebalance_listener`) once the consumer has started.
        """
        from aiokafka import AIOKafkaConsumer

        check_rejoin_supported()
        assignor = self.new_assignor(group_instance_id)
        aiokafka_kwargs.setdefault("group_id", self.topology.application_id)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            group_instance_id=assignor.group_instance_id,
            partition_assignment_strategy=(assignor,),
            **aiokafka_kwargs,
        )
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
        """Called after each rebalance with the consumer's assignor and its ``MemberAssignment``."""
        self._listeners.append(listener)

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
        reported once per process, so the leader sees one consistent picture."""
        provided = dict(self._state())
        others_active = frozenset().union(
            *(tasks for i, tasks in self._running.items() if i != index)
        )
        others_standby = frozenset().union(
            *(tasks for i, tasks in self._standby.items() if i != index)
        )
        own_active = self._running.get(index, frozenset())
        own_standby = self._standby.get(index, frozenset())
        first = min((a.index for a in self._assignors), default=index)
        sums: dict[TaskId, int] = {}
        for task, offset_sum in provided.items():
            if task in own_active or task in others_active:
                continue
            if task in own_standby or (index == first and task not in others_standby):
                sums[task] = offset_sum
        for task in own_active:
            sums[task] = LATEST_OFFSET
        return sums

    def running_tasks(self) -> dict[int, frozenset[TaskId]]:
        """Active tasks per consumer index, as of each consumer's last assignment."""
        return dict(self._running)

    def standby_tasks(self) -> dict[int, frozenset[TaskId]]:
        return dict(self._standby)

    # ------------------------------------------------------------------ end offsets

    async def connect(self, bootstrap_servers: str, *, group_id: str | None = None) -> None:
        """Read changelog end offsets from this cluster from now on (clients closed by
        :meth:`close`), and take a first snapshot."""
        from assignor.adapter.admin import ChangelogOffsetsReader

        reader = ChangelogOffsetsReader(
            bootstrap_servers, self.topology, group_id or self.topology.application_id
        )
        self.set_end_offsets_reader(reader)
        self.on_close(reader.close)
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
        """Cancel follow-ups and release what :meth:`on_close` registered (admin clients...)."""
        for assignor in self._assignors:
            assignor.followups.cancel()
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
        self._running[index] = frozenset(assignment.active_tasks)
        self._standby[index] = frozenset(assignment.standby_tasks)

    def _notify(self, assignor: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        for listener in list(self._listeners):
            try:
                listener(assignor, assignment)
            except Exception:
                log.exception("assignment listener %r failed", listener)


class StreamsPartitionAssignor:
    """The assignor aiokafka calls; one instance per consumer, made by ``StreamsProcess``."""

    name = "stream"
    #: aiokafka's built-ins carry this; it is the ConsumerProtocol schema version they send.
    version = _CONSUMER_PROTOCOL_VERSION

    def __init__(
        self, process: StreamsProcess, index: int, group_instance_id: str | None = None
    ) -> None:
        self.process = process
        self.index = index
        self.group_instance_id = group_instance_id or (
            f"{process.group_instance_id}-{index}" if process.group_instance_id else None
        )
        self.used_version = process.codec.latest_supported
        self.followups = FollowupScheduler()
        self._consumer: object | None = None
        self._unique_field = 0
        self.last_subscription: SubscriptionInfo | None = None
        self.last_assignment: MemberAssignment | None = None
        self.last_info: AssignmentInfo | None = None
        self.last_leader: LeaderRecord | None = None
        self.last_followup_reason: str = ""
        #: memory from this consumer's last assign(), kept once its own assignment arrives
        self._pending_memory: LeaderMemory | None = None

    def bind(self, consumer: object) -> None:
        """Tell the assignor its consumer, so that follow-up rebalances can be triggered."""
        self._consumer = consumer
        self.followups.bind(consumer)

    def request_rejoin(self, reason: str) -> None:
        if self._consumer is None:
            log.warning("rejoin wanted (%s) but consumer %d is not bound", reason, self.index)
            return
        log.info("consumer %d rejoins: %s", self.index, reason)
        request_rejoin(self._consumer)

    # ------------------------------------------------------------------ aiokafka interface

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        process = self.process
        self._pending_memory = None  # a new join: an earlier assign() of ours never completed
        self._unique_field = (self._unique_field + 1) % 256
        info = SubscriptionInfo(
            version=self.used_version,
            latest_supported_version=process.codec.latest_supported,
            process_id=process.process_id,
            user_endpoint=process.endpoint,
            task_offset_sums=process.task_offset_sums(self.index),
            unique_field=self._unique_field,
            error_code=(
                AssignorError.SHUTDOWN_REQUESTED
                if process.shutdown_requested
                else AssignorError.NONE
            ),
            client_tags=process.config.client_tags,
            group_instance_id=self.group_instance_id,
        )
        self.last_subscription = info
        user_data = process.codec.encode_subscription(info, version=self.used_version)
        return ConsumerProtocolMemberMetadata(
            _CONSUMER_PROTOCOL_VERSION, sorted(topics), user_data
        )

    def assign(
        self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """The leader's decision. Never raises: a failure answers every member with an error."""
        began = time.perf_counter()
        try:
            group = self._group_input(cluster, members)
            result = assign_group(
                self.process.topology,
                self.process._leader_input_config(),
                group,
                self.process.codec,
            )
        except Exception as exc:
            log.exception("assign() failed; every member gets an error assignment")
            return _error_assignments(members, f"{type(exc).__name__}: {exc}")
        answers: dict[str, ConsumerProtocolMemberAssignment] = {}
        for member_id in members:
            member = result.members.get(member_id)
            if member is None:
                log.error("the pipeline gave member %s no answer; sending an error", member_id)
                answers.update(_error_assignments({member_id: members[member_id]}, "no answer"))
                continue
            answers[member_id] = ConsumerProtocolMemberAssignment(
                _CONSUMER_PROTOCOL_VERSION, _by_topic(member.partitions), member.user_data
            )
        elapsed = (time.perf_counter() - began) * 1000
        self.last_leader = LeaderRecord(group, result, elapsed)
        self._pending_memory = result.memory
        log.info("assign() took %.1f ms for %d members", elapsed, len(members))
        return answers

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        process = self.process
        if self._pending_memory is not None:
            # this consumer led the generation that just completed: it reached the members
            process.leader_memory, self._pending_memory = self._pending_memory, None
        partitions = [
            TopicPartition.model_construct(topic=topic, partition=p)
            for topic, numbers in assignment.assignment
            for p in numbers
        ]
        try:
            info = process.codec.decode_assignment(assignment.user_data or b"")
        except ProtocolError as exc:
            log.error("cannot read the leader's assignment: %s", exc)
            info = AssignmentInfo.error(AssignorError.ASSIGNMENT_ERROR, 1)
        decision = interpret_assignment(
            info,
            partitions,
            used_version=self.used_version,
            latest_supported_version=process.codec.latest_supported,
            endpoint=process.endpoint,
            previous=self.last_assignment,
        )
        self.last_info = info if isinstance(info, AssignmentInfo) else None
        self.used_version = decision.next_used_version
        self.last_assignment = decision.assignment
        process._record(self.index, decision.assignment)
        self.last_followup_reason = decision.reason if decision.rebalance_at_ms is not None else ""
        if decision.rebalance_at_ms is None:
            self.followups.cancel()
        else:
            self._schedule(decision.rebalance_at_ms, decision.reason)
        process._notify(self, decision.assignment)

    # ------------------------------------------------------------------ helpers

    def _group_input(
        self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> GroupInput:
        topics = set(self.process.topology.source_topics)
        for meta in members.values():
            topics.update(meta.subscription)
        counts: dict[str, int] = {}
        for topic in sorted(topics):
            partitions = cluster.partitions_for_topic(topic)
            if partitions:
                counts[topic] = len(partitions)
        subscriptions = {
            member_id: MemberSubscription(tuple(meta.subscription), bytes(meta.user_data or b""))
            for member_id, meta in members.items()
        }
        return GroupInput(
            members=subscriptions,
            partition_counts=counts,
            changelog_end_offsets=self.process.changelog_end_offsets,
            now_ms=self.process._now_ms(),
            leader_process_id=self.process.process_id,
            memory=self.process.leader_memory,
        )

    def _schedule(self, at_ms: int, reason: str) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            log.warning("follow-up rebalance wanted (%s) outside an event loop; ignored", reason)
            return
        self.followups.schedule(at_ms, reason)

    def describe_last_assignment(self) -> dict[str, Any]:
        """A JSON-ready summary of this consumer's last rebalance (tests, debugging)."""
        assignment = self.last_assignment or MemberAssignment()
        leader = self.last_leader
        return {
            "process_id": str(self.process.process_id),
            "consumer_index": self.index,
            "used_version": self.used_version,
            "assignment_version": self.last_info.version if self.last_info else None,
            "error": assignment.error.name,
            "active": sorted(str(t) for t in assignment.active_tasks),
            "standby": sorted(str(t) for t in assignment.standby_tasks),
            "kept_active": sorted(str(t) for t in assignment.changes.kept_active),
            "followup": self.last_followup_reason,
            "followup_at_ms": self.followups.scheduled_at_ms,
            "sent_offset_sums": (
                {str(t): s for t, s in self.last_subscription.task_offset_sums.items()}
                if self.last_subscription
                else {}
            ),
            "leader_end_offsets": (
                None
                if leader is None or leader.group.changelog_end_offsets is None
                else [[tp.topic, tp.partition, o]
                      for tp, o in sorted(leader.group.changelog_end_offsets.items())]
            ),
            "leader_assignor": leader.result.assignor if leader else None,
        }


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


def _by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [(topic, sorted(numbers)) for topic, numbers in sorted(grouped.items())]


def _error_assignments(
    members: Mapping[str, Any], why: str
) -> dict[str, ConsumerProtocolMemberAssignment]:
    """Version 1 error assignments, which every build of the codec reads."""
    data = Codec(1).encode_assignment(AssignmentInfo.error(AssignorError.ASSIGNMENT_ERROR, 1))
    log.error("answering %d member(s) with ASSIGNMENT_ERROR: %s", len(members), why)
    return {
        member_id: ConsumerProtocolMemberAssignment(_CONSUMER_PROTOCOL_VERSION, [], data)
        for member_id in members
    }


__all__ = [
    "AssignmentListener",
    "EndOffsetsReader",
    "LeaderRecord",
    "StateProvider",
    "StreamsPartitionAssignor",
    "StreamsProcess",
    "derive_process_id",
]
