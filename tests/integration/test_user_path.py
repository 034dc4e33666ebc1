"""Mistakes made safe, on the real broker: internal topics at connect(), no auto-creation.

The test broker runs with ``auto.create.topics.enable=true`` (Kafka's default), so a consumer
that asked for a missing repartition topic's metadata the aiokafka way would create it with one
partition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from assignor import (
    InternalTopicsError,
    MemberAssignment,
    StreamsPartitionAssignor,
    StreamsProcess,
)
from assignor.adapter.admin import topic_partition_counts
from protocol.errors import AssignorError
from tests.integration.conftest import CreateTopics
from tests.integration.streams_member import join_topology

PARTITIONS = 3


class _App:
    def __init__(self, unique_name: Callable[[str], str], label: str = "") -> None:
        self.group = unique_name(f"app{label}")
        self.orders = unique_name(f"orders{label}")
        self.customers = unique_name(f"customers{label}")
        self.repartition = f"{self.group}-by-region-repartition"
        self.changelogs = [f"{self.group}-join-store-changelog", f"{self.group}-counts-changelog"]
        self.topology = join_topology(self.group, self.orders, self.customers, self.repartition)

    async def counts(self, bootstrap: str) -> dict[str, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            topics = self.topology.source_topics | self.topology.changelog_topics
            return await topic_partition_counts(admin, topics)
        finally:
            await admin.close()


async def test_connect_creates_the_internal_topics_and_refuses_a_wrong_count(
    kafka_bootstrap: str, create_topics: CreateTopics, unique_name: Callable[[str], str]
) -> None:
    app = _App(unique_name)
    await create_topics({app.orders: PARTITIONS, app.customers: PARTITIONS})
    process = StreamsProcess(app.topology)
    try:
        await process.connect(kafka_bootstrap)
        counts = await app.counts(kafka_bootstrap)
        assert {t: counts.get(t) for t in [app.repartition, *app.changelogs]} == dict.fromkeys(
            [app.repartition, *app.changelogs], PARTITIONS
        )
        assert process.changelog_end_offsets is not None  # the first snapshot was taken
        assert len(process.changelog_end_offsets) == 2 * PARTITIONS
    finally:
        await process.close()

    other = _App(unique_name, "2")
    await create_topics(
        {other.orders: PARTITIONS, other.customers: PARTITIONS, other.repartition: 1}
    )
    refused = StreamsProcess(other.topology)
    try:
        with pytest.raises(InternalTopicsError, match=f"{other.repartition} has 1 partitions"):
            await refused.connect(kafka_bootstrap)
    finally:
        await refused.close()


async def test_a_consumer_never_auto_creates_a_missing_internal_topic(
    kafka_bootstrap: str, create_topics: CreateTopics, unique_name: Callable[[str], str]
) -> None:
    app = _App(unique_name)
    await create_topics({app.orders: PARTITIONS, app.customers: PARTITIONS})
    process = StreamsProcess(app.topology)
    answered: asyncio.Queue[MemberAssignment] = asyncio.Queue()

    def listener(_: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        answered.put_nowait(assignment)

    process.add_listener(listener)
    await process.connect(kafka_bootstrap, ensure_internal_topics=False)  # the user opted out
    consumer = process.create_consumer(
        kafka_bootstrap, session_timeout_ms=6000, heartbeat_interval_ms=500
    )
    try:
        await consumer.start()
        process.subscribe(consumer)  # includes the missing repartition topic
        assignment = await asyncio.wait_for(answered.get(), timeout=60)
        # the leader saw the topic missing and said so, rather than aiokafka creating it
        assert assignment.error is AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA
        counts = await app.counts(kafka_bootstrap)
        assert app.repartition not in counts
        assert set(counts) == {app.orders, app.customers}
    finally:
        await consumer.stop()
        await process.close()
