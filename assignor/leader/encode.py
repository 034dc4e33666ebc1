"""Steps 6 and 7 of the pipeline: which endpoint serves which partitions, and one encoded
``AssignmentInfo`` per member at the version every member reads."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import partial
from itertools import chain, compress, filterfalse, repeat
from typing import cast

from assignor.leader.answer_memo import MEMO_TASKS, AnswerMemo, MemoKey, answer_memo
from assignor.leader.cache import PlannedTasks
from assignor.leader.decode import member_groups
from assignor.leader.model import (
    ByTopic,
    DecodedGroup,
    MemberResult,
    member_result,
    unbuilt_info_result,
)
from assignor.leader.one_task_members import answer_one_task_members
from assignor.leader.packed_standby import active_packed, standby_map, standby_packed
from assignor.leader.partition_order import by_codes as _by_codes
from assignor.leader.partition_order import in_partition_order as _in_partition_order
from assignor.leader.partition_order import runs as _runs
from assignor.leader.task_table import TaskTable
from assignor.placement.client_state import ClientState
from assignor.placement.threads import ThreadAssignment
from assignor.topology.tasks import TaskLayout
from protocol._limits import KAFKA_GROUP_RECORD_BYTES, MAX_HOST_MAP_PARTITIONS, MAX_HOSTS
from protocol.answers import AnswerWriter
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.host_partitions import HostPartitions
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition, trusted_model
from protocol.messages import (
    HOST_SCOPE_VERSION,
    NAMED_TOPOLOGY_VERSION,
    NO_FOLLOWUP_REBALANCE,
    AssignmentInfo,
    SubscriptionInfo,
)

PartitionsByHost = dict[HostInfo, frozenset[TopicPartition]]
HostMaps = tuple[PartitionsByHost, PartitionsByHost]

#: Most bytes the copies of the group's host maps may take in one rebalance's assignments
#: together. The broker keeps every member's subscription and assignment in one
#: ``__consumer_offsets`` record of at most ``message.max.bytes`` (1,048,588 by default) and
#: fails the SyncGroup with UNKNOWN_SERVER_ERROR beyond it (measured in
#: ``tests/integration/test_group_record_limit.py``); half of it leaves room for the
#: subscriptions, member ids and task lists. Beyond it (version 4 on), each member receives only
#: its own endpoint's entry, so the maps cost once per group instead of once per member.
GROUP_HOST_MAPS_BUDGET_BYTES = KAFKA_GROUP_RECORD_BYTES // 2


def partitions_of(
    tasks: Collection[TaskId],
    layout: TaskLayout,
    by_id: Mapping[int, tuple[TopicPartition, ...]],
) -> list[tuple[TopicPartition, ...]]:
    """Each task's partitions, in the order of ``tasks``: found by object ``id`` in ``by_id``
    (``PlannedTasks.partitions_by_id``, no Python-level hash per task), or, if any task is not
    one of the layout's objects, by value."""
    if by_id:
        found = list(map(by_id.get, map(id, tasks)))
        if None not in found:
            return cast(list[tuple[TopicPartition, ...]], found)
    return list(map(layout.tasks.__getitem__, tasks))


def host_maps(
    clients: Mapping[ProcessId, ClientState],
    layout: TaskLayout,
    by_id: Mapping[int, tuple[TopicPartition, ...]] | None = None,
    planned: PlannedTasks | None = None,
) -> HostMaps:
    """Source partitions of each endpoint's active and standby tasks (clients with an endpoint);
    ``by_id`` as in :func:`partitions_of`. With ``planned`` (the layout's), each set is a
    :class:`~protocol.host_partitions.HostPartitions` whose numbers per topic come from the
    plan's ints, so the writer packs it without reading its partitions again."""
    active: dict[HostInfo, frozenset[TopicPartition]] = {}
    standby: dict[HostInfo, frozenset[TopicPartition]] = {}
    known = planned.partitions_by_id if planned is not None else by_id or {}
    table = planned.table if planned is not None else None
    if table is not None and any(len(c.standby) > _FEW_TASKS for c in clients.values()):
        table.keep_sets()  # (the sets serve hosts of more than a few tasks: ``_host_set``)
    for client in clients.values():
        if client.host_info is None:
            continue
        active[client.host_info] = _host_set(client.active, layout, known, table)
        standby[client.host_info] = _host_set(client.standby, layout, known, table)
    return active, standby


