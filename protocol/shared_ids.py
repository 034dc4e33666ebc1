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

from protocol._read import task_id, task_id_range, topic_partition, topic_partition_range

#: ``shared_task_id(subtopology, partition, topology)``, topology ``None`` for an unnamed
#: task: the shared ``TaskId`` for values the caller has already checked (no validation). The
#: decoder's own function, not a wrapper: a task plan calls it once per task.
shared_task_id = task_id

#: ``shared_topic_partition(topic, partition)``: the shared ``TopicPartition`` for values the
#: caller has already checked; the decoder's own function, as above.
shared_topic_partition = topic_partition

#: ``shared_task_ids(subtopology, count)``: the shared unnamed ``TaskId`` of each partition
#: ``0 .. count - 1`` of a subtopology, looked up in C (a task plan's thousands of ids).
shared_task_ids = task_id_range

#: ``shared_topic_partitions(topic, count)``: the shared ``TopicPartition`` of each partition
#: ``0 .. count - 1`` of a topic, looked up in C.
shared_topic_partitions = topic_partition_range


__all__ = [
    "shared_task_id",
    "shared_task_ids",
    "shared_topic_partition",
    "shared_topic_partitions",
]
