"""The bounds a decoder enforces before it trusts a payload, and why each has its value.

A leader decodes every member's bytes inside ``assign()`` on the event loop, and a member decodes
its assignment the same way, so a hostile or corrupt payload must not be able to make either
allocate or loop beyond what a legitimate message needs. A generous bound is not enough: a bound
of a million elements is a bound of seconds and gigabytes once every element becomes a Python
object. So each limit below is the largest value a real deployment can reach, derived from what
Kafka itself can store, and each is checked on the declared length, before the elements are read.

The yardstick is the record Kafka keeps a whole group's metadata in: the coordinator writes every
member's subscription and assignment into one ``__consumer_offsets`` record, which by default may
not exceed ``message.max.bytes`` (1,048,588 bytes; ``offsets.load.buffer.size`` is the same). Kafka
Streams' own encoding (version 11) spends 18 bytes per task offset sum and 8 bytes per partition
in a host map, so a Java member alone cannot report more than ~58,000 offset sums or list more
than ~131,000 host-map partitions without the broker refusing the group's record. Our limits sit
at the next power of two above those figures: a group Kafka Streams can run, we can decode.

``tests/bench/bench_protocol_limits.py`` measures the decode of the largest payload these limits
accept (time and peak memory); README's wire protocol section quotes the figures.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Final, TypeVar

_Sized = TypeVar("_Sized", bound=Sized)

#: Kafka's default ``message.max.bytes``: the record that holds a whole group's metadata.
KAFKA_GROUP_RECORD_BYTES: Final = 1_048_588

# --- whole payloads --------------------------------------------------------------------------

#: Largest subscription, in bytes: 65,536 offset sums cost 2-14 bytes each (our encoding) plus
#: 4-6 bytes per subtopology group; twice Kafka's group record leaves room for named topologies.
MAX_SUBSCRIPTION_BYTES: Final = 2 * 1024 * 1024

#: Largest assignment, in bytes: host maps of 4,096 hosts with 255-character names take ~2 MiB
#: on their own, and the task lists and 131,072 partitions fit in the rest.
MAX_ASSIGNMENT_BYTES: Final = 4 * 1024 * 1024

#: What a reader accepts before it has read the kind marker: the larger of the two.
MAX_PAYLOAD_BYTES: Final = max(MAX_SUBSCRIPTION_BYTES, MAX_ASSIGNMENT_BYTES)

# --- subscription fields ---------------------------------------------------------------------

#: Task offset sums in one subscription: a member reports one per task it has local state for.
#: Kafka's 18 bytes per sum fill the default group record at 58,254 sums.
MAX_OFFSET_SUMS: Final = 65_536

#: Client tags in one subscription (the only msgpack map in the format). Kafka Streams itself
#: allows 5 (``rack.aware.assignment.tags``).
MAX_CLIENT_TAGS: Final = 64

# --- assignment fields -----------------------------------------------------------------------

#: Tasks given to one member: entries of ``active_tasks`` (one per assigned partition, so a task
#: reading two topics counts twice) and standby tasks together. Each becomes an offset sum in
#: the member's next subscription, so the bound is the same.
MAX_MEMBER_TASKS: Final = MAX_OFFSET_SUMS

#: Partitions named by all of a member's standby tasks together (their changelog partitions).
MAX_STANDBY_PARTITIONS: Final = 65_536

#: Partitions listed by both host maps together. Kafka spends 8 bytes on each, so 131,072 of them
#: alone fill the default group record, which must also hold every other member's assignment.
MAX_HOST_MAP_PARTITIONS: Final = 131_072

#: Endpoints in one host map: one per Kafka Streams instance with ``application.server`` set.
#: Up to version 3 every member's assignment carries every endpoint, so a group's record grows
#: with the square of its size: 4,096 instances is beyond what fits even in a 100 MiB record.
#: Version 4 sends large groups each member's own endpoint only (``docs/wire-format.md``).
MAX_HOSTS: Final = 4_096

#: Names in an assignment's topic dictionary (source and changelog topics of the application).
MAX_TOPICS: Final = 10_000

#: Named topologies in one assignment (a deprecated Kafka Streams feature; a handful in practice).
MAX_NAMED_TOPOLOGIES: Final = 1_024

# --- scalars ---------------------------------------------------------------------------------

#: Longest string, in UTF-8 bytes: topic names (Kafka allows 249), host names (255), topology
#: names, client tag keys and values, rack ids.
MAX_STRING_BYTES: Final = 1024

#: Process ids travel as 16 raw bytes; no other binary field exists.
PROCESS_ID_BYTES: Final = 16

#: Longest quotation of a received value in an error message, in characters.
MAX_QUOTE_CHARS: Final = 100


def check_wire_str(value: str, field: str, *, allow_empty: bool = False) -> str:
    """Writers refuse what readers would refuse: empty strings or ones over the byte limit."""
    if not value and not allow_empty:
        raise ValueError(f"{field}: an empty string cannot be written")
    if len(value) * 4 > MAX_STRING_BYTES and len(value.encode("utf-8")) > MAX_STRING_BYTES:
        raise ValueError(f"{field}: longer than {MAX_STRING_BYTES} bytes in UTF-8")
    return value


def check_count(count: int, field: str, limit: int) -> int:
    """Writers refuse a field with more elements than a reader accepts for it."""
    if count > limit:
        raise ValueError(f"{field}: {count:,} elements exceed the limit of {limit:,}")
    return count


def check_array(items: _Sized, field: str, limit: int) -> _Sized:
    """``check_count`` on a sized collection, returning it."""
    check_count(len(items), field, limit)
    return items
