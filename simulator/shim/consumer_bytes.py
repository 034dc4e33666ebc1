"""The consumer protocol's embedded bytes (member metadata, member assignment), cheaply.

Every join encodes a ``ConsumerProtocolMemberMetadata``, the leader decodes one per member and
encodes one ``ConsumerProtocolMemberAssignment`` per member, and every member decodes its own:
four passes through aiokafka's generic ``Struct``/``Schema`` machinery per member per rebalance,
which at 200+ members cost about a tenth of a cold start's wall time, more than the coordinator
itself. The bytes are the simulator's point (they are what a broker would carry), so these
functions produce exactly aiokafka's bytes and objects, only with fewer operations:

- the metadata's version and subscription prefix is the same for every member of a group, so it
  is encoded once per distinct (version, topics) and kept, and the leader's decoder keeps the
  last one it read (a buffer that begins with those bytes reads as those fields);
- the rest is ``struct.pack``/``unpack_from`` on the known layout instead of one call per field.

Anything off the plain path (another ``Struct`` class, a ``None`` list, a negative length, a
short buffer) goes to aiokafka's own ``encode``/``decode``, which then gives its own answer or
its own error. ``tests/simulator/shim/test_consumer_bytes.py`` compares both ways on generated
structs and on random bytes.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from assignor.adapter.answer_bytes import listing_head

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_HEAD = struct.Struct(">hi")  # version, then the first array's length
_HEADER_CACHE_LIMIT = 1024
_headers: dict[tuple[int, tuple[str, ...]], bytes] = {}
#: ``Struct(">{n}i")`` by ``n``: one dict look-up per topic instead of formatting the layout's
#: text and finding it in ``struct``'s own cache (a partition array's length repeats)
_arrays: dict[int, struct.Struct] = {}


def _ints(count: int) -> struct.Struct:
    """The layout of ``count`` big-endian int32s, kept (bounded as the headers are)."""
    layout = _arrays.get(count)
    if layout is None:
        if len(_arrays) >= _HEADER_CACHE_LIMIT:
            _arrays.clear()
        layout = _arrays[count] = struct.Struct(f">{count}i")
    return layout


def _string(value: str) -> bytes:
    data = str(value).encode("utf-8")
    return _INT16.pack(len(data)) + data


def _metadata_header(version: int, topics: tuple[str, ...]) -> bytes:
    """Version and subscription array: identical across a group's members, so kept."""
    key = (version, topics)
    header = _headers.get(key)
    if header is None:
        header = b"".join((_INT16.pack(version), _INT32.pack(len(topics)),
                           *(_string(t) for t in topics)))
        if len(_headers) >= _HEADER_CACHE_LIMIT:  # bounded: subscriptions are few in practice
            _headers.clear()
        _headers[key] = header
    return header


def encode_metadata(metadata: Any) -> bytes:
    """``metadata.encode()``'s bytes for aiokafka's member metadata, any other object as is."""
    try:
        return _encode_metadata(metadata)
    except Exception:  # a value aiokafka cannot pack either: its own error, word for word
        return bytes(metadata.encode())


def _encode_metadata(metadata: Any) -> bytes:
    fields = metadata.__dict__ if type(metadata) is ConsumerProtocolMemberMetadata else None
    if fields is None or fields["subscription"] is None or fields["user_data"] is None:
        return bytes(metadata.encode())
    user_data = bytes(fields["user_data"])
    return b"".join((_metadata_header(fields["version"], tuple(fields["subscription"])),
                     _INT32.pack(len(user_data)), user_data))


def encode_assignment(assignment: Any) -> bytes:
    """``assignment.encode()``'s bytes for aiokafka's member assignment, any other as is."""
    try:
        return _encode_assignment(assignment)
    except Exception:  # a value aiokafka cannot pack either: its own error, word for word
        return bytes(assignment.encode())


def _encode_assignment(assignment: Any) -> bytes:
    fields = assignment.__dict__ if type(assignment) is ConsumerProtocolMemberAssignment else None
    if fields is None or fields["assignment"] is None or fields["user_data"] is None:
        return bytes(assignment.encode())
    # the leader's own writer of this layout (a ``None`` partition list or a value it cannot
    # pack raises, and ``encode_assignment`` hands the struct to aiokafka)
    head = listing_head(fields["assignment"], fields["version"])
    user_data = bytes(fields["user_data"])
    return b"".join((head, _INT32.pack(len(user_data)), user_data))


