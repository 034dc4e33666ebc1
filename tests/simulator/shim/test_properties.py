"""Random stories of joins, leaves, crashes, restarts and rejoins: the group never gets stuck,
generations only go up, every stable generation hands out each partition exactly once, and a
story replayed with the same seed leaves the same journal."""

from __future__ import annotations

from typing import Any

from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocol
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.shim import (
    CoordinatorConfig,
    GroupCoordinator,
    ShimMember,
    VirtualClock,
    make_cluster,
    settle,
)

TOPICS = {"a": 5, "b": 3}
CLUSTER = make_cluster(TOPICS)
EVERY_PARTITION = sorted((t, p) for t, n in TOPICS.items() for p in range(n))

ACTIONS = st.one_of(
    st.tuples(st.just("join"), st.booleans()),
    st.tuples(st.sampled_from(["leave", "crash", "rejoin", "restart", "subscribe"]),
              st.integers(0, 20)),
    st.tuples(st.just("wait"), st.floats(0.0, 40.0)),
)
STORIES = st.lists(ACTIONS, min_size=1, max_size=25)


def _play(story: list[tuple[str, Any]], seed: int) -> tuple[list[Any], list[Any], int]:
    with VirtualClock(seed) as clock:
        config = CoordinatorConfig(initial_rebalance_delay_ms=500)
        coordinator = GroupCoordinator(clock, config)
        members: list[ShimMember] = []

        def start(name: str, instance: str | None) -> None:
            members.append(ShimMember(
                coordinator, group_id="g", assignors=[RoundRobinPartitionAssignor],
                topics=sorted(TOPICS), cluster=CLUSTER, client_id=name,
                group_instance_id=instance, session_timeout_ms=6000,
                rebalance_timeout_ms=12_000, heartbeat_interval_ms=1000,
                latency_ms=(0.0, 5.0),
            ).start())

        async def play() -> int:
            for step, (action, arg) in enumerate(story):
                live = [m for m in members if m.running]
                target = live[arg % len(live)] if live and isinstance(arg, int) else None
                if action == "join":
                    start(f"m{step}", f"i{step}" if arg else None)
                elif action == "wait":
                    await clock.sleep(arg)
                elif target is None:
                    continue
                elif action == "leave":
                    await target.close()
                elif action == "crash":
                    await target.crash()
                elif action == "rejoin":
                    target.request_rejoin()
                elif action == "subscribe":
                    target.subscribe(["a"] if len(target.topics) == 2 else sorted(TOPICS))
                elif action == "restart" and target.group_instance_id is not None:
                    await target.close()
                    start(target.client_id, target.group_instance_id)
                await clock.sleep(0.01)
            for member in members:  # everyone back on the full subscription
                if member.running and len(member.topics) != len(TOPICS):
                    member.subscribe(sorted(TOPICS))
            if not any(m.running for m in members):
                return 0
            return await settle(members, timeout=600.0)

        final = clock.run(play())
        return list(coordinator.journal.events), list(coordinator.journal.records), final


@settings(max_examples=max(10, settings().max_examples // 4))
@given(story=STORIES, seed=st.integers(0, 2**16))
def test_random_stories_settle_and_keep_the_invariants(
    story: list[tuple[str, Any]], seed: int
) -> None:
    events, records, final = _play(story, seed)
    generations = [r.generation for r in records]
    assert generations == sorted(set(generations)), generations
    if final:
        assert records and records[-1].outcome == "stable" and records[-1].generation == final
    for record in records:
        if record.outcome != "stable":
            continue
        assert record.leader in record.members
        assert set(record.assignments) == set(record.members)
        owned = [
            (tp.topic, tp.partition)
            for data in record.assignments.values()
            for tp in ConsumerProtocol.ASSIGNMENT.decode(data).partitions()
        ]
        subscribed = {
            t for data in record.metadata.values()
            for t in ConsumerProtocol.METADATA.decode(data).subscription
        }
        expected = [tp for tp in EVERY_PARTITION if tp[0] in subscribed]
        assert sorted(owned) == expected, record
    assert _play(story, seed)[0] == events