#: Up to this many tasks, a host's set and a member's partition order are read from the tasks'
#: partitions directly: the plan's codes pay only past a few (at 1,000 members of one task each
#: they took the host maps from 2.5 to 10.7 ms and the answers from 31 to 47 ms).
_FEW_TASKS = 4


def _host_set(
    tasks: Collection[TaskId],
    layout: TaskLayout,
    known: Mapping[int, tuple[TopicPartition, ...]],
    table: TaskTable | None,
) -> frozenset[TopicPartition]:
    """The partitions of ``tasks`` (chained in C: no Python frame per task or partition); with
    the plan's ``table``, carrying their numbers per topic (from its codes, sorted as ints),
    unless a partition repeats (a plan's tasks never share one)."""
    places = table.places(tasks) if table is not None and len(tasks) > _FEW_TASKS else None
    if table is None or places is None:
        return frozenset(chain.from_iterable(partitions_of(tasks, layout, known)))
    places.sort()  # ints; then the partitions are read in the plan's (memory) order
    codes = places
    if not table.codes_are_places:  # (one source topic: the sorted places are the codes)
        codes = table.codes_of(places)
        codes.sort()  # ascending columns: merged
    made = HostPartitions(table.partition_set(places), _runs(codes, table.topics))
    return made if len(made) == len(codes) else frozenset(made)


