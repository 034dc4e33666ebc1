"""The member side: aligning tasks with partitions, version probing, follow-ups, task changes."""

from __future__ import annotations

import random
from functools import cmp_to_key

import pytest

from assignor.member import MemberAssignment, interpret_assignment
from assignor.topology.model import Topology
from protocol.errors import AssignorError
from protocol.ids import HostInfo, TaskId, TopicPartition
from protocol.messages import NO_FOLLOWUP_REBALANCE, AssignmentInfo, VersionHeader
from protocol.task_partitions import align_active_tasks

HOST = HostInfo("app-1", 8080)
T00, T01, T10 = TaskId(0, 0), TaskId(0, 1), TaskId(1, 0)
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def info(**overrides: object) -> AssignmentInfo:
    fields: dict[str, object] = {
        "version": 3,
        "commonly_supported_version": 3,
        "active_tasks": (T00, T10, T01),
        "partitions_by_host": {HOST: frozenset({A0, A1, B0})},
    }
    fields.update(overrides)
    return AssignmentInfo.model_validate(fields)


def decide(assignment: AssignmentInfo | VersionHeader, **kwargs: object):  # type: ignore[no-untyped-def]
    params: dict[str, object] = {
        "used_version": 3,
        "latest_supported_version": 3,
        "endpoint": HOST,
        "previous": None,
    }
    params.update(kwargs)
    # Partitions arrive unsorted from aiokafka; alignment must sort them.
    return interpret_assignment(assignment, [B0, A1, A0], **params)  # type: ignore[arg-type]


def test_active_tasks_are_aligned_with_sorted_partitions() -> None:
    decision = decide(info(active_tasks=(T00, T01, T10)))
    assert decision.assignment.active_tasks == {T00: (A0,), T01: (A1,), T10: (B0,)}
    assert decision.rebalance_at_ms is None
    assert decision.next_used_version == 3


def test_a_task_with_several_partitions_collects_them_all() -> None:
    assert align_active_tasks([T00, T00, T10], [B0, A1, A0]) == {T00: (A0, A1), T10: (B0,)}


def test_tasks_pair_with_the_partitions_in_topic_partition_order() -> None:
    """Shuffled partitions of topics that sort differently by length and by character, and
    partition numbers that sort differently as text: paired as ``TopicPartition``'s own order
    (its ``__lt__``) puts them."""
    rng = random.Random(3)
    partitions = [TopicPartition(t, p) for t in ("b", "a-b", "ab", "a", "B") for p in (0, 2, 10, 9)]
    for _ in range(20):
        rng.shuffle(partitions)
        tasks = [TaskId(0, i) for i in range(len(partitions))]
        expected = sorted(partitions, key=cmp_to_key(lambda x, y: -1 if x < y else int(y < x)))
        assert align_active_tasks(tasks, partitions) == {
            t: (tp,) for t, tp in zip(tasks, expected, strict=True)
        }


def test_count_mismatch_is_an_assignment_error_not_an_exception() -> None:
    decision = decide(info(active_tasks=(T00,)))
    assert decision.assignment.error is AssignorError.ASSIGNMENT_ERROR
    assert "number of assigned partitions 3" in decision.assignment.error_detail
    assert decision.assignment.active_tasks == {}


def test_error_code_from_leader_is_passed_to_the_application() -> None:
    decision = decide(AssignmentInfo.error(AssignorError.SHUTDOWN_REQUESTED, 3))
    assert decision.assignment.error is AssignorError.SHUTDOWN_REQUESTED
    assert "requested a shutdown" in decision.assignment.error_detail


def test_newer_assignment_than_subscription_is_rejected() -> None:
    decision = decide(info(version=3), used_version=2)
    assert decision.assignment.error is AssignorError.ASSIGNMENT_ERROR
    assert "higher version 3" in decision.assignment.error_detail


def test_unreadable_future_assignment_is_an_error() -> None:
    decision = decide(VersionHeader(version=9, latest_supported_version=9))
    assert decision.assignment.error is AssignorError.ASSIGNMENT_ERROR


def test_downgrade_after_version_probing_rebalances_at_once() -> None:
    # A new member (latest 4) sent v4; the leader answered at v2, commonly supported 2.
    decision = decide(
        info(version=2, commonly_supported_version=2), used_version=4, latest_supported_version=4
    )
    assert decision.next_used_version == 2
    assert decision.rebalance_at_ms == 0
    assert "version probing" in decision.reason


def test_upgrade_when_the_whole_group_supports_a_newer_version() -> None:
    decision = decide(
        info(version=2, commonly_supported_version=3), used_version=2, latest_supported_version=3
    )
    assert decision.next_used_version == 3
    assert decision.rebalance_at_ms == 0
    assert "rolling upgrade" in decision.reason


