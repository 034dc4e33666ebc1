"""What the leader's pipeline takes and gives: the group's input, each member's answer, and the
decision with what explains it (``assignor.leader.pipeline`` composes the steps between them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from assignor.leader.explain import RebalanceSummary
from assignor.leader.guard import LeaderMemory
from assignor.placement.client_state import ClientState
from assignor.placement.task_assignor import TaskAssignment
from assignor.placement.threads import ThreadAssignment
from assignor.topology.tasks import TaskLayout
from protocol.codec import LATEST_VERSION
from protocol.errors import AssignorError
from protocol.ids import ProcessId, TaskId, TopicPartition, trusted_model
from protocol.messages import AssignmentInfo, SubscriptionInfo


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What the coordinator hands the leader for one member: its topics and user data."""

    topics: tuple[str, ...]
    user_data: bytes


def _writable(cls: type) -> Any:
    """A subclass of the frozen slots dataclass ``cls`` whose instances take plain stores: the
    hot paths make an instance of it, store its fields, then give it ``cls`` as its class.

    Why: a frozen instance is otherwise filled through a slot's ``__set__`` (or
    ``object.__setattr__``) per field, a call each, where Python specializes a plain store
    into a slot when the class keeps the default ``__setattr__`` and ``__delattr__`` (both
    names share one type slot, so both are reset). 2,000 one-task results (six fields each,
    one rebalance at 1,000 threads per client) took 2.9 ms through the setters and 1.4 ms so,
    the change of class included."""
    namespace = {
        "__slots__": (),
        "__setattr__": object.__setattr__,
        "__delattr__": object.__delattr__,
        "__module__": cls.__module__,
    }
    return type(cls.__name__, (cls,), namespace)


_new_object = object.__new__
_WritableSubscription = _writable(MemberSubscription)


def _fast_member_subscription(topics: tuple[str, ...], user_data: bytes) -> MemberSubscription:
    """``MemberSubscription(topics, user_data)`` built through its writable twin: the adapter
    makes one per distinct subscription (2,010 per rebalance at 1,000 threads per client)."""
    made = _new_object(_WritableSubscription)
    made.topics = topics
    made.user_data = user_data
    made.__class__ = MemberSubscription
    return cast(MemberSubscription, made)


def _same_member_subscriptions() -> bool:
    """Whether :func:`_fast_member_subscription` builds what the constructor builds."""
    try:
        fast = _fast_member_subscription(("t",), b"x")
        return fast == MemberSubscription(("t",), b"x") and type(fast) is MemberSubscription
    except Exception:  # pragma: no cover - a dataclass layout without those slots
        return False


#: the constructor for hot paths (the writable twin when it builds an equal record)
member_subscription = (
    _fast_member_subscription if _same_member_subscriptions() else MemberSubscription
)


@dataclass(frozen=True, slots=True)
class GroupInput:
    """Everything the leader's decision depends on; the same input gives the same output."""

    members: Mapping[str, MemberSubscription]
    #: cluster metadata: partitions per topic (source topics and existing internal topics)
    partition_counts: Mapping[str, int]
    #: end offsets of changelog partitions (committed offsets for source-topic changelogs);
    #: ``None`` when they could not be fetched, which makes the leader fall back
    changelog_end_offsets: Mapping[TopicPartition, int] | None
    now_ms: int
    #: the leader's own process: a probing rebalance is scheduled on it, as in Kafka
    leader_process_id: ProcessId | None = None
    #: what the leader noticed in earlier generations (clones, ignored upgrade instructions)
    memory: LeaderMemory = field(default_factory=LeaderMemory)


#: a member's partitions grouped by topic, topics and partitions ascending
ByTopic = tuple[tuple[str, list[int]], ...]


@dataclass(frozen=True, slots=True)
class MemberResult:
    """One member's answer: its partitions and the encoded ``AssignmentInfo`` for user data."""

    partitions: tuple[TopicPartition, ...]
    info: AssignmentInfo
    user_data: bytes
    #: ``partitions`` as aiokafka lists them, ``((topic, [partition, ...]), ...)`` ascending,
    #: when the leader read them so already (a member of one topic's many partitions), else
    #: None; not part of the answer's value (the adapter copies the lists it hands aiokafka)
    by_topic: ByTopic | None = field(default=None, compare=False, repr=False)


