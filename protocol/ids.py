"""Identifiers shared by every member and the leader, ordered exactly as Kafka orders them.

Order matters: the task assignors break ties by these orders, so a Python result equals the Java
result only when ``TaskId`` sorts like ``TaskId.compareTo`` and ``ProcessId`` like
``java.util.UUID.compareTo`` (signed 64-bit halves, not string order).
"""

from __future__ import annotations

import re
import uuid as _uuid
from collections.abc import Callable, Collection
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from protocol._kept_keys import KeptKeys
from protocol._trusted import (
    new_instance,
    set_extra,
    set_fields_set,
    set_model_dict,
    set_private,
)
from protocol._trusted import trusted_model as trusted_model  # the decoders' import path

#: Java's ``Integer.MAX_VALUE`` and ``Long.MAX_VALUE``: the project's one definition of each.
INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1
_FROZEN = ConfigDict(frozen=True, extra="forbid")


def java_string_key(text: str) -> bytes:
    """A sort key equal to Java's ``String.compareTo``: UTF-16 code units, not code points.

    The two orders differ only when a string has characters above U+FFFF and others in
    U+E000-U+FFFF, but a topology name may; every Kafka-visible string order goes through here.
    """
    return text.encode("utf-16-be")


#: Sets a cached value's slot on a frozen model (its ``__setattr__`` refuses every write).
_set_attr = object.__setattr__


def _signed64(value: int) -> int:
    """Reinterpret an unsigned 64-bit value as Java's signed ``long``."""
    return value - (1 << 64) if value >= (1 << 63) else value


class TopicPartition(KeptKeys):
    """A partition of a topic; sorts by (topic, partition) like Kafka's partition comparators."""

    model_config = _FROZEN
    # The hash's bound ``int.__index__``, called in C as ``__hash__`` (see ``KeptKeys``): dicts and
    # sets keyed by partitions hash them thousands of times per rebalance. Not a field: neither
    # dumped, compared nor pickled.
    __slots__ = ("_hash",)
    if TYPE_CHECKING:
        _hash: Callable[[], int]

    topic: str = Field(min_length=1, max_length=249)
    partition: int = Field(ge=0, le=INT32_MAX)

    def __init__(
        self, topic: str | None = None, partition: int | None = None, /, **kwargs: Any
    ) -> None:
        # Positional for people, keywords for pydantic (model_validate calls __init__ so).
        if topic is not None:
            kwargs["topic"] = topic
        if partition is not None:
            kwargs["partition"] = partition
        super().__init__(**kwargs)

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __repr__(self) -> str:
        return f"TopicPartition({self.topic!r}, {self.partition})"

    def keep_keys(self) -> None:
        # hash((topic, partition)): the hash of aiokafka's TopicPartition named tuple
        _set_attr(self, "_hash", hash((self.topic, self.partition)).__index__)

    def __eq__(self, other: object) -> bool:
        if type(other) is TopicPartition:
            # The two fields are the whole __dict__ (extra fields are forbidden): one C-level
            # comparison instead of four attribute reads, in every dict lookup by partition.
            return bool(self.__dict__ == other.__dict__)
        if isinstance(other, TopicPartition):
            return self.topic == other.topic and self.partition == other.partition
        if type(other) is not tuple and isinstance(other, tuple) and len(other) == 2:
            # aiokafka's (and kafka-python's) TopicPartition is a (topic, partition) named tuple
            # with the same hash as ours; comparing equal too makes either kind find the other
            # in a dict or set, so a user never has to convert.
            return bool(self.topic == other[0] and self.partition == other[1])
        return NotImplemented

    def __lt__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __le__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) <= (other.topic, other.partition)

    def __gt__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) > (other.topic, other.partition)

    def __ge__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) >= (other.topic, other.partition)


_TASK_ID_RE = re.compile(r"^(?:(?P<topology>.+)__)?(?P<subtopology>\d+)_(?P<partition>\d+)$")


