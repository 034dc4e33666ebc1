"""The one-call subscription reader agrees with the checked streaming reader.

``protocol._subscription_fast.decode_fast`` may decline any payload (the streaming reader then
decides), but whatever it accepts the streaming reader must accept too, as the same message:
checked on drawn messages, on those messages mutated byte by byte and structure by structure,
and on the shapes it exists for.
"""

from __future__ import annotations

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignor.testing import subscription_infos
from protocol import HostInfo, ProcessId, ProtocolError, SubscriptionInfo, TaskId
from protocol._read import Reader, read_header
from protocol._subscription_fast import FAST_MAX_BYTES, decode_fast
from protocol._subscription_format import decode as streaming_decode
from protocol.codec import LATEST_VERSION, SUPPORTED_VERSIONS, Codec, encode_subscription

MUTATIONS = settings(
    max_examples=settings.default.max_examples * 5,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def streaming(data: bytes) -> SubscriptionInfo | ProtocolError:
    """What the checked reader makes of ``data`` (as the codec calls it for a known version)."""
    try:
        reader = Reader(data)
        version, second, kind, fields = read_header(reader)
        if kind != 0x53 or version > LATEST_VERSION:
            raise ProtocolError("kind", "not a subscription of a known version")
        return streaming_decode(reader, fields, version, second)
    except ProtocolError as error:
        return error


def agree(data: bytes) -> SubscriptionInfo | None:
    """The fast reader's answer, after checking it against the streaming reader's."""
    fast = decode_fast(data, LATEST_VERSION)
    if fast is not None:
        slow = streaming(data)
        assert not isinstance(slow, ProtocolError), (data, slow)
        assert fast == slow
        # field by field, down to the types (an enum, not its int; shared id instances)
        assert {k: type(v) for k, v in vars(fast).items()} == {
            k: type(v) for k, v in vars(slow).items()
        }
    return fast


def test_the_common_member_is_read_fast() -> None:
    """A member with an endpoint and offset sums, as every leader sees thousands of: read by
    the fast reader, once its endpoint and tasks are known (a first decode interns them)."""
    info = SubscriptionInfo(
        version=LATEST_VERSION,
        latest_supported_version=LATEST_VERSION,
        process_id=ProcessId.for_int(7),
        user_endpoint=HostInfo("host-fast", 8080),
        task_offset_sums={TaskId(0, 3): -2, TaskId(0, 9): 120, TaskId(2, 0): 0},
        unique_field=9,
        group_instance_id="member-1",
    )
    data = encode_subscription(info)
    Codec().decode_subscription(data)  # interns the endpoint and the tasks
    assert agree(data) == info
    assert Codec().decode_subscription(data) == info


@settings(MUTATIONS)
@given(data=st.data())
def test_drawn_messages_read_alike(data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(SUPPORTED_VERSIONS))
    info = data.draw(subscription_infos(st.just(version)))
    payload = encode_subscription(info)
    Codec().decode_subscription(payload)  # intern what it names, so the fast reader may read it
    read = agree(payload)
    if read is not None:
        assert read == Codec().decode_subscription(payload)


@settings(MUTATIONS)
@given(data=st.data())
def test_mutated_bytes_are_never_accepted_alone(data: st.DataObject) -> None:
    info = data.draw(subscription_infos(st.just(LATEST_VERSION), named=False))
    payload = bytearray(encode_subscription(info))
    Codec().decode_subscription(bytes(payload))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(payload) - 1))
        payload[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(payload)))
    tail = data.draw(st.binary(max_size=3))
    agree(bytes(payload[:cut]) + tail)
    agree(bytes(payload))


_LEAVES = st.one_of(
    st.sampled_from([None, True, False, 0, -1, -2, -3, 1, 255, 256, 2**31, 2**63, 2**64 - 1,
                     1.5, "", "x", " x", b"", b"0123456789abcdef"]),
    st.integers(-(2**63), 2**64 - 1),
    st.text(max_size=5),
    st.binary(max_size=17),
)


@settings(MUTATIONS)
@given(data=st.data())
def test_mutated_fields_are_never_accepted_alone(data: st.DataObject) -> None:
    """Each top-level field or offset-sum element replaced by a value of another shape."""
    info = data.draw(subscription_infos(st.just(data.draw(st.sampled_from((3, 4)))), named=False))
    payload = encode_subscription(info)
    Codec().decode_subscription(payload)
    items = msgpack.unpackb(payload, raw=False)
    at = data.draw(st.integers(0, len(items) - 1))
    replacement = data.draw(st.one_of(_LEAVES, st.lists(_LEAVES, max_size=4)))
    groups_at = 6 if items[0] == 4 else 5
    if at == groups_at and items[at] and data.draw(st.booleans()):
        group = items[at][0]
        group[data.draw(st.integers(0, len(group) - 1))] = replacement
    else:
        items[at] = replacement
    agree(msgpack.packb(items, use_bin_type=True))


