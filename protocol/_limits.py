"""The bounds a decoder enforces before it trusts a payload.

A leader decodes every member's bytes inside ``assign()`` on the event loop, so a hostile or
corrupt member must not be able to make it allocate or loop without bound. Every limit below is
checked by msgpack while it parses (before it allocates) or by the codec right after.
"""

from __future__ import annotations

from typing import Final

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