def encode_members(
    decoded: DecodedGroup,
    threads: Mapping[ProcessId, ThreadAssignment],
    layout: TaskLayout,
    hosts: HostMaps,
    codec: Codec,
    *,
    used_version: int,
    commonly_supported: int,
    followup_consumer: str | None,
    followup_at_ms: int,
    by_id: Mapping[int, tuple[TopicPartition, ...]] | None = None,
    planned: PlannedTasks | None = None,
) -> dict[str, MemberResult]:
    """One ``AssignmentInfo`` per member, its active tasks aligned with its sorted partitions.

    From version 4 on, when every member carrying the whole group's host maps would exceed
    ``GROUP_HOST_MAPS_BUDGET_BYTES``, each member carries only its own endpoint's entry.
    """
    own_only = used_version >= HOST_SCOPE_VERSION and _over_budget(
        hosts, codec, used_version, commonly_supported, len(decoded.process_of)
    )
    writer = AnswerWriter(codec, used_version)
    # One maps object per endpoint: the writer packs the shared parts once per object.
    own_maps: dict[HostInfo | None, HostMaps] = {}
    # A member without tasks gets the same answer as every other such member with the same
    # maps (most of 10,000 consumers over 1,000 tasks): built once per maps object, shared.
    idle: dict[int, MemberResult] = {}
    tasks = layout.tasks
    known = planned.partitions_by_id if planned is not None else by_id or {}
    table = planned.table if planned is not None else None

    def in_partition_order(
        mine: Sequence[TaskId], places: list[int] | None
    ) -> tuple[tuple[TopicPartition, ...], tuple[TaskId, ...], ByTopic | None]:
        """:func:`_in_partition_order`, from the plan's codes alone when they tell (``places``
        those of ``mine`` in the plan, or ``None``)."""
        if table is not None and places is not None:
            ordered = _by_codes(mine, table.columns(places), table.topics)
            if ordered is not None:
                return ordered
        return _in_partition_order(mine, partitions_of(mine, layout, known))

    results: dict[str, MemberResult] = {}
    # Members with a task (or the follow-up); every other member gets a shared idle answer.
    busy: set[str] = set()
    for of_process in threads.values():
        for by_member in (of_process.active, of_process.standby):
            # (those whose tasks are not empty, picked in C: 20,000 entries at 10,000 members)
            busy.update(compress(by_member, by_member.values()))
    if followup_consumer is not None:
        busy.add(followup_consumer)

    def maps_of(info: SubscriptionInfo) -> HostMaps:
        """The maps the members of one subscription object receive."""
        if not own_only:
            return hosts
        endpoint = info.user_endpoint
        return own_maps.get(endpoint) or own_maps.setdefault(endpoint, _own_entry(hosts, endpoint))

    def idle_answer(member_hosts: HostMaps, fields: dict[str, object]) -> MemberResult:
        answer = idle.get(id(member_hosts))
        if answer is None:  # (its model built without pydantic's work: each field is checked)
            info = trusted_model(AssignmentInfo, fields.copy())
            answer = idle[id(member_hosts)] = MemberResult((), info, writer.encode(info))
        return answer

    followup_ms = followup_at_ms
    find = known.get
    unbuilt = unbuilt_info_result
    one_task = writer.one_task_of
    version = writer.version
    named = version >= NAMED_TOPOLOGY_VERSION  # (the writer's task ints begin with 0)
    encode = writer.encode
    encode_packed = writer.encode_packed
    topic_index_of = writer.topic_index_of
    # Group by group (members that sent the same subscription object): the idle members of a
    # group share one answer, handed out in one C call, so an idle member costs a set look-up
    # (8,000 of 10,000 consumers over 1,000 tasks). Only busy members get answers of their own.
    # With its maps, each endpoint's answer fields but the tasks: a busy member's answer is
    # written from them and its own tasks, not from nine values gathered anew.
    maps_by_endpoint: dict[int, tuple[HostMaps, dict[str, object]]] = {}
    last_answers, answers, keeping = answer_memo(
        planned, layout, codec, hosts, version, commonly_supported, own_only
    )

    def answer_member(
        member_id: str, thread: ThreadAssignment, fields: dict[str, object]
    ) -> None:
        """A busy member's answer, stored in ``results`` (and the memo's ``answers``); one
        task of one partition skips the general sorting."""
        mine = thread.active.get(member_id, ())
        standby_ids = thread.standby.get(member_id, ())
        key: MemoKey | None = None
        if (
            keeping
            and len(mine) + len(standby_ids) <= MEMO_TASKS
            and member_id != followup_consumer
        ):
            key = (tuple(map(id, mine)), tuple(map(id, standby_ids)))
            again = last_answers.get(key)
            if again is not None:  # the same tasks as a member of the last rebalance
                results[member_id] = again[0]
                answers[key] = again
                return
        partitions: tuple[TopicPartition, ...] = ()
        active_tasks: tuple[TaskId, ...] = ()
        by_topic: ByTopic | None = None
        places: list[int] | None = None  # (in the plan, of several active tasks)
        if mine:
            # (by the task object's id: the layout's own objects, no ``TaskId.__hash__``)
            partitions = (find(id(mine[0])) or tasks[mine[0]]) if len(mine) == 1 else ()
            if len(partitions) == 1:  # one task of one partition: nothing to sort
                active_tasks = (mine[0],)
            else:
                if table is not None and len(mine) > _FEW_TASKS:
                    places = table.places(mine)
                partitions, active_tasks, by_topic = in_partition_order(mine, places)
        if (
            len(standby_ids) > 1
            and planned is not None
            and member_id != followup_consumer
            and (index := topic_index_of(fields)) is not None
            and (
                entries := standby_packed(planned, standby_ids, mine, index, named, places)
            )
        ):
            # Written from the plan's packed entries; the map of its standby tasks and its
            # model made only if someone reads them (nothing on the way to aiokafka does).
            ints = active_packed(planned, active_tasks, named) if len(mine) > 1 else None
            packed = encode_packed(fields, active_tasks, len(standby_ids), entries, ints)
            if packed is not None:
                result = results[member_id] = unbuilt(
                    partitions, fields, active_tasks,
                    partial(_standby_of, tuple(standby_ids), layout, known, planned),
                    packed, by_topic,
                )
                if key is not None:
                    answers[key] = (result, tuple(mine), tuple(standby_ids))
                return
        standby: dict[TaskId, tuple[TopicPartition, ...]]
        if not standby_ids:
            standby = {}
        elif len(standby_ids) == 1:
            only = standby_ids[0]
            parts = find(id(only)) or tasks[only]
            standby = {only: parts if len(parts) < 2 else tuple(sorted(parts))}
        else:
            found = partitions_of(standby_ids, layout, known)
            standby = standby_map(standby_ids, found, planned)
        if member_id != followup_consumer:
            # An answer of one task (most busy members) is written from the endpoint's
            # fields and the member's tasks alone, its model built only if someone reads it
            # (nothing on the way to aiokafka does): no dict of fields per member.
            packed = one_task(fields, active_tasks, standby)
            if packed is not None:
                result = results[member_id] = unbuilt(
                    partitions, fields, active_tasks, standby, packed, by_topic
                )
                if key is not None:
                    answers[key] = (result, tuple(mine), tuple(standby_ids))
                return
        values = fields.copy()
        values["active_tasks"] = active_tasks
        values["standby_tasks"] = standby
        if member_id == followup_consumer:
            values["next_rebalance_ms"] = followup_ms
        answer_info = trusted_model(AssignmentInfo, values)
        entries = None
        if planned is not None and len(standby) > 1:
            index = writer.topic_index(answer_info)
            entries = standby_packed(planned, standby_ids, mine, index, named)
        result = results[member_id] = member_result(
            partitions, answer_info, encode(answer_info, entries), by_topic
        )
        if key is not None:
            answers[key] = (result, tuple(mine), tuple(standby_ids))

    # What the groups of one process and endpoint share (a process's groups come one after
    # another, so mostly found by two identity checks): its maps and fields, and its busy
    # members, answered after every group. Keyed by the ids of the process id and endpoint
    # objects (``decoded`` keeps them alive): at 1,000 threads per client each of 2,000 busy
    # members is a group of its own.
    Place = tuple[ProcessId, HostInfo | None, HostMaps, dict[str, object], list[str]]
    places: dict[tuple[int, int], Place] = {}
    place: Place | None = None
    for info, member_ids in member_groups(decoded):
        process_id = info.process_id  # (the group's process: ``process_of`` of its members)
        endpoint = info.user_endpoint
        if place is None or place[0] is not process_id or place[1] is not endpoint:
            place = places.get((id(process_id), id(endpoint)))
            if place is None:
                kept = maps_by_endpoint.get(id(endpoint))
                if kept is None:
                    kept = maps_by_endpoint[id(endpoint)] = _with_fields(
                        maps_of(info), version, commonly_supported, own_only
                    )
                place = places[(id(process_id), id(endpoint))] = (
                    process_id, endpoint, kept[0], kept[1], []
                )
        if len(member_ids) == 1:  # (a busy member's own group, mostly)
            if member_ids[0] in busy:
                place[4].append(member_ids[0])
            else:
                results[member_ids[0]] = idle_answer(place[2], place[3])
            continue
        # both kinds picked in C (8,000 idle of 10,000 members in ten groups)
        idle_ids = list(filterfalse(busy.__contains__, member_ids)) if busy else member_ids
        if idle_ids:
            results.update(zip(idle_ids, repeat(idle_answer(place[2], place[3]))))
        if len(idle_ids) != len(member_ids):
            place[4].extend(filter(busy.__contains__, member_ids))
    for process_id, _, _, fields, waiting in places.values():
        if not waiting:
            continue
        thread = threads[process_id]
        if keeping:  # (each member looked up in the last rebalance's answers)
            for member_id in waiting:
                answer_member(member_id, thread, fields)
            continue
        # Members of one task each answered together (2,000 of 10,000 consumers over 1,000
        # tasks: ``assignor.leader.one_task_members``), the follow-up's answer its own.
        if followup_consumer in waiting:
            answer_member(followup_consumer, thread, fields)
            waiting.remove(followup_consumer)
        rest = answer_one_task_members(waiting, thread, fields, writer, known, results)
        for member_id in rest:
            answer_member(member_id, thread, fields)
    if keeping and planned is not None:  # (kept only with answers: else nothing held)
        memo = AnswerMemo(codec, version, commonly_supported, hosts, answers)
        planned.answer_memo[:] = [memo] if answers else []
    return results


