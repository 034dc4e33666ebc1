"""Steps 2 and 3 at scale: sizing and grouping 6,000+ partitions into tasks.

Figure: milliseconds for ``size_internal_topics`` + ``plan_tasks`` on a 20-subtopology topology
(two input topics of 150 partitions each per subtopology, one logged store each: 6,000 source
partitions, 3,000 tasks, 3,000 changelog partitions). Reference: the same grouping written the
obvious way, with validated ``TaskId``/``TopicPartition`` constructors, measured in the same run.
"""

from __future__ import annotations

import timeit

from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology, TopologyBuilder
from assignor.topology.tasks import create_tasks, plan_tasks
from protocol.ids import TaskId, TopicPartition

SUBTOPOLOGIES = 20
PARTITIONS = 150


def workload() -> tuple[Topology, dict[str, int]]:
    builder = TopologyBuilder("bench")
    counts = {}
    for i in range(SUBTOPOLOGIES):
        topics = (f"in-{i}-a", f"in-{i}-b")
        builder.add_source(f"source-{i}", *topics).add_processor(f"proc-{i}", f"source-{i}")
        builder.add_state_store(f"store-{i}", f"proc-{i}")
        counts.update(dict.fromkeys(topics, PARTITIONS))
    return builder.build(), counts


def ours(topology: Topology, counts: dict[str, int]) -> int:
    sized = size_internal_topics(topology, counts)
    assert isinstance(sized, InternalTopics)
    return len(plan_tasks(topology, sized.source_partitions).tasks)


def reference(topology: Topology, counts: dict[str, int]) -> int:
    tasks = {}
    changelogs = {}
    for sub in topology.subtopologies:
        widest = max(counts[t] for t in sub.source_topics)
        for p in range(widest):
            task = TaskId(sub.id, p)
            tasks[task] = tuple(TopicPartition(t, p) for t in sub.source_topics if counts[t] > p)
            changelogs[task] = tuple(TopicPartition(t, p) for t in sub.changelog_topics)
    return len(tasks)


def main() -> None:
    topology, counts = workload()
    assert ours(topology, counts) == reference(topology, counts) == SUBTOPOLOGIES * PARTITIONS
    runs = 20
    mine = min(timeit.repeat(lambda: ours(topology, counts), number=runs, repeat=5)) / runs
    theirs = min(timeit.repeat(lambda: reference(topology, counts), number=runs, repeat=5)) / runs
    sized = size_internal_topics(topology, counts)
    assert isinstance(sized, InternalTopics)
    grouping = (
        min(
            timeit.repeat(
                lambda: create_tasks(topology, sized.source_partitions), number=runs, repeat=5
            )
        )
        / runs
    )
    partitions = sum(counts.values())
    print(f"create_tasks only, {partitions} source partitions:  {grouping * 1e3:.2f} ms")
    print(f"size + plan tasks, {partitions} source partitions: {mine * 1e3:.2f} ms")
    print(f"reference (validated pydantic ids):            {theirs * 1e3:.2f} ms")
    print(f"ratio ours/reference: {mine / theirs:.2f}")


if __name__ == "__main__":
    main()
