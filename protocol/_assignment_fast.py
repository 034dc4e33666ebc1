"""A one-call reader for the common assignment, beside the checked streaming one.

Why: every member reads its assignment at every rebalance, and in a group of hundreds of
members that probes every minute (KIP-441's throttled migrations) the streaming reader
(``protocol._read.Reader``: a Python call, a ``try`` and a bound check per value, a field name
built per host entry) cost more per member than the member's whole answer is long (about 65
bytes when each member carries only its own endpoint's entry). Here msgpack reads the whole tree
of a payload of at most ``FAST_MAX_BYTES`` in one C call, within ``protocol._read.read_whole``'s
allocation bound, and the shape is checked afterwards, as ``protocol._subscription_fast`` does
for subscriptions.

This reader accepts only what the streaming reader accepts, and builds the same message: every
check below is one of ``protocol._assignment_format.decode``'s. Anything else it does not judge:
a version other than 4, a named topology, an endpoint not met before, any malformed value makes
it answer ``None``, and the streaming reader then reads the payload and accepts it or names
what is wrong, exactly as before (``tests/protocol/test_assignment_fast.py`` compares both on
drawn and mutated payloads).
"""

from __future__ import annotations

from itertools import chain
from typing import Final, cast

from protocol._limits import (
    MAX_HOST_MAP_PARTITIONS,
    MAX_HOSTS,
    MAX_MEMBER_TASKS,
    MAX_STANDBY_PARTITIONS,
    MAX_TOPICS,
)
from protocol._read import (
    KIND_ASSIGNMENT,
    ONE_CALL_MAX_BYTES,
    interned_hosts,
    interned_partitions,
    interned_tasks,
    read_whole,
    task_id,
    topic_partition,
)
from protocol.errors import AssignorError
from protocol.ids import INT32_MAX, INT64_MAX, HostInfo, TaskId, TopicPartition, trusted_model
from protocol.messages import HOST_SCOPE_VERSION, AssignmentInfo

#: Largest payload read in one call: at most this many values, whatever the bytes declare.
FAST_MAX_BYTES: Final = ONE_CALL_MAX_BYTES
#: The one version read here (``_assignment_format.FIELDS``): [4, common, A, error_code, topics,
#: topologies, active, standby, complete, hosts, standby_hosts, next_rebalance_ms]
_VERSION: Final = HOST_SCOPE_VERSION
_FIELDS: Final = 12
_TOPIC_CHARS: Final = 249
_ERROR_CODES: Final = {int(code): code for code in AssignorError}
#: the reader's shared tables (cleared in place when they grow, never replaced)
_HOSTS: Final = interned_hosts()
_PARTITIONS: Final = interned_partitions()
_TASKS: Final = interned_tasks()

HostMap = dict[HostInfo, frozenset[TopicPartition]]
_StandbyKey = tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]
#: standby sections read before -> what they read to; emptied when its entries would pass
#: ``_KEPT_MAX_ENTRIES`` (counted as task entries, one more per section)
_KEPT: Final[dict[_StandbyKey, dict[TaskId, tuple[TopicPartition, ...]]]] = {}
_KEPT_SIZE: Final = [0]
_KEPT_MAX_ENTRIES: Final = 1 << 16
_LIST: Final = {list}
_INT: Final = {int}
#: the message's map fields (copied by :func:`copy_assignment`)
_MAPS: Final = ("standby_tasks", "partitions_by_host", "standby_partitions_by_host")


