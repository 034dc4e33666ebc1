"""The assignor aiokafka calls: one :class:`StreamsPartitionAssignor` per consumer (stream thread).

Made by :class:`assignor.adapter.process.StreamsProcess`, it must be the only entry of the
consumer's ``partition_assignment_strategy`` (aiokafka #1168). What happens when:

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka.protocol.struct import Struct

from assignor.adapter.answer_bytes import (
    CONSUMER_PROTOCOL_VERSION,
    HeadKey,
    answer_bytes,
    error_assignments,
)
from assignor.adapter.assign_time_offsets import install_assign_time_refresh
from assignor.adapter.collector import collector_paused
from assignor.adapter.rejoin import FollowupScheduler, request_rejoin
from assignor.leader.cache import LeaderCache
from assignor.leader.explain import summarize
from assignor.leader.guard import LeaderMemory
from assignor.leader.model import (
    GroupInput,
    LeaderResult,
    MemberSubscription,
    member_subscription,
)
from assignor.leader.pipeline import assign_group
from assignor.member import (
    MemberAssignment,
    MemberDecision,
    interpret_assignment,
    repeat_decision,
)
from protocol._assignment_fast import copy_assignment
from protocol.codec import Codec
from protocol.errors import AssignorError, ProtocolError
from protocol.messages import AssignmentInfo, SubscriptionInfo, VersionHeader
from protocol.own_subscription import own_subscription
from protocol.shared_ids import shared_topic_partition

if TYPE_CHECKING:
    from assignor.adapter.process import StreamsProcess

log = logging.getLogger(__name__)

#: Most one-partition answer heads a leader keeps between rebalances (all dropped beyond it).
_MAX_KEPT_HEADS = 20_000


@dataclass(frozen=True, slots=True)
class LeaderRecord:
    """What the leader saw and decided in its last ``assign()`` (for logs, tests and replays)."""

    group: GroupInput
    result: LeaderResult
    elapsed_ms: float


class _KeptAnswer(NamedTuple):
    """A member's last answer read in full, and what reading it gave.

    In a probing round most members receive exactly the bytes and partitions they received the
    round before (a high-availability replay: 94 % of them), and reading and interpreting them
    again was most of ``on_assignment``. The same bytes decode to an equal message, and with
    the same partitions and context (``StreamsPartitionAssignor._context``), and the previous
    assignment being this decision's, :func:`assignor.member.repeat_decision` gives what
    :func:`interpret_assignment` would. The listing is a copy: aiokafka's is not ours to keep.
    A named tuple, built in C at every repeated answer, where a frozen dataclass's ``__init__``
    set each field through ``object.__setattr__`` (0.8 against 0.3 us).
    """

    user_data: bytes
    listing: list[tuple[str, list[int]]]
    context: tuple[object, ...]
    info: AssignmentInfo
    decision: MemberDecision


class StreamsPartitionAssignor:
    """The assignor aiokafka calls; one instance per consumer, made by ``StreamsProcess``."""

    name = "stream"
    #: aiokafka's built-ins carry this; it is the ConsumerProtocol schema version they send.
    version = CONSUMER_PROTOCOL_VERSION

    def __init__(
        self, process: StreamsProcess, index: int, group_instance_id: str | None = None
    ) -> None:
        self.process = process
        self.index = index
        self.group_instance_id = group_instance_id or (
            f"{process.group_instance_id}-{index}" if process.group_instance_id else None
        )
        self.used_version = process.codec.latest_supported
        self.followups = FollowupScheduler(now_ms=process._now_ms)
        self._consumer: object | None = None
        #: the coordinator whose ``_perform_assignment`` was last hooked (or found hooked)
        self._hooked: object | None = None
        self._unique_field = 0
        self.last_subscription: SubscriptionInfo | None = None
        self.last_assignment: MemberAssignment | None = None
        self.last_info: AssignmentInfo | None = None
        self.last_leader: LeaderRecord | None = None
        self.last_followup_reason: str = ""
        #: the last answer read in full, reused when the same one arrives again
        self._kept_answer: _KeptAnswer | None = None
        #: memory from this consumer's last assign(), kept once its own assignment arrives
        self._pending_memory: LeaderMemory | None = None
        #: the leader record ``assign()`` replaced, released once the answers are out
        #: (``on_assignment``, or the next join): not while the group waits for them
        self._retired_record: LeaderRecord | None = None
        #: the task plan and end sums of this consumer's last assign(), for the next one
        self._leader_cache = LeaderCache()
        #: members' answer heads, by partition(s), kept from one assign() to the next
        self._heads: dict[HeadKey, bytes] = {}

    def bind(self, consumer: object) -> None:
        """Tell the assignor its consumer, so that follow-up rebalances can be triggered and,
        once the consumer has started, its leader path reads end offsets at assign time."""
        self._consumer = consumer
        self.followups.bind(consumer)
        self._hook_leader_path()

    def _hook_leader_path(self) -> None:
        """Wrap the consumer's coordinator's ``_perform_assignment`` (once) so that, as leader,
        it refreshes the process's end offsets after every subscription arrived and before
        the synchronous ``assign()`` (``assignor.adapter.assign_time_offsets``). aiokafka
        creates the coordinator in ``start()``, so this runs again at every join."""
        coordinator = getattr(self._consumer, "_coordinator", None)
        if coordinator is not None and coordinator is not self._hooked:
            # (a coordinator already seen is marked: installing again would do nothing)
            install_assign_time_refresh(
                coordinator, self.process, self.process.assign_end_offsets_timeout_s
            )
            self._hooked = coordinator

    def request_rejoin(self, reason: str) -> None:
        if self._consumer is None:
            log.warning("rejoin wanted (%s) but consumer %d is not bound", reason, self.index)
            return
        log.info("consumer %d rejoins: %s", self.index, reason)
        request_rejoin(self._consumer)

    # ------------------------------------------------------------------ aiokafka interface

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        process = self.process
        self._hook_leader_path()  # aiokafka asks for metadata at each join, after start()
        self._pending_memory = None  # a new join: an earlier assign() of ours never completed
        self._retired_record = None
        self._unique_field = (self._unique_field + 1) % 256
        info = own_subscription(
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
        return _member_metadata(sorted(topics), user_data)

    def assign(
        self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, bytes]:
        """The leader's decision. Never raises: a failure answers every member with an error.

        The answers are aiokafka's encoded ``ConsumerProtocolMemberAssignment`` bytes
        (``assignor.adapter.answer_bytes``): aiokafka sends bytes as they are, where it would
        otherwise encode every member's struct again on the event loop after this returns.
        ``assignor.decode_answers`` reads them back as structs.

        The collector stays paused until the answers are built, not only while the pipeline
        runs: building 2,000 answers with it on cost several of its passes over the
        whole heap (a third of ``assign()``'s own share at ManyThreadsPerClient).
        """
        with collector_paused():
            return self._assign(cluster, members)

    def _assign(
        self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, bytes]:
        began = time.perf_counter()
        metrics = self.process._metrics
        config = self.process._leader_input_config()
        try:
            group = self._group_input(cluster, members)
            result = assign_group(
                self.process.topology, config, group, self.process.codec, self._leader_cache
            )
        except Exception as exc:
            log.exception("assign() failed; every member gets an error assignment")
            metrics.assign_timed(time.perf_counter() - began)
            metrics.add(assign_errors=1)
            return error_assignments(members, f"{type(exc).__name__}: {exc}")
        if len(self._heads) > _MAX_KEPT_HEADS:
            self._heads.clear()
        answers = answer_bytes(members, result.members, self._heads)
        elapsed = (time.perf_counter() - began) * 1000
        # The record this one replaces is kept a little longer: freeing the last rebalance's
        # group and results (10,000 members at 1,000 threads per client: about 1.6 ms) would
        # otherwise happen here, while every member waits for the answers.
        self._retired_record = self.last_leader
        self.last_leader = LeaderRecord(group, result, elapsed)
        self._pending_memory = result.memory
        metrics.assign_timed(elapsed / 1000)
        summary = result.summary if result.summary is not None else summarize(result, config)
        if summary is None:
            metrics.add(assign_errors=1)
        else:
            metrics.add(
                tasks_moved=len(summary.moved),
                warmups_placed=summary.warmups,
                probing_rebalances_scheduled=int(summary.probing),
                standbys_short=summary.standbys_short,
            )
        log.debug("assign() took %.1f ms for %d members", elapsed, len(members))
        return answers

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        process = self.process
        self._retired_record = None  # the answers are out: the last leader record may go
        if self._pending_memory is not None:
            # this consumer led the generation that just completed: it reached the members
            process.leader_memory, self._pending_memory = self._pending_memory, None
        data = assignment.user_data or b""
        kept = self._kept_answer
        if (
            kept is not None
            and type(data) is bytes
            and kept.decision.assignment is self.last_assignment
            and kept.context == self._context()
            and kept.user_data == data
            and kept.listing == assignment.assignment
        ):
            # the same answer again (most members of a probing round): what decoding and
            # interpreting it would give, from the last time's results
            info: AssignmentInfo | VersionHeader = copy_assignment(kept.info)
            decision = repeat_decision(kept.decision)
            self._kept_answer = _KeptAnswer(
                kept.user_data, kept.listing, kept.context, kept.info, decision
            )
        else:
            info, decision = self._interpret(assignment, data)
        self.last_info = info if isinstance(info, AssignmentInfo) else None
        self.used_version = decision.next_used_version
        self.last_assignment = decision.assignment
        _log_received(self.index, decision.assignment)
        process._metrics.received(decision.assignment.error is not AssignorError.NONE)
        process._record(self.index, decision.assignment)
        self.last_followup_reason = decision.reason if decision.rebalance_at_ms is not None else ""
        if decision.rebalance_at_ms is None:
            self.followups.cancel()
        else:
            self._schedule(decision.rebalance_at_ms, decision.reason)
        process._notify(self, decision.assignment)

    def _interpret(
        self, assignment: ConsumerProtocolMemberAssignment, data: bytes
    ) -> tuple[AssignmentInfo | VersionHeader, MemberDecision]:
        """Decode and interpret an answer in full; keep it (``_kept_answer``) when the same
        answer arriving again may reuse the outcome: a readable assignment without error,
        decoded by this package's codec (a subclass's decoding is its own)."""
        process = self.process
        # the decoder's shared instances: built once per partition, not per member and round
        partitions = [
            shared_topic_partition(topic, p)
            for topic, numbers in assignment.assignment
            for p in numbers
        ]
        context = self._context()
        try:
            info = process.codec.decode_assignment(data)
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
            topology=process.topology,
        )
        self._kept_answer = None
        if (
            isinstance(info, AssignmentInfo)
            and decision.assignment.error is AssignorError.NONE
            and type(process.codec).decode_assignment is Codec.decode_assignment
            and type(data) is bytes
        ):
            listing = [(topic, list(numbers)) for topic, numbers in assignment.assignment]
            self._kept_answer = _KeptAnswer(data, listing, context, info, decision)
        return info, decision

    def _context(self) -> tuple[object, ...]:
        """What else ``_interpret``'s outcome depends on (compared item by item, identity
        first): the subscription version, the codec and its latest version, the endpoint and
        the topology."""
        process = self.process
        codec = process.codec
        return (
            self.used_version, codec, codec.latest_supported, process.endpoint, process.topology
        )

    # ------------------------------------------------------------------ helpers

    def _group_input(
        self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> GroupInput:
        topics = set(self.process.topology.source_topics)
        subscriptions = _shared_subscriptions(members, topics)
        counts: dict[str, int] = {}
        for topic in sorted(topics):
            partitions = cluster.partitions_for_topic(topic)
            if partitions:
                counts[topic] = len(partitions)
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


#: whether aiokafka's member metadata is still a plain ``Struct`` of these three fields, which
#: ``_member_metadata`` then fills as ``Struct.__init__`` would
_PLAIN_METADATA = (
    ConsumerProtocolMemberMetadata.__init__ is Struct.__init__
    and tuple(ConsumerProtocolMemberMetadata.SCHEMA.names)
    == ("version", "subscription", "user_data")
)


def _member_metadata(topics: list[str], user_data: bytes) -> ConsumerProtocolMemberMetadata:
    """``ConsumerProtocolMemberMetadata(CONSUMER_PROTOCOL_VERSION, topics, user_data)``: the
    same instance dict, filled in the schema's order without ``Struct.__init__``'s loop over
    its schema (every consumer builds one at every join: 0.8 against 0.3 us)."""
    if not _PLAIN_METADATA:
        return ConsumerProtocolMemberMetadata(CONSUMER_PROTOCOL_VERSION, topics, user_data)
    metadata = object.__new__(ConsumerProtocolMemberMetadata)
    fields = metadata.__dict__
    fields["version"] = CONSUMER_PROTOCOL_VERSION
    fields["subscription"] = topics
    fields["user_data"] = user_data
    return metadata


def _log_received(index: int, assignment: MemberAssignment) -> None:
    """The member's one INFO line per rebalance: what it received and what that changed.
    (Its eleven arguments are counted only when the line is written: every member of a large
    group calls this at every rebalance, mostly with INFO off.)"""
    if not log.isEnabledFor(logging.INFO):
        return
    changes = assignment.changes
    log.info(
        "consumer %d received %d active (%d kept, %d added, %d removed) and %d standby tasks "
        "(%d kept, %d added, %d removed)%s",
        index,
        len(assignment.active_tasks),
        len(changes.kept_active),
        len(changes.added_active),
        len(changes.removed_active),
        len(assignment.standby_tasks),
        len(changes.kept_standby),
        len(changes.added_standby),
        len(changes.removed_standby),
        f"; error {assignment.error.name}: {assignment.error_detail}"
        if assignment.error is not AssignorError.NONE
        else "",
    )


def _shared_subscriptions(
    members: Mapping[str, ConsumerProtocolMemberMetadata], topics: set[str]
) -> dict[str, MemberSubscription]:
    """Every member's ``MemberSubscription``, one frozen record per distinct (topics, bytes),
    shared; adds the members' topics to ``topics``.

    Consumers of one process often send the same topics and bytes: one record each (built
    through its slots: 2,010 distinct of 10,000 at 1,000 threads per client), its topics
    counted once. One loop: reading the fields with ``map`` and building the dicts in C took
    more instructions (callgrind: at 10 distinct; at 10,000 members, +21 M with answer_bytes).
    """
    subscriptions: dict[str, MemberSubscription] = {}
    known_bytes: dict[bytes, tuple[list[str], MemberSubscription]] = {}
    names: tuple[list[str], tuple[str, ...]] = ([], ())  # the last topics, as a tuple
    for member_id, meta in members.items():
        data = meta.user_data
        try:  # (aiokafka hands bytes: looked up as they are, no check each)
            known = known_bytes.get(data)
        except TypeError:  # unhashable (a bytearray): as bytes, below
            known = None
        if known is None or known[0] != meta.subscription:
            if type(data) is not bytes:  # kept as bytes only: anything else is copied
                data = bytes(data or b"")
                known = known_bytes.get(data)
                if known is not None and known[0] == meta.subscription:
                    subscriptions[member_id] = known[1]
                    continue
            listed = meta.subscription
            topics.update(listed)
            if listed != names[0] or not names[1]:  # (records of the same topics share one)
                names = (listed, tuple(listed))
            known = known_bytes[data] = (listed, member_subscription(names[1], data))
        subscriptions[member_id] = known[1]
    return subscriptions


__all__ = ["LeaderRecord", "StreamsPartitionAssignor"]
