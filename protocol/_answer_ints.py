"""The answer writer's per-task ints, read in C from each unnamed task's rank.

Split from :mod:`protocol.answers` (which uses them for every member's tasks) to keep each
module readable; what the writer cannot write itself it signals with :class:`Fallback`, and the
codec then writes (or refuses) the answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, repeat
from operator import and_, attrgetter, itemgetter, rshift

import msgpack

from protocol._limits import MAX_STANDBY_PARTITIONS
from protocol.ids import TaskId, TopicPartition

_TOPOLOGY = attrgetter("topology")
_SUBTOPOLOGY_PARTITION = attrgetter("subtopology", "partition")
_SUBTOPOLOGY = attrgetter("subtopology")
_PARTITION = attrgetter("partition")
_TOPIC = attrgetter("topic")
_RANK = attrgetter("_rank")  # set on unnamed tasks only (protocol.ids)
_PARTITION_BITS = (1 << 31) - 1
_CODE_NUMBER_BITS = (1 << 32) - 1  # a plan code is topic rank << 32 | partition
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)


class Fallback(Exception):
    """This answer is not the common case: the codec writes it (or refuses it)."""


def among(task: TaskId, tasks: tuple[TaskId, ...]) -> bool:
    """``task in tasks`` for an unnamed task: by the ints the tasks keep (``TaskId._rank``,
    equal exactly for equal unnamed tasks), compared in C, where ``in`` calls ``TaskId.__eq__``
    (a Python method) on each task that is not the same object (a member's warm-up standby
    against its hundred actives). A task without a rank is compared as ``in`` does."""
    try:
        rank = task._rank
        return rank in list(map(_RANK, tasks))
    except AttributeError:
        return task in tasks


def unnamed_task_ints(active: tuple[TaskId, ...], named: bool) -> list[int]:
    """``[s0, p0, s1, p1, ...]`` (``[0, s0, p0, ...]`` when ``named``) of unnamed tasks, from
    each task's rank (``TaskId._rank``: ``subtopology << 31 | partition``, read from the task's
    own slot) rather than two fields of its ``__dict__``: one object touched per task, not two
    (6,000 tasks of one member at 6,000 partitions over 2 instances). A task without a rank
    (a named one, or one built without it) takes the fields' path."""
    try:
        ranks = list(map(_RANK, active))
    except AttributeError:
        if any(map(_TOPOLOGY, active)):
            raise Fallback from None
        ints: Iterable[tuple[int, ...]] = map(_SUBTOPOLOGY_PARTITION, active)
        if named:  # no named topology: 0 before each task
            ints = zip(repeat(0), map(_SUBTOPOLOGY, active), map(_PARTITION, active))
        return list(chain.from_iterable(ints))
    subtopologies = map(rshift, ranks, repeat(31))
    partitions = map(and_, ranks, repeat(_PARTITION_BITS))
    if named:
        return list(chain.from_iterable(zip(repeat(0), subtopologies, partitions, strict=False)))
    return list(chain.from_iterable(zip(subtopologies, partitions, strict=True)))


def ranked_standby_entries(
    standby: Mapping[TaskId, tuple[TopicPartition, ...]],
    active: tuple[TaskId, ...],
    index: dict[str, int],
    named: bool,
) -> list[tuple[int, ...]] | None:
    """``_standby_entries`` for unnamed tasks of one partition each (the
    usual standbys), from each task's rank (``TaskId._rank``: ``subtopology << 31 |
    partition``, equal for equal unnamed tasks, ordered as Kafka's task order): the checks
    (the one against the active tasks by ranks, without a ``TaskId.__hash__`` call per
    task), the order and the entries in C, each entry a tuple (msgpack writes a tuple as it
    writes a list). A leader's members mostly get their entries packed from the plan instead
    (``assignor.leader.packed_standby``); this is the writer's own path for the rest.
    ``None`` for any other shape (the general path decides, checks included); the refusals
    are the general path's, raised here."""
    partitions = standby.values()
    try:
        ranks = list(map(_RANK, standby))
        active_ranks = list(map(_RANK, active))
    except AttributeError:  # a named task (or one built without its rank)
        return None
    if set(map(len, partitions)) != {1}:
        return None
    if not set(ranks).isdisjoint(active_ranks):
        raise Fallback  # both active and standby: the codec refuses
    tps = list(map(_FIRST, partitions))
    if not index.keys() >= set(map(_TOPIC, tps)) or len(tps) > MAX_STANDBY_PARTITIONS:
        raise Fallback
    rows = sorted(zip(ranks, tps, strict=True), key=_FIRST)  # distinct ranks: one key each
    ordered = list(map(_FIRST, rows))
    parts = list(map(_SECOND, rows))
    columns = (
        map(rshift, ordered, repeat(31)),
        map(and_, ordered, repeat(_PARTITION_BITS)),
        map(index.__getitem__, map(_TOPIC, parts)),
        map(_PARTITION, parts),
    )
    if named:  # no named topology: 0 before each task
        return list(zip(repeat(0), *columns, strict=False))
    return list(zip(*columns, strict=True))




