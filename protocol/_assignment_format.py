"""The assignment's wire layout in each version, and its checked reader.

Top level is one msgpack array; ``A`` is the kind marker (0x41)::

    v1  [1, common, A, topics, active, standby, hosts, error_code]
    v2  [2, common, A, topics, active, standby, hosts, standby_hosts, error_code, next_rebalance_ms]
    v3  [3, common, A, topics, topologies, active, standby, hosts, standby_hosts, error_code,
         next_rebalance_ms]
    v4  [4, common, A, error_code, topics, topologies, active, standby, complete, hosts,
         standby_hosts, next_rebalance_ms]

``topics`` is a dictionary of topic names (those of the host maps, sorted, then those only the
standby tasks mention, sorted); partitions elsewhere name their topic by index.
``active`` is flat, in the member's partition order: ``[s0, p0, s1, p1, ...]``; version 3 writes
each task as three ints ``k, s, p`` where ``k`` is 0 (no named topology) or 1 + an index into
``topologies``. ``standby`` is ``[[task ints..., t0, q0, t1, q1, ...], ...]`` (topic index,
partition, in the model's order). A host map is ``[[host, port, [t, q0, q1 - q0, ...], ...], ...]``
with topics ascending and partitions delta-coded, so a partition usually costs one byte.

Version 4 moves the error code to the fourth field (any older reader sees it, see
``protocol.codec``) and adds ``complete``: 1 when the host maps are the whole group's, 0 when they
hold only the receiving member's own endpoint (at most one entry each). Every member of a large
group carrying every endpoint is what outgrows the broker's group record; with ``complete = 0``
the group's record holds each endpoint's entry once per consumer of that endpoint instead of once
per member of the group. ``docs/wire-format.md`` has the byte layout and the measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import is_, sub

import msgpack

from protocol._limits import (
    MAX_HOST_MAP_PARTITIONS,
    MAX_HOSTS,
    MAX_MEMBER_TASKS,
    MAX_NAMED_TOPOLOGIES,
    MAX_STANDBY_PARTITIONS,
    MAX_TOPICS,
    check_array,
    check_count,
    check_wire_str,
)
from protocol._read import (
    KIND_ASSIGNMENT,
    Reader,
    error_code,
    fail,
    host_info,
    interned_partitions,
    quote,
    task_id,
    topic_partition,
)
from protocol.errors import AssignorError
from protocol.host_partitions import TopicRuns, topic_runs
from protocol.ids import INT32_MAX, INT64_MAX, HostInfo, TaskId, TopicPartition, task_order
from protocol.messages import (
    HEADER_ERROR_CODE_VERSION,
    HOST_SCOPE_VERSION,
    NAMED_TOPOLOGY_VERSION,
    NO_FOLLOWUP_REBALANCE,
    AssignmentInfo,
)

#: Number of top-level fields per version.
FIELDS = {1: 8, 2: 10, 3: 11, 4: 12}

HostMap = Mapping[HostInfo, frozenset[TopicPartition]]


@dataclass(frozen=True, slots=True)
class HostSection:
    """The host maps of an assignment, already packed.

    Every member of a group receives the same host maps, and for a large group they are most of
    the payload (100,000 partitions for 100 hosts of 1,000 tasks). A leader packs them once and
    splices the bytes into each member's assignment; ``reuse`` tells when that is allowed.
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
    check_count(
        sum(len(partitions) for host_map in host_maps for partitions in host_map.values()),
        "host map partitions",
        MAX_HOST_MAP_PARTITIONS,
    )
    # Each host's numbers per topic, read once (``protocol.host_partitions``: none read at all
    # when the leader hands them over): the topic dictionary and the packed hosts.
    runs_of = [{host: topic_runs(partitions) for host, partitions in host_map.items()}
               for host_map in host_maps]
    topics = sorted({topic for per in runs_of for runs in per.values() for topic, _ in runs})
    topic_index = {topic: index for index, topic in enumerate(topics)}
    packer = msgpack.Packer(use_bin_type=True)
    packed = b"".join(_packed_hosts(per, topic_index, packer) for per in runs_of)
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
    if not info.host_maps_complete and version < HOST_SCOPE_VERSION:
        raise ValueError(
            f"host maps of the member's own endpoint only need assignment version "
            f"{HOST_SCOPE_VERSION} or later: an older reader would take them for the group's"
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
    topics = check_array([*hosts.topics, *extra], "topics", MAX_TOPICS)
    topic_index.update((topic, len(hosts.topics) + index) for index, topic in enumerate(extra))
    topologies = sorted(
        {t.topology for t in (*info.active_tasks, *info.standby_tasks) if t.topology is not None}
    )
    if topologies and not named:
        raise ValueError(
            f"named topologies {topologies} need assignment version {NAMED_TOPOLOGY_VERSION} "
            "or later"
        )
    check_count(len(topologies), "topologies", MAX_NAMED_TOPOLOGIES)
    topology_index = {
        check_wire_str(name, "topologies"): index + 1 for index, name in enumerate(topologies)
    }
    check_count(
        len(info.active_tasks) + len(info.standby_tasks),
        "active_tasks and standby_tasks",
        MAX_MEMBER_TASKS,
    )
    check_count(
        sum(map(len, info.standby_tasks.values())),
        "standby_tasks partitions",
        MAX_STANDBY_PARTITIONS,
    )

    def task_ints(task: TaskId) -> list[int]:
        if not named:
            return [task.subtopology, task.partition]
        k = 0 if task.topology is None else topology_index[task.topology]
        return [k, task.subtopology, task.partition]

    active: list[int] = []
    for task in info.active_tasks:
        active += task_ints(task)
    standby: list[list[object]] = []
    for task, partitions in sorted(info.standby_tasks.items(), key=lambda kv: task_order(kv[0])):
        entry: list[object] = list(task_ints(task))
        for tp in partitions:
            entry += [topic_index[tp.topic], tp.partition]
        standby.append(entry)
    header_code = version >= HEADER_ERROR_CODE_VERSION
    before: list[object] = [version, info.commonly_supported_version, KIND_ASSIGNMENT]
    if header_code:
        before.append(int(info.error_code))
    before.append(topics)
    if named:
        before.append(topologies)
    before += [active, standby]
    if version >= HOST_SCOPE_VERSION:
        before.append(int(info.host_maps_complete))
    after: list[object] = [] if header_code else [int(info.error_code)]
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


def _packed_hosts(
    runs_of: Mapping[HostInfo, TopicRuns], topic_index: Mapping[str, int], packer: msgpack.Packer
) -> bytes:
    """Hosts by (host, port), each ``[host, port, [topic, p0, p1 - p0, ...], ...]`` from its
    numbers per topic (``runs_of``), packed as msgpack packs that list (an array: its header,
    then its elements' bytes). Deltas all below 128 are one-byte fixints: ``bytes(deltas)``,
    made in C, not packed one by one (3,500 at 1,000 partitions x 10 members, a standby)."""
    pack = packer.pack
    header = packer.pack_array_header
    hosts = check_array(sorted(runs_of, key=lambda h: (h.host, h.port)), "hosts", MAX_HOSTS)
    parts = [header(len(hosts))]
    for host in hosts:
        runs = runs_of[host]
        parts += (header(2 + len(runs)), pack(host.host), pack(host.port))
        for topic, numbers in runs:
            deltas = list(map(sub, numbers[1:], numbers))
            try:  # (past 255, or below 0, ``bytes`` refuses; past 127 it is not ASCII)
                small = bytes(deltas)
            except ValueError:
                small = b"\x80"
            if small.isascii():
                parts += (header(2 + len(deltas)), pack(topic_index[topic]), pack(numbers[0]),
                          small)
            else:
                parts.append(pack([topic_index[topic], numbers[0], *deltas]))
    return b"".join(parts)


def decode(reader: Reader, fields: int, version: int, common: int) -> AssignmentInfo:
    """Read the fields after the header, in order, each against its own limits."""
    expected = FIELDS[version]
    if fields != expected:
        fail("payload", f"a version {version} assignment has {expected} fields, not {fields}")
    header_code = version >= HEADER_ERROR_CODE_VERSION
    code = error_code(reader.value("error_code")) if header_code else AssignorError.NONE
    topics = _decode_names(reader, "topics", MAX_TOPICS, 249)
    named = version >= NAMED_TOPOLOGY_VERSION
    topologies = _decode_names(reader, "topologies", MAX_NAMED_TOPOLOGIES, None) if named else []
    active = _decode_active(reader, topologies, named)
    standby = _decode_standby(reader, topics, topologies, named, MAX_MEMBER_TASKS - len(active))
    complete = True
    max_hosts = MAX_HOSTS
    if version >= HOST_SCOPE_VERSION:
        complete = bool(reader.integer("host_maps_complete", 0, 1))
        max_hosts = MAX_HOSTS if complete else 1  # only the member's own endpoint
    budget = [MAX_HOST_MAP_PARTITIONS]  # partitions both host maps may still list
    partitions_by_host = _decode_hosts(reader, topics, "partitions_by_host", budget, max_hosts)
    standby_partitions_by_host: dict[HostInfo, frozenset[TopicPartition]] = {}
    next_rebalance_ms = NO_FOLLOWUP_REBALANCE
    if version >= 2:
        standby_partitions_by_host = _decode_hosts(
            reader, topics, "standby_partitions_by_host", budget, max_hosts
        )
    if not header_code:
        code = error_code(reader.value("error_code"))
    if version >= 2:
        next_rebalance_ms = reader.integer("next_rebalance_ms", 0, INT64_MAX)
    reader.finish()
    both = set(active).intersection(standby)
    if both:
        fail("standby_tasks", f"tasks {quote(sorted(map(str, both)))} are also active")
    return AssignmentInfo.model_construct(
        version=version,
        commonly_supported_version=common,
        active_tasks=tuple(active),
        standby_tasks=standby,
        partitions_by_host=partitions_by_host,
        standby_partitions_by_host=standby_partitions_by_host,
        error_code=code,
        next_rebalance_ms=next_rebalance_ms,
        host_maps_complete=complete,
    )


def _decode_names(reader: Reader, field: str, limit: int, max_len: int | None) -> list[str]:
    names: list[str] = []
    for index in range(reader.array(field, limit)):
        if max_len is None:
            names.append(reader.text(f"{field}[{index}]"))
        else:
            names.append(reader.text(f"{field}[{index}]", max_len))
    if len(set(names)) != len(names):
        fail(field, "contains a name twice")
    return names


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
                f"{quote(k)} is not 0 or an index into the {len(topologies)} topologies (plus one)",
            )
        topology = topologies[k - 1] if k else None
        at += 1
    subtopology = ints[at]
    partition = ints[at + 1]
    if type(subtopology) is not int or not 0 <= subtopology <= INT32_MAX:
        fail(f"{where}.subtopology", f"{quote(subtopology)} is not an int32 >= 0")
    if type(partition) is not int or not 0 <= partition <= INT32_MAX:
        fail(f"{where}.partition", f"{quote(partition)} is not an int32 >= 0")
    return task_id(subtopology, partition, topology)


