"""How the leader's decode step treats what the codec reports. A member whose subscription is
over the codec's limits, or hostile in shape, is one member's problem: it gets an error
assignment of its own, the log says why in one short line, and the rest of the group is served.
A newer build's error code, which versions from 4 keep in the header, is acted on at once."""

from __future__ import annotations

import logging

import msgpack
import pytest

from assignor.config import AssignorConfig
from assignor.leader.pipeline import assign_group
from protocol._limits import MAX_OFFSET_SUMS
from protocol.codec import LATEST_VERSION, Codec
from protocol.errors import AssignorError
from protocol.ids import ProcessId
from tests.assignor.leader.pipeline_support import check_served, decoded, group, shop, subscription
from tests.protocol.limit_payloads import DEEPLY_NESTED, dense_subscription, largest_subscription

CONFIG = AssignorConfig()


#: a build newer than this one (it keeps its error code in the fourth field, as every v4+)
NEWER = LATEST_VERSION + 1


def _members() -> dict[str, bytes]:
    return {f"{p}-1": subscription(p) for p in (1, 2, 3)}


@pytest.mark.parametrize(
    ("hostile", "reason"),
    [
        (
            dense_subscription(1_000_000),
            f"task_offset_sums: holds more than {MAX_OFFSET_SUMS:,} offset sums",
        ),
        (largest_subscription(MAX_OFFSET_SUMS + 1), f"at most {MAX_OFFSET_SUMS:,} are allowed"),
        (DEEPLY_NESTED["offset sum"][0], "task_offset_sums[0].offset_sum: holds an array"),
    ],
    ids=["a million offset sums", "one sum too many", "1,000 levels of nesting"],
)
def test_an_over_limit_member_gets_its_own_error_while_the_rest_are_served(
    hostile: bytes, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    members = _members()
    members["zz-hostile"] = hostile
    with caplog.at_level(logging.ERROR, logger="assignor.leader.pipeline"):
        result = assign_group(shop(), CONFIG, group(members))
    assert set(result.rejected) == {"zz-hostile"}
    assert reason in result.rejected["zz-hostile"]
    assert "unexpected failure" not in result.rejected["zz-hostile"]
    check_served(
        result,
        process_of={m: ProcessId.for_int(int(m[0])) for m in _members()},
        builds=dict.fromkeys(_members(), 3),
        used=dict.fromkeys(_members(), 3),
    )
    info = decoded(result, "zz-hostile", Codec(1))
    assert info.error_code is AssignorError.ASSIGNMENT_ERROR
    assert result.members["zz-hostile"].partitions == ()
    logged = [r.getMessage() for r in caplog.records if "zz-hostile" in r.getMessage()]
    assert logged and all(len(line) < 600 for line in logged)


# --- a newer build's error code --------------------------------------------------------------


def test_a_shutdown_request_from_a_newer_build_reaches_every_member_at_once() -> None:
    """From version 4 on the error code sits in the header, so this leader sees the request in
    the same rebalance instead of after version probing has made the member downgrade."""
    members = _members()
    shutdown = int(AssignorError.SHUTDOWN_REQUESTED)
    members["9-1"] = msgpack.packb([NEWER, NEWER, 0x53, shutdown, b"?"])
    result = assign_group(shop(), CONFIG, group(members))
    assert result.error is AssignorError.SHUTDOWN_REQUESTED
    assert "9-1" in result.detail
    for member in members:
        assert decoded(result, member, Codec()).error_code is AssignorError.SHUTDOWN_REQUESTED


def test_a_newer_build_without_an_error_is_served_and_probed_not_shut_down() -> None:
    members = _members()
    members["9-1"] = msgpack.packb([NEWER, NEWER, 0x53, int(AssignorError.NONE), b"?"])
    result = assign_group(shop(), CONFIG, group(members))
    assert result.error is AssignorError.NONE and not result.rejected
    assert decoded(result, "9-1", Codec()).error_code is AssignorError.NONE
    assert result.followup  # it rejoins at this leader's version
