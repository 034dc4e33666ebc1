"""The adapter's group input: one ``MemberSubscription`` per distinct (topics, bytes), shared;
records of the same topics share one topics tuple."""

from __future__ import annotations

import dataclasses

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from assignor.adapter.streams_assignor import _shared_subscriptions
from assignor.leader.model import MemberSubscription, member_subscription


def _meta(topics: list[str], data: bytes | bytearray) -> ConsumerProtocolMemberMetadata:
    return ConsumerProtocolMemberMetadata(0, topics, data)


def test_same_topics_share_one_record_per_distinct_bytes() -> None:
    members = {m: _meta(["b", "a"], b"x" if m != "c" else b"y") for m in ["d", "a", "c", "b"]}
    topics: set[str] = {"z"}
    made = _shared_subscriptions(members, topics)
    assert list(made) == ["d", "a", "c", "b"]
    assert made["a"] is made["b"] is made["d"] and made["a"] == MemberSubscription(("b", "a"), b"x")
    assert made["c"] == MemberSubscription(("b", "a"), b"y")
    assert made["c"].topics is made["a"].topics
    assert topics == {"z", "a", "b"}


def test_other_topics_get_their_own_record_and_other_data_types_become_bytes() -> None:
    """A member of the same bytes but other topics gets its own record with its topics; data
    that is not ``bytes`` is copied to bytes."""
    members = {
        "a": _meta(["t"], b"x"),
        "b": _meta(["t", "u"], b"x"),
        "c": _meta(["t"], b"x"),
        "d": _meta(["t"], bytearray(b"y")),
    }
    topics: set[str] = set()
    made = _shared_subscriptions(members, topics)
    assert made["a"] == MemberSubscription(("t",), b"x") == made["c"]
    assert made["b"] == MemberSubscription(("t", "u"), b"x")
    assert made["d"] == MemberSubscription(("t",), b"y") and type(made["d"].user_data) is bytes
    assert topics == {"t", "u"}
    assert _shared_subscriptions({}, topics) == {}


def test_the_fast_record_is_the_constructors() -> None:
    fast = member_subscription(("t",), b"x")
    assert type(fast) is MemberSubscription and fast == MemberSubscription(("t",), b"x")
    assert hash(fast) == hash(MemberSubscription(("t",), b"x"))
    with pytest.raises(dataclasses.FrozenInstanceError):  # (filled through a writable twin)
        fast.topics = ("u",)  # type: ignore[misc]


def test_data_of_other_types_shares_the_record_of_the_same_bytes() -> None:
    """A bytearray (which a dict cannot key) or ``None`` (no user data) is read as its bytes:
    it shares the record of members that sent those bytes, whichever came first."""
    members = {
        "a": _meta(["t"], bytearray(b"x")),
        "b": _meta(["t"], b"x"),
        "c": _meta(["t"], None),  # type: ignore[arg-type]
        "d": _meta(["t"], b""),
        "e": _meta(["u"], bytearray(b"x")),
    }
    made = _shared_subscriptions(members, set())
    assert made["a"] is made["b"] and made["a"] == MemberSubscription(("t",), b"x")
    assert type(made["a"].user_data) is bytes
    assert made["c"] is made["d"] and made["c"] == MemberSubscription(("t",), b"")
    assert made["e"] == MemberSubscription(("u",), b"x")
