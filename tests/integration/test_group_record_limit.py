"""How large a group's SyncGroup may be on a broker with default limits, and that ours fits.

The broker (Kafka 4.1's group coordinator) writes a classic group's generation, every member's
subscription and assignment, as one record of ``__consumer_offsets``; a record larger than that
topic's ``max.message.bytes`` (the broker's ``message.max.bytes``, 1,048,588 by default) is
refused and the leader's SyncGroup fails with UNKNOWN_SERVER_ERROR, so the group never forms.
These tests measure that bound on the real broker, show where assignment version 3 (every
member carrying every endpoint's host maps) crosses it, and that version 4 (own endpoint only,
past the leader's budget) lets the same group form. ``docs/wire-format.md`` quotes the figures.

Members are raw connections (``tests/integration/raw_group.py``); the leader's answer is the
real ``StreamsPartitionAssignor.assign`` over the members' real subscriptions, and every member
reads its answer with its own ``on_assignment``. The source topics need not exist: the broker
stores assignments without reading them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from assignor import AssignorConfig, StreamsProcess, Topology, TopologyBuilder
from assignor.member import merge_host_maps
from protocol import HostInfo, ProcessId, TopicPartition
from protocol.codec import Codec
from protocol.messages import AssignmentInfo
from simulator.shim.cluster import make_cluster
from tests.integration.raw_group import NONE, UNKNOWN_SERVER_ERROR, rebalance

#: Kafka's default ``message.max.bytes``, which ``__consumer_offsets`` inherits.
DEFAULT_RECORD_BYTES = 1_048_588
PARTITIONS = 1_000
CHANGELOG = "wire-app-counts-changelog"
#: The issue's group: 1,000 single-thread instances with endpoints (about 20 s here, both
#: versions; so in ``make test``).
MEMBERS = 1_000


def _filler(members: Mapping[str, bytes], total: int) -> dict[str, bytes]:
    """Assignments of ``total`` bytes of user data in all, shared evenly."""
    each = total // len(members)
    return {
        m: ConsumerProtocolMemberAssignment(0, [("t", [0])], b"\0" * each).encode()
        for m in members
    }


def _plain_metadata(count: int) -> list[bytes]:
    return [ConsumerProtocolMemberMetadata(0, ["t"], b"").encode() for _ in range(count)]


async def _offsets_topic_max_bytes(bootstrap: str) -> int:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        wanted = {"max.message.bytes": None}
        [response] = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "__consumer_offsets", wanted)]
        )
        [(_, _, _, _, entries)] = response.resources
        return int(next(e[1] for e in entries if e[0] == "max.message.bytes"))
    finally:
        await admin.close()


async def test_the_group_record_bounds_the_sum_of_all_assignments(
    kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    async def leader_error(members: int, total: int) -> int:
        # a fresh group each time: a known group would wait for its old members to rejoin
        outcome = await rebalance(
            kafka_bootstrap, unique_name(f"g{members}-{total}"), _plain_metadata(members),
            lambda seen: _filler(seen, total),
        )
        return outcome.leader_error

    assert await leader_error(1, 1_040_000) == NONE
    # past the default bound the whole group fails, not only the member whose bytes tip it over
    assert await leader_error(1, DEFAULT_RECORD_BYTES) == UNKNOWN_SERVER_ERROR
    assert await leader_error(4, 4 * 255_000) == NONE
    assert await leader_error(4, 4 * 265_000) == UNKNOWN_SERVER_ERROR
    # created by the broker on the first group lookup, with its defaults
    assert await _offsets_topic_max_bytes(kafka_bootstrap) == DEFAULT_RECORD_BYTES


def _topology() -> Topology:
    builder = TopologyBuilder("wire-app")
    builder.add_source("source", "events")
    builder.add_processor("count", "source").add_state_store("counts", "count")
    return builder.build()


def _processes(count: int, latest: int | None) -> list[StreamsProcess]:
    topology = _topology()
    config = AssignorConfig.model_validate({"num.standby.replicas": 1})
    # known changelog ends, so the leader places standbys instead of retrying for offsets
    ends = {TopicPartition(CHANGELOG, p): 0 for p in range(PARTITIONS)}
    processes = []
    for i in range(count):
        process = StreamsProcess(
            topology,
            config,
            process_id=ProcessId.for_int(i + 1),
            endpoint=HostInfo(f"streams-{i}.example.com", 8080),
            codec=Codec() if latest is None else Codec(latest),
        )
        process.set_changelog_end_offsets(ends)
        processes.append(process)
    return processes


async def _stream_group(
    bootstrap: str, group: str, members: int, latest: int | None
) -> tuple[int, list[StreamsProcess], dict[str, bytes]]:
    """One rebalance of ``members`` single-thread instances with endpoints on the broker."""
    processes = _processes(members, latest)
    assignors = [p.new_assignor() for p in processes]
    metadata = [a.metadata(["events"]).encode() for a in assignors]
    cluster = make_cluster({"events": PARTITIONS, CHANGELOG: PARTITIONS})
    order: list[str] = []

    def assign(seen: Mapping[str, bytes]) -> dict[str, bytes]:
        decoded = {m: ConsumerProtocolMemberMetadata.decode(data) for m, data in seen.items()}
        answers = assignors[0].assign(cluster, decoded)
        order.extend(seen)
        return dict(answers)  # already the bytes aiokafka sends

    outcome = await rebalance(bootstrap, group, metadata, assign)
    received: dict[str, bytes] = {}
    if outcome.leader_error == NONE:
        # each member reads its own answer; members are matched to assignors by their bytes
        by_metadata = {data: index for index, data in enumerate(metadata)}
        for member_id, (code, data) in outcome.received.items():
            assert code == NONE
            assignor = assignors[by_metadata[outcome.members[member_id]]]
            assignor.on_assignment(ConsumerProtocolMemberAssignment.decode(data))
            received[member_id] = data
    return outcome.leader_error, processes, received


async def test_version_3_outgrows_the_default_record_and_version_4_forms_the_group(
    kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    members = MEMBERS
    error_v3, _, _ = await _stream_group(kafka_bootstrap, unique_name("v3"), members, latest=3)
    assert error_v3 == UNKNOWN_SERVER_ERROR

    error_v4, processes, received = await _stream_group(
        kafka_bootstrap, unique_name("v4"), members, latest=None
    )
    assert error_v4 == NONE and len(received) == members
    assert sum(map(len, received.values())) < DEFAULT_RECORD_BYTES // 2
    infos = []
    for data in received.values():
        info = Codec().decode_assignment(ConsumerProtocolMemberAssignment.decode(data).user_data)
        assert isinstance(info, AssignmentInfo) and info.version == 4
        assert not info.host_maps_complete and len(info.partitions_by_host) == 1
        infos.append(info)
    # every member ran: tasks, no error, and its own endpoint is in what it kept
    for process in processes:
        [assignor] = process.assignors
        assignment = assignor.last_assignment
        assert assignment is not None and assignment.error.name == "NONE"
        assert not assignment.host_maps_complete
        assert list(assignment.partitions_by_host) == [process.endpoint]
    # the union of the members' entries is the group's map: every partition once
    active, _ = merge_host_maps(infos)
    assert len(active) == members
    owned = [tp for tps in active.values() for tp in tps]
    assert len(owned) == len(set(owned)) == PARTITIONS