class TaskId(KeptKeys):
    """A task: one partition of one subtopology, optionally of a named topology.

    Printed and parsed as Kafka does (``"0_3"``, or ``"name__0_3"`` with a named topology) and
    ordered as ``TaskId.compareTo``: topology name (only when both have one; mixing a named and an
    unnamed task is an error, as in Java), then subtopology, then partition.
    """

    model_config = _FROZEN
    # Kept keys (tasks are hashed and ordered tens of thousands of times per rebalance). ``_rank``:
    # the order as one int, unnamed tasks only (a quarter of a tuple sort's cost). ``_hash``: the
    # hash's bound ``int.__index__``, which ``hash(task)`` calls via this slot's descriptor set as
    # ``__hash__``: no Python frame per hash (3.4 of a 73.7 M instructions round at 1,000 tasks).
    __slots__ = ("_hash", "_rank", "_sort_key")
    if TYPE_CHECKING:
        _hash: Callable[[], int]
        _rank: int
        _sort_key: tuple[bytes, int, int]

    subtopology: int = Field(ge=0, le=INT32_MAX)
    partition: int = Field(ge=0, le=INT32_MAX)
    topology: str | None = Field(default=None, min_length=1)

    def __init__(
        self,
        subtopology: int | None = None,
        partition: int | None = None,
        /,
        topology: str | None = None,
        **kwargs: Any,
    ) -> None:
        if subtopology is not None:
            kwargs["subtopology"] = subtopology
        if partition is not None:
            kwargs["partition"] = partition
        super().__init__(topology=topology, **kwargs)

    @classmethod
    def parse(cls, text: str) -> TaskId:
        """Parse Kafka's printed form; raise ``ValueError`` naming the text otherwise."""
        match = _TASK_ID_RE.match(text)
        if match is None:
            raise ValueError(f"task id {text!r} is not of the form '<subtopology>_<partition>'")
        return cls(int(match["subtopology"]), int(match["partition"]), topology=match["topology"])

    def __str__(self) -> str:
        base = f"{self.subtopology}_{self.partition}"
        return base if self.topology is None else f"{self.topology}__{base}"

    def __repr__(self) -> str:
        return f"TaskId({self})"

    def keep_keys(self) -> None:
        # all at once: a first lookup of an absent slot would go through pydantic's __getattr__
        name = self.topology
        _set_attr(self, "_hash", hash((self.subtopology, self.partition, name)).__index__)
        key = (b"" if name is None else java_string_key(name), self.subtopology, self.partition)
        _set_attr(self, "_sort_key", key)
        if name is None:  # partitions are below 2**31: (subtopology, partition) order as one int
            _set_attr(self, "_rank", (self.subtopology << 31) | self.partition)

    def __eq__(self, other: object) -> bool:
        if type(other) is TaskId:
            return bool(self.__dict__ == other.__dict__)  # the three fields, compared in C
        if not isinstance(other, TaskId):
            return NotImplemented
        return (
            self.subtopology == other.subtopology
            and self.partition == other.partition
            and self.topology == other.topology
        )

    @property
    def sort_key(self) -> tuple[bytes, int, int]:
        """Kafka's ``TaskId.compareTo`` as a key (topology name in Java's ``String`` order).

        A key sorts a whole collection cheaply; it cannot refuse to order a named task against an
        unnamed one as the comparisons do, so sort only tasks of one kind with it.
        """
        return self._sort_key  # every task keeps one (see ``KeptKeys``)

    def _keys(self, other: TaskId) -> tuple[tuple[bytes, int, int], tuple[bytes, int, int]]:
        if (self.topology is None) != (other.topology is None):
            raise ValueError(
                f"cannot compare task {self} with {other}: only one has a named topology"
            )
        return self.sort_key, other.sort_key

    def __lt__(self, other: TaskId) -> bool:
        mine, theirs = self._keys(other)
        return mine < theirs

    def __le__(self, other: TaskId) -> bool:
        mine, theirs = self._keys(other)
        return mine <= theirs

    def __gt__(self, other: TaskId) -> bool:
        mine, theirs = self._keys(other)
        return mine > theirs

    def __ge__(self, other: TaskId) -> bool:
        mine, theirs = self._keys(other)
        return mine >= theirs


def task_order(task: TaskId) -> tuple[bool, bytes, int, int]:
    """One total order over tasks of named and unnamed topologies: unnamed first, then each kind
    in Kafka's ``TaskId`` order. Kafka never compares the two kinds, but payloads and printouts
    still need one deterministic order for a collection that mixes them."""
    name, subtopology, partition = task.sort_key
    return (task.topology is not None, name, subtopology, partition)


#: an unnamed task's kept ``_rank`` (absent on named tasks: reading it raises AttributeError)
_TASK_RANK = attrgetter("_rank")