class _UnbuiltInfoResult(MemberResult):
    """A :class:`MemberResult` whose ``info`` is built when first read, from the fields the
    encoder wrote the answer from (``AssignmentInfo``'s every field by name, checked, with the
    member's own tasks in place of those the fields hold).

    Why: a leader writes 2,000 answers of one task at 1,000 threads per client, and nothing
    on its way to aiokafka reads their models (the adapter hands over the bytes and the
    partitions); building each model was a third of a busy member's cost in the encode step,
    and a copy of the endpoint's fields per member with its tasks stored most of the rest (the
    fields are kept shared, the tasks in slots beside them: no dict per member).
    Whoever reads ``info`` (the simulator, the CLI, tests) gets the model the encoder would
    have built, and the same one at every read. Equal to the :class:`MemberResult` of the
    same values, in both directions (Python asks this subclass's ``__eq__`` first)."""

    __slots__ = ("_active", "_fields", "_standby")
    #: the shared fields until ``info`` is read (then ``None``), and the member's own tasks
    _fields: Mapping[str, object] | None
    _active: tuple[TaskId, ...]
    #: (or what makes them: the encoder's map of a member's many standby tasks, made if read)
    _standby: Mapping[TaskId, object] | Callable[[], Mapping[TaskId, object]]

    @property
    def info(self) -> AssignmentInfo:
        shared = self._fields
        if shared is None:
            return cast(AssignmentInfo, _get_info(self))
        values = dict(shared)
        values["active_tasks"] = self._active
        standby = self._standby
        values["standby_tasks"] = standby() if callable(standby) else standby
        made = trusted_model(AssignmentInfo, values)  # (the dict becomes the model's)
        _set_info(self, made)
        _set_fields(self, None)
        return made

    @info.setter
    def info(self, value: AssignmentInfo) -> None:  # (the dataclass's __init__, copy, pickle)
        _set_info(self, value)
        _set_fields(self, None)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemberResult):
            return NotImplemented
        return (self.partitions, self.info, self.user_data) == (
            other.partitions,
            other.info,
            other.user_data,
        )

    __hash__ = None  # type: ignore[assignment]  # (as MemberResult's: its model holds dicts)


_get_info = vars(MemberResult)["info"].__get__
_set_info = vars(MemberResult)["info"].__set__
_set_fields = vars(_UnbuiltInfoResult)["_fields"].__set__
_WritableResult = _writable(MemberResult)
_WritableUnbuilt = _writable(_UnbuiltInfoResult)


def _fast_member_result(
    partitions: tuple[TopicPartition, ...],
    info: AssignmentInfo,
    user_data: bytes,
    by_topic: ByTopic | None,
) -> MemberResult:
    """``MemberResult(...)`` built through its writable twin (the encoder's busy members)."""
    made = _new_object(_WritableResult)
    made.partitions = partitions
    made.info = info
    made.user_data = user_data
    made.by_topic = by_topic
    made.__class__ = MemberResult
    return cast(MemberResult, made)


def _same_member_results() -> bool:
    """Whether :func:`_fast_member_result` builds what the constructor builds."""
    try:
        info = AssignmentInfo(version=1, commonly_supported_version=1)
        fast = _fast_member_result((), info, b"x", (("t", [1]),))
        plain = MemberResult((), info, b"x", (("t", [1]),))
        return fast == plain and fast.by_topic == plain.by_topic and type(fast) is MemberResult
    except Exception:  # pragma: no cover - a dataclass layout without those slots
        return False


#: ``MemberResult``'s constructor for hot paths (the writable twin when it builds an equal one)
member_result = _fast_member_result if _same_member_results() else MemberResult


def unbuilt_info_result(
    partitions: tuple[TopicPartition, ...],
    fields: Mapping[str, object],
    active: tuple[TaskId, ...],
    standby: Mapping[TaskId, object] | Callable[[], Mapping[TaskId, object]],
    user_data: bytes,
    by_topic: ByTopic | None,
) -> MemberResult:
    """A :class:`MemberResult` whose ``info`` is ``trusted_model(AssignmentInfo, fields)``
    with ``active`` and ``standby`` as its tasks, built only if read; ``fields`` is not
    changed and must not change afterwards (the encoder's per-endpoint fields, shared)."""
    made = _new_object(_WritableUnbuilt)
    made.partitions = partitions
    made.user_data = user_data
    made.by_topic = by_topic
    made._fields = fields
    made._active = active
    made._standby = standby
    made.__class__ = _UnbuiltInfoResult
    return cast(MemberResult, made)


def store_one_task_results(
    results: dict[str, MemberResult],
    fields: Mapping[str, object],
    members: Iterable[tuple[str, TaskId, tuple[TopicPartition, ...]]],
    answers: Iterable[bytes],
    *,
    standby: bool,
) -> None:
    """``results[member] = unbuilt_info_result(...)`` for members of one task each (``members``
    as (member, task, the task's partitions), ``answers`` their bytes in the same order), the
    task active or, with ``standby``, a standby task; the results' slots stored in one loop,
    not a call each (2,000 members a rebalance at 1,000 threads per client)."""
    new, writable, kind = _new_object, _WritableUnbuilt, _UnbuiltInfoResult
    for (member_id, task, partitions), user_data in zip(members, answers, strict=True):
        made = new(writable)
        made.user_data = user_data
        made.by_topic = None
        made._fields = fields
        if standby:
            made.partitions = ()
            made._active = ()
            made._standby = {task: partitions}
        else:
            made.partitions = partitions
            made._active = (task,)
            made._standby = {}
        made.__class__ = kind
        results[member_id] = made


