"""Java's hash codes and integer arithmetic, for the keys Kafka puts in hash tables.

The iteration order of a ``HashSet``/``HashMap`` follows from its keys' ``hashCode()``, so the
emulation (:mod:`assignor._java.hash_table`) needs them bit for bit: ``String.hashCode`` over
UTF-16 code units, ``UUID.hashCode`` (which ``ProcessId`` uses), ``Objects.hash`` (which
``TaskId`` uses), all in wrapping 32-bit ``int`` arithmetic, and ``HashMap.hash``'s spreading.
Java's limits (``Integer.MAX_VALUE``, ``Long.MAX_VALUE``) and ``String`` order live with the ids
in :mod:`protocol.ids`.
"""

from __future__ import annotations

import uuid
from typing import Final

from protocol.ids import ProcessId, TaskId

_MASK32: Final = 0xFFFFFFFF
_MASK64: Final = 0xFFFFFFFFFFFFFFFF


def int32(value: int) -> int:
    """Wrap to Java's signed 32-bit ``int`` (what ``(int)`` and overflowing ``int`` math give)."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def string_hash(text: str) -> int:
    """``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return int32(h)


def objects_hash(*hash_codes: int | None) -> int:
    """``Objects.hash(a, b, ...)`` given each argument's ``hashCode()`` (``None`` for null)."""
    h = 1
    for code in hash_codes:
        h = (31 * h + (0 if code is None else code)) & _MASK32
    return int32(h)


def uuid_hash(value: uuid.UUID) -> int:
    """``UUID.hashCode``: the 128 bits folded to 64, then to 32, by xor."""
    bits = value.int
    folded = (bits >> 64) ^ (bits & _MASK64)
    return int32((folded >> 32) ^ folded)


def process_id_hash(process: ProcessId) -> int:
    """``ProcessId.hashCode`` = its ``UUID``'s."""
    return uuid_hash(process.uuid)


def task_id_hash(task: TaskId) -> int:
    """``TaskId.hashCode`` = ``Objects.hash(subtopology, partition, topologyName)`` (inlined:
    hash sets of thousands of tasks are built per rebalance)."""
    topology = 0 if task.topology is None else string_hash(task.topology)
    return int32(((31 + task.subtopology) * 31 + task.partition) * 31 + topology)


def spread(hash_code: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)``, a signed ``int`` (tree bins compare it signed)."""
    h = hash_code & _MASK32
    return int32(h ^ (h >> 16))