def sorted_tasks(tasks: Collection[TaskId]) -> list[TaskId]:
    """``tasks`` in :func:`task_order`: by the int rank unnamed tasks keep, read in C, when every
    task has one (an int sort, no ``TaskId.__lt__`` call per comparison), else by one
    ``task_order`` key per task. A collection, not an iterator: the first attempt may read it
    whole before a named task turns it down."""
    try:
        return sorted(tasks, key=_TASK_RANK)
    except AttributeError:
        return sorted(tasks, key=task_order)

class ProcessId(BaseModel):
    """One application instance (one ``KafkaStreams`` process), however many threads it runs.

    Ordered as Java's ``UUID.compareTo``: the most significant 64 bits as a signed long, then the
    least significant 64 bits as a signed long. String order would disagree for UUIDs whose top
    bit is set, and so would the assignment.
    """

    model_config = _FROZEN
    # Hash and sort key, kept once computed (see ``TopicPartition``): ``UUID.__hash__`` and the
    # signed halves are Python code, and clients are keyed and sorted by process id throughout.
    __slots__ = ("_hash", "_sort_key")
    if TYPE_CHECKING:
        _hash: int
        _sort_key: tuple[int, int]

    uuid: _uuid.UUID

    def __init__(self, value: _uuid.UUID | str | None = None, /, **kwargs: Any) -> None:
        if value is not None:
            kwargs["uuid"] = value
        super().__init__(**kwargs)

    @classmethod
    def for_int(cls, n: int) -> ProcessId:
        """``UUID(0, n)``, Kafka's test helper ``processIdForInt``; keeps n's order for n >= 0."""
        return cls(_uuid.UUID(int=n & ((1 << 64) - 1)))

    @classmethod
    def from_halves(cls, most_significant: int, least_significant: int) -> ProcessId:
        """Build from Java's two signed (or unsigned) 64-bit halves."""
        msb = most_significant & ((1 << 64) - 1)
        lsb = least_significant & ((1 << 64) - 1)
        return cls(_uuid.UUID(int=(msb << 64) | lsb))

    @classmethod
    def random(cls) -> ProcessId:
        return cls(_uuid.uuid4())

    @property
    def most_significant_bits(self) -> int:
        """Java's ``getMostSignificantBits()``: signed."""
        return _signed64(self.uuid.int >> 64)

    @property
    def least_significant_bits(self) -> int:
        """Java's ``getLeastSignificantBits()``: signed."""
        return _signed64(self.uuid.int & ((1 << 64) - 1))

    @property
    def sort_key(self) -> tuple[int, int]:
        try:
            return self._sort_key
        except AttributeError:
            key = (self.most_significant_bits, self.least_significant_bits)
            _set_attr(self, "_sort_key", key)
            return key

    def __str__(self) -> str:
        return str(self.uuid)

    def __repr__(self) -> str:
        return f"ProcessId({self.uuid})"

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            value = hash(self.uuid)
            _set_attr(self, "_hash", value)
            return value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProcessId):
            return NotImplemented
        return self.uuid == other.uuid

    def __lt__(self, other: ProcessId) -> bool:
        return self.sort_key < other.sort_key

    def __le__(self, other: ProcessId) -> bool:
        return self.sort_key <= other.sort_key

    def __gt__(self, other: ProcessId) -> bool:
        return self.sort_key > other.sort_key

    def __ge__(self, other: ProcessId) -> bool:
        return self.sort_key >= other.sort_key


class HostInfo(BaseModel):
    """The ``application.server`` endpoint a member declares for interactive queries."""

    model_config = _FROZEN
    __slots__ = ("_hash",)
    if TYPE_CHECKING:
        _hash: int

    host: str = Field(min_length=1, max_length=255)
    port: int = Field(ge=0, le=65535)

    def __init__(self, host: str | None = None, port: int | None = None, /, **kwargs: Any) -> None:
        if host is not None:
            kwargs["host"] = host
        if port is not None:
            kwargs["port"] = port
        super().__init__(**kwargs)

    @field_validator("host")
    @classmethod
    def _host_has_no_separator(cls, value: str) -> str:
        if any(ch.isspace() for ch in value):
            raise ValueError("host must not contain whitespace")
        return value

    @classmethod
    def parse(cls, text: str) -> HostInfo:
        """Parse ``host:port`` (``[v6]:port`` for IPv6); raise ``ValueError`` naming the text."""
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"endpoint {text!r} is not of the form 'host:port'")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return cls(host, int(port))

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __repr__(self) -> str:
        return f"HostInfo({self.host!r}, {self.port})"

    def __hash__(self) -> int:
        # Kept once computed (see TopicPartition): the leader keys processes by endpoint.
        try:
            return self._hash
        except AttributeError:
            value = hash((self.host, self.port))
            _set_attr(self, "_hash", value)
            return value

    def __eq__(self, other: object) -> bool:
        if type(other) is HostInfo:
            # What pydantic's __eq__ decides for two HostInfos (no private or extra fields),
            # in one C-level comparison.
            return bool(self.__dict__ == other.__dict__)
        return super().__eq__(other)

    def __lt__(self, other: HostInfo) -> bool:
        return (self.host, self.port) < (other.host, other.port)


