"""The async helpers that talk to the cluster for the assignor: internal topics and end offsets.

aiokafka calls ``assign()`` synchronously inside its event loop, so nothing there may wait on the
network. What the leader needs from the cluster beyond topic metadata is read here, ahead of
time: the changelog end offsets (a snapshot the process refreshes before each join) and the
internal topics themselves, created once at start-up with the partition counts the topology
implies. Kafka Streams' leader creates internal topics inside ``assign()``; here that would block
the loop, so the leader only checks them and answers with an error and a retry if they are
missing (see ``assignor.leader.pipeline``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology
from assignor.topology.tasks import plan_tasks
from protocol.ids import TopicPartition
from protocol.shared_ids import shared_topic_partition

log = logging.getLogger(__name__)

#: Kafka error code 36: TOPIC_ALREADY_EXISTS (another instance created it first: fine).
_TOPIC_ALREADY_EXISTS = 36
#: Kafka Streams' defaults for the topics it creates (``RepartitionTopicConfig`` and
#: ``UnwindowedUnversionedChangelogTopicConfig``).
REPARTITION_TOPIC_CONFIG: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "segment.bytes": "52428800",
    "retention.ms": "-1",
}
CHANGELOG_TOPIC_CONFIG: Mapping[str, str] = {"cleanup.policy": "compact"}


class InternalTopicsError(RuntimeError):
    """Internal topics cannot be made to match the topology (wrong count, missing sources)."""


@dataclass(frozen=True, slots=True)
class InternalTopicPlan:
    """Every internal topic the topology needs, with its partition count."""

    repartition: Mapping[str, int]
    changelog: Mapping[str, int]

    @property
    def all(self) -> dict[str, int]:
        return {**self.repartition, **self.changelog}


def plan_internal_topics(
    topology: Topology, partition_counts: Mapping[str, int]
) -> InternalTopicPlan:
    """The counts the topology implies for the cluster's source topics (pure)."""
    sizing = size_internal_topics(topology, partition_counts)
    if not isinstance(sizing, InternalTopics):
        raise InternalTopicsError(sizing.message)
    layout = plan_tasks(topology, sizing.source_partitions)
    return InternalTopicPlan(
        repartition=dict(sizing.repartition_partitions),
        changelog=dict(layout.changelog_counts),
    )


async def topic_partition_counts(
    admin: AIOKafkaAdminClient, topics: set[str] | frozenset[str] | None = None
) -> dict[str, int]:
    """Partitions of every existing topic (of ``topics``), without auto-creating any.

    Listing first matters: asking for an absent topic's metadata makes a broker with
    ``auto.create.topics.enable`` create it with the default count.
    """
    existing = set(await admin.list_topics())
    wanted = sorted(existing if topics is None else existing & set(topics))
    if not wanted:
        return {}
    counts: dict[str, int] = {}
    for entry in await admin.describe_topics(wanted):
        if entry["error_code"] == 0:
            counts[entry["topic"]] = len(entry["partitions"])
    return counts


async def ensure_internal_topics(
    admin: AIOKafkaAdminClient | str,
    topology: Topology,
    *,
    replication_factor: int = 1,
    timeout_s: float = 30.0,
    sources_timeout_s: float = 10.0,
) -> InternalTopicPlan:
    """Create missing repartition and changelog topics; fail clearly on a wrong count.

    ``admin`` is a started admin client or a bootstrap string. Source topics created just before
    may take a moment to show in metadata: they are awaited up to ``sources_timeout_s``.
    Returns the plan it enforced.
    """
    async with _admin(admin) as client:
        counts, plan = await _plan_when_sources_exist(client, topology, sources_timeout_s)
        wrong = {
            topic: (counts[topic], wanted)
            for topic, wanted in sorted(plan.all.items())
            if topic in counts and counts[topic] != wanted
        }
        if wrong:
            details = "; ".join(
                f"{t} has {have} partitions, the topology needs {need}"
                for t, (have, need) in wrong.items()
            )
            raise InternalTopicsError(
                f"internal topics of {topology.application_id!r} exist with the wrong partition "
                f"count: {details}. Delete them (their data is derived) or reset the "
                "application, then start again."
            )
        missing = [
            NewTopic(topic, n, replication_factor, topic_configs=dict(_config_for(topic, plan)))
            for topic, n in sorted(plan.all.items())
            if topic not in counts
        ]
        if missing:
            response = await client.create_topics(missing, timeout_ms=int(timeout_s * 1000))
            for topic, code, *rest in response.topic_errors:
                if code not in (0, _TOPIC_ALREADY_EXISTS):
                    raise InternalTopicsError(
                        f"creating internal topic {topic!r} failed: error {code} "
                        f"{rest[0] if rest else ''}"
                    )
            log.info("created internal topics %s", [t.name for t in missing])
            created = {t.name: t.num_partitions for t in missing}
            await _wait_until_visible(client, created, timeout_s)
        return plan


async def _plan_when_sources_exist(
    admin: AIOKafkaAdminClient, topology: Topology, timeout_s: float
) -> tuple[dict[str, int], InternalTopicPlan]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    wanted_topics = topology.source_topics | topology.changelog_topics
    while True:
        counts = await topic_partition_counts(admin, wanted_topics)
        if topology.external_source_topics <= set(counts) or loop.time() > deadline:
            return counts, plan_internal_topics(topology, counts)
        await asyncio.sleep(0.2)


