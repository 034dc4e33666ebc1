"""The shared-id ranges a task plan reads in C are the same instances ``shared_task_id`` and
``shared_topic_partition`` give one by one, whether the table held them already or not."""

from __future__ import annotations

from protocol.ids import TaskId, TopicPartition
from protocol.shared_ids import (
    shared_task_id,
    shared_task_ids,
    shared_topic_partition,
    shared_topic_partitions,
)


def test_task_range_shares_existing_ids_and_makes_missing_ones() -> None:
    subtopology = 1_234_567  # no other test makes ids of this subtopology
    early = [shared_task_id(subtopology, p, None) for p in (0, 3)]
    tasks = shared_task_ids(subtopology, 6)
    assert tasks == [TaskId(subtopology, p) for p in range(6)]
    assert tasks[0] is early[0] and tasks[3] is early[1]
    assert all(t is shared_task_id(subtopology, p, None) for p, t in enumerate(tasks))
    again = shared_task_ids(subtopology, 6)  # every one in the table now: the C read alone
    assert all(a is t for a, t in zip(again, tasks, strict=True))
    assert shared_task_ids(subtopology, 0) == []


def test_partition_range_shares_existing_ids_and_makes_missing_ones() -> None:
    topic = "shared-range-topic"
    early = shared_topic_partition(topic, 2)
    tps = shared_topic_partitions(topic, 5)
    assert tps == [TopicPartition(topic, p) for p in range(5)]
    assert tps[2] is early
    assert all(tp is shared_topic_partition(topic, p) for p, tp in enumerate(tps))
    again = shared_topic_partitions(topic, 5)
    assert all(a is t for a, t in zip(again, tps, strict=True))