# Building ids without validation, for callers that have range-checked every value (a decoder, the
# task planner), through ``protocol._trusted``'s slot setters, plus the keys each id keeps. A
# self-check at import falls back to ``model_construct`` should a pydantic release change the
# layout.
_TASK_FIELDS: Final = frozenset(("subtopology", "partition", "topology"))
_PARTITION_FIELDS: Final = frozenset(("topic", "partition"))

# (replacing the ``__hash__`` pydantic set on the class: see ``TaskId.__slots__``)
TaskId.__hash__ = vars(TaskId)["_hash"]  # type: ignore[method-assign]
TopicPartition.__hash__ = vars(TopicPartition)["_hash"]  # type: ignore[method-assign]
_set_task_hash = vars(TaskId)["_hash"].__set__
_set_task_sort_key = vars(TaskId)["_sort_key"].__set__
_set_task_rank = vars(TaskId)["_rank"].__set__
_set_partition_hash = vars(TopicPartition)["_hash"].__set__


def _fast_task_id(subtopology: int, partition: int, topology: str | None = None) -> TaskId:
    task = new_instance(TaskId)
    set_model_dict(
        task, {"subtopology": subtopology, "partition": partition, "topology": topology}
    )
    _set_task_hash(task, hash((subtopology, partition, topology)).__index__)
    if topology is None:
        _set_task_sort_key(task, (b"", subtopology, partition))
        _set_task_rank(task, (subtopology << 31) | partition)
    else:
        _set_task_sort_key(task, (java_string_key(topology), subtopology, partition))
    set_fields_set(task, _TASK_FIELDS)
    set_extra(task, None)
    set_private(task, None)
    return task


def _fast_topic_partition(topic: str, partition: int) -> TopicPartition:
    tp = new_instance(TopicPartition)
    set_model_dict(tp, {"topic": topic, "partition": partition})
    _set_partition_hash(tp, hash((topic, partition)).__index__)
    set_fields_set(tp, _PARTITION_FIELDS)
    set_extra(tp, None)
    set_private(tp, None)
    return tp


def _same_as_validated(built: BaseModel, validated: BaseModel) -> bool:
    return (
        built == validated
        and hash(built) == hash(validated)
        and built.__dict__ == validated.__dict__
        and built.model_fields_set == set(type(validated).model_fields)
        and built.model_dump() == validated.model_dump()
    )


def _checked_fast_constructors() -> bool:
    try:
        return _same_as_validated(
            _fast_task_id(1, 2, "t"), TaskId(1, 2, topology="t")
        ) and _same_as_validated(_fast_topic_partition("t", 3), TopicPartition("t", 3))
    except (AttributeError, KeyError, TypeError):  # pragma: no cover - a new pydantic layout
        return False


if _checked_fast_constructors():
    trusted_task_id = _fast_task_id
    trusted_topic_partition = _fast_topic_partition
else:  # pragma: no cover - only on a pydantic whose model layout changed

    def trusted_task_id(subtopology: int, partition: int, topology: str | None = None) -> TaskId:
        return TaskId.model_construct(
            subtopology=subtopology, partition=partition, topology=topology
        )

    def trusted_topic_partition(topic: str, partition: int) -> TopicPartition:
        return TopicPartition.model_construct(topic=topic, partition=partition)


trusted_task_id.__doc__ = "A ``TaskId`` from values the caller has already checked (no validation)."
trusted_topic_partition.__doc__ = (
    "A ``TopicPartition`` from values the caller has already checked (no validation)."
)
