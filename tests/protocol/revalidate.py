"""Rebuild a decoded message through every validating constructor.

The decoder builds ids without pydantic validation (for speed); whatever it accepts must
nevertheless be something the validating constructors accept and reproduce exactly.
"""

from __future__ import annotations

from protocol import (
    AssignmentInfo,
    HostInfo,
    ProcessId,
    SubscriptionInfo,
    TaskId,
    TopicPartition,
    VersionHeader,
)


def _task(task: TaskId) -> TaskId:
    return TaskId(task.subtopology, task.partition, topology=task.topology)


def _tp(tp: TopicPartition) -> TopicPartition:
    return TopicPartition(tp.topic, tp.partition)


def _host(host: HostInfo) -> HostInfo:
    return HostInfo(host.host, host.port)


def revalidate(
    message: SubscriptionInfo | AssignmentInfo | VersionHeader,
) -> SubscriptionInfo | AssignmentInfo | VersionHeader:
    if isinstance(message, VersionHeader):
        return VersionHeader(
            version=message.version,
            latest_supported_version=message.latest_supported_version,
            error_code=message.error_code,
        )
    if isinstance(message, SubscriptionInfo):
        endpoint = message.user_endpoint
        return SubscriptionInfo(
            version=message.version,
            latest_supported_version=message.latest_supported_version,
            process_id=ProcessId(message.process_id.uuid),
            user_endpoint=None if endpoint is None else _host(endpoint),
            task_offset_sums={_task(t): s for t, s in message.task_offset_sums.items()},
            unique_field=message.unique_field,
            error_code=message.error_code,
            client_tags=dict(message.client_tags),
            rack_id=message.rack_id,
            group_instance_id=message.group_instance_id,
        )
    return AssignmentInfo(
        version=message.version,
        commonly_supported_version=message.commonly_supported_version,
        active_tasks=tuple(_task(t) for t in message.active_tasks),
        standby_tasks={
            _task(t): tuple(_tp(tp) for tp in tps) for t, tps in message.standby_tasks.items()
        },
        partitions_by_host={
            _host(h): frozenset(_tp(tp) for tp in tps)
            for h, tps in message.partitions_by_host.items()
        },
        standby_partitions_by_host={
            _host(h): frozenset(_tp(tp) for tp in tps)
            for h, tps in message.standby_partitions_by_host.items()
        },
        error_code=message.error_code,
        next_rebalance_ms=message.next_rebalance_ms,
        host_maps_complete=message.host_maps_complete,
    )
