"""A plan's tasks by their place in it, found from each task's rank: partitions and int codes.

Steps 6 and 7 look up, for every assigned task, its partitions and (for the host maps and a
member's partition order) its partitions' numbers. By the 6,000 tasks of 6,000 partitions over 2
instances, what those look-ups cost is not the look-up but memory: a ``dict`` keyed by the task
objects' ids touches the stored key and the value tuple of every task, and reading a
``TopicPartition``'s topic and number touches its own ``__dict__``, each an object no step touched
lately (100-400 ns apiece on a busy machine). Here a task is found by the one int it carries in
its own slot (``TaskId._rank``, Kafka's task order), which for the usual plan (subtopology 0 alone,
or several) is its place in the plan or one look-up away, and at that place two flat lists hold
what the plan knows: the partitions, and their ``TaskLayout.partition_codes``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from typing import cast

from assignor.topology.tasks import TaskLayout
from protocol.ids import TaskId, TopicPartition

_RANK = attrgetter("_rank")  # unnamed tasks only: (subtopology << 31) | partition, in C
#: Most tasks a plan keeps a partition set per task for (:meth:`TaskTable.partition_set`).
MAX_SET_TASKS = 20_000


@dataclass(frozen=True, slots=True)
class TaskTable:
    """One plan's tasks in plan order, every task of the same number of partitions (one per
    source topic of its subtopology, the usual plan) kept as columns: ``partitions[j][i]`` and
    ``codes[j][i]`` are the ``j``-th partition of the ``i``-th task and its code."""

    partitions: list[list[TopicPartition]]
    codes: list[list[int]]
    #: rank -> place; ``None`` when the ranks are the places (the tasks are ``0_0 .. 0_(n-1)``)
    place_of: Mapping[int, int] | None
    topics: tuple[str, ...]
    #: each task's partitions as a set, by place (:meth:`keep_sets`)
    sets: list[frozenset[TopicPartition]] = field(default_factory=list, repr=False)
    #: whether every task's one code is its place (one column, of the first topic, partition
    #: ``i`` at place ``i``: one source topic, the usual plan): then places are their codes
    codes_are_places: bool = field(default=False, repr=False)

    @staticmethod
    def of(layout: TaskLayout) -> TaskTable | None:
        """The table of a plan whose tasks are of one width (``TaskLayout.columns``, made by
        ``plan_tasks`` from its own lists); ``None`` otherwise (callers then look tasks up by
        object)."""
        columns = layout.columns
        if columns is None or not columns.ranks:
            return None
        ranks = columns.ranks
        places = range(len(ranks))
        place_of = None if ranks == list(places) else dict(zip(ranks, places, strict=True))
        codes = columns.codes
        plain = len(codes) == 1 and codes[0] == list(places)
        return TaskTable(columns.partitions, codes, place_of, columns.topics, [], plain)

    def places(self, tasks: Iterable[TaskId]) -> list[int] | None:
        """Each task's place, in the order given; ``None`` if one is not a task of this plan."""
        try:
            ranks = list(map(_RANK, tasks))
        except AttributeError:
            return None
        if self.place_of is None:
            if ranks and max(ranks) >= len(self.codes[0]):
                return None
            return ranks
        found = list(map(self.place_of.get, ranks))
        return None if None in found else cast(list[int], found)

    def partitions_of(self, places: list[int]) -> Iterable[TopicPartition]:
        """The partitions of the tasks at ``places``, column after column."""
        return chain.from_iterable(map(column.__getitem__, places) for column in self.partitions)

    def keep_sets(self) -> None:
        """Make each task's partition set, once per plan (plans of at most ``MAX_SET_TASKS``
        tasks, about 200 bytes a task), for :meth:`partition_set`. The leader asks for them
        when its host maps read every task twice (actives and standbys), so making them
        costs no more than hashing every partition once more, and every later rebalance of the
        plan reads them as they are; a rebalance without standbys leaves them unmade."""
        if not self.sets and len(self.codes[0]) <= MAX_SET_TASKS:
            self.sets.extend(map(frozenset, zip(*self.partitions, strict=True)))

    def partition_set(self, places: list[int]) -> Iterable[TopicPartition]:
        """The partitions of the tasks at ``places``, for a set to be made of: with the tasks'
        sets kept (:meth:`keep_sets`), their union, which takes the hashes they keep, in C
        (a set of :meth:`partitions_of` hashes every partition again: ``TopicPartition.__hash__``
        is a Python method, 4,000 calls per rebalance for the host maps of 1,000 tasks over two
        copartitioned topics with a standby); otherwise :meth:`partitions_of`."""
        sets = self.sets
        if not sets:
            return self.partitions_of(places)
        return set().union(*map(sets.__getitem__, places))

    def codes_of(self, places: list[int]) -> list[int]:
        """Their codes, in the same order (each column's ascending when ``places`` is)."""
        return list(chain.from_iterable(map(column.__getitem__, places) for column in self.codes))

    def columns(self, places: list[int]) -> tuple[list[list[int]], list[list[TopicPartition]]]:
        """The codes and the partitions of the tasks at ``places``, column by column (the
        codes ``places`` itself when they are the places: not to be changed)."""
        return (
            [places] if self.codes_are_places
            else [list(map(column.__getitem__, places)) for column in self.codes],
            [list(map(column.__getitem__, places)) for column in self.partitions],
        )


__all__ = ["MAX_SET_TASKS", "TaskTable"]