def decode_fast(raw: bytes, latest_supported: int) -> AssignmentInfo | None:
    """The assignment in ``raw``, or ``None`` when the streaming reader must decide."""
    if latest_supported < _VERSION:
        return None
    items = read_whole(raw, max_bin_len=0)  # no field of an assignment is binary
    if type(items) is not list or len(items) != _FIELDS:
        return None
    version, common, kind, code, topics, topologies, active, standby = items[:8]
    complete, hosts, standby_hosts, next_ms = items[8:]
    if (
        type(version) is not int
        or version != _VERSION
        or type(common) is not int
        or not version <= common <= INT32_MAX
        or type(kind) is not int
        or kind != KIND_ASSIGNMENT
        or type(topologies) is not list
        or topologies  # named topologies: the streaming reader's
        or type(complete) is not int
        or not 0 <= complete <= 1
        or type(next_ms) is not int
        or not 0 <= next_ms <= INT64_MAX
        or type(hosts) is not list
        or type(standby_hosts) is not list
    ):
        return None
    error = _ERROR_CODES.get(code) if type(code) is int else None
    if error is None or not _topics_ok(topics):
        return None
    tasks = _active(active)
    if tasks is None:
        return None
    standbys = _standby(standby, topics, MAX_MEMBER_TASKS - len(tasks))
    if standbys is None:
        return None
    max_hosts = MAX_HOSTS if complete else 1  # only the member's own endpoint
    budget = [MAX_HOST_MAP_PARTITIONS]
    by_host = _hosts(hosts, topics, budget, max_hosts)
    if by_host is None:
        return None
    standby_by_host = _hosts(standby_hosts, topics, budget, max_hosts)
    if standby_by_host is None:
        return None
    if standbys and not standbys.keys().isdisjoint(tasks):
        return None
    # every field named: pydantic's model_construct would only add its bookkeeping (5 us)
    return trusted_model(
        AssignmentInfo,
        {
            "version": version,
            "commonly_supported_version": common,
            "active_tasks": tuple(tasks),
            "standby_tasks": standbys,
            "partitions_by_host": by_host,
            "standby_partitions_by_host": standby_by_host,
            "error_code": error,
            "next_rebalance_ms": next_ms,
            "host_maps_complete": bool(complete),
        },
    )


def copy_assignment(info: AssignmentInfo) -> AssignmentInfo:
    """An instance equal to ``info`` field by field, as decoding its bytes again builds one:
    the same values, fresh copies of its dict maps (in their order), the same given fields.

    Why: a member that receives the same bytes as the round before (most of a probing round)
    reads them from its last message instead of decoding them again
    (``assignor.adapter.streams_assignor``); the maps are copied because a decode never hands
    out one it handed out before.
    """
    values = dict(vars(info))
    for name in _MAPS:
        value = values[name]
        if type(value) is dict:
            values[name] = value.copy()
    return trusted_model(AssignmentInfo, values, fields_set=info.model_fields_set)


def _topics_ok(topics: object) -> bool:
    """The topic dictionary: distinct non-empty names of at most 249 characters."""
    if type(topics) is not list or len(topics) > MAX_TOPICS:
        return False
    for name in topics:
        if type(name) is not str or not 0 < len(name) <= _TOPIC_CHARS:
            return False
    return len(set(topics)) == len(topics)


def _active(ints: object) -> list[TaskId] | None:
    """``[0, s0, p0, 0, s1, p1, ...]`` (no named topology) as tasks, or None."""
    if type(ints) is not list:
        return None
    length = len(ints)
    if length % 3 or length // 3 > MAX_MEMBER_TASKS:
        return None
    known = _TASKS
    tasks: list[TaskId] = []
    for at in range(0, length, 3):
        k, subtopology, partition = ints[at], ints[at + 1], ints[at + 2]
        if (
            type(k) is not int
            or k != 0
            or type(subtopology) is not int
            or not 0 <= subtopology <= INT32_MAX
            or type(partition) is not int
            or not 0 <= partition <= INT32_MAX
        ):
            return None
        task = known.get((subtopology, partition, None))
        tasks.append(task if task is not None else task_id(subtopology, partition, None))
    return tasks


def _standby(
    entries: object, topics: list[str], tasks_left: int
) -> dict[TaskId, tuple[TopicPartition, ...]] | None:
    """``[[0, s, p, t0, q0, ...], ...]`` as tasks and their partitions, or None.

    A member's standbys mostly stay put between the probing rebalances of a group (three
    reads in four repeat the previous one in a high-availability replay): a section read
    before, with the same topic dictionary, is answered from ``_KEPT`` (a fresh dict of the
    same entries), when its key cannot stand for another payload (lists of exact ints only).
    """
    if type(entries) is not list or len(entries) > MAX_MEMBER_TASKS or len(entries) > tasks_left:
        return None
    key = _standby_key(entries, topics)
    if key is not None:
        kept = _KEPT.get(key)
        if kept is not None:
            return dict(kept)
    standby = _read_standby(entries, topics)
    if standby is not None and key is not None:
        if _KEPT_SIZE[0] + len(entries) > _KEPT_MAX_ENTRIES:
            _KEPT.clear()
            _KEPT_SIZE[0] = 0
        _KEPT[key] = dict(standby)
        _KEPT_SIZE[0] += len(entries) + 1
    return standby


