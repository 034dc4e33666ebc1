"""The partition grouper: tasks per subtopology, stateful tasks and changelog counts."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given

from assignor.testing import sized_topologies
from assignor.topology.builder import TopologyBuilder
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology
from assignor.topology.tasks import (
    changelog_partition_counts,
    changelog_partitions,
    create_tasks,
    plan_tasks,
    stateful_tasks,
)
from protocol.ids import TaskId, TopicPartition
from protocol.shared_ids import shared_task_id, shared_topic_partition


def seed_example() -> Topology:
    """Seed 003, figure 6: Topic-A (4) and Topic-B (5) in one group, Topic-C (4) in another."""
    builder = TopologyBuilder("app")
    builder.add_source("source-ab", "Topic-A", "Topic-B").add_processor("p1", "source-ab")
    builder.add_source("source-c", "Topic-C").add_processor("p2", "source-c")
    builder.add_state_store("store", "p2")
    return builder.build()


def test_seed_example_tasks() -> None:
    tasks = create_tasks(seed_example(), {"Topic-A": 4, "Topic-B": 5, "Topic-C": 4})
    assert [str(t) for t in tasks] == [
        "0_0", "0_1", "0_2", "0_3", "0_4", "1_0", "1_1", "1_2", "1_3",
    ]  # fmt: skip
    for p in range(4):
        assert tasks[TaskId(0, p)] == (TopicPartition("Topic-A", p), TopicPartition("Topic-B", p))
        assert tasks[TaskId(1, p)] == (TopicPartition("Topic-C", p),)
    assert tasks[TaskId(0, 4)] == (TopicPartition("Topic-B", 4),)


def test_seed_example_stateful_tasks_and_changelogs() -> None:
    topology = seed_example()
    layout = plan_tasks(topology, {"Topic-A": 4, "Topic-B": 5, "Topic-C": 4})
    assert layout.stateful == {TaskId(1, p) for p in range(4)}
    assert layout.stateless == {TaskId(0, p) for p in range(5)}
    assert layout.changelogs == {
        TaskId(1, p): (TopicPartition("app-store-changelog", p),) for p in range(4)
    }
    assert layout.changelog_counts == {"app-store-changelog": 4}


def test_ids_built_without_validation_behave_like_validated_ones() -> None:
    tasks = create_tasks(seed_example(), {"Topic-A": 1, "Topic-B": 1, "Topic-C": 1})
    task, partitions = next(iter(tasks.items()))
    assert task == TaskId(0, 0) and hash(task) == hash(TaskId(0, 0))
    assert task.model_dump() == TaskId(0, 0).model_dump()
    assert partitions[0].model_dump() == {"topic": "Topic-A", "partition": 0}
    assert sorted([TaskId(0, 1), task]) == [task, TaskId(0, 1)]
    assert pickle.loads(pickle.dumps(task)) == task  # the simulator ships tasks to Spark
    assert pickle.loads(pickle.dumps(partitions)) == partitions


def test_unlogged_store_makes_no_stateful_task_and_source_changelog_is_not_sized() -> None:
    builder = TopologyBuilder("app").add_source("s", "table").add_processor("p", "s")
    builder.add_state_store("cache", "p", logged=False)
    topology = builder.build()
    tasks = create_tasks(topology, {"table": 3})
    assert stateful_tasks(topology, tasks) == frozenset()
    builder.add_state_store("materialized", "p", changelog_topic="table")
    topology = builder.build()
    assert stateful_tasks(topology, tasks) == set(tasks)
    assert changelog_partitions(topology, tasks)[TaskId(0, 2)] == (TopicPartition("table", 2),)
    assert changelog_partition_counts(topology, tasks) == {}


def test_missing_count_is_a_callers_mistake() -> None:
    with pytest.raises(ValueError, match="Empty partitions for topic Topic-C"):
        create_tasks(seed_example(), {"Topic-A": 4, "Topic-B": 5})
    with pytest.raises(ValueError, match="Empty partitions for topic Topic-A"):
        create_tasks(seed_example(), {"Topic-A": 0, "Topic-B": 5, "Topic-C": 1})


def test_repartition_topics_make_tasks_with_their_computed_count() -> None:
    builder = TopologyBuilder("app").add_source("s", "orders").add_processor("re-key", "s")
    builder.add_sink("to-rep", "app-rep", "re-key")
    builder.add_source("from-rep", "app-rep").add_processor("agg", "from-rep")
    builder.add_state_store("totals", "agg")
    topology = builder.build()
    sized = size_internal_topics(topology, {"orders": 6})
    assert isinstance(sized, InternalTopics)
    layout = plan_tasks(topology, sized.source_partitions)
    assert sorted(layout.tasks) == [TaskId(s, p) for s in (0, 1) for p in range(6)]
    assert layout.changelog_counts == {"app-totals-changelog": 6}


@given(sized_topologies(max_partitions=12))
def test_grouper_properties(case: tuple[Topology, dict[str, int]]) -> None:
    topology, counts = case
    sized = size_internal_topics(topology, counts)
    if not isinstance(sized, InternalTopics):
        return
    sources = sized.source_partitions
    layout = plan_tasks(topology, sources)
    assert list(layout.tasks) == sorted(layout.tasks)
    # the columns, when every task is of one width: each task's partitions, codes and rank
    columns = layout.columns
    widths = set(map(len, layout.tasks.values()))
    assert (columns is not None) == (len(widths) == 1)
    if columns is not None:
        topics = columns.topics
        assert list(topics) == sorted(topics)
        for i, (task, partitions) in enumerate(layout.tasks.items()):
            assert [column[i] for column in columns.partitions] == list(partitions)
            assert [(topics[c[i] >> 32], c[i] & (2**32 - 1)) for c in columns.codes] == [
                (tp.topic, tp.partition) for tp in partitions
            ]
            assert columns.ranks[i] == task._rank
    for sub in topology.subtopologies:
        mine = {t: ps for t, ps in layout.tasks.items() if t.subtopology == sub.id}
        widest = max(sources[topic] for topic in sub.source_topics)
        assert sorted(t.partition for t in mine) == list(range(widest))
        # every partition of every source topic is in exactly one task of this subtopology
        owned = [tp for ps in mine.values() for tp in ps]
        expected = {TopicPartition(t, p) for t in sub.source_topics for p in range(sources[t])}
        assert len(owned) == len(set(owned)) and set(owned) == expected
        for task, partitions in mine.items():
            assert {tp.partition for tp in partitions} == {task.partition}
            assert list(partitions) == sorted(partitions)
        for topic in sub.created_changelog_topics:
            assert layout.changelog_counts[topic] == widest
        assert all((t in layout.stateful) == sub.is_stateful for t in mine)
    assert set(layout.changelogs) == layout.stateful
    for task in layout.stateful:
        sub = topology.subtopology(task.subtopology)
        assert layout.changelogs[task] == tuple(
            TopicPartition(topic, task.partition) for topic in sub.changelog_topics
        )


@given(sized_topologies(max_partitions=12))
def test_plan_tasks_in_one_pass_equals_the_four_steps(
    case: tuple[Topology, dict[str, int]],
) -> None:
    """plan_tasks builds its views in one pass; the result, the dicts' orders included, must be
    what the four public steps give one after the other. The stateful set is compared as a set:
    plan_tasks makes it from the changelog dict (keeping the stored hashes), whose table can
    iterate in another order than a set grown one task at a time, and no caller depends on a
    frozenset's order (each looks tasks up in it, or sorts it)."""
    topology, counts = case
    sized = size_internal_topics(topology, counts)
    if not isinstance(sized, InternalTopics):
        return
    layout = plan_tasks(topology, sized.source_partitions)
    tasks = create_tasks(topology, sized.source_partitions)
    assert list(layout.tasks.items()) == list(tasks.items())
    assert layout.stateful == stateful_tasks(topology, tasks)
    assert list(layout.changelogs.items()) == list(changelog_partitions(topology, tasks).items())
    assert list(layout.changelog_counts.items()) == list(
        changelog_partition_counts(topology, tasks).items()
    )