def _tagged(tags: bytes) -> bytes:
    """A known member's latest-version payload with ``tags`` (raw msgpack) as its client tags."""
    info = SubscriptionInfo(
        version=LATEST_VERSION,
        latest_supported_version=LATEST_VERSION,
        process_id=ProcessId.for_int(9),
        task_offset_sums={TaskId(0, 1): 5},
        client_tags={"zone": "a"},
        rack_id="r1",
        group_instance_id="m-1",
    )
    payload = encode_subscription(info)
    Codec().decode_subscription(payload)
    written = msgpack.packb({"zone": "a"}, use_bin_type=True)
    assert payload.count(written) == 1
    return payload.replace(written, tags)


def test_client_tags_are_read_fast_unless_the_streaming_reader_must_judge() -> None:
    """Tags of string keys and values written as msgpack writes them are read here; a key
    repeated (msgpack keeps the last one, the streaming reader refuses), a key that is empty
    or not a string, a value that is not a string, too many tags, or a string in a longer form
    than msgpack's shortest are left to the streaming reader, which accepts or refuses."""
    pack = msgpack.Packer(use_bin_type=True)
    plain = _tagged(pack.pack({"zone": "a", "rack": "", "k" * 40: "v" * 300}))
    read = agree(plain)
    assert read is not None and read.client_tags == {"zone": "a", "rack": "", "k" * 40: "v" * 300}
    entries = {
        "repeated key": [(b"\xa1z", b"\xa1a"), (b"\xa1z", b"\xa1b")],
        "empty key": [(b"\xa0", b"\xa1a")],
        "bytes key": [(b"\xc4\x01z", b"\xa1a")],
        "int value": [(b"\xa1z", b"\x01")],
        "str8 key": [(b"\xd9\x01z", b"\xa1a")],
        "too many": [(pack.pack(f"k{i}"), b"\xa1a") for i in range(65)],
    }
    for name, pairs in entries.items():
        header = pack.pack_map_header(len(pairs))
        payload = _tagged(header + b"".join(k + v for k, v in pairs))
        assert agree(payload) is None, name


def test_declines_what_it_does_not_handle() -> None:
    """Older versions, named topologies and large payloads are left to the streaming
    reader."""
    base = dict(
        latest_supported_version=LATEST_VERSION,
        process_id=ProcessId.for_int(8),
        task_offset_sums={TaskId(0, 1): 5},
    )
    older = encode_subscription(SubscriptionInfo(version=2, **base))
    named = encode_subscription(
        SubscriptionInfo(
            version=LATEST_VERSION,
            latest_supported_version=LATEST_VERSION,
            process_id=ProcessId.for_int(8),
            task_offset_sums={TaskId(0, 1, topology="orders"): 5},
        )
    )
    large = encode_subscription(
        SubscriptionInfo(
            version=LATEST_VERSION,
            latest_supported_version=LATEST_VERSION,
            process_id=ProcessId.for_int(8),
            task_offset_sums={TaskId(0, p): 10**12 for p in range(FAST_MAX_BYTES // 4)},
        )
    )
    assert len(large) > FAST_MAX_BYTES
    for payload in (older, named, large):
        assert isinstance(Codec().decode_subscription(payload), SubscriptionInfo)
        assert decode_fast(payload, LATEST_VERSION) is None


@settings(MUTATIONS)
@given(data=st.data())
def test_long_groups_read_alike_whole_or_mutated(data: st.DataObject) -> None:
    """A group of many pairs (checked over the whole group at once, not pair by pair) is read
    as the streaming reader reads it, and any element replaced is never accepted alone."""
    partitions = data.draw(st.lists(st.integers(0, 60), min_size=9, max_size=40, unique=True))
    sums = {TaskId(1, p): data.draw(st.sampled_from([-2, -3, 0, 7, 2**63 - 1])) for p in partitions}
    info = SubscriptionInfo(
        version=LATEST_VERSION,
        latest_supported_version=LATEST_VERSION,
        process_id=ProcessId.for_int(11),
        task_offset_sums=sums,
    )
    payload = encode_subscription(info)
    Codec().decode_subscription(payload)
    assert agree(payload) == info
    items = msgpack.unpackb(payload, raw=False)
    group = items[6][0]
    assert len(group) > 2 + 2 * 8  # long enough for the whole-group check
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(2, len(group) - 1))
        group[at] = data.draw(_LEAVES)
    agree(msgpack.packb(items, use_bin_type=True))