def test_commonly_supported_beyond_our_latest_is_an_error() -> None:
    decision = decide(info(version=2, commonly_supported_version=5), used_version=2)
    assert decision.assignment.error is AssignorError.ASSIGNMENT_ERROR


def test_missing_own_endpoint_asks_for_an_immediate_rejoin() -> None:
    decision = decide(info(partitions_by_host={}))
    assert decision.rebalance_at_ms == 0
    assert decision.assignment.active_tasks  # the tasks are still handed over


def test_probing_time_is_scheduled() -> None:
    decision = decide(info(next_rebalance_ms=123_456))
    assert decision.rebalance_at_ms == 123_456
    assert decide(info(next_rebalance_ms=NO_FOLLOWUP_REBALANCE)).rebalance_at_ms is None
    assert decide(info(next_rebalance_ms=0)).rebalance_at_ms == 0


def test_changes_since_the_previous_assignment() -> None:
    previous = MemberAssignment(
        active_tasks={T00: (A0,), TaskId(2, 0): (TopicPartition("c", 0),)},
        standby_tasks={TaskId(3, 0): ()},
    )
    decision = decide(info(standby_tasks={TaskId(3, 0): (), TaskId(3, 1): ()}), previous=previous)
    changes = decision.assignment.changes
    assert changes.kept_active == {T00}
    assert changes.added_active == {T01, T10}
    assert changes.removed_active == {TaskId(2, 0)}
    assert changes.kept_standby == {TaskId(3, 0)}
    assert changes.added_standby == {TaskId(3, 1)}
    assert changes.removed_standby == frozenset()


def test_error_with_a_retry_time_schedules_the_retry() -> None:
    failed = AssignmentInfo(
        version=3,
        commonly_supported_version=3,
        error_code=AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA,
        next_rebalance_ms=5_000,
    )
    decision = decide(failed)
    assert decision.assignment.error is AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA
    assert decision.rebalance_at_ms == 5_000


def test_changelog_partitions_of_active_and_standby_tasks_come_from_the_topology() -> None:
    from assignor import TopologyBuilder

    builder = TopologyBuilder("app")
    builder.add_source("a-source", "a").add_processor("count", "a-source")
    builder.add_state_store("counts", "count").add_state_store("seen", "count")
    builder.add_source("b-source", "b").add_processor("stateless", "b-source")
    topology = builder.build()
    standby = {TaskId(0, 2): (TopicPartition("a", 2),)}
    decision = decide(info(standby_tasks=standby), topology=topology)
    a = decision.assignment
    counts, seen = "app-counts-changelog", "app-seen-changelog"
    assert a.changelogs == {
        T00: (TopicPartition(counts, 0), TopicPartition(seen, 0)),
        T01: (TopicPartition(counts, 1), TopicPartition(seen, 1)),
        TaskId(0, 2): (TopicPartition(counts, 2), TopicPartition(seen, 2)),
    }  # the stateless task 1_0 has none
    assert a.restore_partitions == {
        TopicPartition(t, p) for t in (counts, seen) for p in (0, 1)
    }
    assert a.standby_changelog_partitions == {TopicPartition(counts, 2), TopicPartition(seen, 2)}
    # without the topology (a decoder that does not run the app) nothing is invented
    assert decide(info(standby_tasks=standby)).assignment.changelogs == {}


def test_changelogs_kept_between_rebalances_follow_each_topology_and_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The member keeps each task's changelog partitions per topology instance: a second
    topology with the same tasks but other stores gets its own, answers keep the order of
    ``changelog_partitions``, and the table's bounds empty it without changing an answer."""
    from assignor import TopologyBuilder, member
    from assignor.topology.tasks import changelog_partitions

    def app(*stores: str) -> Topology:
        builder = TopologyBuilder("app")
        builder.add_source("a-source", "a").add_processor("count", "a-source")
        for store in stores:
            builder.add_state_store(store, "count")
        builder.add_source("b-source", "b").add_processor("stateless", "b-source")
        return builder.build()

    monkeypatch.setattr(member, "_MAX_TOPOLOGIES", 2)
    monkeypatch.setattr(member, "_MAX_TASKS", 3)
    standby = {TaskId(0, 2): (TopicPartition("a", 2),), TaskId(0, 3): (TopicPartition("a", 3),)}
    topologies = [app("counts"), app("counts", "seen"), app("seen"), app("counts")]
    for _ in range(3):
        for topology in topologies:
            got = decide(info(standby_tasks=standby), topology=topology).assignment.changelogs
            want = changelog_partitions(topology, {T00: (), T10: (), T01: (), **standby})
            assert list(got.items()) == list(want.items())
    assert len(member._CHANGELOGS) <= 2
    assert all(len(known) <= 3 for _, known in member._CHANGELOGS.values())