def test_a_large_plan_uses_the_decoders_shared_ids_and_equals_the_four_steps() -> None:
    """At thousands of tasks (where the stateful set's table differs in size from one grown a
    task at a time) the plan still holds the same tasks, partitions and changelogs, and its ids
    are the decoder's shared instances, so decoded tasks meet them by identity."""
    builder = TopologyBuilder("big")
    builder.add_source("in", "Topic-A", "Topic-B").add_processor("p", "in")
    builder.add_state_store("store", "p")
    builder.add_source("other", "Topic-C").add_processor("q", "other")
    topology = builder.build()
    counts = {"Topic-A": 3000, "Topic-B": 2999, "Topic-C": 5}
    layout = plan_tasks(topology, counts)
    tasks = create_tasks(topology, counts)
    assert list(layout.tasks.items()) == list(tasks.items())
    assert layout.stateful == stateful_tasks(topology, tasks)
    assert len(layout.stateful) == 3000
    assert list(layout.changelogs.items()) == list(changelog_partitions(topology, tasks).items())
    assert layout.tasks[TaskId(0, 2999)] == (TopicPartition("Topic-A", 2999),)
    for task, partitions in layout.tasks.items():
        assert task is shared_task_id(task.subtopology, task.partition, None)
        for tp in partitions:
            assert tp is shared_topic_partition(tp.topic, tp.partition)
