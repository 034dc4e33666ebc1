"""Step 1 reads each distinct subscription byte string once and hands every member its result.

The consumers of one process without tasks send identical bytes; at 10,000 consumers of 10
processes most subscriptions are repeats. Each member must still get its own verdict: the same
decoded message (frozen, so shared), or its own rejection and log line.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignor.leader.decode import decode_group, member_groups, without_refused
from assignor.leader.guard import group_members
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


def test_the_plain_path_reads_each_members_process_through_its_subscription() -> None:
    """The plain path's ``process_of`` is a view of the subscriptions, not a table of its own:
    every member and no other, each with its subscription's process."""
    members = {f"a-{i}": MemberSubscription((), _bytes(0)) for i in range(3)}
    members |= {"b-0": MemberSubscription((), _bytes(1))}
    decoded = decode_group(members, Codec())
    assert len(decoded.process_of) == 4
    assert list(decoded.process_of) == ["a-0", "a-1", "a-2", "b-0"]
    assert dict(decoded.process_of) == {
        m: decoded.subscriptions[m].process_id for m in members
    }
    assert decoded.process_of["b-0"] == ProcessId(uuid.UUID(int=2))
    with pytest.raises(KeyError):
        decoded.process_of["c-0"]


def test_bytes_like_user_data_is_still_read() -> None:
    """User data the codec accepts but a dict cannot key (a bytearray) is read, not kept."""
    data = bytearray(_bytes(0))
    members = {"m-0": MemberSubscription((), data), "m-1": MemberSubscription((), data)}  # type: ignore[arg-type]
    codec = _CountingCodec()
    decoded = decode_group(members, codec)
    assert codec.reads == 2
    assert decoded.subscriptions["m-0"] == decoded.subscriptions["m-1"]


@settings(deadline=None)
@given(
    draws=st.lists(
        st.tuples(st.sampled_from("abcdefgh"), st.sampled_from(["p0", "p1", "p2", "bad"])),
        min_size=1,
        max_size=12,
    )
)
def test_groups_are_the_members_of_each_subscription_object(
    draws: list[tuple[str, str]],
) -> None:
    """``DecodedGroup.groups`` is what the later steps use instead of a pass per member: every
    served member in exactly one group, the group's members sharing its object, member ids
    sorted within a group and groups in the order of their first member - the same groups
    ``guard.group_members`` finds from the subscriptions alone."""
    payloads = {"p0": _bytes(0), "p1": _bytes(1), "p2": _bytes(0), "bad": b"\x93bad"}
    members = {
        f"{prefix}-{i}": MemberSubscription((), bytes(payloads[kind]))
        for i, (prefix, kind) in enumerate(draws)
    }
    decoded = decode_group(members, Codec())
    grouped = [m for _, ids in decoded.groups for m in ids]
    assert sorted(grouped) == sorted(decoded.subscriptions)
    assert len(grouped) == len(set(grouped))
    for info, ids in decoded.groups:
        assert list(ids) == sorted(ids)
        assert all(decoded.subscriptions[m] is info for m in ids)
    firsts = [ids[0] for _, ids in decoded.groups]
    assert firsts == sorted(firsts)
    assert decoded.groups == group_members(decoded.subscriptions)
    assert member_groups(replace(decoded, groups=())) == decoded.groups
    refused = set(grouped[::2])
    kept = without_refused(decoded, dict.fromkeys(refused, "test"), Codec())
    assert kept.groups == group_members(kept.subscriptions)


@settings(deadline=None)
@given(
    picks=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=30),
    version=st.sampled_from((2, 3, 4)),
)
def test_a_plain_group_reads_as_the_general_loop_reads_it(
    picks: list[tuple[int, int]], version: int
) -> None:
    """Members of a few processes, each sending its process's idle bytes or bytes with a task
    (so some repeat, some are read from a template): the plain path's tables and groups are
    the general loop's, forced here by taking the plain path away."""
    import assignor.leader.decode as decode_module
    from protocol import TaskId

    def payload(process: int, task: int) -> bytes:
        info = SubscriptionInfo(
            version=version,
            latest_supported_version=4,
            process_id=ProcessId(uuid.UUID(int=process + 1)),
            user_endpoint=HostInfo(f"host-{process}", 8080),
            task_offset_sums={TaskId(0, task): -2} if task else {},
        )
        return Codec().encode_subscription(info)

    members = {
        f"m-{i:02d}": MemberSubscription(("t",), payload(process, task))
        for i, (process, task) in enumerate(picks)
    }
    plain = decode_group(members, Codec())
    original = decode_module._plain_group
    try:
        decode_module._plain_group = lambda *args: None  # type: ignore[assignment]
        general = decode_group(members, Codec())
    finally:
        decode_module._plain_group = original
    assert plain.subscriptions == general.subscriptions
    assert list(plain.subscriptions) == list(general.subscriptions)  # the members' order too
    assert plain.process_of == general.process_of
    assert (plain.min_used_version, plain.min_supported_version) == (
        general.min_used_version,
        general.min_supported_version,
    )
    assert [(info, ids) for info, ids in plain.groups] == list(general.groups)
    assert all(plain.subscriptions[m] is info for info, ids in plain.groups for m in ids)
    assert (plain.rejected, plain.future_version, plain.shutdown_requested_by) == ({}, None, ())


def test_the_plain_paths_table_of_members_is_built_only_when_read() -> None:
    """``SubscriptionOf``: its length and order come from the members, without the table;
    the first look-up builds it once, and every member reads its payload's message."""
    from assignor.leader.model import SubscriptionOf

    first, second = _bytes(0), _bytes(1)
    read = {first: Codec().decode_subscription(first), second: Codec().decode_subscription(second)}
    table = SubscriptionOf(["a", "b", "c"], [first, second, first], read)  # type: ignore[arg-type]
    assert len(table) == 3 and list(table) == ["a", "b", "c"]
    assert table._table is None
    assert table["c"] is read[first] and "b" in table and "d" not in table
    built = table._table
    assert built == {"a": read[first], "b": read[second], "c": read[first]}
    assert table == built and dict(table) == built and table._table is built
    assert repr(table).startswith("SubscriptionOf({'a': ")
    with pytest.raises(KeyError):
        table["d"]