class ProcessOf(Mapping[str, ProcessId]):
    """Each member's process id, read from its decoded subscription when asked.

    Why: the pipeline's steps read a process per group of members that sent the same
    subscription (``DecodedGroup.groups``, from the group's subscription itself), so a table
    of every member (10,000 consumers at Kafka's ManyThreadsPerClient point, about a
    millisecond to build) served only readers outside the hot path (refusals, tools, tests).
    """

    __slots__ = ("_subscriptions",)

    def __init__(self, subscriptions: Mapping[str, SubscriptionInfo]) -> None:
        self._subscriptions = subscriptions

    def __getitem__(self, member_id: str) -> ProcessId:
        return self._subscriptions[member_id].process_id

    def __iter__(self) -> Iterator[str]:
        return iter(self._subscriptions)

    def __len__(self) -> int:
        return len(self._subscriptions)

    def __repr__(self) -> str:
        return f"ProcessOf({dict(self)!r})"


class SubscriptionOf(Mapping[str, SubscriptionInfo]):
    """Each member's decoded subscription, from its payload: ``read[payloads[i]]`` for
    ``members[i]`` (member ids sorted), the table built when first looked up.

    Why: the pipeline's steps read the members by group (``DecodedGroup.groups``, one decoded
    subscription per distinct payload), so a table of every member (10,000 consumers at Kafka's
    ManyThreadsPerClient point, 1.3 ms a rebalance to build) served only readers outside the
    hot path (refused members, error answers, tools, tests). Its length and its order (the
    members') need no table.
    """

    __slots__ = ("_members", "_payloads", "_read", "_table")

    def __init__(
        self, members: list[str], payloads: list[bytes], read: Mapping[bytes, SubscriptionInfo]
    ) -> None:
        self._members = members
        self._payloads = payloads
        self._read = read
        self._table: dict[str, SubscriptionInfo] | None = None

    def _built(self) -> dict[str, SubscriptionInfo]:
        table = self._table
        if table is None:
            table = self._table = dict(
                zip(self._members, map(self._read.__getitem__, self._payloads), strict=True)
            )
        return table

    def __getitem__(self, member_id: str) -> SubscriptionInfo:
        return self._built()[member_id]

    def __contains__(self, member_id: object) -> bool:
        return member_id in self._built()

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)  # (the table's own order)

    def __len__(self) -> int:
        return len(self._members)

    def __repr__(self) -> str:
        return f"SubscriptionOf({self._built()!r})"


@dataclass(frozen=True, slots=True)
class DecodedGroup:
    """Step 1's result."""

    subscriptions: Mapping[str, SubscriptionInfo]
    #: members whose bytes could not be read, with the reason
    rejected: Mapping[str, str]
    #: process id of each decoded member (future members map to ``FUTURE_PROCESS_ID``)
    process_of: Mapping[str, ProcessId]
    min_used_version: int
    min_supported_version: int
    future_version: int | None
    shutdown_requested_by: tuple[str, ...]
    #: every distinct subscription object with the members that share it (member ids sorted,
    #: groups in the order of their first member): the later steps ask a question once per
    #: group rather than once per member (10 groups for 8,000 idle consumers at Kafka's
    #: ManyThreadsPerClient point). Empty when whoever built this did not group them; then
    #: ``assignor.leader.decode.member_groups`` groups them.
    groups: tuple[tuple[SubscriptionInfo, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class LeaderResult:
    """The leader's decision, with what explains it (for logs, ``--explain`` and tests)."""

    members: Mapping[str, MemberResult]
    error: AssignorError = AssignorError.NONE
    detail: str = ""
    rejected: Mapping[str, str] = field(default_factory=dict)
    used_version: int = LATEST_VERSION
    commonly_supported_version: int = LATEST_VERSION
    assignor: str = ""
    layout: TaskLayout | None = None
    clients_before: Mapping[ProcessId, ClientState] = field(default_factory=dict)
    task_assignment: TaskAssignment | None = None
    threads: Mapping[ProcessId, ThreadAssignment] = field(default_factory=dict)
    #: why a follow-up rebalance will happen, if one will
    followup: str = ""
    #: members refused by ``assignor.leader.guard`` (clones, version liars), with the reason
    refused: Mapping[str, str] = field(default_factory=dict)
    #: what the leader should remember for the next generation
    memory: LeaderMemory = field(default_factory=LeaderMemory)
    #: ``explain.summarize`` of this decision, computed once for the log and the metrics
    #: (``None`` for an error answer, or when whoever built the result did not compute it)
    summary: RebalanceSummary | None = None


__all__ = [
    "DecodedGroup",
    "GroupInput",
    "LeaderResult",
    "MemberResult",
    "MemberSubscription",
    "ProcessOf",
    "SubscriptionOf",
    "member_result",
    "member_subscription",
    "store_one_task_results",
    "unbuilt_info_result",
]
