"""One endpoint's partitions in a host map, with their numbers sorted per topic when known.

An assignment's host maps are written as each host's partition numbers, topic by topic and
ascending (``protocol._assignment_format``). Reading them back out of a ``frozenset`` of
``TopicPartition`` costs two attribute reads per partition, in the set's hash order, of objects
nothing else touched lately: at 6,000 partitions over 2 instances that was the leader's largest
step. The leader builds every host's set from its tasks and can know those numbers from plain
ints (``assignor.leader.cache.PlannedTasks``), so it hands the set over as a
:class:`HostPartitions`: still the same ``frozenset`` (equal, hashed, iterated and pickled as
one), carrying ``runs``, which the writer then packs without touching a partition.

``runs`` is trusted: whoever builds a ``HostPartitions`` promises that it is exactly what
:func:`topic_runs` computes from the elements (``tests/protocol/test_host_partitions.py``
compares them, and the answers' bytes with and without runs).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from itertools import compress, repeat
from operator import attrgetter, eq

from protocol.ids import TopicPartition

#: ``(topic, partition numbers ascending)`` for each topic of a set of partitions, by topic
TopicRuns = tuple[tuple[str, list[int]], ...]

_TOPIC = attrgetter("topic")
_PARTITION = attrgetter("partition")


class HostPartitions(frozenset[TopicPartition]):
    """A ``frozenset`` of partitions that also knows its :func:`topic_runs` (``runs``)."""

    __slots__ = ("runs",)
    runs: TopicRuns

    def __new__(cls, partitions: Iterable[TopicPartition], runs: TopicRuns) -> HostPartitions:
        made = super().__new__(cls, partitions)
        made.runs = runs
        return made

    def __reduce__(self) -> tuple[object, ...]:
        # a copy or an unpickled map is an ordinary set: the runs are the builder's promise
        return (frozenset, (tuple(self),))


def topic_runs(partitions: Collection[TopicPartition]) -> TopicRuns:
    """The numbers of ``partitions`` per topic, topics and numbers ascending (the host maps'
    wire order); a :class:`HostPartitions`' own ``runs`` without reading a partition."""
    if type(partitions) is HostPartitions:
        return partitions.runs
    names = list(map(_TOPIC, partitions))
    distinct = set(names)
    if len(distinct) == 1:  # one topic: plain numbers sorted, all in C
        return ((distinct.pop(), sorted(map(_PARTITION, partitions))),)
    numbers = list(map(_PARTITION, partitions))  # the same set iterated again: names' order
    return tuple(
        (topic, sorted(compress(numbers, map(eq, names, repeat(topic)))))
        for topic in sorted(distinct)
    )


__all__ = ["HostPartitions", "TopicRuns", "topic_runs"]
