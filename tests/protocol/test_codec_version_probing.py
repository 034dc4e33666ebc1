"""Old builds and new builds side by side: what each can read of the other (KIP-268).

A build is ``Codec(latest_supported=n)``. A member writes at the version it currently uses; a
reader either decodes fully (the version is one it knows) or gets the header, which is all it
needs to answer at a version both can read.
"""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor.testing import assignment_infos, subscription_infos
from protocol import AssignmentInfo, AssignorError, ProtocolError, SubscriptionInfo, VersionHeader
from protocol.codec import SUPPORTED_VERSIONS, Codec
from tests.protocol.expected import assignment_as_read, header_as_read, subscription_as_read

builds = st.sampled_from(SUPPORTED_VERSIONS)


@given(writer=builds, reader=builds, data=st.data())
def test_any_build_reads_any_builds_subscription_or_its_header(
    writer: int, reader: int, data: st.DataObject
) -> None:
    # The member's build writes its latest version and says so.
    info = data.draw(subscription_infos(st.just(writer)))
    info = info.model_copy(update={"latest_supported_version": writer})
    decoded = Codec(reader).decode_subscription(Codec(writer).encode_subscription(info))
    if writer <= reader:
        assert decoded == subscription_as_read(info, writer)
    else:
        assert decoded == header_as_read(writer, writer, info.error_code)


@given(writer=builds, reader=builds, data=st.data())
def test_any_build_reads_any_builds_assignment_or_its_header(
    writer: int, reader: int, data: st.DataObject
) -> None:
    info = data.draw(assignment_infos(st.just(writer)))
    decoded = Codec(reader).decode_assignment(Codec(writer).encode_assignment(info))
    if writer <= reader:
        assert decoded == assignment_as_read(info, writer)
    else:
        assert decoded == header_as_read(
            writer, info.commonly_supported_version, info.error_code
        )


@given(old=builds, new=builds, data=st.data())
def test_a_new_leader_answers_an_old_member_at_the_old_version(
    old: int, new: int, data: st.DataObject
) -> None:
    """New build leads, old build follows: the leader writes what the follower can read."""
    if old > new:
        old, new = new, old
    sub = data.draw(subscription_infos(st.just(old), named=old >= 3))
    sub = sub.model_copy(update={"latest_supported_version": old})
    seen = Codec(new).decode_subscription(Codec(old).encode_subscription(sub))
    assert isinstance(seen, SubscriptionInfo) and seen.version == old
    answer = data.draw(assignment_infos(st.just(new), named=old >= 3))
    answer = answer.model_copy(
        update={
            "version": seen.version,
            "commonly_supported_version": seen.latest_supported_version,
            # below version 4 a leader sends the group's maps, never a member's own entry
            "host_maps_complete": answer.host_maps_complete or seen.version < 4,
        }
    )
    received = Codec(old).decode_assignment(Codec(new).encode_assignment(answer))
    assert received == assignment_as_read(answer, old)


@given(old=builds, new=builds, data=st.data())
def test_an_old_leader_answers_a_probing_new_member_at_the_old_version(
    old: int, new: int, data: st.DataObject
) -> None:
    """Old build leads, new build probes: the leader sees only the header and downgrades it."""
    if old > new:
        old, new = new, old
    sub = data.draw(subscription_infos(st.just(new)))
    sub = sub.model_copy(update={"latest_supported_version": new})
    seen = Codec(old).decode_subscription(Codec(new).encode_subscription(sub))
    if new > old:
        assert seen == header_as_read(new, new, sub.error_code)
    else:
        assert isinstance(seen, SubscriptionInfo)
    # Kafka: encode at min(used, own latest); commonly = min(latest supported, own latest).
    answer_version = min(seen.version, old)
    answer = data.draw(assignment_infos(st.just(old), named=False))
    answer = answer.model_copy(
        update={"version": answer_version, "commonly_supported_version": old}
    )
    received = Codec(new).decode_assignment(Codec(old).encode_assignment(answer))
    assert received == assignment_as_read(answer, answer_version)


def test_rolling_upgrade_from_version_1_to_3() -> None:
    """Old members write v1; upgraded members probe with v3, are told to use 1, later upgrade."""
    from tests.protocol.samples import assignment, subscription

    old, new = Codec(1), Codec(3)
    probe = subscription(3).model_copy(update={"task_offset_sums": {}})
    assert old.decode_subscription(new.encode_subscription(probe)) == VersionHeader(
        version=3, latest_supported_version=3
    )
    # The old leader answers at 1 with commonly supported 1: the new member must downgrade.
    downgrade = assignment(1).model_copy(update={"commonly_supported_version": 1})
    received = new.decode_assignment(old.encode_assignment(downgrade))
    assert isinstance(received, AssignmentInfo)
    assert (received.version, received.commonly_supported_version) == (1, 1)
    # Once all run the new build, members still write v1 but announce 3; a new leader answers at 1
    # with commonly supported 3, and members upgrade.
    v1_again = new.encode_subscription(subscription(1), 1)
    seen = new.decode_subscription(v1_again)
    assert isinstance(seen, SubscriptionInfo)
    assert (seen.version, seen.latest_supported_version) == (1, 3)
    upgrade = new.decode_assignment(new.encode_assignment(assignment(1), 1))
    assert isinstance(upgrade, AssignmentInfo)
    assert (upgrade.version, upgrade.commonly_supported_version) == (1, 3)


# --- the error code of a newer version -------------------------------------------------------


@given(
    version=st.integers(4, 2**31 - 1),
    code=st.integers(0, 2**31 - 1),
    kind=st.sampled_from([0x53, 0x41]),
    rest=st.lists(st.binary(max_size=3), max_size=3),
)
def test_every_build_reads_the_error_code_of_any_version_from_4(
    version: int, code: int, kind: int, rest: list[bytes]
) -> None:
    """From version 4 on the error code is the fourth field, so any older reader sees it."""
    data = msgpack.packb([version, version, kind, code, *rest], use_bin_type=True)
    for latest in (v for v in SUPPORTED_VERSIONS if v < version):
        _, header = Codec(latest).decode(data)
        assert header == VersionHeader(
            version=version, latest_supported_version=version, error_code=code
        )


def test_a_shutdown_request_from_a_newer_build_is_seen_by_an_old_leader() -> None:
    data = msgpack.packb([4, 4, 0x53, int(AssignorError.SHUTDOWN_REQUESTED), b"\x00" * 16])
    header = Codec(1).decode_subscription(data)
    assert isinstance(header, VersionHeader)
    assert header.error_code == AssignorError.SHUTDOWN_REQUESTED


def test_a_version_4_payload_without_its_error_code_is_refused() -> None:
    with pytest.raises(ProtocolError, match="keeps its error code in the fourth"):
        Codec(3).decode(msgpack.packb([4, 4, 0x53]))
    with pytest.raises(ProtocolError) as caught:
        Codec(3).decode(msgpack.packb([4, 4, 0x53, "shutdown"]))
    assert caught.value.field == "error_code"


def test_versions_up_to_3_keep_no_error_code_in_the_header() -> None:
    """What cannot be changed for the versions already written: a v3 shutdown request read by
    a v1 build gives only the version numbers (it is heard after the member downgrades)."""
    from tests.protocol.samples import subscription

    shutdown = subscription(3)
    assert shutdown.error_code is AssignorError.SHUTDOWN_REQUESTED
    header = Codec(1).decode_subscription(Codec(3).encode_subscription(shutdown))
    assert header == VersionHeader(version=3, latest_supported_version=3)
    assert header.error_code is None
