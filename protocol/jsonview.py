"""Decoded messages as plain JSON-ready data, for people reading what a member sent.

Ids print as Kafka prints them (``"0_3"``, ``"orders-3"``, ``"host:port"``); maps are sorted so
two dumps of the same message compare line by line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from protocol.errors import AssignorError
from protocol.ids import HostInfo, TopicPartition, task_order
from protocol.messages import NO_FOLLOWUP_REBALANCE, AssignmentInfo, SubscriptionInfo, VersionHeader
from protocol.task_partitions import align_active_tasks

JsonDict = dict[str, Any]


def _partitions(partitions: Iterable[TopicPartition]) -> list[str]:
    return [str(tp) for tp in partitions]


def _host_map(host_map: Mapping[HostInfo, frozenset[TopicPartition]]) -> JsonDict:
    return {
        str(host): _partitions(sorted(host_map[host]))
        for host in sorted(host_map, key=lambda h: (h.host, h.port))
    }


def subscription_json(info: SubscriptionInfo) -> JsonDict:
    return {
        "kind": "subscription",
        "version": info.version,
        "latest_supported_version": info.latest_supported_version,
        "process_id": str(info.process_id),
        "user_endpoint": None if info.user_endpoint is None else str(info.user_endpoint),
        "task_offset_sums": {
            str(task): info.task_offset_sums[task]
            for task in sorted(info.task_offset_sums, key=task_order)
        },
        "unique_field": info.unique_field,
        "error_code": int(info.error_code),
        "error": info.error_code.name,
        "client_tags": dict(sorted(info.client_tags.items())),
        "rack_id": info.rack_id,
        "group_instance_id": info.group_instance_id,
    }


def assignment_view(
    info: AssignmentInfo, partitions: Sequence[TopicPartition] | None
) -> JsonDict:
    """What a member is given, task by task: the one view of an assignment that
    ``python -m assignor assign``/``describe`` and ``python -m protocol decode`` all print.

    ``partitions`` are the member's assigned partitions, which travel in the consumer-protocol
    envelope, not in our user data: None when unknown (bare user data), and then ``partitions``
    is null and each active task maps to null. Each active task maps to its partitions as the
    member pairs them (:func:`~protocol.task_partitions.align_active_tasks`); when the counts
    disagree (a member would report an assignment error) the tasks map to null as well.
    """
    aligned = None if partitions is None else align_active_tasks(info.active_tasks, partitions)
    active: dict[str, list[str] | None] = {
        str(task): None if aligned is None else _partitions(sorted(aligned[task]))
        for task in sorted(set(info.active_tasks), key=task_order)
    }
    return {
        "error": info.error_code.name,
        "version": info.version,
        "commonly_supported_version": info.commonly_supported_version,
        "partitions": None if partitions is None else _partitions(sorted(partitions)),
        "active_tasks": active,
        "standby_tasks": {
            str(task): _partitions(sorted(info.standby_tasks[task]))
            for task in sorted(info.standby_tasks, key=task_order)
        },
        "partitions_by_host": _host_map(info.partitions_by_host),
        "standby_partitions_by_host": _host_map(info.standby_partitions_by_host),
        "next_rebalance_ms": (
            None if info.next_rebalance_ms == NO_FOLLOWUP_REBALANCE else info.next_rebalance_ms
        ),
    }


def host_map_json(host_map: Mapping[HostInfo, frozenset[TopicPartition]]) -> JsonDict:
    """A host map as ``{"host:port": ["topic-p", ...]}``, hosts and partitions sorted."""
    return _host_map(host_map)


def assignment_json(
    info: AssignmentInfo, partitions: Sequence[TopicPartition] | None = None
) -> JsonDict:
    """:func:`assignment_view` for ``decode``, plus what the bytes hold as they are: the active
    task list (one entry per assigned partition, in order), the raw error code, and the
    follow-up in words."""
    if info.next_rebalance_ms == NO_FOLLOWUP_REBALANCE:
        next_rebalance = "none"
    elif info.next_rebalance_ms == 0:
        next_rebalance = "immediately"
    else:
        next_rebalance = f"at {info.next_rebalance_ms} ms since the epoch"
    return {
        "kind": "assignment",
        **assignment_view(info, partitions),
        "active_task_list": [str(task) for task in info.active_tasks],
        # False: the maps hold only this member's own endpoint (version 4, a large group)
        "host_maps_complete": info.host_maps_complete,
        "error_code": int(info.error_code),
        "next_rebalance": next_rebalance,
    }


def _error_name(code: int) -> str:
    """The ``AssignorError`` name of a code, which a newer build may have added."""
    try:
        return AssignorError(code).name
    except ValueError:
        return f"unknown to this build ({code})"


def header_json(kind: str, header: VersionHeader, reader_latest: int) -> JsonDict:
    second = "latest_supported_version" if kind == "subscription" else "commonly_supported_version"
    code = header.error_code
    known: JsonDict = {} if code is None else {"error_code": code, "error": _error_name(code)}
    return {
        "kind": kind,
        "version": header.version,
        second: header.latest_supported_version,
        **known,
        "newer_than_supported": True,
        "note": (
            f"version {header.version} is newer than this build reads (up to "
            f"{reader_latest}); only the header is known. A leader answers such a member at a "
            "version both can read (version probing)."
        ),
    }


def message_json(
    kind: str,
    message: SubscriptionInfo | AssignmentInfo | VersionHeader,
    reader_latest: int,
    partitions: Sequence[TopicPartition] | None = None,
) -> JsonDict:
    """``partitions``: an assignment's, from its envelope (None for bare user data)."""
    if isinstance(message, SubscriptionInfo):
        return subscription_json(message)
    if isinstance(message, AssignmentInfo):
        return assignment_json(message, partitions)
    return header_json(kind, message, reader_latest)