def packed_standby_entries(
    ranks: Sequence[int],
    codes: Sequence[Sequence[int]],
    topic_of: Sequence[int | None],
    named: bool,
) -> list[bytes | None]:
    """Every task's standby entry as the writer packs it (``[subtopology, partition]`` then
    ``topic index, partition number`` per partition, ``0`` first when ``named``), from ints a
    leader keeps per plan: ``ranks[i]`` the task's rank (``subtopology << 31 | partition``),
    ``codes[j][i]`` its partition of column ``j`` (``topic rank << 32 | number``) and
    ``topic_of`` the answers' index of each topic rank. A task whose topic the index lacks is
    ``None`` (the codec then writes or refuses the answer). Packed here, beside the writer,
    so that only ``protocol`` knows the bytes."""
    pack = msgpack.Packer(use_bin_type=True).pack
    if len(codes) == 1:  # one partition per task: the columns in C
        (column,) = codes
        columns = (
            map(rshift, ranks, repeat(31)),
            map(and_, ranks, repeat(_PARTITION_BITS)),
            map(topic_of.__getitem__, map(rshift, column, repeat(32))),
            map(and_, column, repeat(_CODE_NUMBER_BITS)),
        )
        rows = zip(repeat(0), *columns, strict=False) if named else zip(*columns, strict=True)
        return [None if None in row else pack(row) for row in rows]
    made: list[bytes | None] = []  # copartitioned topics: (topic, partition) order, as codes
    for rank, task_codes in zip(ranks, zip(*codes, strict=True), strict=True):
        row: list[int | None] = [0] if named else []
        row += [rank >> 31, rank & _PARTITION_BITS]
        for code in sorted(task_codes):
            row += [topic_of[code >> 32], code & _CODE_NUMBER_BITS]
        made.append(None if None in row else pack(row))
    return made


def packed_task_ints(ranks: Iterable[int], named: bool) -> list[bytes]:
    """Each unnamed task's ints as the writer lists an active task (``[subtopology,
    partition]``, ``0`` first when ``named``), packed one after the other without an array
    header: a member's active tasks are their bytes joined behind the header of an array of
    all their ints (:func:`packed_array` of ``count`` ints)."""
    pack = msgpack.Packer(use_bin_type=True).pack
    head = pack(0) if named else b""
    return [head + pack(rank >> 31) + pack(rank & _PARTITION_BITS) for rank in ranks]


def packed_array(entries: Sequence[bytes], count: int | None = None) -> bytes:
    """Packed elements joined behind their array header: the bytes msgpack writes for the
    array of them (of ``count`` elements when each entry packs several)."""
    header: bytes = msgpack.Packer().pack_array_header(len(entries) if count is None else count)
    return header + b"".join(entries)


def standby_entries(
    standby: Mapping[TaskId, tuple[TopicPartition, ...]],
    active: tuple[TaskId, ...],
    index: dict[str, int],
    named: bool,
) -> Sequence[Sequence[int]]:
    """A member's standby entries (at least one task), ``[task ints..., topic index,
    partition, ...]`` per task in task order (``named``: a 0 before each task's ints, as
    from ``NAMED_TOPOLOGY_VERSION``); :class:`Fallback` for what the codec writes or refuses."""
    if len(standby) == 1:  # one standby task, the common case at many consumers
        return _one_standby(standby, active, index, named)
    return _standby_entries(standby, active, index, named)


def _one_standby(
    standby: Mapping[TaskId, tuple[TopicPartition, ...]],
    active: tuple[TaskId, ...],
    index: dict[str, int],
    named: bool,
) -> Sequence[Sequence[int]]:
    """:func:`_standby_entries` for a single standby task, with the same checks: at 10,000
    consumers a thousand members carry exactly one, and the collection-wide checks cost
    more than the entry."""
    ((task, partitions),) = standby.items()
    if len(partitions) != 1 or task.topology is not None or among(task, active):
        return _standby_entries(standby, active, index, named)
    (tp,) = partitions
    topic = index.get(tp.topic)
    if topic is None:
        raise Fallback  # a topic only this member's standbys name is the codec's
    if named:
        return [[0, task.subtopology, task.partition, topic, tp.partition]]
    return [[task.subtopology, task.partition, topic, tp.partition]]


def _standby_entries(
    standby: Mapping[TaskId, tuple[TopicPartition, ...]],
    active: tuple[TaskId, ...],
    index: dict[str, int],
    named: bool,
) -> Sequence[Sequence[int]]:
    """:func:`standby_entries` of any number of tasks; the checks and the order computed
    over whole collections in C."""
    ranked = ranked_standby_entries(standby, active, index, named)
    if ranked is not None:
        return ranked
    partitions = standby.values()
    if (
        not standby.keys().isdisjoint(active)  # both active and standby: the codec refuses
        or any(map(_TOPOLOGY, standby))  # a named topology: the codec's
        or not index.keys() >= set(map(_TOPIC, chain.from_iterable(partitions)))
        or sum(map(len, partitions)) > MAX_STANDBY_PARTITIONS
    ):
        raise Fallback  # (a topic only this member's standbys name is the codec's too)
    # Unnamed tasks in task order: by (subtopology, partition), compared in C; the pairs are
    # unique, so the partitions are never compared.
    rows = sorted(
        zip(map(_SUBTOPOLOGY, standby), map(_PARTITION, standby), partitions, strict=True)
    )
    if set(map(len, partitions)) == {1}:  # one partition per task, the common case
        if named:
            return [[0, s, p, index[tp.topic], tp.partition] for s, p, (tp,) in rows]
        return [[s, p, index[tp.topic], tp.partition] for s, p, (tp,) in rows]
    entries: list[list[int]] = []
    append = entries.append
    for subtopology, partition, tps in rows:
        entry = [0, subtopology, partition] if named else [subtopology, partition]
        for tp in tps:
            entry.append(index[tp.topic])
            entry.append(tp.partition)
        append(entry)
    return entries


__all__ = [
    "Fallback",
    "among",
    "packed_array",
    "packed_standby_entries",
    "packed_task_ints",
    "ranked_standby_entries",
    "standby_entries",
    "unnamed_task_ints",
]
