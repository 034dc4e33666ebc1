"""The shim's consumer-protocol codecs give aiokafka's own bytes, objects and failures.

``simulator.shim.consumer_bytes`` replaces four aiokafka ``Struct`` calls per member per
rebalance; the bytes are what a broker would carry, so any difference is a defect. Generated
structs are encoded both ways, and random or truncated bytes are decoded both ways.
"""

from __future__ import annotations

from io import BytesIO

import hypothesis.strategies as st
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from hypothesis import given, settings

from simulator.shim.consumer_bytes import (
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)

_topics = st.lists(st.text(max_size=12), max_size=6)
_int16 = st.integers(-(2**15), 2**15 - 1)
_int32 = st.integers(-(2**31), 2**31 - 1)


def _outcome(call: object, data: bytes) -> tuple[str, object]:
    """What a decoder does with ``data``: the object's fields, or the error's type and text."""
    try:
        value = call(data)  # type: ignore[operator]
    except Exception as error:
        return ("error", (type(error).__name__, str(error)))
    return ("value", (type(value), value.__dict__))


@settings(max_examples=300, deadline=None)
@given(version=_int16, topics=_topics, user_data=st.binary(max_size=40))
def test_metadata_encodes_and_decodes_as_aiokafka(version: int, topics: list[str],
                                                  user_data: bytes) -> None:
    struct = ConsumerProtocolMemberMetadata(version, topics, user_data)
    expected = struct.encode()
    assert encode_metadata(struct) == expected
    assert encode_metadata(struct) == expected  # the kept header gives the same bytes again
    decoded = decode_metadata(expected)
    assert decoded.__dict__ == ConsumerProtocolMemberMetadata.decode(BytesIO(expected)).__dict__
    assert decoded.subscription == topics


@settings(max_examples=300, deadline=None)
@given(version=_int16,
       topics=st.lists(st.tuples(st.text(max_size=12), st.lists(_int32, max_size=8)), max_size=5),
       user_data=st.binary(max_size=40))
def test_assignment_encodes_and_decodes_as_aiokafka(
    version: int, topics: list[tuple[str, list[int]]], user_data: bytes
) -> None:
    struct = ConsumerProtocolMemberAssignment(version, topics, user_data)
    expected = struct.encode()
    assert encode_assignment(struct) == expected
    decoded = decode_assignment(expected)
    reference = ConsumerProtocolMemberAssignment.decode(BytesIO(expected))
    assert decoded.__dict__ == reference.__dict__
    assert decoded.partitions() == reference.partitions()


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=60))
def test_any_bytes_decode_as_aiokafka_decodes_them(data: bytes) -> None:
    for ours, theirs in ((decode_metadata, ConsumerProtocolMemberMetadata.decode),
                         (decode_assignment, ConsumerProtocolMemberAssignment.decode)):
        assert _outcome(ours, data) == _outcome(lambda d, f=theirs: f(BytesIO(d)), data)


@settings(max_examples=200, deadline=None)
@given(version=_int16, topics=_topics, user_data=st.binary(max_size=20),
       cut=st.integers(0, 80))
def test_truncated_and_odd_lengths_fail_or_succeed_as_aiokafka(
    version: int, topics: list[str], user_data: bytes, cut: int
) -> None:
    whole = ConsumerProtocolMemberMetadata(version, topics, user_data).encode()
    for data in (whole[:cut], whole[:2] + b"\xff\xff\xff\xff" + whole[6:],
                 whole[:-len(user_data) - 4] + b"\xff\xff\xff\xff" if user_data else whole):
        assert _outcome(decode_metadata, data) == _outcome(
            lambda d: ConsumerProtocolMemberMetadata.decode(BytesIO(d)), data)
        assert _outcome(decode_assignment, data) == _outcome(
            lambda d: ConsumerProtocolMemberAssignment.decode(BytesIO(d)), data)


@settings(max_examples=300, deadline=None)
@given(version=_int16, topics=_topics, user_data=st.binary(max_size=20),
       tail=st.binary(max_size=30))
def test_a_known_header_followed_by_any_bytes_decodes_as_aiokafka(
    version: int, topics: list[str], user_data: bytes, tail: bytes
) -> None:
    """The decoder keeps the last header it read (a group's members all send the same): the
    bytes after it, whatever they are, still give aiokafka's object or aiokafka's error, and
    each decoded subscription is a list of its own."""
    whole = ConsumerProtocolMemberMetadata(version, topics, user_data).encode()
    first = decode_metadata(whole)  # reads the header and keeps it
    first.subscription.append("changed by its reader")
    header = whole[:len(whole) - len(user_data) - 4]
    for data in (whole, header + tail, header, header + b"\xff\xff\xff\xff" + tail):
        assert _outcome(decode_metadata, data) == _outcome(
            lambda d: ConsumerProtocolMemberMetadata.decode(BytesIO(d)), data)


def test_values_aiokafka_cannot_pack_fail_with_its_error() -> None:
    for struct in (ConsumerProtocolMemberMetadata(2**15, ["t"], b""),
                   ConsumerProtocolMemberAssignment(0, [("t", [2**31])], b"")):
        encode = encode_metadata if isinstance(struct, ConsumerProtocolMemberMetadata) \
            else encode_assignment
        try:
            struct.encode()
        except Exception as error:
            expected = (type(error).__name__, str(error))
        try:
            encode(struct)
        except Exception as error:
            assert (type(error).__name__, str(error)) == expected
        else:
            raise AssertionError("encoded a value aiokafka refuses")


def test_other_objects_and_none_fields_use_their_own_encode() -> None:
    assert encode_metadata(ConsumerProtocolMemberMetadata(0, None, b"x")) == \
        ConsumerProtocolMemberMetadata(0, None, b"x").encode()
    assert encode_assignment(ConsumerProtocolMemberAssignment(0, [("t", None)], None)) == \
        ConsumerProtocolMemberAssignment(0, [("t", None)], None).encode()
