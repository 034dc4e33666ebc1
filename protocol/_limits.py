"""The bounds a decoder enforces before it trusts a payload.

A leader decodes every member's bytes inside ``assign()`` on the event loop, so a hostile or
corrupt member must not be able to make it allocate or loop without bound. Every limit below is
checked by msgpack while it parses (before it allocates) or by the codec right after.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Final, TypeVar

_Sized = TypeVar("_Sized", bound=Sized)

#: Largest payload accepted, in bytes. Kafka's own group requests are bounded by
#: ``socket.request.max.bytes`` (100 MiB); an assignment with host maps for 1,000 hosts and
#: 100,000 partitions stays far below this.
MAX_PAYLOAD_BYTES: Final = 16 * 1024 * 1024

#: Longest msgpack array (elements). The real bound is the smaller of this and the payload's
#: size in bytes, since every element takes at least one byte.
MAX_ARRAY_LEN: Final = 1_000_000

#: Longest string, in UTF-8 bytes: topic names (Kafka allows 249), host names (255), topology
#: names, client tag keys and values, rack ids.
MAX_STRING_BYTES: Final = 1024

#: Most client tags in one subscription (the only msgpack map in the format). Kafka Streams
#: itself allows 5 (``rack.aware.assignment.tags``).
MAX_CLIENT_TAGS: Final = 64

#: Process ids travel as 16 raw bytes; no other binary field exists.
PROCESS_ID_BYTES: Final = 16

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1


def check_wire_str(value: str, field: str, *, allow_empty: bool = False) -> str:
    """Writers refuse what readers would refuse: empty strings or ones over the byte limit."""
    if not value and not allow_empty:
        raise ValueError(f"{field}: an empty string cannot be written")
    if len(value) * 4 > MAX_STRING_BYTES and len(value.encode("utf-8")) > MAX_STRING_BYTES:
        raise ValueError(f"{field}: longer than {MAX_STRING_BYTES} bytes in UTF-8")
    return value


def check_array(items: _Sized, field: str) -> _Sized:
    """Writers refuse arrays a reader would reject as too long."""
    if len(items) > MAX_ARRAY_LEN:
        raise ValueError(f"{field}: {len(items)} elements exceed the limit of {MAX_ARRAY_LEN}")
    return items
