"""How far behind each client is on each stateful task, by Kafka Streams' rules.

A member reports, per task it has state for, the sum of its changelog offsets (``-2`` when it runs
the task as active right now, ``-3`` when it cannot tell). The leader knows the changelog end
offsets. The lag is what the high-availability assignor compares, so the sentinels survive into
the lag on purpose: ``-2`` means "running, perfectly caught up" and ``-3`` sorts as the smallest
lag of all (a Kafka quirk the Python side must keep to produce Kafka's assignment).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from protocol.ids import INT64_MAX, TaskId
from protocol.messages import LATEST_OFFSET, UNKNOWN_OFFSET_SUM

#: Java's ``Long.MAX_VALUE``: an end-offset sum that overflowed saturates here.
#: Java's ``Long.MAX_VALUE``, where Kafka's lag arithmetic saturates.
LONG_MAX: Final = INT64_MAX


def end_offset_sum(end_offsets: Iterable[int]) -> int:
    """Sum one task's changelog end offsets, saturating at ``Long.MAX_VALUE`` as Kafka does.

    Kafka stops adding at the first partition whose addition overflows a signed 64-bit long.
    End offsets are never negative, so that is exactly "the true sum exceeds ``LONG_MAX``".
    """
    total = 0
    for offset in end_offsets:
        if offset < 0:
            raise ValueError(f"changelog end offset {offset} is negative")
        total += offset
        if total > LONG_MAX:
            return LONG_MAX
    return total


def unknown_end_offset_sums(stateful_tasks: Iterable[TaskId]) -> dict[TaskId, int]:
    """What Kafka uses when fetching end offsets failed: every stateful task's sum is unknown."""
    return dict.fromkeys(stateful_tasks, UNKNOWN_OFFSET_SUM)


def task_lag(offset_sum: int, end_sum: int) -> int:
    """One client's lag on one task, given what it reported (0 if nothing) and the end sum.

    A reported sum beyond the end means the local state is corrupt and will be restored from
    scratch, so Kafka charges the whole end sum (and by the same rule an unknown end sum, -3,
    becomes the lag of every client that did not report a sentinel).
    """
    if offset_sum in (LATEST_OFFSET, UNKNOWN_OFFSET_SUM):
        return offset_sum
    if end_sum < offset_sum:
        return end_sum
    return end_sum - offset_sum


class TaskLags(Mapping[TaskId, int]):
    """A client's lag on every stateful task, computed on demand from sparse reports.

    Kafka keeps one entry per (client, stateful task); with 1,000 clients and 1,000 tasks that
    is a million entries although a client reports only the few tasks it holds. This view keeps
    the client's own reports plus a reference to the shared end sums, and answers any lookup with
    :func:`task_lag`. Only the stateful tasks (keys of ``end_sums``) are members.
    """

    __slots__ = ("_end_sums", "_offset_sums")

    def __init__(self, offset_sums: Mapping[TaskId, int], end_sums: Mapping[TaskId, int]) -> None:
        self._offset_sums = offset_sums
        self._end_sums = end_sums

    @property
    def end_sums(self) -> Mapping[TaskId, int]:
        return self._end_sums

    @property
    def offset_sums(self) -> Mapping[TaskId, int]:
        """The client's own reports (including tasks that are no longer stateful)."""
        return self._offset_sums

    def __getitem__(self, task: TaskId) -> int:
        end_sum = self._end_sums[task]
        return task_lag(self._offset_sums.get(task, 0), end_sum)

    def __contains__(self, task: object) -> bool:
        return task in self._end_sums

    def __iter__(self) -> Iterator[TaskId]:
        return iter(self._end_sums)

    def __len__(self) -> int:
        return len(self._end_sums)

    def __repr__(self) -> str:
        return f"TaskLags({dict(self)!r})"


def compute_task_lags(
    offset_sums: Mapping[TaskId, int], end_sums: Mapping[TaskId, int]
) -> dict[TaskId, int]:
    """Kafka's ``ClientState.computeTaskLags`` materialised: one lag per stateful task."""
    return {task: task_lag(offset_sums.get(task, 0), end) for task, end in end_sums.items()}


def is_caught_up(lag: int, acceptable_recovery_lag: int) -> bool:
    """Whether a client may take the task as active without a warm-up (KIP-441)."""
    return (
        lag == LATEST_OFFSET
        or acceptable_recovery_lag == LONG_MAX
        or 0 <= lag <= acceptable_recovery_lag
    )
