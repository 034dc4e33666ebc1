"""Changelog end offsets at one virtual instant, computed only if someone reads them.

Before every join the adapter's listener refreshes its process's end-offset snapshot, and the
replay hands it the state model's changelog ends at that instant: a dict of every changelog
partition, built at each of a long run's join instants. Yet a leader reads the offsets again
inside ``assign()`` (the adapter's assign-time hook), and only a failed read would fall back to the
listener's snapshot, which never happens in a replay. So the snapshot keeps a copy of the task
ends (one list copy) and builds the partition dict when it is first read: same values, same order,
as if it had been built then.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

from protocol.ids import TopicPartition

#: (task index or -1 for a task the state model does not know, first partition, the others)
ChangelogPlan = Sequence[tuple[int, TopicPartition, tuple[TopicPartition, ...]]]


def split_ends(plan: ChangelogPlan, ends: Sequence[float | None]) -> dict[TopicPartition, int]:
    """Each task's changelog end split over its partitions so the sums match (the first
    partition takes the remainder), in the plan's order."""
    offsets: dict[TopicPartition, int] = {}
    for i, first, rest_of in plan:
        total = int((ends[i] if i >= 0 else None) or 0.0)
        if not rest_of:
            offsets[first] = total
            continue
        share, rest = divmod(total, len(rest_of) + 1)
        offsets[first] = share + rest
        for tp in rest_of:
            offsets[tp] = share
    return offsets


class EndOffsetsSnapshot(Mapping[TopicPartition, int]):
    """The end offsets of ``ends`` (a copy taken at the instant) over ``plan``, built on first
    read; :meth:`frozen` is the read-only dict itself (what a reader that reads them all gets)."""

    __slots__ = ("_ends", "_frozen", "_plan")

    def __init__(self, plan: ChangelogPlan, ends: Sequence[float | None]) -> None:
        self._plan = plan
        self._ends = ends
        self._frozen: Mapping[TopicPartition, int] | None = None

    def frozen(self) -> Mapping[TopicPartition, int]:
        if self._frozen is None:
            self._frozen = MappingProxyType(split_ends(self._plan, self._ends))
        return self._frozen

    def __getitem__(self, tp: TopicPartition) -> int:
        return self.frozen()[tp]

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self.frozen())

    def __len__(self) -> int:
        return len(self.frozen())


__all__ = ["ChangelogPlan", "EndOffsetsSnapshot", "split_ends"]
