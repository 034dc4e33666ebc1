"""The one-call assignment reader agrees with the checked streaming reader.

``protocol._assignment_fast.decode_fast`` may decline any payload (the streaming reader then
decides), but whatever it accepts the streaming reader must accept too, as the same message:
checked on drawn messages, on those messages mutated byte by byte and structure by structure,
and on the shapes it exists for.
"""

from __future__ import annotations

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignor.testing import assignment_infos
from protocol import AssignmentInfo, HostInfo, ProtocolError, TaskId, TopicPartition
from protocol._assignment_fast import FAST_MAX_BYTES, decode_fast
from protocol._assignment_format import decode as streaming_decode
from protocol._read import Reader, read_header
from protocol.codec import LATEST_VERSION, SUPPORTED_VERSIONS, Codec, encode_assignment

MUTATIONS = settings(
    max_examples=settings.default.max_examples * 5,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def streaming(data: bytes) -> AssignmentInfo | ProtocolError:
    """What the checked reader makes of ``data`` (as the codec calls it for a known version)."""
    try:
        reader = Reader(data)
        version, second, kind, fields = read_header(reader)
        if kind != 0x41 or version > LATEST_VERSION:
            raise ProtocolError("kind", "not an assignment of a known version")
        return streaming_decode(reader, fields, version, second)
    except ProtocolError as error:
        return error


def agree(data: bytes) -> AssignmentInfo | None:
    """The fast reader's answer, after checking it against the streaming reader's."""
    fast = decode_fast(data, LATEST_VERSION)
    if fast is not None:
        slow = streaming(data)
        assert not isinstance(slow, ProtocolError), (data, slow)
        assert fast == slow
        # field by field, down to the types and the order of the maps
        assert {k: (type(v), list(v) if isinstance(v, dict) else v) for k, v in
                vars(fast).items()} == {k: (type(v), list(v) if isinstance(v, dict) else v)
                                        for k, v in vars(slow).items()}
        assert fast.model_fields_set == slow.model_fields_set
    return fast


def test_the_common_member_is_read_fast() -> None:
    """A member of a large group: its tasks, a standby, its own endpoint's entries only."""
    host = HostInfo("host-fast", 8080)
    info = AssignmentInfo(
        version=LATEST_VERSION,
        commonly_supported_version=LATEST_VERSION,
        active_tasks=(TaskId(0, 1), TaskId(1, 1)),
        standby_tasks={TaskId(0, 7): (TopicPartition("orders", 7),)},
        partitions_by_host={host: frozenset({TopicPartition("orders", 1)})},
        standby_partitions_by_host={host: frozenset({TopicPartition("orders", 7)})},
        next_rebalance_ms=60_000,
        host_maps_complete=False,
    )
    data = encode_assignment(info)
    Codec().decode_assignment(data)  # interns the endpoint
    assert agree(data) == info
    assert Codec().decode_assignment(data) == info


@settings(MUTATIONS)
@given(data=st.data())
def test_drawn_messages_read_alike(data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(SUPPORTED_VERSIONS))
    info = data.draw(assignment_infos(st.just(version)))
    payload = encode_assignment(info)
    Codec().decode_assignment(payload)  # intern what it names, so the fast reader may read it
    read = agree(payload)
    if read is not None:
        assert read == Codec().decode_assignment(payload) == info


@settings(MUTATIONS)
@given(data=st.data())
def test_mutated_bytes_are_never_accepted_alone(data: st.DataObject) -> None:
    info = data.draw(assignment_infos(st.just(LATEST_VERSION), named=False))
    payload = bytearray(encode_assignment(info))
    Codec().decode_assignment(bytes(payload))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(payload) - 1))
        payload[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(payload)))
    tail = data.draw(st.binary(max_size=3))
    agree(bytes(payload[:cut]) + tail)
    agree(bytes(payload))


_LEAVES = st.one_of(
    st.sampled_from([None, True, False, 0, 1, 2, -1, 3, 4, 65, 255, 2**31, 2**31 - 1, 2**63,
                     2**63 - 1, 1.5, "", "x", " x", "orders", b"", b"x"]),
    st.integers(-(2**63), 2**64 - 1),
    st.text(max_size=5),
)


@settings(MUTATIONS)
@given(data=st.data())
def test_mutated_fields_are_never_accepted_alone(data: st.DataObject) -> None:
    """A top-level field, or an element of a list inside it (two levels deep), replaced by a
    value of another shape."""
    info = data.draw(assignment_infos(st.just(LATEST_VERSION), named=False))
    payload = encode_assignment(info)
    Codec().decode_assignment(payload)
    items = msgpack.unpackb(payload, raw=False)
    replacement = data.draw(st.one_of(_LEAVES, st.lists(_LEAVES, max_size=4)))
    at = data.draw(st.integers(0, len(items) - 1))
    target = items
    for _ in range(data.draw(st.integers(0, 2))):  # descend into a nested list, if there is one
        inner = target[at]
        if not isinstance(inner, list) or not inner:
            break
        target, at = inner, data.draw(st.integers(0, len(inner) - 1))
    target[at] = replacement
    agree(msgpack.packb(items, use_bin_type=True))


