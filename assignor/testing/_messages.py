"""Strategies for protocol values: ids, offset sums, subscriptions, assignments, any version."""

from __future__ import annotations

import string
from typing import TypeVar

from hypothesis import strategies as st

from protocol import (
    LATEST_OFFSET,
    NO_FOLLOWUP_REBALANCE,
    UNKNOWN_OFFSET_SUM,
    AssignmentInfo,
    AssignorError,
    HostInfo,
    ProcessId,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
    VersionHeader,
)
from protocol.codec import LATEST_VERSION
from protocol.ids import INT32_MAX, INT64_MAX
from protocol.messages import HOST_SCOPE_VERSION

T = TypeVar("T")

# -- protocol values ----------------------------------------------------------------------------


_KAFKA_TOPIC_CHARS = string.ascii_letters + string.digits + "._-"
#: Any character that UTF-8 can carry (no lone surrogates).
_ANY_CHAR = st.characters(codec="utf-8")
#: No whitespace: HostInfo rejects it.
_HOST_CHAR = st.characters(exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp"))


def small_or_any(high: int, small: int = 40) -> st.SearchStrategy[int]:
    """Mostly small non-negative ints, sometimes anything up to ``high``."""
    return st.one_of(st.integers(0, small), st.integers(0, high))


def names(max_size: int = 30) -> st.SearchStrategy[str]:
    """Non-empty names: usually Kafka-legal ASCII, sometimes arbitrary Unicode."""
    return st.one_of(
        st.text(_KAFKA_TOPIC_CHARS, min_size=1, max_size=max_size),
        st.text(_ANY_CHAR, min_size=1, max_size=max_size),
    )


def topic_names() -> st.SearchStrategy[str]:
    return st.one_of(names(), st.text(_KAFKA_TOPIC_CHARS, min_size=200, max_size=249))


def topic_partitions(
    topics: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[TopicPartition]:
    return st.builds(
        TopicPartition, topic_names() if topics is None else topics, small_or_any(INT32_MAX)
    )


def task_ids(*, named: bool = False) -> st.SearchStrategy[TaskId]:
    """Task ids; with ``named`` some belong to a named topology."""
    topology = st.one_of(st.none(), names(20)) if named else st.none()
    return st.builds(
        lambda s, p, t: TaskId(s, p, topology=t),
        small_or_any(INT32_MAX, 8),
        small_or_any(INT32_MAX),
        topology,
    )


def process_ids() -> st.SearchStrategy[ProcessId]:
    return st.one_of(
        st.integers(0, 64).map(ProcessId.for_int),
        st.uuids().map(ProcessId),
    )


def host_infos() -> st.SearchStrategy[HostInfo]:
    return st.builds(
        HostInfo,
        st.one_of(
            st.from_regex(r"\A[a-z][a-z0-9-]{0,20}(\.[a-z0-9-]{1,10}){0,3}\Z"),
            st.text(_HOST_CHAR, min_size=1, max_size=255),
        ),
        st.integers(0, 65535),
    )


def offset_sums() -> st.SearchStrategy[int]:
    return st.one_of(
        st.sampled_from([LATEST_OFFSET, UNKNOWN_OFFSET_SUM, 0]),
        st.integers(0, 10**9),
        st.integers(0, INT64_MAX),
    )


def error_codes() -> st.SearchStrategy[AssignorError]:
    return st.sampled_from(list(AssignorError))


def versions(low: int = 1, high: int = LATEST_VERSION) -> st.SearchStrategy[int]:
    return st.integers(low, high)


_SUB_TASKS = {False: task_ids(named=False), True: task_ids(named=True)}
_OFFSET_SUMS = offset_sums()
_CLIENT_TAGS = st.dictionaries(names(20), st.text(_ANY_CHAR, max_size=30), max_size=5)
_RACKS = st.none() | names(20)
_INSTANCE_IDS = st.none() | st.text(_KAFKA_TOPIC_CHARS, min_size=1, max_size=249)
_ENDPOINTS = st.none() | host_infos()
_PROCESS_IDS = process_ids()


@st.composite
def subscription_infos(
    draw: st.DrawFn,
    version: st.SearchStrategy[int] | None = None,
    *,
    named: bool | None = None,
    max_tasks: int = 30,
) -> SubscriptionInfo:
    """A subscription written at a version from ``version`` (default: any the codec knows).

    ``latest_supported_version`` may exceed the codec's own: members of a newer build write old
    versions too. Named-topology tasks appear only when ``named`` is true, or (``named=None``)
    when the drawn version can carry them.
    """
    used = draw(version if version is not None else versions())
    tasks = _SUB_TASKS[used >= 3 if named is None else named]
    return SubscriptionInfo(
        version=used,
        latest_supported_version=draw(st.integers(used, used + 3)),
        process_id=draw(_PROCESS_IDS),
        user_endpoint=draw(_ENDPOINTS),
        task_offset_sums=draw(st.dictionaries(tasks, _OFFSET_SUMS, max_size=max_tasks)),
        unique_field=draw(st.integers(0, 255)),
        error_code=draw(error_codes()),
        client_tags=draw(_CLIENT_TAGS),
        rack_id=draw(_RACKS),
        group_instance_id=draw(_INSTANCE_IDS),
    )


#: Topics that recur across a message (as they do in a real group), mixed with arbitrary ones.
_COMMON_TOPICS = ("orders", "payments", "app-KSTREAM-REPARTITION-0000000003-repartition", "x")
_POOLED_TOPICS = st.one_of(st.sampled_from(_COMMON_TOPICS), topic_names())
_POOLED_PARTITIONS = topic_partitions(
    st.one_of(st.sampled_from(_COMMON_TOPICS), st.sampled_from(_COMMON_TOPICS), topic_names())
)


def host_maps(max_hosts: int = 4) -> st.SearchStrategy[dict[HostInfo, frozenset[TopicPartition]]]:
    return st.dictionaries(
        host_infos(), st.frozensets(_POOLED_PARTITIONS, max_size=8), max_size=max_hosts
    )


_HOST_MAPS = host_maps()
_OWN_HOST_MAPS = host_maps(max_hosts=1)
_NEXT_REBALANCE = st.one_of(
    st.sampled_from([0, NO_FOLLOWUP_REBALANCE]),
    st.integers(0, 2**41),
    st.integers(0, INT64_MAX),
)
_STANDBY_PARTITIONS = st.lists(_POOLED_PARTITIONS, max_size=3).map(tuple)
_TASKS = {False: task_ids(named=False), True: task_ids(named=True)}


@st.composite
def assignment_infos(
    draw: st.DrawFn,
    version: st.SearchStrategy[int] | None = None,
    *,
    named: bool | None = None,
    max_tasks: int = 12,
) -> AssignmentInfo:
    """An assignment at a version from ``version``; active and standby tasks never overlap.

    ``active_tasks`` may repeat a task (one entry per partition, as Kafka aligns them).
    """
    used = draw(version if version is not None else versions())
    tasks = _TASKS[used >= 3 if named is None else named]
    active = draw(st.lists(tasks, max_size=max_tasks))
    standby = draw(st.dictionaries(tasks, _STANDBY_PARTITIONS, max_size=max_tasks // 2))
    # from version 4, the host maps may be the member's own endpoint's alone (a large group)
    complete = used < HOST_SCOPE_VERSION or draw(st.booleans())
    maps = _HOST_MAPS if complete else _OWN_HOST_MAPS
    return AssignmentInfo(
        version=used,
        commonly_supported_version=draw(st.integers(used, used + 3)),
        active_tasks=tuple(active),
        standby_tasks={task: tps for task, tps in standby.items() if task not in active},
        partitions_by_host=draw(maps),
        standby_partitions_by_host=draw(maps),
        error_code=draw(error_codes()),
        next_rebalance_ms=draw(_NEXT_REBALANCE),
        host_maps_complete=complete,
    )


def version_headers(low: int = 1, high: int = INT32_MAX) -> st.SearchStrategy[VersionHeader]:
    return st.integers(low, high).flatmap(
        lambda v: st.builds(
            VersionHeader,
            version=st.just(v),
            latest_supported_version=st.integers(v, min(INT32_MAX, v + 5)),
            error_code=st.none() if v < 4 else st.integers(0, INT32_MAX),
        )
    )
