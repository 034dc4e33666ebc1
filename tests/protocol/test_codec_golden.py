"""Checked-in bytes per version: an accidental change of the wire format fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import AssignmentInfo, SubscriptionInfo, VersionHeader
from protocol.codec import (
    SUPPORTED_VERSIONS,
    Codec,
    decode,
    encode_assignment,
    encode_subscription,
)
from protocol.messages import HEADER_ERROR_CODE_VERSION
from tests.protocol.expected import assignment_as_read, subscription_as_read
from tests.protocol.samples import FUTURE, FUTURE_ERROR_CODES, GOLDEN

GOLDEN_DIR = Path(__file__).parent / "golden"


def test_every_golden_file_is_accounted_for() -> None:
    on_disk = {path.name for path in GOLDEN_DIR.glob("*.bin")}
    assert on_disk == set(GOLDEN) | set(FUTURE)
    assert {(kind, v) for kind, v, _ in GOLDEN.values()} == {
        (kind, v) for kind in ("subscription", "assignment") for v in SUPPORTED_VERSIONS
    }


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_encoder_output_equals_the_golden_bytes(name: str) -> None:
    kind, version, message = GOLDEN[name]
    if isinstance(message, SubscriptionInfo):
        data = encode_subscription(message, version)
    else:
        data = encode_assignment(message, version)
    assert data == (GOLDEN_DIR / name).read_bytes(), (
        f"the {kind} v{version} encoding changed; if that is deliberate, add a version instead"
    )


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_bytes_decode_to_the_sample(name: str) -> None:
    kind, version, message = GOLDEN[name]
    decoded_kind, decoded = decode((GOLDEN_DIR / name).read_bytes())
    assert decoded_kind == kind
    if isinstance(message, SubscriptionInfo):
        assert decoded == subscription_as_read(message, version)
    else:
        assert isinstance(message, AssignmentInfo)
        assert decoded == assignment_as_read(message, version)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_older_builds_read_only_the_header_of_newer_golden_files(name: str) -> None:
    kind, version, message = GOLDEN[name]
    data = (GOLDEN_DIR / name).read_bytes()
    second = (
        message.latest_supported_version
        if isinstance(message, SubscriptionInfo)
        else message.commonly_supported_version
    )
    for latest in SUPPORTED_VERSIONS:
        decoded_kind, decoded = Codec(latest).decode(data)
        assert decoded_kind == kind
        if latest < version:
            # from version 4 on an older build also reads the error code (the fourth field)
            code = int(message.error_code) if version >= HEADER_ERROR_CODE_VERSION else None
            assert decoded == VersionHeader(
                version=version, latest_supported_version=second, error_code=code
            )
        else:
            assert decoded.version == version and not isinstance(decoded, VersionHeader)


@pytest.mark.parametrize("name", sorted(FUTURE))
def test_future_golden_files_yield_their_header(name: str) -> None:
    data = (GOLDEN_DIR / name).read_bytes()
    assert data == FUTURE[name]
    kind, header = decode(data)
    assert kind == name.split("_")[1]
    assert isinstance(header, VersionHeader) and header.version == 9
    assert header.error_code == FUTURE_ERROR_CODES[name]  # read from the fourth field
