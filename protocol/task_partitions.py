"""Which partitions each active task of an assignment covers, as a member works it out.

Kafka's ``AssignmentInfo`` lists one active task per assigned partition, in the order of the
partitions sorted by (topic, partition); the partitions themselves travel outside our user data,
in the consumer-protocol envelope. Pairing the two is pure, and both the member
(``assignor.member``) and the readers of raw bytes (``python -m protocol decode``) need it, so it
lives here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from protocol.ids import TaskId, TopicPartition

_TOPIC_PARTITION = attrgetter("topic", "partition")


def align_active_tasks(
    active_tasks: Sequence[TaskId], partitions: Sequence[TopicPartition]
) -> dict[TaskId, tuple[TopicPartition, ...]] | None:
    """Zip the active task list with the partitions sorted by (topic, partition), as Kafka does.

    Returns None when the counts differ, which means the leader and this member disagree.
    """
    # by the same (topic, partition) tuples ``TopicPartition.__lt__`` compares, built once per
    # partition in C instead of twice per comparison in a Python method (every member does
    # this at every rebalance); the sort is stable either way, so the order is the same
    ordered = sorted(partitions, key=_TOPIC_PARTITION)
    if len(ordered) != len(active_tasks):
        return None
    grouped: dict[TaskId, list[TopicPartition]] = {}
    for task, partition in zip(active_tasks, ordered, strict=True):
        grouped.setdefault(task, []).append(partition)
    return {task: tuple(parts) for task, parts in grouped.items()}


__all__ = ["align_active_tasks"]
