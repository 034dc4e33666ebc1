"""The same join/leave/crash story told to Apache Kafka (real aiokafka consumers) and to the shim.

Both must produce the same generations, with the same members, and the same assignments: aiokafka's
round-robin assignor sorts member ids, which both sides build as ``client_id + "-" + uuid``, so with
client ids ``c0``, ``c1``, ... the assignment depends on who is in the group, not on the uuids.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocol

from simulator.shim import (
    CoordinatorConfig,
    GroupCoordinator,
    ShimMember,
    VirtualClock,
    make_cluster,
    settle,
)
from tests.integration.conftest import CreateTopics

Story = list[tuple[str, str]]
#: Dynamic members come and go; every step is a new generation.
COMINGS_AND_GOINGS: Story = [
    ("join", "c0"), ("join", "c1"), ("join", "c2"), ("leave", "c1"), ("crash", "c2"),
    ("join", "c3"), ("leave", "c0"),
]
#: Members named ``i*`` are static (group.instance.id = name): a restart keeps the generation.
STATIC_RESTART: Story = [("join", "i0"), ("join", "c1"), ("restart", "i0"), ("join", "c2")]
SESSION_MS = 3000
HEARTBEAT_MS = 300
STEP_TIMEOUT_S = 60.0

Partitions = list[tuple[str, int]]
History = list[tuple[int, dict[str, Partitions]]]


class Recorder:
    """aiokafka's round-robin, noting which generation gave this consumer which partitions."""

    name = RoundRobinPartitionAssignor.name
    version = RoundRobinPartitionAssignor.version

    def __init__(self, client: str, seen: dict[int, dict[str, Partitions]]) -> None:
        self.client = client
        self.seen = seen
        self.consumer: AIOKafkaConsumer | None = None
        self.assignments = 0

    def metadata(self, topics: Iterable[str]) -> Any:
        return RoundRobinPartitionAssignor.metadata(topics)

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> Any:
        return RoundRobinPartitionAssignor.assign(cluster, members)

    def on_assignment(self, assignment: Any) -> None:
        assert self.consumer is not None
        generation = self.consumer._coordinator.generation  # what Faust reads, too
        self.seen[generation][self.client] = sorted(
            (tp.topic, tp.partition) for tp in assignment.partitions()
        )
        self.assignments += 1


async def _broker_story(
    story: Story, bootstrap: str, group: str, topics: Mapping[str, int]
) -> History:
    seen: dict[int, dict[str, Partitions]] = defaultdict(dict)
    live: dict[str, AIOKafkaConsumer] = {}
    recorders: dict[str, Recorder] = {}
    last = 0

    async def stable(after: int, *, new_generation: bool) -> int:
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while time.monotonic() < deadline:
            await asyncio.gather(*(c.getmany(timeout_ms=50) for c in live.values()))
            newest = max(seen, default=0)
            generations = {c._coordinator.generation for c in live.values()}
            if (newest >= after + new_generation and set(seen[newest]) == set(live)
                    and generations == {newest}
                    and all(recorders[name].assignments for name in live)):
                return newest
        raise TimeoutError(f"broker group not stable after generation {after}: {dict(seen)}")

    async def crash(consumer: AIOKafkaConsumer) -> None:
        async def no_leave() -> None:
            return None

        consumer._coordinator._maybe_leave_group = no_leave  # as if the process died
        await consumer.stop()

    async def join(name: str) -> None:
        recorder = recorders[name] = Recorder(name, seen)
        consumer = AIOKafkaConsumer(
            *topics, bootstrap_servers=bootstrap, group_id=group, client_id=name,
            group_instance_id=name if name.startswith("i") else None,
            partition_assignment_strategy=(recorder,), enable_auto_commit=False,
            session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
        )
        recorder.consumer = consumer
        await consumer.start()
        live[name] = consumer

    try:
        for action, name in story:
            if action == "join":
                await join(name)
            elif action == "leave":
                await live.pop(name).stop()
            elif action == "crash":
                await crash(live.pop(name))
            else:  # restart within the session timeout
                await crash(live.pop(name))
                await join(name)
            if live:
                last = await stable(last, new_generation=action != "restart")
    finally:
        for consumer in live.values():
            await consumer.stop()
    return sorted(seen.items())


def _shim_story(story: Story, topics: Mapping[str, int]) -> History:
    config = CoordinatorConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500)
    cluster = make_cluster(topics)
    with VirtualClock(seed=1) as clock:
        coordinator = GroupCoordinator(clock, config)

        async def play() -> None:
            live: dict[str, ShimMember] = {}
            def join(name: str) -> None:
                live[name] = ShimMember(
                    coordinator, group_id="g", assignors=[RoundRobinPartitionAssignor],
                    topics=list(topics), cluster=cluster, client_id=name,
                    group_instance_id=name if name.startswith("i") else None,
                    session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                ).start()

            for action, name in story:
                if action == "join":
                    join(name)
                elif action == "leave":
                    await live.pop(name).close()
                elif action == "crash":
                    await live.pop(name).crash()
                else:
                    await live.pop(name).crash()
                    join(name)
                if live:
                    await settle(list(live.values()), timeout=STEP_TIMEOUT_S)

        clock.run(play())
    history = []
    for record in coordinator.journal.stable("g"):
        history.append((record.generation, {
            member_id[:-37]: sorted(
                (tp.topic, tp.partition)
                for tp in ConsumerProtocol.ASSIGNMENT.decode(data).partitions()
            )
            for member_id, data in record.assignments.items()
        }))
    return history


async def _on_the_broker(
    story: Story, bootstrap: str, create_topics: CreateTopics, topics: Mapping[str, int],
    group: str,
) -> History:
    await create_topics(topics)
    return await _broker_story(story, bootstrap, group, topics)


def test_dynamic_members_coming_and_going(
    kafka_bootstrap: str, create_topics: CreateTopics, unique_name: Callable[[str], str]
) -> None:
    topics = {unique_name("a"): 5, unique_name("b"): 3}
    broker = asyncio.run(_on_the_broker(
        COMINGS_AND_GOINGS, kafka_bootstrap, create_topics, topics, unique_name("g")
    ))
    shim = _shim_story(COMINGS_AND_GOINGS, topics)
    memberships = [sorted(members) for _, members in shim]
    assert memberships == [["c0"], ["c0", "c1"], ["c0", "c1", "c2"], ["c0", "c2"], ["c0"],
                           ["c0", "c3"], ["c3"]]
    assert [g for g, _ in shim] == [1, 2, 3, 4, 5, 6, 7]
    assert shim == broker


def test_a_static_member_restarting_keeps_the_generation(
    kafka_bootstrap: str, create_topics: CreateTopics, unique_name: Callable[[str], str]
) -> None:
    topics = {unique_name("a"): 4}
    broker = asyncio.run(_on_the_broker(
        STATIC_RESTART, kafka_bootstrap, create_topics, topics, unique_name("g")
    ))
    shim = _shim_story(STATIC_RESTART, topics)
    assert [(g, sorted(members)) for g, members in shim] == [
        (1, ["i0"]), (2, ["c1", "i0"]), (3, ["c1", "c2", "i0"])
    ]
    assert shim == broker
