"""The assignment's wire layout in each version, and its checked reader.

Top level is one msgpack array; ``A`` is the kind marker (0x41)::

    v1  [1, common, A, topics, active, standby, hosts, error_code]
    v2  [2, common, A, topics, active, standby, hosts, standby_hosts, error_code, next_rebalance_ms]
    v3  [3, common, A, topics, topologies, active, standby, hosts, standby_hosts, error_code,
         next_rebalance_ms]

``topics`` is a dictionary of topic names (those of the host maps, sorted, then those only the
standby tasks mention, sorted); partitions elsewhere name their topic by index.
``active`` is flat, in the member's partition order: ``[s0, p0, s1, p1, ...]``; version 3 writes
each task as three ints ``k, s, p`` where ``k`` is 0 (no named topology) or 1 + an index into
``topologies``. ``standby`` is ``[[task ints..., t0, q0, t1, q1, ...], ...]`` (topic index,
partition, in the model's order). A host map is ``[[host, port, [t, q0, q1 - q0, ...], ...], ...]``
with topics ascending and partitions delta-coded, so a partition usually costs one byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter, is_
from typing import cast

import msgpack

from protocol._limits import INT32_MAX, INT64_MAX, check_array, check_wire_str
from protocol._read import (
    KIND_ASSIGNMENT,
    error_code,
    fail,
    host_info,
    interned_partitions,
    need_int,
    need_list,
    need_str,
    task_id,
    topic_partition,
)
from protocol.errors import AssignorError
from protocol.ids import HostInfo, TaskId, TopicPartition
from protocol.messages import NO_FOLLOWUP_REBALANCE, AssignmentInfo

#: Number of top-level fields per version.
FIELDS = {1: 8, 2: 10, 3: 11}
#: First version that carries named-topology task ids.
NAMED_TOPOLOGY_VERSION = 3

HostMap = Mapping[HostInfo, frozenset[TopicPartition]]
_TOPIC = attrgetter("topic")


@dataclass(frozen=True, slots=True)
class HostSection:
    """The host maps of an assignment, already packed.

    Every member of a group receives the same host maps, and for a large group they are most of
    the payload (100,000 partitions for 100 hosts of 1,000 tasks). A leader packs them once and
    splices the bytes into each member's assignment; ``matches`` tells when that is allowed.
    """

    partitions_by_host: HostMap
    standby_partitions_by_host: HostMap | None  # None: version 1, which has no standby map
    topics: tuple[str, ...]
    packed: bytes

    def reuse(self, info: AssignmentInfo, version: int) -> HostSection | None:
        """This section for ``info`` if its maps are equal to the packed ones, else None.

        The section keeps its own copies of the maps, so a map changed in place is noticed.
        The values are frozensets: when the leader hands every member the same ones, comparing
        costs a key lookup per host. When the maps are equal but in new objects (the next
        rebalance decided the same placement), comparing costs every partition; the section
        returned then holds the new objects, so only the first member of that rebalance pays
        for it, not every member (2,019,900 partition comparisons per rebalance at 10,000
        partitions over 100 members before this).
        """
        if (version >= 2) != (self.standby_partitions_by_host is not None):
            return None
        if self.partitions_by_host != info.partitions_by_host:
            return None
        if (
            self.standby_partitions_by_host is not None
            and self.standby_partitions_by_host != info.standby_partitions_by_host
        ):
            return None
        if _same_values(self.partitions_by_host, info.partitions_by_host) and (
            self.standby_partitions_by_host is None
            or _same_values(self.standby_partitions_by_host, info.standby_partitions_by_host)
        ):
            return self
        return HostSection(
            partitions_by_host=dict(info.partitions_by_host),
            standby_partitions_by_host=(
                dict(info.standby_partitions_by_host) if version >= 2 else None
            ),
            topics=self.topics,
            packed=self.packed,
        )


def _same_values(kept: HostMap, given: HostMap) -> bool:
    """Whether two equal maps hold the very same value objects (in C: no per-partition work)."""
    return all(map(is_, kept.values(), given.values()))


def host_section(info: AssignmentInfo, version: int) -> HostSection:
    host_maps = [info.partitions_by_host]
    if version >= 2:
        host_maps.append(info.standby_partitions_by_host)
    topics = _topic_dictionary(host_maps)
    topic_index = {topic: index for index, topic in enumerate(topics)}
    packer = msgpack.Packer(use_bin_type=True)
    packed = b"".join(packer.pack(_encode_hosts(host_map, topic_index)) for host_map in host_maps)
    return HostSection(
        partitions_by_host=dict(info.partitions_by_host),
        standby_partitions_by_host=dict(info.standby_partitions_by_host) if version >= 2 else None,
        topics=tuple(topics),
        packed=packed,
    )


def encode(info: AssignmentInfo, version: int, hosts: HostSection) -> bytes:
    """Pack ``info`` at ``version`` around the already packed ``hosts`` (which must match)."""
    if info.commonly_supported_version < version:
        raise ValueError(
            f"cannot write a version {version} assignment whose commonly supported version is "
            f"only {info.commonly_supported_version}"
        )
    overlap = set(info.active_tasks).intersection(info.standby_tasks)
    if overlap:
        raise ValueError(f"tasks {sorted(map(str, overlap))} are both active and standby")
    named = version >= NAMED_TOPOLOGY_VERSION
    # Topics of the host maps first (their indices are baked into ``hosts.packed``), then any
    # topic only this member's standby tasks mention.
    topic_index = {topic: index for index, topic in enumerate(hosts.topics)}
    extra = sorted(
        {tp.topic for tps in info.standby_tasks.values() for tp in tps}.difference(topic_index)
    )
    topics = check_array([*hosts.topics, *extra], "topics")
    topic_index.update((topic, len(hosts.topics) + index) for index, topic in enumerate(extra))
    topologies = sorted(
        {t.topology for t in (*info.active_tasks, *info.standby_tasks) if t.topology is not None}
    )
    if topologies and not named:
        raise ValueError(
            f"named topologies {topologies} need assignment version {NAMED_TOPOLOGY_VERSION} "
            "or later"
        )
    topology_index = {
        check_wire_str(name, "topologies"): index + 1 for index, name in enumerate(topologies)
    }

    def task_ints(task: TaskId) -> list[int]:
        if not named:
            return [task.subtopology, task.partition]
        k = 0 if task.topology is None else topology_index[task.topology]
        return [k, task.subtopology, task.partition]

    active: list[int] = []
    for task in info.active_tasks:
        active += task_ints(task)
    standby: list[list[object]] = []
    for task, partitions in sorted(info.standby_tasks.items(), key=lambda kv: _task_order(kv[0])):
        entry: list[object] = list(task_ints(task))
        for tp in partitions:
            entry += [topic_index[tp.topic], tp.partition]
        standby.append(check_array(entry, "standby_tasks entry"))
    before: list[object] = [version, info.commonly_supported_version, KIND_ASSIGNMENT, topics]
    if named:
        before.append(topologies)
    before += [check_array(active, "active_tasks"), check_array(standby, "standby_tasks")]
    after: list[object] = [int(info.error_code)]
    if version >= 2:
        after.append(info.next_rebalance_ms)
    host_fields = 2 if version >= 2 else 1
    packer = msgpack.Packer(use_bin_type=True)
    return b"".join(
        [
            packer.pack_array_header(len(before) + host_fields + len(after)),
            *map(packer.pack, before),
            hosts.packed,
            *map(packer.pack, after),
        ]
    )


def _topic_dictionary(host_maps: Iterable[HostMap]) -> list[str]:
    names: set[str] = set()
    for host_map in host_maps:
        for host_partitions in host_map.values():
            names.update(map(_TOPIC, host_partitions))
    return sorted(names)


def _task_order(task: TaskId) -> tuple[bool, str, int, int]:
    return (task.topology is not None, task.topology or "", task.subtopology, task.partition)


def _encode_hosts(host_map: HostMap, topic_index: Mapping[str, int]) -> list[list[object]]:
    encoded: list[list[object]] = []
    for host in sorted(host_map, key=lambda h: (h.host, h.port)):
        pairs = sorted([(topic_index[tp.topic], tp.partition) for tp in host_map[host]])
        entry: list[object] = [host.host, host.port]
        group: list[int] = []
        current_topic = -1
        previous = 0
        for topic, partition in pairs:
            if topic != current_topic:
                group = [topic, partition]
                entry.append(group)
                current_topic = topic
            else:
                group.append(partition - previous)
            previous = partition
        for topic_group in entry[2:]:
            check_array(cast(list[int], topic_group), "host partitions")
        encoded.append(check_array(entry, "host entry"))
    return check_array(encoded, "hosts")


def decode(items: list[object], version: int, common: int) -> AssignmentInfo:
    expected = FIELDS[version]
    if len(items) != expected:
        fail("payload", f"a version {version} assignment has {expected} fields, not {len(items)}")
    topics = _decode_names(items[3], "topics", 249)
    named = version >= NAMED_TOPOLOGY_VERSION
    topologies = _decode_names(items[4], "topologies", None) if named else []
    rest = items[5:] if named else items[4:]
    active = _decode_active(rest[0], topologies, named)
    standby = _decode_standby(rest[1], topics, topologies, named)
    partitions_by_host = _decode_hosts(rest[2], topics, "partitions_by_host")
    standby_partitions_by_host: dict[HostInfo, frozenset[TopicPartition]] = {}
    code = AssignorError.NONE
    next_rebalance_ms = NO_FOLLOWUP_REBALANCE
    if version == 1:
        code = error_code(rest[3])
    else:
        standby_partitions_by_host = _decode_hosts(rest[3], topics, "standby_partitions_by_host")
        code = error_code(rest[4])
        next_rebalance_ms = need_int(rest[5], "next_rebalance_ms", 0, INT64_MAX)
    both = set(active).intersection(standby)
    if both:
        fail("standby_tasks", f"tasks {sorted(map(str, both))} are also active")
    return AssignmentInfo.model_construct(
        version=version,
        commonly_supported_version=common,
        active_tasks=tuple(active),
        standby_tasks=standby,
        partitions_by_host=partitions_by_host,
        standby_partitions_by_host=standby_partitions_by_host,
        error_code=code,
        next_rebalance_ms=next_rebalance_ms,
    )


def _decode_names(value: object, field: str, max_len: int | None) -> list[str]:
    names = need_list(value, field)
    for index, name in enumerate(names):
        if max_len is None:
            need_str(name, f"{field}[{index}]")
        else:
            need_str(name, f"{field}[{index}]", max_len)
    if len(set(names)) != len(names):
        fail(field, "contains a name twice")
    return names  # type: ignore[return-value]


def _read_task(
    ints: list[object], at: int, topologies: list[str], named: bool, where: str
) -> TaskId:
    """The task whose ints start at ``ints[at]`` (2 ints, or 3 when ``named``)."""
    topology = None
    if named:
        k = ints[at]
        if type(k) is not int or not 0 <= k <= len(topologies):
            fail(
                f"{where}.topology",
                f"{k!r} is not 0 or an index into the {len(topologies)} topologies (plus one)",
            )
        topology = topologies[k - 1] if k else None
        at += 1
    subtopology = ints[at]
    partition = ints[at + 1]
    if type(subtopology) is not int or not 0 <= subtopology <= INT32_MAX:
        fail(f"{where}.subtopology", f"{subtopology!r} is not an int32 >= 0")
    if type(partition) is not int or not 0 <= partition <= INT32_MAX:
        fail(f"{where}.partition", f"{partition!r} is not an int32 >= 0")
    return task_id(subtopology, partition, topology)


def _decode_active(value: object, topologies: list[str], named: bool) -> list[TaskId]:
    ints = need_list(value, "active_tasks")
    width = 3 if named else 2
    if len(ints) % width:
        fail("active_tasks", f"expected {width} ints per task, got {len(ints)} ints in all")
    active: list[TaskId] = []
    if not named:
        # The hot path of a member's decode: no per-task calls beyond the shared-instance lookup.
        pairs = iter(ints)
        for subtopology, partition in zip(pairs, pairs, strict=True):
            if (
                type(subtopology) is int
                and type(partition) is int
                and 0 <= subtopology <= INT32_MAX
                and 0 <= partition <= INT32_MAX
            ):
                active.append(task_id(subtopology, partition, None))
            else:
                at = 2 * len(active)
                _read_task(ints, at, topologies, named, f"active_tasks[{len(active)}]")
        return active
    for at in range(0, len(ints), width):
        active.append(_read_task(ints, at, topologies, named, f"active_tasks[{at // width}]"))
    return active


def _decode_standby(
    value: object, topics: list[str], topologies: list[str], named: bool
) -> dict[TaskId, tuple[TopicPartition, ...]]:
    entries = need_list(value, "standby_tasks")
    width = 3 if named else 2
    standby: dict[TaskId, tuple[TopicPartition, ...]] = {}
    for index, raw_entry in enumerate(entries):
        field = f"standby_tasks[{index}]"
        entry = need_list(raw_entry, field)
        if len(entry) < width or (len(entry) - width) % 2:
            fail(field, "expected a task followed by (topic index, partition) pairs")
        task = _read_task(entry, 0, topologies, named, field)
        if task in standby:
            fail(field, f"task {task} appears more than once")
        standby[task] = tuple(
            _partition(topics, entry[at], entry[at + 1], field)
            for at in range(width, len(entry), 2)
        )
    return standby


def _partition(topics: list[str], index: object, partition: object, field: str) -> TopicPartition:
    if type(index) is not int or not 0 <= index < len(topics):
        fail(f"{field}.topic", f"{index!r} is not an index into the {len(topics)} topics")
    if type(partition) is not int or not 0 <= partition <= INT32_MAX:
        fail(f"{field}.partition", f"{partition!r} is not an int32 >= 0")
    return topic_partition(topics[index], partition)


def _decode_hosts(
    value: object, topics: list[str], name: str
) -> dict[HostInfo, frozenset[TopicPartition]]:
    entries = need_list(value, name)
    known = interned_partitions().get
    hosts: dict[HostInfo, frozenset[TopicPartition]] = {}
    for index, raw_entry in enumerate(entries):
        field = f"{name}[{index}]"
        entry = need_list(raw_entry, field)
        if len(entry) < 2:
            fail(field, "expected [host, port, partitions by topic...]")
        host = host_info(entry[0], entry[1], field)
        if host in hosts:
            fail(field, f"host {host} appears more than once")
        partitions: list[TopicPartition] = []
        append = partitions.append
        previous_topic = -1
        for raw_group in entry[2:]:
            group = need_list(raw_group, f"{field}.partitions")
            if len(group) < 2:
                fail(f"{field}.partitions", "expected [topic index, partition deltas...]")
            topic_at = group[0]
            if type(topic_at) is not int or not previous_topic < topic_at < len(topics):
                fail(
                    f"{field}.topic",
                    f"{topic_at!r} is not an ascending index into the {len(topics)} topics",
                )
            previous_topic = topic_at
            topic = topics[topic_at]
            partition = -1
            for step in group[1:]:
                if type(step) is not int or step < (0 if partition < 0 else 1):
                    fail(
                        f"{field}.partition",
                        f"delta {step!r} after partition {partition}: "
                        "partitions must be strictly increasing",
                    )
                partition = step if partition < 0 else partition + step
                # The hot loop of a member's decode: the shared-instance lookup is inlined.
                tp = known((topic, partition))
                if tp is None:
                    if partition > INT32_MAX:
                        fail(f"{field}.partition", f"{partition} is beyond the int32 range")
                    tp = topic_partition(topic, partition)
                append(tp)
        hosts[host] = frozenset(partitions)
    return hosts
