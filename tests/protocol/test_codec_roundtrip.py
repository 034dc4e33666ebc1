"""Every version of both messages survives a round trip, and older versions drop what they lack."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor.testing import assignment_infos, subscription_infos
from protocol import (
    AssignmentInfo,
    AssignorError,
    HostInfo,
    ProcessId,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
)
from protocol.codec import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    Codec,
    decode,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.messages import HOST_SCOPE_VERSION
from tests.protocol.expected import assignment_as_read, subscription_as_read


def test_four_real_versions() -> None:
    assert SUPPORTED_VERSIONS == (1, 2, 3, 4)
    assert LATEST_VERSION == 4


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@given(data=st.data())
def test_subscription_round_trip(version: int, data: st.DataObject) -> None:
    info = data.draw(subscription_infos(st.just(version)))
    decoded = decode_subscription(encode_subscription(info))
    assert decoded == subscription_as_read(info, version)
    if version == LATEST_VERSION:
        assert decoded == info


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@given(data=st.data())
def test_assignment_round_trip(version: int, data: st.DataObject) -> None:
    info = data.draw(assignment_infos(st.just(version)))
    decoded = decode_assignment(encode_assignment(info))
    assert decoded == assignment_as_read(info, version)
    if version == LATEST_VERSION:
        assert decoded == info


@given(info=subscription_infos(st.just(LATEST_VERSION), named=False), data=st.data())
def test_subscription_written_at_an_older_version_loses_only_the_newer_fields(
    info: SubscriptionInfo, data: st.DataObject
) -> None:
    version = data.draw(st.sampled_from(SUPPORTED_VERSIONS))
    decoded = decode_subscription(encode_subscription(info, version))
    assert decoded == subscription_as_read(info, version)


@given(info=assignment_infos(st.just(LATEST_VERSION), named=False), data=st.data())
def test_assignment_written_at_an_older_version_loses_only_the_newer_fields(
    info: AssignmentInfo, data: st.DataObject
) -> None:
    version = data.draw(st.sampled_from(SUPPORTED_VERSIONS))
    if not info.host_maps_complete and version < HOST_SCOPE_VERSION:
        # an older reader would take the member's own entry for the group's maps
        with pytest.raises(ValueError, match="own endpoint"):
            encode_assignment(info, version)
        return
    decoded = decode_assignment(encode_assignment(info, version))
    assert decoded == assignment_as_read(info, version)


@given(info=subscription_infos())
def test_encoding_is_deterministic_whatever_the_mapping_order(info: SubscriptionInfo) -> None:
    reordered = info.model_copy(
        update={
            "task_offset_sums": dict(reversed(list(info.task_offset_sums.items()))),
            "client_tags": dict(reversed(list(info.client_tags.items()))),
        }
    )
    assert encode_subscription(reordered) == encode_subscription(info)


@given(info=assignment_infos())
def test_decoded_ids_are_ordinary_ids(info: AssignmentInfo) -> None:
    """Shared, unvalidated-construction instances still hash, compare and print like new ones."""
    decoded = decode_assignment(encode_assignment(info))
    assert isinstance(decoded, AssignmentInfo)
    for task in decoded.active_tasks:
        rebuilt = TaskId(task.subtopology, task.partition, topology=task.topology)
        assert task == rebuilt and hash(task) == hash(rebuilt) and str(task) == str(rebuilt)
    for partitions in decoded.partitions_by_host.values():
        for tp in partitions:
            assert tp == TopicPartition(tp.topic, tp.partition)


def test_decode_tells_the_kinds_apart() -> None:
    sub = SubscriptionInfo(version=1, latest_supported_version=3, process_id=ProcessId.for_int(1))
    assignment = AssignmentInfo(version=2, commonly_supported_version=2)
    assert decode(encode_subscription(sub)) == ("subscription", sub)
    assert decode(encode_assignment(assignment)) == ("assignment", assignment)


def test_active_tasks_keep_their_order_and_repeats() -> None:
    tasks = (TaskId(1, 0), TaskId(0, 7), TaskId(1, 0), TaskId(0, 2))
    info = AssignmentInfo(version=1, commonly_supported_version=1, active_tasks=tasks)
    decoded = decode_assignment(encode_assignment(info))
    assert isinstance(decoded, AssignmentInfo)
    assert decoded.active_tasks == tasks


def test_standby_partitions_keep_their_order() -> None:
    partitions = (TopicPartition("b", 3), TopicPartition("a", 9), TopicPartition("b", 1))
    info = AssignmentInfo(
        version=2, commonly_supported_version=2, standby_tasks={TaskId(0, 1): partitions}
    )
    decoded = decode_assignment(encode_assignment(info))
    assert isinstance(decoded, AssignmentInfo)
    assert decoded.standby_tasks[TaskId(0, 1)] == partitions


@pytest.mark.parametrize("version", [1, 2])
def test_named_topologies_cannot_be_written_before_version_3(version: int) -> None:
    named = TaskId(0, 1, topology="orders")
    sub = SubscriptionInfo(
        version=3,
        latest_supported_version=3,
        process_id=ProcessId.for_int(1),
        task_offset_sums={named: 5},
    )
    with pytest.raises(ValueError, match="named topolog"):
        encode_subscription(sub, version)
    assignment = AssignmentInfo(version=3, commonly_supported_version=3, active_tasks=(named,))
    with pytest.raises(ValueError, match="named topolog"):
        encode_assignment(assignment, version)


def test_a_codec_refuses_versions_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="latest_supported"):
        Codec(latest_supported=LATEST_VERSION + 1)
    with pytest.raises(ValueError, match="latest_supported"):
        Codec(latest_supported=0)
    with pytest.raises(ValueError, match="latest_supported"):
        Codec(latest_supported=True)
    sub = SubscriptionInfo(version=2, latest_supported_version=2, process_id=ProcessId.for_int(1))
    with pytest.raises(ValueError, match="versions 1 to 1"):
        Codec(latest_supported=1).encode_subscription(sub)
    with pytest.raises(ValueError, match="version 4"):
        Codec().encode_subscription(sub, 4)
    with pytest.raises(ValueError, match="version 0"):
        Codec().encode_subscription(sub, 0)


def test_the_header_cannot_claim_less_than_it_is_written_in() -> None:
    sub = SubscriptionInfo(version=1, latest_supported_version=2, process_id=ProcessId.for_int(1))
    with pytest.raises(ValueError, match="latest supported version is 2"):
        encode_subscription(sub, 3)
    assignment = AssignmentInfo(version=1, commonly_supported_version=1)
    with pytest.raises(ValueError, match="commonly supported version is only 1"):
        encode_assignment(assignment, 2)


def test_a_task_cannot_be_both_active_and_standby() -> None:
    task = TaskId(0, 0)
    fields = {
        "version": 1,
        "commonly_supported_version": 1,
        "active_tasks": (task,),
        "standby_tasks": {task: (TopicPartition("t", 0),)},
    }
    with pytest.raises(ValueError, match="both as active and standby"):
        AssignmentInfo(**fields)  # type: ignore[arg-type]
    # The writer checks too, for models built without validation.
    with pytest.raises(ValueError, match="both active and standby"):
        encode_assignment(AssignmentInfo.model_construct(**fields))  # type: ignore[arg-type]


def test_writers_refuse_strings_a_reader_would_refuse() -> None:
    base = SubscriptionInfo(version=3, latest_supported_version=3, process_id=ProcessId.for_int(1))
    with pytest.raises(ValueError, match="rack_id"):
        encode_subscription(base.model_copy(update={"rack_id": ""}))
    with pytest.raises(ValueError, match="client_tags"):
        encode_subscription(base.model_copy(update={"client_tags": {"": "x"}}))
    with pytest.raises(ValueError, match="client_tags"):
        encode_subscription(base.model_copy(update={"client_tags": {"k": "é" * 600}}))
    assignment = AssignmentInfo(
        version=3, commonly_supported_version=3, active_tasks=(TaskId(0, 0, topology="x" * 2000),)
    )
    with pytest.raises(ValueError, match="topologies"):
        encode_assignment(assignment)


def test_endpoint_and_host_maps_survive() -> None:
    host = HostInfo("::1", 9092)
    info = AssignmentInfo(
        version=1,
        commonly_supported_version=3,
        partitions_by_host={
            host: frozenset({TopicPartition("t", 0)}),
            HostInfo("a", 1): frozenset(),
        },
    )
    decoded = decode_assignment(encode_assignment(info))
    assert decoded == info


@given(
    infos=st.lists(assignment_infos(), min_size=1, max_size=3),
    shared=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    versions=st.lists(st.sampled_from(SUPPORTED_VERSIONS), min_size=8, max_size=8),
)
def test_a_leader_codec_reusing_packed_host_maps_writes_what_a_fresh_codec_writes(
    infos: list[AssignmentInfo], shared: list[int], versions: list[int]
) -> None:
    """One codec encoding many members (sharing or not sharing host maps, switching versions)."""
    leader = Codec()
    donor = infos[0]
    for step, pick in enumerate(shared):
        info = infos[pick % len(infos)]
        if step % 2:  # the same map objects as another member, as a leader hands them out
            info = info.model_copy(
                update={
                    "partitions_by_host": donor.partitions_by_host,
                    "standby_partitions_by_host": donor.standby_partitions_by_host,
                    "host_maps_complete": donor.host_maps_complete,
                }
            )
        version = min(versions[step], info.commonly_supported_version)
        if version < 3 and any(t.topology for t in (*info.active_tasks, *info.standby_tasks)):
            version = 3
        if version < HOST_SCOPE_VERSION:  # below 4 a leader always sends the group's maps
            info = info.model_copy(update={"host_maps_complete": True})
        expected = Codec().encode_assignment(info, version)
        assert leader.encode_assignment(info, version) == expected
        assert leader.decode_assignment(expected) == assignment_as_read(
            info.model_copy(update={"version": version}), version
        )


def test_a_host_map_changed_in_place_is_packed_again() -> None:
    hosts = {HostInfo("a", 1): frozenset({TopicPartition("t", 0)})}
    info = AssignmentInfo.model_construct(
        version=2,
        commonly_supported_version=2,
        active_tasks=(),
        standby_tasks={},
        partitions_by_host=hosts,
        standby_partitions_by_host={},
        error_code=AssignorError.NONE,
        next_rebalance_ms=0,
    )
    leader = Codec()
    before = leader.encode_assignment(info)
    hosts[HostInfo("b", 2)] = frozenset({TopicPartition("u", 1)})
    after = leader.decode_assignment(leader.encode_assignment(info))
    assert isinstance(after, AssignmentInfo)
    assert set(after.partitions_by_host) == {HostInfo("a", 1), HostInfo("b", 2)}
    assert before != leader.encode_assignment(info)


def test_own_endpoint_maps_are_packed_once_per_endpoint_and_read_as_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A leader past the group-record budget writes each consumer its own endpoint's entry; the
    # consumers of one process share it, so it is packed once (10,000 packs at 10,000 consumers
    # of 10 processes before), and an entry whose partitions changed is packed again.
    from protocol import _assignment_format

    packs: list[int] = []
    original = _assignment_format.host_section

    def counted(info: AssignmentInfo, version: int) -> _assignment_format.HostSection:
        packs.append(version)
        return original(info, version)

    monkeypatch.setattr(_assignment_format, "host_section", counted)
    hosts = [HostInfo(f"h{i}", 80) for i in range(3)]
    owned = {h: frozenset({TopicPartition("t", i)}) for i, h in enumerate(hosts)}

    def own(host: HostInfo, partitions: frozenset[TopicPartition]) -> AssignmentInfo:
        return AssignmentInfo(version=4, commonly_supported_version=4,
                              partitions_by_host={host: partitions},
                              standby_partitions_by_host={}, host_maps_complete=False)

    leader = Codec()
    for _ in range(4):  # four consumers per process
        for host in hosts:
            info = own(host, owned[host])
            assert leader.encode_assignment(info) == Codec().encode_assignment(info)
    assert len(packs) == 3 + 4 * 3  # three by the leader, one per fresh codec
    changed = own(hosts[0], frozenset({TopicPartition("t", 9)}))
    assert Codec().decode_assignment(leader.encode_assignment(changed)) == changed
