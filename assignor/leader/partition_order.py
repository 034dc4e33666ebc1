"""A member's partitions in aiokafka's order (by topic, then partition), with the task of each:
the encode step's sort, read in C from the plan's int codes or from the partitions themselves.

Split from :mod:`assignor.leader.encode` (which calls it per busy member and for the host maps)
to keep each module readable.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import chain, islice, repeat
from operator import attrgetter, itemgetter, lt, sub

from assignor.leader.model import ByTopic
from protocol.host_partitions import TopicRuns
from protocol.ids import TaskId, TopicPartition

_TOPIC = attrgetter("topic")
_PARTITION = attrgetter("partition")
_FIRST = itemgetter(0)


def runs(codes: list[int], topics: tuple[str, ...]) -> TopicRuns:
    """Sorted ``TaskTable`` codes as (topic, numbers ascending) per topic: one slice per topic
    (bounded by the plan's topics), the numbers taken in C."""
    made: list[tuple[str, list[int]]] = []
    start, end = 0, len(codes)
    while start < end:
        rank = codes[start] >> 32
        base = rank << 32
        stop = bisect_left(codes, base + (1 << 32), start)
        numbers = codes[start:stop] if base == 0 else list(map(sub, islice(codes, start, stop),
                                                               repeat(base)))
        made.append((topics[rank], numbers))
        start = stop
    return tuple(made)


def in_partition_order(
    mine: Sequence[TaskId], parts_of: list[tuple[TopicPartition, ...]]
) -> tuple[tuple[TopicPartition, ...], tuple[TaskId, ...], ByTopic | None]:
    """A member's partitions sorted by (topic, partition), the task of each, and, when they
    are of one topic, aiokafka's ``[(topic, [partition, ...])]`` of them (the numbers read
    here once, so the adapter does not read every partition again: ``MemberResult.by_topic``).

    A client's tasks arrive sorted, so tasks of one partition of one topic mostly come with
    their partitions already ascending (6,000 tasks of the one remaining consumer at 6,000
    partitions over 2 instances): checked in C, they are kept as they are. Otherwise, still of
    one topic, the positions are sorted by partition number alone (ints, not tuples). Strictly
    ascending numbers mean no ties, so the general sort below would return the very same order;
    anything else (ties, several topics or partitions per task) takes the general sort.
    (With the plan's codes, :func:`by_codes` gives the same order from ints, before this.)
    """
    flat = list(chain.from_iterable(parts_of))
    if len(flat) == len(mine) and len(set(map(_TOPIC, flat))) == 1:
        numbers = list(map(_PARTITION, flat))
        topic = flat[0].topic
        if all(map(lt, numbers, islice(numbers, 1, None))):
            return tuple(flat), tuple(mine), ((topic, numbers),)
        order = sorted(range(len(numbers)), key=numbers.__getitem__)
        ranked = list(map(numbers.__getitem__, order))
        if all(map(lt, ranked, islice(ranked, 1, None))):
            return (
                tuple(map(flat.__getitem__, order)),
                tuple(map(mine.__getitem__, order)),
                ((topic, ranked),),
            )
    columns = _by_columns(mine, parts_of)
    if columns is not None:
        return columns
    # Sorted by (topic, partition) as plain values, compared in C: the same order as sorting
    # the partitions themselves, without a Python-level comparison each.
    rows = sorted(
        [
            (tp.topic, tp.partition, tp, task)
            for task, parts in zip(mine, parts_of, strict=True)
            for tp in parts
        ]
    )
    return tuple([row[2] for row in rows]), tuple([row[3] for row in rows]), None


def _by_columns(
    mine: Sequence[TaskId], parts_of: list[tuple[TopicPartition, ...]]
) -> tuple[tuple[TopicPartition, ...], tuple[TaskId, ...], ByTopic] | None:
    """:func:`in_partition_order` for tasks of copartitioned topics: every task holds ``k``
    partitions, its ``j``-th of one topic for all tasks, numbers strictly ascending down each
    such column, the ``k`` topics distinct. Then the general sort's order is the columns one
    after the other by topic name (no ties: each (topic, partition) appears once), each
    partition's task the column's row, and aiokafka's listing each column's numbers, all read
    in C (12,000 partitions of 6,000 tasks over two topics: a tuple each, sorted, before).
    ``None`` for any other shape."""
    width = len(parts_of[0])
    if width < 2 or set(map(len, parts_of)) != {width}:
        return None
    picked: list[tuple[str, tuple[TopicPartition, ...], list[int]]] = []
    for column in zip(*parts_of, strict=True):
        topics = set(map(_TOPIC, column))
        numbers = list(map(_PARTITION, column))
        if len(topics) != 1 or not all(map(lt, numbers, islice(numbers, 1, None))):
            return None
        picked.append((topics.pop(), column, numbers))
    if len({topic for topic, _, _ in picked}) != width:
        return None
    picked.sort(key=_FIRST)
    return (
        tuple(chain.from_iterable(column for _, column, _ in picked)),
        tuple(mine) * width,
        tuple((topic, numbers) for topic, _, numbers in picked),
    )


def by_codes(
    mine: Sequence[TaskId],
    columns: tuple[list[list[int]], list[list[TopicPartition]]] | None,
    topics: tuple[str, ...],
) -> tuple[tuple[TopicPartition, ...], tuple[TaskId, ...], ByTopic] | None:
    """:func:`in_partition_order` from the plan's codes (``TaskTable.columns``: the codes and
    the partitions of each task's ``j``-th partition) instead of the partitions: the codes sort
    as (topic, partition) do, so the general sort's order is the codes' order, read in C (the
    codes already ascending, the usual case, are kept as they are; columns of copartitioned
    topics are runs, merged), each partition's task its row, and aiokafka's listing the sorted
    codes cut per topic. ``None`` when a partition appears twice (never in a plan): the caller
    then reads the partitions."""
    if columns is None:
        return None
    code_columns, part_columns = columns
    # (one column: read as it is, never changed here)
    codes = code_columns[0] if len(code_columns) == 1 else list(chain.from_iterable(code_columns))
    if not codes:
        return None
    width = len(code_columns)
    if all(map(lt, codes, islice(codes, 1, None))):
        return tuple(chain.from_iterable(part_columns)), tuple(mine) * width, runs(codes, topics)
    order = sorted(range(len(codes)), key=codes.__getitem__)
    ranked = list(map(codes.__getitem__, order))
    if not all(map(lt, ranked, islice(ranked, 1, None))):
        return None
    parts = list(chain.from_iterable(part_columns))
    rows = list(mine) * width
    return (
        tuple(map(parts.__getitem__, order)),
        tuple(map(rows.__getitem__, order)),
        runs(ranked, topics),
    )


__all__ = ["by_codes", "in_partition_order", "runs"]