def _decode_active(reader: Reader, topologies: list[str], named: bool) -> list[TaskId]:
    width = 3 if named else 2
    length = reader.array("active_tasks", None)  # a count; checked next
    if length % width:
        fail("active_tasks", f"expected {width} ints per task, got {length} ints in all")
    if length // width > MAX_MEMBER_TASKS:
        fail(
            "active_tasks",
            f"declares {length // width:,} tasks; at most {MAX_MEMBER_TASKS:,} are allowed",
        )
    ints = reader.values("active_tasks", length, lambda at: f"active_tasks[{at // width}]")
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
    for at in range(0, length, width):
        active.append(_read_task(ints, at, topologies, named, f"active_tasks[{at // width}]"))
    return active


def _decode_standby(
    reader: Reader, topics: list[str], topologies: list[str], named: bool, tasks_left: int
) -> dict[TaskId, tuple[TopicPartition, ...]]:
    """The standby tasks; with the active ones they may number ``MAX_MEMBER_TASKS``."""
    width = 3 if named else 2
    standby: dict[TaskId, tuple[TopicPartition, ...]] = {}
    left = MAX_STANDBY_PARTITIONS
    tasks = reader.array("standby_tasks", MAX_MEMBER_TASKS)
    if tasks > tasks_left:
        fail(
            "standby_tasks",
            f"declares {tasks:,} tasks after {MAX_MEMBER_TASKS - tasks_left:,} active ones; at "
            f"most {MAX_MEMBER_TASKS:,} are allowed in all",
        )
    for index in range(tasks):
        field = f"standby_tasks[{index}]"
        length = reader.array(field, None)  # a count; the budget is checked next
        if length < width or (length - width) % 2:
            fail(field, "expected a task followed by (topic index, partition) pairs")
        count = (length - width) // 2
        if count > left:
            fail(
                "standby_tasks",
                f"name more than {MAX_STANDBY_PARTITIONS:,} partitions (task {index} declares "
                f"{count:,} after {MAX_STANDBY_PARTITIONS - left:,})",
            )
        left -= count
        entry = reader.values(field, length, _standby_element(field, width))
        task = _read_task(entry, 0, topologies, named, field)
        if task in standby:
            fail(field, f"task {task} appears more than once")
        standby[task] = tuple(
            _partition(topics, entry[at], entry[at + 1], field) for at in range(width, length, 2)
        )
    return standby


