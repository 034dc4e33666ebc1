"""A leader whose ``assign()`` raises, or answers after the rebalance timeout, in the coordinator
shim with real ``StreamsProcess`` members: the outcome is bounded and every task is served.

- ``assign()`` raises (a bug in a wrapper around ours: ours turns its own failures into an
  ``ASSIGNMENT_ERROR`` and never raises): aiokafka hands the exception to the application and
  rejoins after ``retry.backoff.ms``; here it raises twice, then the group settles with every
  task active exactly once.
- ``assign()`` outlives the rebalance timeout: the coordinator's generation moves on without the
  leader's SyncGroup; when the stalled leader answers, its generation is stale (the shim rejects
  it) and the group settles on a later generation, again with every task active exactly once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from assignor import AssignorConfig, StreamsPartitionAssignor, StreamsProcess, TopologyBuilder
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.tasks import plan_tasks
from protocol import ProcessId, TaskId
from simulator.shim import (
    CoordinatorConfig,
    GroupCoordinator,
    ShimMember,
    VirtualClock,
    make_cluster,
    settle,
)

REBALANCE_TIMEOUT_MS = 20_000


class _Faulty:
    """Forwards aiokafka's assignor calls; ``assign`` raises ``failures`` times first."""

    def __init__(self, inner: StreamsPartitionAssignor, failures: int) -> None:
        self.inner, self.failures, self.name = inner, failures, inner.name

    def metadata(self, topics: Any) -> Any:
        return self.inner.metadata(topics)

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> Any:
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("a wrapper around the assignor broke")
        return self.inner.assign(cluster, members)

    def on_assignment(self, assignment: Any) -> None:
        self.inner.on_assignment(assignment)


@pytest.fixture
def quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


def _run(*, failures: int, assign_delay_ms: float) -> tuple[dict[TaskId, list[str]], set[TaskId],
                                                            int]:
    """Three one-thread processes; the first member (the leader) is the faulty one."""
    builder = TopologyBuilder("app")
    builder.add_source("source", "in")
    builder.add_processor("work", "source").add_state_store("store", "work")
    topology = builder.build()
    sizing = size_internal_topics(topology, {"in": 6})
    assert isinstance(sizing, InternalTopics)
    layout = plan_tasks(topology, sizing.source_partitions)
    cluster = make_cluster({**sizing.source_partitions, **layout.changelog_counts})
    clock = VirtualClock(seed=3)
    coordinator = GroupCoordinator(clock, CoordinatorConfig(initial_rebalance_delay_ms=0))
    assignors: list[StreamsPartitionAssignor] = []

    async def story() -> int:
        members = []
        for index in range(3):
            process = StreamsProcess(
                topology, AssignorConfig(), process_id=ProcessId.for_int(index + 1),
                clock_ms=lambda: int(clock.time() * 1000))
            process.set_changelog_end_offsets(dict.fromkeys(
                (tp for tps in layout.changelogs.values() for tp in tps), 0))
            inner = process.new_assignor()
            assignors.append(inner)
            hosted: Any = _Faulty(inner, failures) if index == 0 else inner
            member = ShimMember(
                coordinator, group_id="app", assignors=[hosted], topics=["in"],
                cluster=cluster, client_id=f"p{index}", session_timeout_ms=10_000,
                rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, heartbeat_interval_ms=1000,
                assign_delay_ms=assign_delay_ms if index == 0 else 0.0)
            inner.bind(SimpleNamespace(_coordinator=member))
            members.append(member.start())
            await asyncio.sleep(0)
        await settle(members, timeout=600)
        for inner in assignors:  # follow-ups are not wanted here: nothing is behind
            inner.followups.cancel()
        generation = coordinator.generation("app")
        for member in members:
            await member.crash()
        return generation

    try:
        generation = clock.run(story())
    finally:
        clock.close()
    owners: dict[TaskId, list[str]] = {}
    for index, inner in enumerate(assignors):
        received = inner.last_assignment
        assert received is not None
        for task in received.active_tasks:
            owners.setdefault(task, []).append(f"p{index}")
    return owners, set(layout.tasks), generation


def test_a_leader_whose_assign_raises_is_retried_and_the_group_settles(quiet: None) -> None:
    owners, tasks, generation = _run(failures=2, assign_delay_ms=0.0)
    assert set(owners) == tasks
    assert all(len(o) == 1 for o in owners.values()), owners
    assert generation == 1 + 2  # each failed round costs one generation (none fail: 1)


def test_a_leader_that_answers_after_the_rebalance_timeout_does_not_stall_the_group(
    quiet: None,
) -> None:
    owners, tasks, generation = _run(failures=0, assign_delay_ms=REBALANCE_TIMEOUT_MS * 1.5)
    assert set(owners) == tasks
    assert all(len(o) == 1 for o in owners.values()), owners
    assert generation > 1  # the stalled generation was abandoned
