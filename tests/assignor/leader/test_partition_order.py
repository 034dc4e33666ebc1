"""A busy member's partitions in (topic, partition) order with the task of each: the path that
keeps already ascending partitions as they are must give exactly the general sort's order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assignor.leader.encode import _by_codes, _in_partition_order
from protocol.ids import TaskId, TopicPartition

_PARTS = st.lists(
    st.lists(
        st.builds(TopicPartition, st.sampled_from(["a", "b"]), st.integers(0, 40)),
        min_size=1,
        max_size=3,
    ),
    min_size=2,
    max_size=30,
)


def _general(
    tasks: list[TaskId], parts_of: list[tuple[TopicPartition, ...]]
) -> tuple[tuple[TopicPartition, ...], tuple[TaskId, ...]]:
    rows = sorted(
        (tp.topic, tp.partition, tp, task)
        for task, parts in zip(tasks, parts_of, strict=True)
        for tp in parts
    )
    return tuple(row[2] for row in rows), tuple(row[3] for row in rows)


@given(
    _PARTS,
    st.sampled_from(
        ["any", "one topic", "ascending", "copartitioned", "copartitioned, b first", "columns"]
    ),
)
def test_same_order_as_the_general_sort(parts: list[list[TopicPartition]], shape: str) -> None:
    parts_of = [tuple(p) for p in parts]
    if shape == "one topic":  # one partition per task, in any order, ties possible
        parts_of = [(TopicPartition("a", p[0].partition),) for p in parts]
    elif shape == "ascending":  # the common shape: one topic, one partition per task, in order
        parts_of = [(TopicPartition("a", n),) for n in sorted({p[0].partition for p in parts})]
    elif shape.startswith("copartitioned"):  # two topics, partition n of each per task
        first, second = ("b", "a") if "b first" in shape else ("a", "b")
        numbers = sorted({p[0].partition for p in parts})
        parts_of = [(TopicPartition(first, n), TopicPartition(second, n)) for n in numbers]
    elif shape == "columns":  # two partitions per task, each column's topic and order drawn
        parts_of = [(p[0], p[-1]) for p in parts]
    tasks = [TaskId(0, i) for i in range(len(parts_of))]
    partitions, ordered, by_topic = _in_partition_order(tasks, parts_of)
    assert (partitions, ordered) == _general(tasks, parts_of)
    if by_topic is not None:  # aiokafka's listing of the same partitions, when given
        assert [(t, n) for t, n in by_topic] == _aiokafka_listing(partitions)
    # with the plan's codes of the same partitions (shapes recognised from ints): the same
    assert _with_codes(tasks, parts_of) == (partitions, ordered, by_topic)


def _with_codes(
    tasks: list[TaskId], parts_of: list[tuple[TopicPartition, ...]]
) -> tuple[tuple[TopicPartition, ...], tuple[TaskId, ...], object]:
    """The order given the codes a plan would hold for these partitions (``TaskTable.columns``:
    tasks of one width), ``_by_codes``' when it gives one, else the partitions' own."""
    topics = tuple(sorted({tp.topic for tps in parts_of for tp in tps}))
    codes = [tuple(topics.index(tp.topic) << 32 | tp.partition for tp in tps) for tps in parts_of]
    columns = None
    if len(set(map(len, parts_of))) == 1:
        columns = (
            [list(c) for c in zip(*codes, strict=True)],
            [list(c) for c in zip(*parts_of, strict=True)],
        )
    kept = _by_codes(tasks, columns, topics)
    if kept is None:  # only a partition named twice has no order from the codes
        assert columns is None or len({tp for tps in parts_of for tp in tps}) < sum(
            map(len, parts_of)
        )
        return _in_partition_order(tasks, parts_of)
    assert [(t, n) for t, n in kept[2]] == _aiokafka_listing(kept[0])
    return kept[0], kept[1], _in_partition_order(tasks, parts_of)[2]


def _aiokafka_listing(partitions: tuple[TopicPartition, ...]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [(topic, sorted(numbers)) for topic, numbers in sorted(grouped.items())]


def test_ascending_partitions_keep_their_tasks() -> None:
    parts_of = [(TopicPartition("a", n),) for n in (1, 4, 9)]
    tasks = [TaskId(0, 7), TaskId(0, 2), TaskId(0, 5)]
    assert _in_partition_order(tasks, parts_of) == (
        tuple(p[0] for p in parts_of),
        tuple(tasks),
        (("a", [1, 4, 9]),),
    )


def test_partitions_of_one_topic_out_of_order_are_listed_sorted() -> None:
    parts_of = [(TopicPartition("a", n),) for n in (9, 1, 4)]
    tasks = [TaskId(0, 7), TaskId(0, 2), TaskId(0, 5)]
    partitions, ordered, by_topic = _in_partition_order(tasks, parts_of)
    assert [tp.partition for tp in partitions] == [1, 4, 9]
    assert ordered == (TaskId(0, 2), TaskId(0, 5), TaskId(0, 7))
    assert by_topic == (("a", [1, 4, 9]),)
    # several topics: no listing (the adapter groups them itself)
    mixed = [(TopicPartition("b", 0),), (TopicPartition("a", 3),)]
    assert _in_partition_order(tasks[:2], mixed)[2] is None


def test_two_columns_of_one_topic_interleave_as_the_general_sort_does() -> None:
    """Each task's two partitions of the same topic (2n and 2n + 1): not copartitioned topics,
    so the partitions interleave across tasks, as the general sort orders them."""
    parts_of = [(TopicPartition("a", 2 * n), TopicPartition("a", 2 * n + 1)) for n in range(3)]
    tasks = [TaskId(0, n) for n in range(3)]
    partitions, ordered, _ = _in_partition_order(tasks, parts_of)
    assert (partitions, ordered) == _general(tasks, parts_of)
    assert [tp.partition for tp in partitions] == [0, 1, 2, 3, 4, 5]
    assert _with_codes(tasks, parts_of)[:2] == (partitions, ordered)


def test_codes_of_copartitioned_topics_give_the_columns_by_topic() -> None:
    parts_of = [(TopicPartition("b", n), TopicPartition("a", n)) for n in (0, 3, 5)]
    tasks = [TaskId(0, n) for n in (0, 3, 5)]
    assert _with_codes(tasks, parts_of) == _in_partition_order(tasks, parts_of)
    assert _with_codes(tasks, parts_of)[2] == (("a", [0, 3, 5]), ("b", [0, 3, 5]))