def _standby_of(
    tasks: tuple[TaskId, ...],
    layout: TaskLayout,
    known: Mapping[int, tuple[TopicPartition, ...]],
    planned: PlannedTasks,
) -> dict[TaskId, tuple[TopicPartition, ...]]:
    """A member's standby map as :func:`encode_members` builds it, for a model built late."""
    return standby_map(tasks, partitions_of(tasks, layout, known), planned)


def _with_fields(
    member_hosts: HostMaps, version: int, commonly_supported: int, own_only: bool
) -> tuple[HostMaps, dict[str, object]]:
    """``member_hosts`` with the fields of an answer that carries them: every field of
    ``AssignmentInfo`` in its order, no tasks, no error, no follow-up (what
    :func:`encode_members` copies per busy member and stores the member's own values in)."""
    return member_hosts, {
        "version": version,
        "commonly_supported_version": commonly_supported,
        "active_tasks": (),
        "standby_tasks": {},
        "partitions_by_host": member_hosts[0],
        "standby_partitions_by_host": member_hosts[1],
        "error_code": AssignorError.NONE,
        "next_rebalance_ms": NO_FOLLOWUP_REBALANCE,
        "host_maps_complete": not own_only,
    }


def _over_budget(
    hosts: HostMaps, codec: Codec, version: int, commonly_supported: int, members: int
) -> bool:
    """Whether ``members`` copies of the group's packed host maps exceed the budget.

    Maps past the codec's own limits (more than ``MAX_HOSTS`` endpoints in a map, more than
    ``MAX_HOST_MAP_PARTITIONS`` partitions in both) are over it without packing them: no member
    could read them whole, while each member's own entry still fits.
    """
    if not hosts[0] and not hosts[1]:
        return False
    listed = sum(len(parts) for host_map in hosts for parts in host_map.values())
    if max(len(hosts[0]), len(hosts[1])) > MAX_HOSTS or listed > MAX_HOST_MAP_PARTITIONS:
        return True
    # Every field named (``trusted_model``): ``model_construct`` would fill the defaults, and
    # pydantic inspects a default factory's signature on every call (about a tenth of a small
    # group's encode step).
    fields = _with_fields(hosts, version, commonly_supported, False)[1]
    probe = trusted_model(AssignmentInfo, fields)
    return members * codec.host_maps_bytes(probe, version) > GROUP_HOST_MAPS_BUDGET_BYTES


def _own_entry(hosts: HostMaps, endpoint: HostInfo | None) -> HostMaps:
    """The entries of ``endpoint`` alone (none when the member has no endpoint)."""
    if endpoint is None:
        return {}, {}
    active = {endpoint: hosts[0][endpoint]} if endpoint in hosts[0] else {}
    standby = {endpoint: hosts[1][endpoint]} if endpoint in hosts[1] else {}
    return active, standby


__all__ = [
    "GROUP_HOST_MAPS_BUDGET_BYTES",
    "HostMaps",
    "PartitionsByHost",
    "encode_members",
    "host_maps",
    "partitions_of",
]
