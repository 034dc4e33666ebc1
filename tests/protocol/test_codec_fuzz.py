"""Decoder fuzz: arbitrary bytes and mutated valid payloads raise only ``ProtocolError``.

Anything the decoder does accept must be a message the validating constructors accept too, and
must survive a re-encode. Example counts scale with the hypothesis profile: 10x its
``max_examples`` for the byte-level fuzzers (2,000 under ``ci``, 50,000 under ``deep`` via
``make test-deep``) and 5x for those that mutate whole messages.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignor.testing import assignment_infos, subscription_infos
from protocol import AssignmentInfo, ProtocolError, SubscriptionInfo, VersionHeader
from protocol.codec import LATEST_VERSION, Codec, encode_assignment, encode_subscription
from tests.protocol.limit_payloads import DEEPLY_NESTED
from tests.protocol.revalidate import revalidate

# Generated messages are costly to draw; most mutation examples start from a fixed corpus.

FUZZ = settings(
    max_examples=settings.default.max_examples * 10,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: For the fuzzers whose examples are costlier to draw (whole messages, then mutated).
FUZZ_STRUCTURED = settings(FUZZ, max_examples=settings.default.max_examples * 5)
CODECS = [Codec(v) for v in range(1, LATEST_VERSION + 1)]


def check_decoders(data: Any) -> int:
    """Run every decoder of every build; return how many accepted the payload."""
    accepted = 0
    for codec in CODECS:
        for decoder in (codec.decode_subscription, codec.decode_assignment):
            try:
                message = decoder(data)
            except ProtocolError as error:
                assert error.field and error.problem
                # The codec's last-resort conversion must never be what catches a fuzz input:
                # every failure should be one the decoder anticipated and named.
                assert "unexpected failure" not in error.problem, error
                continue
            accepted += 1
            assert revalidate(message) == message
            if isinstance(message, SubscriptionInfo):
                assert codec.decode_subscription(codec.encode_subscription(message)) == message
            elif isinstance(message, AssignmentInfo):
                assert codec.decode_assignment(codec.encode_assignment(message)) == message
            else:
                assert isinstance(message, VersionHeader)
                assert message.version > codec.latest_supported
    return accepted


@FUZZ
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes(data: bytes) -> None:
    check_decoders(data)


#: msgpack leaves, biased to values at the edges of what the format accepts.
msgpack_leaves = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            0,
            -1,
            1,
            -2,
            -3,
            255,
            256,
            2**31 - 1,
            2**31,
            2**63 - 1,
            2**63,
            0x41,
            0x53,
            1.5,
            "",
            "x",
            " ",
            b"",
            b"0123456789abcdef",
        ]
    ),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(),
    st.text(max_size=10),
    st.binary(max_size=20),
)
# One level of nesting, not st.recursive: recursion costs ~10 ms an example to draw, and the
# structural mutations below already put wrong shapes at every depth of real messages.
msgpack_values = st.one_of(
    msgpack_leaves,
    st.lists(msgpack_leaves, max_size=6),
    st.dictionaries(
        st.one_of(st.text(max_size=4), st.integers(-(2**63), 2**64 - 1)), msgpack_leaves, max_size=3
    ),
)


@FUZZ
@given(
    version=st.integers(0, LATEST_VERSION + 1),
    second=st.integers(0, LATEST_VERSION + 2),
    kind=st.sampled_from([0x53, 0x41, 0]),
    body=st.lists(msgpack_values, max_size=11),
)
def test_arbitrary_structures_behind_a_plausible_header(
    version: int, second: int, kind: int, body: list[object]
) -> None:
    check_decoders(msgpack.packb([version, second, kind, *body], use_bin_type=True))


def _corpus() -> list[bytes]:
    """Valid payloads of every kind and version, built once: mutating them is the cheap part."""
    from tests.protocol.samples import FUTURE, GOLDEN

    corpus = list(FUTURE.values())
    for _, version, message in GOLDEN.values():
        for v in range(1, version + 1):
            try:
                if isinstance(message, SubscriptionInfo):
                    corpus.append(encode_subscription(message, v))
                else:
                    corpus.append(encode_assignment(message, v))
            except ValueError:
                continue  # named topologies below version 3
    corpus.append(encode_assignment(AssignmentInfo(version=1, commonly_supported_version=1)))
    return corpus


CORPUS = _corpus()
messages = st.one_of(
    st.sampled_from(CORPUS),
    st.sampled_from(CORPUS),
    subscription_infos(max_tasks=6).map(encode_subscription),
    assignment_infos(max_tasks=6).map(encode_assignment),
)


@st.composite
def byte_mutations(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(messages))
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.integers(0, max(0, len(data) - 1)))
        action = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        if action == "flip" and data:
            data[where] ^= 1 << draw(st.integers(0, 7))
        elif action == "set" and data:
            data[where] = draw(st.integers(0, 255))
        elif action == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=4))
        elif action == "delete":
            del data[where : where + draw(st.integers(1, 4))]
        else:
            del data[where:]
    return bytes(data)


@FUZZ_STRUCTURED
@given(data=byte_mutations())
def test_mutated_valid_payloads(data: bytes) -> None:
    check_decoders(data)


def _paths(value: object, path: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    found = [path]
    if isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*path, index))
    return found


def _replace(value: object, path: tuple[int, ...], new: object) -> object:
    if not path:
        return new
    assert isinstance(value, list)
    copy = list(value)
    copy[path[0]] = _replace(copy[path[0]], path[1:], new)
    return copy


@st.composite
def structural_mutations(draw: st.DrawFn) -> bytes:
    """Replace one node of a valid message's msgpack tree, keeping the rest intact."""
    tree = msgpack.unpackb(draw(messages), raw=False, strict_map_key=False)
    paths = [p for p in _paths(tree) if p]
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(paths))
        replacement = draw(
            st.one_of(
                msgpack_values,
                st.lists(st.lists(msgpack_leaves, max_size=4), max_size=3),
            )
        )
        tree = _replace(tree, path, replacement)
        paths = [p for p in _paths(tree) if p]
    return msgpack.packb(tree, use_bin_type=True)


@FUZZ_STRUCTURED
@given(data=structural_mutations())
def test_structurally_mutated_valid_payloads(data: bytes) -> None:
    check_decoders(data)


@pytest.mark.parametrize("case", sorted(DEEPLY_NESTED))
def test_deep_nesting_never_reaches_the_last_resort(case: str) -> None:
    """1,000 levels of arrays where a value belongs: once a RecursionError caught only by the
    codec's last-resort handler (check_decoders fails on that), now a named ProtocolError."""
    data = DEEPLY_NESTED[case][0]
    version = data[1]  # a fixint: the payload's version
    # Only builds older than the payload accept it, as its header.
    assert check_decoders(data) == sum(c.latest_supported < version for c in CODECS)


def test_the_fuzzers_reach_the_accepting_path() -> None:
    """Guard against a fuzz that only ever exercises the first check."""
    sample = encode_subscription(
        SubscriptionInfo(version=1, latest_supported_version=1, process_id=_pid())
    )
    assert check_decoders(sample) == len(CODECS)


def _pid() -> Any:
    from protocol import ProcessId

    return ProcessId.for_int(3)