def _standby_element(field: str, width: int) -> Callable[[int], str]:
    """Names the i-th value of a standby entry: the task's ints, then topic/partition pairs."""
    return lambda at: (
        field if at < width else f"{field}.{'partition' if (at - width) % 2 else 'topic'}"
    )


def _host_group_element(field: str) -> Callable[[int], str]:
    """Names the i-th value of a host's topic group: the topic index, then partition deltas."""
    return lambda at: f"{field}.{'partition' if at else 'topic'}"


def _partition(topics: list[str], index: object, partition: object, field: str) -> TopicPartition:
    if type(index) is not int or not 0 <= index < len(topics):
        fail(f"{field}.topic", f"{quote(index)} is not an index into the {len(topics)} topics")
    if type(partition) is not int or not 0 <= partition <= INT32_MAX:
        fail(f"{field}.partition", f"{quote(partition)} is not an int32 >= 0")
    return topic_partition(topics[index], partition)


def _decode_hosts(
    reader: Reader, topics: list[str], name: str, budget: list[int], max_hosts: int
) -> dict[HostInfo, frozenset[TopicPartition]]:
    """One host map of at most ``max_hosts`` entries; ``budget[0]`` is how many partitions both
    maps may still list, and each topic group's declared length is checked against it before its
    partitions are read."""
    known = interned_partitions().get
    value = reader.value
    hosts: dict[HostInfo, frozenset[TopicPartition]] = {}
    for index in range(reader.array(name, max_hosts)):
        field = f"{name}[{index}]"
        # Topics ascend within an entry, so an entry has at most one group per topic.
        length = reader.array(field, 2 + len(topics))
        if length < 2:
            fail(field, "expected [host, port, partitions by topic...]")
        host = host_info(value(f"{field}.host"), value(f"{field}.port"), field)
        if host in hosts:
            fail(field, f"host {host} appears more than once")
        partitions: list[TopicPartition] = []
        append = partitions.append
        previous_topic = -1
        partition_field = f"{field}.partition"
        element = _host_group_element(field)
        for _ in range(length - 2):
            size = reader.array(f"{field}.partitions", None)  # a count; see below
            if size < 2:
                fail(f"{field}.partitions", "expected [topic index, partition deltas...]")
            if size - 1 > budget[0]:
                fail(
                    name,
                    f"the host maps list more than {MAX_HOST_MAP_PARTITIONS:,} partitions "
                    f"({field} declares {size - 1:,} after "
                    f"{MAX_HOST_MAP_PARTITIONS - budget[0]:,})",
                )
            budget[0] -= size - 1
            group = reader.values(f"{field}.partitions", size, element)
            topic_at = group[0]
            if type(topic_at) is not int or not previous_topic < topic_at < len(topics):
                fail(
                    f"{field}.topic",
                    f"{quote(topic_at)} is not an ascending index into the {len(topics)} topics",
                )
            previous_topic = topic_at
            topic = topics[topic_at]
            partition = -1
            for step in group[1:]:
                if type(step) is not int or step < (0 if partition < 0 else 1):
                    fail(
                        partition_field,
                        f"delta {quote(step)} after partition {partition}: "
                        "partitions must be strictly increasing",
                    )
                partition = step if partition < 0 else partition + step
                # The hot loop of a member's decode: the shared-instance lookup is inlined.
                tp = known((topic, partition))
                if tp is None:
                    if partition > INT32_MAX:
                        fail(partition_field, f"{partition} is beyond the int32 range")
                    tp = topic_partition(topic, partition)
                append(tp)
        hosts[host] = frozenset(partitions)
    return hosts
