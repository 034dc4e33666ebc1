"""The busy answers of one rebalance kept for the next (``assignor.leader.encode``).

In the probing rounds of a high-availability group most members keep their tasks; a member
with the same task objects in the same order under the same maps gets the same answer, so the
encoder hands it the last one instead of writing it again. Kept on the leader's plan
(``PlannedTasks.answer_memo``), replaced every rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from assignor.leader.cache import PlannedTasks
from assignor.leader.model import MemberResult
from assignor.topology.tasks import TaskLayout
from protocol.codec import Codec
from protocol.ids import TaskId

if TYPE_CHECKING:
    from assignor.leader.encode import HostMaps

#: Answers of members with at most this many tasks (active and standby) are kept for the next
#: rebalance: a probing round's members hold a few each (two to four in ``prof_pa``'s replay),
#: while a key of a member of thousands (two consumers over 6,000 tasks) cost 3.8 M
#: instructions of a 106 M round in building, hashing and freeing, to be found again only in a
#: round that moves none of them.
MEMO_TASKS = 8


#: A busy member's tasks by the ids of its active and standby task objects, in its order.
MemoKey = tuple[tuple[int, ...], tuple[int, ...]]
#: Its answer, and the task objects themselves (held, so the ids in the key stay theirs).
Answers = dict[MemoKey, tuple[MemberResult, tuple[TaskId, ...], tuple[TaskId, ...]]]


@dataclass(frozen=True, slots=True)
class AnswerMemo:
    """One rebalance's busy answers and everything besides a member's tasks they depend on
    (the plan holding it fixes the layout)."""

    codec: Codec
    version: int
    commonly_supported: int
    hosts: HostMaps
    answers: Answers


def answer_memo(
    planned: PlannedTasks | None,
    layout: TaskLayout,
    codec: Codec,
    hosts: HostMaps,
    version: int,
    commonly_supported: int,
    own_only: bool,
) -> tuple[Answers, Answers, bool]:
    """The last rebalance's busy answers when this one writes under the same codec, versions
    and host maps (by value: the writer sorts their hosts and partitions), else none; a dict
    for this rebalance's, and whether they are kept (not when answers carry each endpoint's
    own entry, or there is no plan to keep them in).

    Why: in the probing rounds of a high-availability group most members keep their tasks
    (265 of 296 members in ``tests/bench/prof_pa.py``'s replay); a member with the same task
    objects in the same order under the same maps gets the same answer, so it is handed the
    last one instead of sorting its partitions and packing its tasks again."""
    if planned is None or own_only or planned.layout is not layout:
        return {}, {}, False
    kept = planned.answer_memo
    last: Answers = {}
    if kept:
        memo = cast(AnswerMemo, kept[0])
        if (
            memo.codec is codec
            and memo.version == version
            and memo.commonly_supported == commonly_supported
            and memo.hosts == hosts
        ):
            last = memo.answers
    return last, {}, True


__all__ = ["MEMO_TASKS", "AnswerMemo", "Answers", "MemoKey", "answer_memo"]
