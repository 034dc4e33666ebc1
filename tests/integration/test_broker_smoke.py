"""The broker fixture works, and aiokafka 0.14 can do against Kafka 4.1.2 what the assignor needs:
produce, consume, and form a consumer group whose leader runs a custom assignor *instance* whose
``user_data`` travels both ways (Kafka 4 removed old protocol versions; this is the canary)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Mapping

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from tests.integration.conftest import CreateTopics
from tests.support.kafka.broker import KAFKA_VERSION, Broker

TEST_TIMEOUT_S = 60


class RecordingAssignor:
    """Round-robin over sorted partitions, tagging user_data so both directions can be checked.

    Duck-typed like aiokafka's assignors (the coordinator only looks the four members up).
    """

    name = "recording"
    version = 0

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.assign_calls: list[dict[str, bytes]] = []
        self.received: list[ConsumerProtocolMemberAssignment] = []

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(self.version, sorted(topics), self.tag.encode())

    def assign(
        self, cluster: ClusterMetadata, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        self.assign_calls.append({m: meta.user_data for m, meta in members.items()})
        topics = sorted({t for meta in members.values() for t in meta.subscription})
        partitions = [
            (t, p) for t in topics for p in sorted(cluster.partitions_for_topic(t) or ())
        ]
        owned: dict[str, dict[str, list[int]]] = {m: {} for m in members}
        for (topic, partition), member in zip(
            partitions, itertools.cycle(sorted(members)), strict=False
        ):
            owned[member].setdefault(topic, []).append(partition)
        return {
            member: ConsumerProtocolMemberAssignment(
                self.version, sorted(owned[member].items()), b"for:" + members[member].user_data
            )
            for member in members
        }

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        self.received.append(assignment)


async def test_produce_then_consume_in_a_group(
    kafka_bootstrap: str, create_topics: CreateTopics, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("t")
    await create_topics({topic: 3})
    sent = {f"key-{i}".encode(): f"value-{i}".encode() for i in range(30)}
    async with asyncio.timeout(TEST_TIMEOUT_S):
        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
        await producer.start()
        try:
            for key, value in sent.items():
                await producer.send(topic, value, key=key)
            await producer.flush()
        finally:
            await producer.stop()

        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=kafka_bootstrap, group_id=unique_name("g"),
            auto_offset_reset="earliest",
        )
        await consumer.start()
        received: dict[bytes, bytes] = {}
        try:
            while len(received) < len(sent):
                batch = await consumer.getmany(timeout_ms=500)
                for records in batch.values():
                    received.update((r.key, r.value) for r in records if r.key is not None)
        finally:
            await consumer.stop()
    assert received == sent


async def test_custom_assignor_instances_form_a_group(
    kafka_bootstrap: str, create_topics: CreateTopics, unique_name: Callable[[str], str]
) -> None:
    topic_a, topic_b = unique_name("a"), unique_name("b")
    await create_topics({topic_a: 4, topic_b: 3})
    group = unique_name("g")
    assignors = [RecordingAssignor(f"member-{i}") for i in range(2)]
    consumers = [
        AIOKafkaConsumer(
            topic_a, topic_b, bootstrap_servers=kafka_bootstrap, group_id=group,
            partition_assignment_strategy=(assignor,), session_timeout_ms=6000,
            heartbeat_interval_ms=300,
        )
        for assignor in assignors
    ]
    async with asyncio.timeout(TEST_TIMEOUT_S):
        for consumer in consumers:
            await consumer.start()
        try:
            # Both have to be polled so that both take part in the rebalances.
            while not all(
                a.received and len(a.received[-1].user_data) > len(b"for:")
                and sum(len(c.assignment()) for c in consumers) == 7
                for a in assignors
            ):
                for consumer in consumers:
                    await consumer.getmany(timeout_ms=100)
            assignments = [set(c.assignment()) for c in consumers]
        finally:
            for consumer in consumers:
                await consumer.stop()

    leader_calls = [call for a in assignors for call in a.assign_calls]
    final = leader_calls[-1]
    assert sorted(final.values()) == [b"member-0", b"member-1"]
    assert assignments[0].isdisjoint(assignments[1])
    everything = {(tp.topic, tp.partition) for tps in assignments for tp in tps}
    assert everything == {(topic_a, p) for p in range(4)} | {(topic_b, p) for p in range(3)}
    for assignor in assignors:
        assert assignor.received[-1].user_data == b"for:" + assignor.tag.encode()


def test_the_broker_is_the_pinned_version(
    kafka_bootstrap: str, kafka_broker: Broker | None
) -> None:
    if kafka_broker is None:
        return  # an external cluster (KAFKA_BOOTSTRAP_SERVERS): its version is the user's choice
    assert kafka_broker.bootstrap == kafka_bootstrap
    assert kafka_bootstrap.startswith("127.0.0.1:")
    log = kafka_broker.log_file.read_text(errors="replace")
    assert f"Kafka version: {KAFKA_VERSION}" in log
    assert "process.roles = [broker, controller]" in log
