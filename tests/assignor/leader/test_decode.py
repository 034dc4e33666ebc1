"""Step 1 reads each distinct subscription byte string once and hands every member its result.

The consumers of one process without tasks send identical bytes; at 10,000 consumers of 10
processes most subscriptions are repeats. Each member must still get its own verdict: the same
decoded message (frozen, so shared), or its own rejection and log line.
"""

from __future__ import annotations

import uuid

import pytest

from assignor.leader.decode import decode_group
from assignor.leader.model import MemberSubscription
from protocol import Codec, HostInfo, ProcessId, SubscriptionInfo, VersionHeader


class _CountingCodec(Codec):
    """Counts the subscriptions it reads."""

    __slots__ = ("reads",)

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def decode_subscription(self, data: bytes) -> SubscriptionInfo | VersionHeader:
        self.reads += 1
        return super().decode_subscription(data)


def _bytes(process: int) -> bytes:
    info = SubscriptionInfo(
        version=4,
        latest_supported_version=4,
        process_id=ProcessId(uuid.UUID(int=process + 1)),
        user_endpoint=HostInfo(f"host-{process}", 8080),
    )
    return Codec().encode_subscription(info)


def test_each_distinct_byte_string_is_read_once(caplog: pytest.LogCaptureFixture) -> None:
    members = {f"a-{i}": MemberSubscription((), _bytes(0)) for i in range(4)}
    members |= {f"b-{i}": MemberSubscription((), _bytes(1)) for i in range(3)}
    members |= {f"x-{i}": MemberSubscription((), b"\x93not a subscription") for i in range(2)}
    codec = _CountingCodec()
    decoded = decode_group(members, codec)
    assert codec.reads == 3
    assert set(decoded.subscriptions) == {m for m in members if not m.startswith("x")}
    assert {id(decoded.subscriptions[f"a-{i}"]) for i in range(4)} == {
        id(decoded.subscriptions["a-0"])
    }
    assert decoded.subscriptions["b-2"].process_id == ProcessId(uuid.UUID(int=2))
    assert decoded.process_of["a-3"] == ProcessId(uuid.UUID(int=1))
    assert set(decoded.rejected) == {"x-0", "x-1"}
    assert decoded.rejected["x-0"] == decoded.rejected["x-1"]
    assert sum("x-" in r.getMessage() for r in caplog.records) == 2  # one line per member


def test_bytes_like_user_data_is_still_read() -> None:
    """User data the codec accepts but a dict cannot key (a bytearray) is read, not kept."""
    data = bytearray(_bytes(0))
    members = {"m-0": MemberSubscription((), data), "m-1": MemberSubscription((), data)}  # type: ignore[arg-type]
    codec = _CountingCodec()
    decoded = decode_group(members, codec)
    assert codec.reads == 2
    assert decoded.subscriptions["m-0"] == decoded.subscriptions["m-1"]
