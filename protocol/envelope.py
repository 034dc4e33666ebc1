"""Kafka's ConsumerProtocol envelope around our user data, read without aiokafka.

What a broker stores and ``DescribeGroups`` returns for a member is not our msgpack payload but
Kafka's ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` struct (big-endian,
non-flexible), with our bytes in its ``user_data`` field:

- subscription: ``int16 version``, ``[string] topics``, ``nullable bytes user_data``; from v1
  ``[{string topic, [int32] partitions}] owned_partitions``; from v2 ``int32 generation_id``;
  from v3 ``nullable string rack_id``;
- assignment: ``int16 version``, ``[{string topic, [int32] partitions}] assigned_partitions``,
  ``nullable bytes user_data`` (versions 0 to 3 share this layout).

A version newer than 3 is read as 3 and what follows is ignored, as Kafka's ``ConsumerProtocol``
does. Our own payloads start with a msgpack array header (``0x9X``, ``0xdc`` or ``0xdd``) and an
envelope with an int16 version starts with ``0x00``, so the two never look alike. Every count is
checked against the bytes left before anything is read, so a hostile length costs nothing; every
problem is a ``ProtocolError`` naming the field under ``consumer_protocol``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal

from protocol.errors import ProtocolError

EnvelopeKind = Literal["subscription", "assignment"]

#: The newest ConsumerProtocol versions Kafka 4.1 defines; newer ones are read as these.
HIGHEST_SUBSCRIPTION_VERSION = 3
HIGHEST_ASSIGNMENT_VERSION = 3
_ROOT = "consumer_protocol"


@dataclass(frozen=True)
class Envelope:
    """One ConsumerProtocol struct: the consumer-level fields and the user data it carries."""

    kind: EnvelopeKind
    version: int
    #: subscription: the subscribed topics; assignment: empty
    topics: tuple[str, ...]
    #: subscription (v1+): owned partitions; assignment: assigned partitions
    partitions: tuple[tuple[str, tuple[int, ...]], ...]
    user_data: bytes | None
    generation_id: int | None = None
    rack_id: str | None = None

    def as_json(self) -> dict[str, object]:
        """The consumer-level fields as JSON-ready data (the user data is decoded separately)."""
        partitions = {topic: list(numbers) for topic, numbers in self.partitions}
        data: dict[str, object] = {"kind": self.kind, "version": self.version}
        if self.kind == "subscription":
            data |= {
                "topics": list(self.topics),
                "owned_partitions": partitions,
                "generation_id": self.generation_id,
                "rack_id": self.rack_id,
            }
        else:
            data["assigned_partitions"] = partitions
        data["user_data_bytes"] = None if self.user_data is None else len(self.user_data)
        return data


def looks_enveloped(data: bytes) -> bool:
    """Whether ``data`` starts as an envelope does (an int16 version below 256), not as ours."""
    return len(data) >= 2 and data[0] == 0x00


class _Reader:
    """Big-endian reads that say which field ran out of bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def left(self) -> int:
        return len(self.data) - self.at

    def _take(self, size: int, field: str) -> bytes:
        if size > self.left():
            raise ProtocolError(
                field,
                f"is cut short: it needs {size} more bytes at byte {self.at}, "
                f"but the payload has only {self.left()} left",
            )
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def int16(self, field: str) -> int:
        value: int = struct.unpack(">h", self._take(2, field))[0]
        return value

    def int32(self, field: str) -> int:
        value: int = struct.unpack(">i", self._take(4, field))[0]
        return value

    def count(self, field: str, smallest_element: int) -> int:
        """An array length, refused when the bytes left could not hold that many elements."""
        n = self.int32(field)
        if n < 0:
            raise ProtocolError(field, f"has a negative length ({n}); arrays here are never null")
        if n * smallest_element > self.left():
            raise ProtocolError(
                field,
                f"declares {n:,} elements, but only {self.left():,} bytes are left "
                f"(at least {smallest_element} bytes each)",
            )
        return n

    def string(self, field: str, *, nullable: bool = False) -> str | None:
        size = self.int16(field)
        if size == -1 and nullable:
            return None
        if size < 0:
            raise ProtocolError(field, f"has a negative length ({size})")
        raw = self._take(size, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(field, f"is not UTF-8 text ({exc.reason})") from None

    def text(self, field: str) -> str:
        value = self.string(field)
        assert value is not None  # not nullable: string() raised on a negative length
        return value

    def nullable_bytes(self, field: str) -> bytes | None:
        size = self.int32(field)
        if size == -1:
            return None
        if size < 0:
            raise ProtocolError(field, f"has a negative length ({size})")
        return self._take(size, field)


def _topic_partitions(reader: _Reader, field: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    entries = []
    for i in range(reader.count(field, 6)):  # a topic: 2-byte length + 4-byte partition count
        topic = reader.text(f"{field}[{i}].topic")
        numbers = tuple(
            reader.int32(f"{field}[{i}].partitions[{j}]")
            for j in range(reader.count(f"{field}[{i}].partitions", 4))
        )
        entries.append((topic, numbers))
    return tuple(entries)


def _version(reader: _Reader, highest: int) -> int:
    version = reader.int16(f"{_ROOT}.version")
    if version < 0:
        raise ProtocolError(f"{_ROOT}.version", f"{version} is negative")
    return min(version, highest)


def _finish(reader: _Reader, version: int, highest: int, kind: str) -> None:
    if reader.left() and version <= highest:
        raise ProtocolError(
            _ROOT,
            f"{reader.left()} bytes are left after a complete version {version} {kind}: "
            "this is not that struct",
        )


def read_subscription_envelope(data: bytes) -> Envelope:
    """A ``ConsumerProtocolSubscription``; raises ``ProtocolError`` naming the field at fault."""
    reader = _Reader(data)
    read_as = _version(reader, HIGHEST_SUBSCRIPTION_VERSION)
    declared = struct.unpack(">h", data[:2])[0]
    topics = tuple(
        reader.text(f"{_ROOT}.topics[{i}]") for i in range(reader.count(f"{_ROOT}.topics", 2))
    )
    user_data = reader.nullable_bytes(f"{_ROOT}.user_data")
    owned = _topic_partitions(reader, f"{_ROOT}.owned_partitions") if read_as >= 1 else ()
    generation = reader.int32(f"{_ROOT}.generation_id") if read_as >= 2 else None
    rack = reader.string(f"{_ROOT}.rack_id", nullable=True) if read_as >= 3 else None
    _finish(reader, declared, HIGHEST_SUBSCRIPTION_VERSION, "subscription")
    return Envelope("subscription", declared, topics, owned, user_data, generation, rack)


def read_assignment_envelope(data: bytes) -> Envelope:
    """A ``ConsumerProtocolAssignment``; raises ``ProtocolError`` naming the field at fault."""
    reader = _Reader(data)
    _version(reader, HIGHEST_ASSIGNMENT_VERSION)
    declared = struct.unpack(">h", data[:2])[0]
    assigned = _topic_partitions(reader, f"{_ROOT}.assigned_partitions")
    user_data = reader.nullable_bytes(f"{_ROOT}.user_data")
    _finish(reader, declared, HIGHEST_ASSIGNMENT_VERSION, "assignment")
    return Envelope("assignment", declared, (), assigned, user_data)


def read_envelope(data: bytes, kind: EnvelopeKind | None = None) -> Envelope:
    """The envelope as ``kind``, or, without one, whichever struct the bytes are exactly.

    Both structs start with a version and an array length, so a short payload may parse as both;
    then the user data's own kind decides (our payloads name their kind in their third field), and
    failing that the subscription wins (what a member sent is what people capture most).
    """
    if kind == "subscription":
        return read_subscription_envelope(data)
    if kind == "assignment":
        return read_assignment_envelope(data)
    readings: list[Envelope] = []
    problems: list[str] = []
    for reader in (read_subscription_envelope, read_assignment_envelope):
        try:
            readings.append(reader(data))
        except ProtocolError as exc:
            problems.append(str(exc))
    if not readings:
        raise ProtocolError(
            _ROOT,
            "starts like a consumer-protocol envelope (a 0x00 byte) but is neither struct: "
            f"as a subscription, {problems[0]}; as an assignment, {problems[1]}",
        )
    if len(readings) == 2:
        named = [r for r in readings if _user_data_kind(r.user_data) == r.kind]
        return named[0] if len(named) == 1 else readings[0]
    return readings[0]


def _user_data_kind(user_data: bytes | None) -> str | None:
    """Our payload's kind byte (``S`` or ``A``) when it is where a small payload keeps it."""
    if not user_data:
        return None
    header = 1 if user_data[0] & 0xF0 == 0x90 else {0xDC: 3, 0xDD: 5}.get(user_data[0])
    if header is None or len(user_data) < header + 3:
        return None
    kind = user_data[header + 2]
    return {0x53: "subscription", 0x41: "assignment"}.get(kind)
