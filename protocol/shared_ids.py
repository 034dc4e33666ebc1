"""The decoder's shared id instances, for code that makes ids the decoder will meet again.

Ids are frozen, so every decoded ``0_3`` can be one object (``protocol._read`` keeps a table of
them). A leader's task plan made with the same instances (``assignor.topology.tasks``) meets the
decoded ones by identity: a dict or set lookup of a decoded task then ends at CPython's identity
check instead of calling ``TaskId.__eq__`` (a Python function) for every task of every
subscription, host map and lag table. The objects are ordinary ids; only their identity is
shared, so a caller that gets a fresh object (the tables are bounded and cleared when full)
is merely slower.
"""

from __future__ import annotations

from protocol._read import task_id, topic_partition
from protocol.ids import TaskId, TopicPartition


def shared_task_id(subtopology: int, partition: int, topology: str | None = None) -> TaskId:
    """The shared ``TaskId`` for values the caller has already checked (no validation)."""
    return task_id(subtopology, partition, topology)


def shared_topic_partition(topic: str, partition: int) -> TopicPartition:
    """The shared ``TopicPartition`` for values the caller has already checked."""
    return topic_partition(topic, partition)


__all__ = ["shared_task_id", "shared_topic_partition"]