def _config_for(topic: str, plan: InternalTopicPlan) -> Mapping[str, str]:
    return REPARTITION_TOPIC_CONFIG if topic in plan.repartition else CHANGELOG_TOPIC_CONFIG


async def _wait_until_visible(
    admin: AIOKafkaAdminClient, wanted: Mapping[str, int], timeout_s: float
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        counts = await topic_partition_counts(admin, frozenset(wanted))
        if all(counts.get(t) == n for t, n in wanted.items()):
            return
        if loop.time() > deadline:
            raise InternalTopicsError(f"internal topics not visible in time: {dict(wanted)}")
        await asyncio.sleep(0.1)


class ChangelogOffsetsReader:
    """Reads what the leader needs for lags, with long-lived clients (one per process).

    Changelog topics the application created: their end offsets (a group-less consumer's
    ``end_offsets``). Source topics reused as changelogs: the group's committed offsets, which
    is how far the application has read them (Kafka does the same).
    """

    def __init__(
        self, bootstrap_servers: str, topology: Topology, group_id: str, *, timeout_s: float = 5.0
    ) -> None:
        self._bootstrap = bootstrap_servers
        self._topology = topology
        self._group_id = group_id
        self._timeout_s = timeout_s
        self._admin: AIOKafkaAdminClient | None = None
        self._consumer: AIOKafkaConsumer | None = None

    async def start(self) -> None:
        if self._admin is None:
            admin = AIOKafkaAdminClient(bootstrap_servers=self._bootstrap)
            await admin.start()
            self._admin = admin
        if self._consumer is None:
            consumer = AIOKafkaConsumer(bootstrap_servers=self._bootstrap, group_id=None)
            await consumer.start()
            self._consumer = consumer

    @property
    def admin(self) -> AIOKafkaAdminClient:
        """The started admin client (after :meth:`start`)."""
        if self._admin is None:
            raise RuntimeError("ChangelogOffsetsReader.start() has not completed")
        return self._admin

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
        if self._admin is not None:
            await self._admin.close()
            self._admin = None

    async def __call__(self) -> dict[TopicPartition, int] | None:
        """The snapshot, or None when any needed offset cannot be read in time."""
        try:
            return await asyncio.wait_for(self._read(), self._timeout_s)
        except Exception as exc:
            log.warning("changelog end offsets unavailable (%s: %s)", type(exc).__name__, exc)
            return None

    async def _read(self) -> dict[TopicPartition, int] | None:
        await self.start()
        assert self._admin is not None and self._consumer is not None
        topology = self._topology
        counts = await topic_partition_counts(
            self._admin, topology.source_topics | topology.changelog_topics
        )
        sizing = size_internal_topics(topology, counts)
        if not isinstance(sizing, InternalTopics):
            log.warning("cannot plan tasks for end offsets: %s", sizing.message)
            return None
        layout = plan_tasks(topology, sizing.source_partitions)
        source_changelogs = {
            t for sub in topology.subtopologies for t in sub.source_changelog_topics
        }
        created: list[KafkaTopicPartition] = []
        committed: list[KafkaTopicPartition] = []
        for partitions in layout.changelogs.values():
            for tp in partitions:
                target = committed if tp.topic in source_changelogs else created
                target.append(KafkaTopicPartition(tp.topic, tp.partition))
        missing = {tp.topic for tp in created} - set(counts)
        if missing:
            log.warning("changelog topics missing: %s", sorted(missing))
            return None
        # Keys are the shared instances the leader's task plan is made of (protocol.shared_ids):
        # the leader's lookup of each changelog partition then ends at identity.
        result: dict[TopicPartition, int] = {}
        if created:
            ends = await self._consumer.end_offsets(created)
            for tp, offset in ends.items():
                result[shared_topic_partition(tp.topic, tp.partition)] = int(offset)
        if committed:
            offsets = await self._admin.list_consumer_group_offsets(
                self._group_id, partitions=committed
            )
            for tp in committed:
                meta = offsets.get(tp)
                value = meta.offset if meta is not None else -1
                result[shared_topic_partition(tp.topic, tp.partition)] = max(0, int(value))
        return result


async def fetch_changelog_end_offsets(
    bootstrap_servers: str, topology: Topology, group_id: str, *, timeout_s: float = 5.0
) -> dict[TopicPartition, int] | None:
    """One-shot :class:`ChangelogOffsetsReader` (opens and closes its clients)."""
    reader = ChangelogOffsetsReader(bootstrap_servers, topology, group_id, timeout_s=timeout_s)
    try:
        return await reader()
    finally:
        await reader.close()


class _admin:
    """``async with _admin(x)``: use a started client as is, or own one made from a bootstrap."""

    def __init__(self, admin: AIOKafkaAdminClient | str) -> None:
        self._given = admin
        self._owned: AIOKafkaAdminClient | None = None

    async def __aenter__(self) -> AIOKafkaAdminClient:
        if isinstance(self._given, str):
            self._owned = AIOKafkaAdminClient(bootstrap_servers=self._given)
            await self._owned.start()
            return self._owned
        return self._given

    async def __aexit__(self, *exc: object) -> None:
        if self._owned is not None:
            await self._owned.close()


__all__ = [
    "CHANGELOG_TOPIC_CONFIG",
    "REPARTITION_TOPIC_CONFIG",
    "ChangelogOffsetsReader",
    "InternalTopicPlan",
    "InternalTopicsError",
    "ensure_internal_topics",
    "fetch_changelog_end_offsets",
    "plan_internal_topics",
    "topic_partition_counts",
]
