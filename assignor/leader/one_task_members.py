"""The busy members of one process that hold exactly one task of one partition, answered
together (most busy members of a client of many threads: 2,000 of 10,000 consumers at Kafka's
ManyThreadsPerClient point, each with one active or one standby task).

What :func:`assignor.leader.encode.encode_members` writes for each of them one at a time, with
the same bytes and the same (unbuilt) results, but sorted into the two shapes in one loop and
packed by :meth:`protocol.answers.AnswerWriter.one_task_answers` in comprehensions: per member,
the general path's checks of shapes it does not have, and the writer's checks of what its
endpoint's fields settle, cost more than writing the answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assignor.leader.model import MemberResult, store_one_task_results
from assignor.placement.threads import ThreadAssignment
from protocol.answers import AnswerWriter
from protocol.ids import TaskId, TopicPartition


def answer_one_task_members(
    member_ids: Sequence[str],
    thread: ThreadAssignment,
    fields: dict[str, object],
    writer: AnswerWriter,
    partitions_by_id: Mapping[int, tuple[TopicPartition, ...]],
    results: dict[str, MemberResult],
) -> Sequence[str]:
    """Store in ``results`` the answers of those of ``member_ids`` (busy members of
    ``thread``'s process, answered with its endpoint's ``fields``; none of them the member
    that asks for a follow-up rebalance) that hold one task of one partition, found in
    ``partitions_by_id`` (the plan's, by the task object's id), and nothing else; return the
    others, in their order, for the general path (all of them when the writer leaves these
    answers to it)."""
    active_of = thread.active.get
    standby_of = thread.standby.get
    find = partitions_by_id.get
    one_active: list[tuple[str, TaskId, tuple[TopicPartition, ...]]] = []
    one_standby: list[tuple[str, TaskId, tuple[TopicPartition, ...]]] = []
    rest: list[str] = []
    for member_id in member_ids:
        mine = active_of(member_id, ())
        standby = standby_of(member_id, ())
        if len(mine) + len(standby) == 1:
            task = mine[0] if mine else standby[0]
            parts = find(id(task))
            if parts is not None and len(parts) == 1:
                (one_active if mine else one_standby).append((member_id, task, parts))
                continue
        rest.append(member_id)
    if not one_active and not one_standby:
        return rest
    written = writer.one_task_answers(
        fields,
        [task for _, task, _ in one_active],
        [task for _, task, _ in one_standby],
        [parts[0] for _, _, parts in one_standby],
    )
    if written is None:
        return member_ids
    store_one_task_results(results, fields, one_active, written[0], standby=False)
    store_one_task_results(results, fields, one_standby, written[1], standby=True)
    return rest


__all__ = ["answer_one_task_members"]
