"""Which host maps each member receives (issue 11): the group's, or only its own endpoint's.

Every member carrying every endpoint is what outgrows the broker's group record for large
groups (``tests/integration/test_group_record_limit.py``). From version 4 the leader sends only
the member's own entry once the copies would pass ``GROUP_HOST_MAPS_BUDGET_BYTES``; below that,
and to any group that still has a version 3 member, it sends the group's maps as before.
"""

from __future__ import annotations

import pytest

from assignor.config import AssignorConfig
from assignor.leader import encode
from assignor.leader.pipeline import assign_group
from assignor.member import interpret_assignment, merge_host_maps
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import HostInfo, ProcessId, TopicPartition
from protocol.messages import AssignmentInfo
from tests.assignor.leader.pipeline_support import check_served, decoded, group, shop, subscription

STANDBY = AssignorConfig.model_validate({"num.standby.replicas": 1})


def _endpoint(p: int) -> HostInfo:
    return HostInfo(f"shop-{p}.example.com", 8080)


def _members(builds: dict[int, int]) -> dict[str, bytes]:
    """Two consumers per process ``p``, sent by a build reading up to ``builds[p]``."""
    return {
        f"{p}-{c}": subscription(p, build=build, endpoint=_endpoint(p))
        for p, build in builds.items()
        for c in (1, 2)
    }


Run = tuple[dict[str, AssignmentInfo], int, dict[str, list[TopicPartition]]]


def _run(builds: dict[int, int]) -> Run:
    """Each member's assignment as it reads it, the version used, each member's partitions."""
    members = _members(builds)
    result = assign_group(shop(), STANDBY, group(members), Codec())
    check_served(
        result,
        process_of={m: ProcessId.for_int(int(m[0])) for m in members},
        builds={m: builds[int(m[0])] for m in members},
        used={m: builds[int(m[0])] for m in members},
        endpoints={m: _endpoint(int(m[0])) for m in members},
    )
    infos = {m: decoded(result, m, Codec()) for m in members}
    return infos, result.used_version, {m: list(r.partitions) for m, r in result.members.items()}


def test_a_small_version_4_group_gets_the_whole_groups_host_maps() -> None:
    infos, used, _ = _run({1: 4, 2: 4, 3: 4})
    assert used == 4
    for info in infos.values():
        assert info.host_maps_complete
        assert set(info.partitions_by_host) == {_endpoint(p) for p in (1, 2, 3)}


def test_past_the_budget_each_member_gets_its_own_endpoint_and_the_union_is_the_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole, _, _ = _run({1: 4, 2: 4, 3: 4})
    monkeypatch.setattr(encode, "GROUP_HOST_MAPS_BUDGET_BYTES", 100)
    infos, used, partitions = _run({1: 4, 2: 4, 3: 4})
    assert used == 4
    for member, info in infos.items():
        own = _endpoint(int(member[0]))
        assert not info.host_maps_complete
        assert list(info.partitions_by_host) == [own]
        assert set(info.standby_partitions_by_host) <= {own}
        # the member is content with its own entry: no rejoin for a missing endpoint
        decision = interpret_assignment(
            info, partitions[member], used_version=4, latest_supported_version=4, endpoint=own,
            previous=None,
        )
        assert decision.assignment.error is AssignorError.NONE
        assert not decision.assignment.host_maps_complete
        assert "endpoint missing" not in decision.reason
    first = next(iter(whole.values()))
    assert merge_host_maps(infos.values()) == (
        dict(first.partitions_by_host),
        dict(first.standby_partitions_by_host),
    )


def test_a_version_3_member_keeps_the_group_on_whole_host_maps_at_version_3(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(encode, "GROUP_HOST_MAPS_BUDGET_BYTES", 100)
    infos, used, _ = _run({1: 4, 2: 3, 3: 4})
    assert used == 3
    for member, info in infos.items():
        assert info.version == 3 and info.host_maps_complete
        assert len(info.partitions_by_host) == 3
        # the old build reads it in full
        assert Codec(3).decode_assignment(Codec().encode_assignment(info, 3)) == info, member


def test_own_endpoint_maps_cannot_be_written_below_version_4() -> None:
    info = AssignmentInfo(
        version=4,
        commonly_supported_version=4,
        partitions_by_host={_endpoint(1): frozenset()},
        host_maps_complete=False,
    )
    with pytest.raises(ValueError, match="version 4"):
        Codec().encode_assignment(info, 3)
    assert Codec().decode_assignment(Codec().encode_assignment(info)) == info
    with pytest.raises(ValueError, match="at most one endpoint"):
        AssignmentInfo(
            version=4,
            commonly_supported_version=4,
            partitions_by_host={_endpoint(1): frozenset(), _endpoint(2): frozenset()},
            host_maps_complete=False,
        )


@pytest.mark.parametrize(("limit", "value"), [("MAX_HOSTS", 2), ("MAX_HOST_MAP_PARTITIONS", 10)])
def test_maps_past_the_codecs_own_limits_go_out_as_own_entries_not_as_errors(
    monkeypatch: pytest.MonkeyPatch, limit: str, value: int
) -> None:
    # More endpoints (or host-map partitions: 18 here, 6 per member) than any member may read:
    # the group's maps cannot even be packed, but each member's own entry can (found by make
    # bench at 10,000 members, where every member got ASSIGNMENT_ERROR). The limit is lowered
    # so the group stays small.
    from protocol import _assignment_format

    monkeypatch.setattr(_assignment_format, limit, value)  # what the codec enforces
    monkeypatch.setattr(encode, limit, value, raising=False)  # what the leader checks first
    infos, used, _ = _run({1: 4, 2: 4, 3: 4})
    assert used == 4
    for member, info in infos.items():
        assert info.error_code is AssignorError.NONE
        assert not info.host_maps_complete
        assert list(info.partitions_by_host) == [_endpoint(int(member[0]))]