#: aiokafka's ``Struct.__init__`` stores each field in ``__dict__`` in its schema's order, one
#: Python-level loop step per field; the decoders build that same ``__dict__`` in one literal
#: (``test_consumer_bytes`` compares type and ``__dict__`` with aiokafka's own decode)
_new_metadata = ConsumerProtocolMemberMetadata.__new__
_new_assignment = ConsumerProtocolMemberAssignment.__new__


#: the version and subscription the last metadata read began with, and those bytes: every
#: member of a group sends the same, so a leader reads them once per rebalance, not once per
#: member (a buffer that begins with the same bytes reads as the same fields up to the same
#: offset); None before the first read
_last_header: list[tuple[bytes, int, tuple[str, ...]] | None] = [None]


class _OffPath(Exception):
    """Not the plain layout: let aiokafka's decoder answer (or raise) as it would."""


def decode_metadata(data: bytes) -> ConsumerProtocolMemberMetadata:
    """``ConsumerProtocol.METADATA.decode(data)``, the same object or the same failure.

    One cursor over the bytes, each length checked before it is used (negative, or past the
    end: aiokafka decides); ``struct.unpack_from`` per field."""
    try:
        buf = bytes(data)
        end = len(buf)
        last = _last_header[0]
        if last is not None and buf.startswith(last[0]):  # read as before: same fields, same end
            version, topics, at = last[1], list(last[2]), len(last[0])
        else:
            version, count = _HEAD.unpack_from(buf, 0)
            at = 6
            if count < 0 or at + count > end:
                raise _OffPath
            topics = []
            for _ in range(count):
                (size,) = _INT16.unpack_from(buf, at)
                at += 2
                if size < 0 or at + size > end:
                    raise _OffPath
                topics.append(buf[at:at + size].decode("utf-8"))
                at += size
            _last_header[0] = (buf[:at], version, tuple(topics))
        (size,) = _INT32.unpack_from(buf, at)
        at += 4
        if size < 0 or at + size > end:
            raise _OffPath
        metadata = _new_metadata(ConsumerProtocolMemberMetadata)
        metadata.__dict__ = {"version": version, "subscription": topics,
                             "user_data": buf[at:at + size]}
        return metadata
    except (_OffPath, struct.error, UnicodeDecodeError):
        return ConsumerProtocolMemberMetadata.decode(BytesIO(bytes(data)))


def decode_assignment(data: bytes) -> ConsumerProtocolMemberAssignment:
    """``ConsumerProtocol.ASSIGNMENT.decode(data)``, the same object or the same failure
    (read as in :func:`decode_metadata`)."""
    try:
        buf = bytes(data)
        end = len(buf)
        version, count = _HEAD.unpack_from(buf, 0)
        at = 6
        if count < 0 or at + count > end:
            raise _OffPath
        topics = []
        for _ in range(count):
            (size,) = _INT16.unpack_from(buf, at)
            at += 2
            if size < 0 or at + size > end:
                raise _OffPath
            topic = buf[at:at + size].decode("utf-8")
            at += size
            (size,) = _INT32.unpack_from(buf, at)
            at += 4
            if size < 0 or at + 4 * size > end:
                raise _OffPath
            layout = _arrays.get(size) or _ints(size)  # (kept: no frame for a known length)
            topics.append((topic, list(layout.unpack_from(buf, at))))
            at += 4 * size
        (size,) = _INT32.unpack_from(buf, at)
        at += 4
        if size < 0 or at + size > end:
            raise _OffPath
        assignment = _new_assignment(ConsumerProtocolMemberAssignment)
        assignment.__dict__ = {"version": version, "assignment": topics,
                               "user_data": buf[at:at + size]}
        return assignment
    except (_OffPath, struct.error, UnicodeDecodeError):
        return ConsumerProtocolMemberAssignment.decode(BytesIO(bytes(data)))


def partition_count(assignment: ConsumerProtocolMemberAssignment) -> int:
    """``len(assignment.partitions())`` without building a ``TopicPartition`` per partition;
    anything that count cannot take goes to ``partitions()``, which answers or raises as before."""
    try:
        return sum([len(partitions) for _, partitions in assignment.assignment])
    except Exception:
        return len(assignment.partitions())