def _standby_key(entries: list[object], topics: list[str]) -> _StandbyKey | None:
    """The section as a hashable key, or None unless every entry is a list of exact ints (a
    ``bool`` or ``float`` would compare equal to an int, a dict's keys would look like a list)."""
    if not entries or set(map(type, entries)) != _LIST:
        return None
    flat = tuple(map(tuple, cast(list[list[object]], entries)))
    if not set(map(type, chain.from_iterable(flat))) <= _INT:
        return None
    return tuple(topics), cast(tuple[tuple[int, ...], ...], flat)


def _read_standby(
    entries: list[object], topics: list[str]
) -> dict[TaskId, tuple[TopicPartition, ...]] | None:
    """The standby section read and checked, value by value."""
    standby: dict[TaskId, tuple[TopicPartition, ...]] = {}
    left = MAX_STANDBY_PARTITIONS
    count_topics = len(topics)
    # the shared tables read inline (as ``_active`` and ``_hosts`` do), the makers only for
    # an id not met yet: two Python calls fewer per standby task and partition
    known_tasks, known_partitions = _TASKS.get, _PARTITIONS.get
    for entry in entries:
        if type(entry) is not list:
            return None
        length = len(entry)
        if length < 3 or (length - 3) % 2 or (length - 3) // 2 > left:
            return None
        left -= (length - 3) // 2
        k, subtopology, partition = entry[0], entry[1], entry[2]
        if (
            type(k) is not int
            or k != 0
            or type(subtopology) is not int
            or not 0 <= subtopology <= INT32_MAX
            or type(partition) is not int
            or not 0 <= partition <= INT32_MAX
        ):
            return None
        task = known_tasks((subtopology, partition, None))
        if task is None:
            task = task_id(subtopology, partition, None)
        if task in standby:
            return None
        partitions: list[TopicPartition] = []
        for at in range(3, length, 2):
            index, number = entry[at], entry[at + 1]
            if (
                type(index) is not int
                or not 0 <= index < count_topics
                or type(number) is not int
                or not 0 <= number <= INT32_MAX
            ):
                return None
            tp = known_partitions((topics[index], number))
            partitions.append(tp if tp is not None else topic_partition(topics[index], number))
        standby[task] = tuple(partitions)
    return standby


def _hosts(entries: object, topics: list[str], budget: list[int], max_hosts: int) -> HostMap | None:
    """One host map ``[[host, port, [t, q0, q1 - q0, ...], ...], ...]`` of known endpoints,
    or None; ``budget[0]``: partitions both maps may still list."""
    if type(entries) is not list or len(entries) > max_hosts:
        return None
    known = _PARTITIONS.get
    count_topics = len(topics)
    hosts: HostMap = {}
    for entry in entries:
        if type(entry) is not list or not 2 <= len(entry) <= 2 + count_topics:
            return None
        name, port = entry[0], entry[1]
        if type(name) is not str or type(port) is not int:
            return None
        host = _HOSTS.get((name, port))
        if host is None or host in hosts:  # a new endpoint: the streaming reader checks it
            return None
        partitions: list[TopicPartition] = []
        previous_topic = -1
        for group in entry[2:]:
            if type(group) is not list or len(group) < 2 or len(group) - 1 > budget[0]:
                return None
            budget[0] -= len(group) - 1
            topic_at = group[0]
            if type(topic_at) is not int or not previous_topic < topic_at < count_topics:
                return None
            previous_topic = topic_at
            topic = topics[topic_at]
            partition = -1
            for step in group[1:]:
                if type(step) is not int or step < (0 if partition < 0 else 1):
                    return None
                partition = step if partition < 0 else partition + step
                tp = known((topic, partition))
                if tp is None:
                    if partition > INT32_MAX:
                        return None
                    tp = topic_partition(topic, partition)
                partitions.append(tp)
        hosts[host] = frozenset(partitions)
    return hosts


__all__ = ["FAST_MAX_BYTES", "copy_assignment", "decode_fast"]
