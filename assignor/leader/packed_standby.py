"""A member's standby entries from bytes packed once per plan, not from its tasks' fields.

Why: with standbys, every member's answer lists each of its standby tasks as
``[subtopology, partition, topic index, partition number]``, in task order. Written from the
tasks, that reads each task's rank and each partition's topic and number (pydantic models:
about 90 ns per attribute) and packs a list per task: at 1,000 partitions over 10 members with
one standby, 1,000 entries were a third of the answers' cost, in the rebalance after a member
leaves, where the leader must answer fastest. An entry depends only on the task (its rank and its
one partition's code in the plan) and on the topic dictionary of the answers' host maps, so the
plan keeps every task's entry packed, per topic dictionary, and a member's entries are its
tasks' bytes joined in task order behind an array header: msgpack writes an array as its header
followed by its elements, so the bytes are those ``AnswerWriter`` packs from the tasks
(``tests/assignor/leader/test_packed_standby.py`` compares them, and the leader's answers are
byte-identical).

Only a plan with a ``TaskTable`` (every task of the same number of partitions: one topic, or
copartitioned topics) of unnamed tasks takes this path; anything else returns ``None`` and the
writer reads the tasks as before. The bytes themselves are packed in ``protocol._answer_ints``,
beside the writer: the leader keeps only which task sits where.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import attrgetter, is_
from typing import Final

from assignor.leader.cache import PlannedTasks
from protocol._answer_ints import packed_array, packed_standby_entries, packed_task_ints
from protocol._limits import MAX_STANDBY_PARTITIONS
from protocol.ids import TaskId, TopicPartition

_TOPOLOGY = attrgetter("topology")
_RANK = attrgetter("_rank")  # unnamed tasks only: (subtopology << 31) | partition
#: Most topic dictionaries a plan keeps packed entries for (one per distinct host maps' topics:
#: one in a group's life, mostly).
MAX_KEPT_DICTIONARIES: Final = 4


def standby_packed(
    planned: PlannedTasks,
    standby: Sequence[TaskId],
    active: Sequence[TaskId],
    topic_index: Mapping[str, int] | None,
    named: bool,
    active_places: Sequence[int] | None = None,
) -> bytes | None:
    """The packed array of ``standby``'s entries (two or more tasks, none of ``active``), or
    ``None`` when the plan cannot tell them (the writer then reads the tasks).
    ``active_places``: the places of ``active`` in the plan (``TaskTable.places``), when the
    caller has them (a member's sorted actives): its tasks' ranks are then not read again."""
    table = planned.table
    if (
        table is None
        or topic_index is None
        or len(standby) < 2
        or len(standby) * len(table.codes) > MAX_STANDBY_PARTITIONS
    ):
        return None  # (over the limit: the writer refuses it as the codec does)
    try:
        ranks = sorted(map(_RANK, standby))  # task order
        if active_places is None:
            active_places = table.places(active)
    except AttributeError:  # a named task, or one built without its rank
        return None
    places = ranks if table.place_of is None else list(map(table.place_of.get, ranks))
    if table.place_of is None:
        if ranks[-1] >= len(table.codes[0]):
            return None
    elif None in places:
        return None  # a task of another plan
    if active_places is None:
        return None  # an active task of another plan
    # Places, one per task of the plan: both active and standby (the writer refuses it as the
    # codec does), or a task twice (never from the leader: the map holds it once), is fewer.
    seen = set(active_places)
    before = len(seen)
    seen.update(places)  # type: ignore[arg-type]  # (no None left)
    if len(seen) != before + len(places):
        return None
    entries = _entries(planned, topic_index, named)
    if entries is None:
        return None
    try:  # (``None`` for a partition of a topic the host maps do not name: the codec's)
        return packed_array(list(map(entries.__getitem__, places)))  # type: ignore[arg-type]
    except TypeError:  # (joining bytes refuses ``None``, checked there in C)
        return None


def active_packed(planned: PlannedTasks, active: Sequence[TaskId], named: bool) -> bytes | None:
    """The packed array of the ints of ``active`` (several tasks) as the writer lists them, from
    each task's bytes packed once per plan (found by the task object's ``id``: no attribute read
    per task); ``None`` when one is not an unnamed task of the plan (the writer then reads the
    tasks). Why: a hundred active tasks per member were read and packed int by int, every
    rebalance, for bytes that depend on the task alone."""
    by_id = planned.packed_active.get(named)
    if by_id is None:
        tasks = list(planned.layout.tasks)
        try:  # (none for a plan of named tasks, or of tasks built without their rank)
            ranks = [] if any(map(_TOPOLOGY, tasks)) else list(map(_RANK, tasks))
        except AttributeError:
            ranks = []
        by_id = planned.packed_active[named] = dict(
            zip(map(id, tasks[: len(ranks)]), packed_task_ints(ranks, named), strict=True)
        )
    packed = list(map(by_id.get, map(id, active)))
    if None in packed:
        return None
    return packed_array(packed, len(active) * (3 if named else 2))  # type: ignore[arg-type]


def standby_map(
    tasks: Sequence[TaskId],
    partitions: list[tuple[TopicPartition, ...]],
    planned: PlannedTasks | None = None,
) -> dict[TaskId, tuple[TopicPartition, ...]]:
    """A member's standby tasks with their partitions (``partitions[i]`` of ``tasks[i]``),
    each task's sorted: zipped in C when every task has one partition (the usual plan), or
    when ``planned`` holds every task's sorted tuple (``PlannedTasks.sorted_by_id``)."""
    if set(map(len, partitions)) == {1}:
        return dict(zip(tasks, partitions, strict=True))
    ordered = planned.sorted_by_id if planned is not None else None
    if ordered:
        found = list(map(ordered.get, map(id, tasks)))
        if not any(map(is_, found, repeat(None))):
            return dict(zip(tasks, found, strict=True))  # type: ignore[arg-type]
    return {
        task: parts if len(parts) < 2 else tuple(sorted(parts))
        for task, parts in zip(tasks, partitions, strict=True)
    }


def _entries(
    planned: PlannedTasks, topic_index: Mapping[str, int], named: bool
) -> list[bytes | None] | None:
    """Every task's packed entry by place, for this topic dictionary (made once per plan and
    dictionary); ``None`` entries for tasks whose topic the dictionary lacks."""
    key = (tuple(topic_index.items()), named)
    kept = planned.packed_standby
    found = kept.get(key)
    if found is not None:
        return found
    if len(kept) >= MAX_KEPT_DICTIONARIES:
        kept.clear()
    table = planned.table
    assert table is not None
    codes = table.codes[0]
    if table.place_of is None:
        ranks: Sequence[int] = range(len(codes))
    else:
        by_place = sorted(table.place_of.items(), key=lambda item: item[1])
        if [place for _, place in by_place] != list(range(len(codes))):
            return None
        ranks = [rank for rank, _ in by_place]
    topic_of = [topic_index.get(topic) for topic in table.topics]
    made = packed_standby_entries(ranks, table.codes, topic_of, named)
    kept[key] = made
    return made


__all__ = ["MAX_KEPT_DICTIONARIES", "standby_map", "standby_packed"]