def test_declines_what_it_does_not_handle() -> None:
    """Older versions, named topologies, unknown endpoints and large payloads are left to the
    streaming reader."""
    base = dict(commonly_supported_version=LATEST_VERSION, active_tasks=(TaskId(0, 1),))
    older = encode_assignment(AssignmentInfo(version=3, **base))  # type: ignore[arg-type]
    named = encode_assignment(
        AssignmentInfo(version=LATEST_VERSION, commonly_supported_version=LATEST_VERSION,
                       active_tasks=(TaskId(0, 1, topology="orders"),))
    )
    stranger = encode_assignment(
        AssignmentInfo(version=LATEST_VERSION, commonly_supported_version=LATEST_VERSION,
                       partitions_by_host={HostInfo("never-decoded-before", 1): frozenset()})
    )
    large = encode_assignment(
        AssignmentInfo(version=LATEST_VERSION, commonly_supported_version=LATEST_VERSION,
                       active_tasks=tuple(TaskId(0, p) for p in range(FAST_MAX_BYTES // 4)))
    )
    assert len(large) > FAST_MAX_BYTES
    for payload in (older, named, stranger, large):
        assert decode_fast(payload, LATEST_VERSION) is None
        assert isinstance(Codec().decode_assignment(payload), AssignmentInfo)
    fits = encode_assignment(AssignmentInfo(version=LATEST_VERSION, **base))  # type: ignore[arg-type]
    assert decode_fast(fits, LATEST_VERSION) is not None
    assert decode_fast(fits, LATEST_VERSION - 1) is None  # an older build's codec


def test_each_structural_refusal_of_the_streaming_reader_is_declined() -> None:
    """Payloads that are well-formed msgpack but break one rule a mutation rarely hits: the
    fast reader declines each, and the codec then refuses it as the streaming reader does."""
    host = HostInfo("host-rules", 9)
    info = AssignmentInfo(
        version=LATEST_VERSION,
        commonly_supported_version=LATEST_VERSION,
        active_tasks=(TaskId(0, 1),),
        standby_tasks={TaskId(0, 2): (TopicPartition("a", 2),), TaskId(0, 3): ()},
        partitions_by_host={host: frozenset({TopicPartition("a", 1), TopicPartition("b", 4)})},
    )
    payload = encode_assignment(info)
    Codec().decode_assignment(payload)
    Codec().decode_assignment(encode_assignment(info.model_copy(  # interns a second endpoint
        update={"partitions_by_host": {HostInfo("host-other", 1): frozenset()}})))
    good = msgpack.unpackb(payload, raw=False)
    assert agree(payload) == info
    topics, active, standby, hosts = 4, 6, 7, 9

    def broken(at: int, value: object) -> bytes:
        items = msgpack.unpackb(payload, raw=False)
        items[at] = value
        return msgpack.packb(items, use_bin_type=True)

    entry = good[hosts][0]
    cases = {
        "a standby task twice": broken(standby, [good[standby][0], good[standby][0]]),
        "a task both active and standby": broken(active, [0, 0, 2]),
        "a named topology index without topologies": broken(active, [1, 0, 1]),
        "a repeated topic name": broken(topics, [good[topics][0], good[topics][0]]),
        "topics not ascending in a host entry": broken(hosts, [[*entry[:2], *entry[2:][::-1]]]),
        "a zero partition delta": broken(hosts, [[*entry[:2], [entry[2][0], 1, 0]]]),
        "a host twice": broken(hosts, [entry, entry]),
        "two hosts in own-endpoint maps": msgpack.packb(
            [*good[:8], 0, [entry, ["host-other", 1, [0, 5]]], *good[10:]], use_bin_type=True),
    }
    for name, data in cases.items():
        assert decode_fast(data, LATEST_VERSION) is None, name
        assert isinstance(streaming(data), ProtocolError), name


def test_a_standby_section_read_before_is_answered_alike_and_only_for_the_same_values() -> None:
    """Standby sections read before are kept: the same payload reads to an equal, fresh map,
    and a section whose values merely compare equal (``True`` for 1, ``1.0``, a map whose keys
    spell the entry) is still checked, not taken for the kept one."""
    host = HostInfo("host-kept", 8080)
    info = AssignmentInfo(
        version=LATEST_VERSION,
        commonly_supported_version=LATEST_VERSION,
        active_tasks=(TaskId(0, 1),),
        standby_tasks={TaskId(1, 1): (TopicPartition("orders", 1),)},
        partitions_by_host={host: frozenset({TopicPartition("orders", 1)})},
        standby_partitions_by_host={host: frozenset({TopicPartition("orders", 1)})},
        next_rebalance_ms=60_000,
        host_maps_complete=False,
    )
    data = encode_assignment(info)
    Codec().decode_assignment(data)  # interns the endpoint
    first, second = agree(data), agree(data)
    assert first == second == info
    assert first is not None and second is not None
    assert first.standby_tasks is not second.standby_tasks
    items = msgpack.unpackb(data, raw=False)
    entry = items[7][0]
    assert entry == [0, 1, 1, 0, 1]  # [unnamed, subtopology, partition, topic index, partition]
    mutants: list[object] = [[0, True, 1, 0, 1], [0, 1, 1, 0, 1.0], dict.fromkeys(entry[:4])]
    for mutant in mutants:
        items[7][0] = mutant
        assert agree(msgpack.packb(items, use_bin_type=True)) is None
    items[7][0] = entry
    assert agree(msgpack.packb(items, use_bin_type=True)) == info
