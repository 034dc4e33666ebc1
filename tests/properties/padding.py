"""A member that pads its subscription up to a decoder limit (``protocol/_limits.py``) with
offset sums for tasks that do not exist, which the leader ignores: the in-group limit tests and
the state machine's ``send_a_subscription_at_its_limit`` rule.

The padding wraps the ``metadata()`` of the process's current hosted assignors, so it lasts
until the process restarts; it is not an engine event (a replayed scenario runs without it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgpack
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from protocol.messages import HEADER_ERROR_CODE_VERSION

if TYPE_CHECKING:  # group_machine uses this module for one of its rules
    from tests.properties.group_machine import SteppedReplay


def _sums_field(tree: list[Any]) -> int:
    """Where the offset sums sit in a subscription tree: from version 4 on the error code is
    the fourth field, one before them (``protocol/_subscription_format.py``)."""
    return 6 if tree[0] >= HEADER_ERROR_CODE_VERSION else 5


def _sums(tree: list[Any]) -> int:
    """Offset sums in a subscription tree's groups: ``[subtopology, p0, s0, ...]``, with the
    named topology in front from version 3 on."""
    head = 2 if tree[0] >= 3 else 1
    return sum((len(group) - head) // 2 for group in tree[_sums_field(tree)])


def offset_sums(total: int) -> Callable[[bytes], bytes]:
    """Pad a subscription (any version) to ``total`` offset sums with ghost tasks
    (subtopology 99, dense delta-coded partitions)."""

    def pad(data: bytes) -> bytes:
        tree = msgpack.unpackb(data, raw=False)
        missing = total - _sums(tree)
        if missing <= 0:  # already there (a process padded twice)
            return data
        named = [None] if tree[0] >= 3 else []
        field = _sums_field(tree)
        tree[field] = [*tree[field], [*named, 99, 0, 5, *([1, 5] * (missing - 1))]]
        return msgpack.packb(tree, use_bin_type=True)  # type: ignore[no-any-return]

    return pad


def size_in_bytes(total: int) -> Callable[[bytes], bytes]:
    """Pad a v3 or newer subscription to exactly ``total`` bytes with ghost tasks of named
    topologies the application does not have (names of 256-1,024 bytes: a constant 3-byte string
    header). Older versions have no named topologies and stay as they are."""

    def pad(data: bytes) -> bytes:
        tree = msgpack.unpackb(data, raw=False)
        if tree[0] < 3 or len(data) >= total:
            return data
        ghosts = [[f"ghost-{i:06d}-" + "x" * 300, 0, 0, 5]
                  for i in range((total - len(data)) // 330 - 10)]
        field = _sums_field(tree)
        tree[field] = [*tree[field], *ghosts]
        missing = total - len(msgpack.packb(tree, use_bin_type=True))
        for ghost in ghosts:
            step = min(missing, 1024 - len(ghost[0]))
            ghost[0] += "y" * step
            missing -= step
        out: bytes = msgpack.packb(tree, use_bin_type=True)
        assert len(out) == total
        return out

    return pad


def pad_subscriptions(sim: SteppedReplay, name: str, pad: Callable[[bytes], bytes]) -> None:
    """The first consumer of ``name`` sends its own subscription, padded, from its next join on
    (one member at the limit is the case; padding every thread would multiply the leader's
    decoding time); a second call replaces the first padding rather than adding to it."""
    for hosted in sim.replay.sims[name].hosted[:1]:
        metadata = getattr(hosted, "unpadded_metadata", hosted.metadata)

        def padded(topics: Any, metadata: Any = metadata) -> ConsumerProtocolMemberMetadata:
            sent = metadata(topics)
            return ConsumerProtocolMemberMetadata(sent.version, sent.subscription,
                                                  pad(sent.user_data))

        hosted.unpadded_metadata = metadata  # type: ignore[attr-defined]
        hosted.metadata = padded  # type: ignore[method-assign]
