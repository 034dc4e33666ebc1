"""``python -m assignor describe``: who runs what in a live group, from the coordinator's bytes.

The coordinator holds, for the current generation, every member's subscription and the
assignment the leader sent it (``assignor.adapter.group_description`` fetches and unwraps them).
This module decodes our bytes inside and renders them as the ``assign`` command does, with the
same field names: per member its subscription (process id, endpoint, versions, reported offset
sums) and assignment (tasks with partitions, host maps); per process the tasks it runs.

A live group does not carry the application's topology or configuration, and lags need both
the topology (which changelogs a task has) and the changelog end offsets. Given them in an
``--app`` file (``{"topology": ..., "config": ...}``, the same keys as ``assign``'s input), the
command also builds the complete ``assign`` input for this group (``--save-input``), replays
the leader's decision on it, and prints each process's lags as the leader computes them and,
with ``--explain``, why each task went where it went. The replay uses today's end offsets, not
those of the moment of the rebalance, so it can differ from the live assignment; ``replay``
says whether it does, and where.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assignor.adapter.group_description import LiveGroup, LiveMember
from assignor.cli.group_input import GroupInputError, read_group
from assignor.cli.render import member_to_data, placements_to_data
from assignor.leader.model import LeaderResult, MemberResult
from assignor.leader.pipeline import assign_group
from assignor.member import merge_host_maps
from protocol.codec import Codec
from protocol.errors import ProtocolError
from protocol.ids import TaskId, TopicPartition, task_order
from protocol.jsonview import host_map_json
from protocol.messages import AssignmentInfo, SubscriptionInfo
from protocol.task_partitions import align_active_tasks

_APP_KEYS = frozenset({"topology", "config", "leader_version"})


@dataclass(frozen=True, slots=True)
class _Decoded:
    subscription: SubscriptionInfo | None
    assignment: AssignmentInfo | None
    problems: tuple[str, ...]


def read_app_json(text: str) -> dict[str, Any]:
    """The ``--app`` file: the keys of ``assign``'s input a live group does not carry."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GroupInputError("$", f"not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise GroupInputError("$", "must be an object with 'topology' and optional 'config'")
    if "topology" not in data:
        raise GroupInputError("$", "missing required field 'topology'")
    unknown = sorted(set(data) - _APP_KEYS)
    if unknown:
        raise GroupInputError("$", f"unknown field(s) {unknown}; allowed: {sorted(_APP_KEYS)}")
    return data


def assign_input(
    group: LiveGroup, app: Mapping[str, Any], end_offsets: Mapping[TopicPartition, int] | None
) -> dict[str, Any]:
    """This live group as ``python -m assignor assign``'s input (members' bytes as hex)."""
    nested: dict[str, dict[str, int]] | None = None
    if end_offsets is not None:
        nested = {}
        for tp, offset in sorted(end_offsets.items()):
            nested.setdefault(tp.topic, {})[str(tp.partition)] = offset
    return {
        **app,
        "partition_counts": dict(sorted(group.partition_counts.items())),
        "changelog_end_offsets": nested,
        "members": {
            m.member_id: {"topics": list(m.topics), "user_data_hex": m.subscription.hex()}
            for m in sorted(group.members, key=lambda m: m.member_id)
            if not m.envelope_error
        },
    }


def describe_data(
    group: LiveGroup,
    codec: Codec,
    *,
    replay_input: Mapping[str, Any] | None = None,
    with_explain: bool = False,
) -> dict[str, Any]:
    """The group as plain data; with ``replay_input`` (see :func:`assign_input`) lags, replay
    and, if asked, the reasons."""
    decoded = {m.member_id: _decode(m, codec) for m in group.members}
    members = {
        m.member_id: _member_data(m, decoded[m.member_id])
        for m in sorted(group.members, key=lambda m: m.member_id)
    }
    data: dict[str, Any] = {
        "group": group.group_id,
        "state": group.state,
        "protocol_type": group.protocol_type,
        "protocol": group.protocol,
        "members": members,
        "processes": _processes(group, decoded),
    }
    active_hosts, standby_hosts = merge_host_maps(
        d.assignment for _, d in sorted(decoded.items()) if d.assignment is not None
    )
    data["partitions_by_host"] = host_map_json(active_hosts)
    data["standby_partitions_by_host"] = host_map_json(standby_hosts)
    if replay_input is None:
        return data
    description = read_group(dict(replay_input))
    result = assign_group(
        description.topology, description.config, description.group, description.codec
    )
    _add_lags(data["processes"], result)
    data["replay"] = _replay(result, decoded)
    if with_explain:
        data["explain"] = placements_to_data(result, description.config)
    return data


def _decode(member: LiveMember, codec: Codec) -> _Decoded:
    problems = [member.envelope_error] if member.envelope_error else []
    subscription: SubscriptionInfo | None = None
    assignment: AssignmentInfo | None = None
    if not member.envelope_error:
        try:
            read = codec.decode_subscription(member.subscription)
            if isinstance(read, SubscriptionInfo):
                subscription = read
            else:
                problems.append(
                    f"subscription version {read.version} is newer than this build reads "
                    f"({codec.latest_supported})"
                )
        except ProtocolError as exc:
            problems.append(f"subscription: {exc}")
        if member.assignment:
            try:
                answer = codec.decode_assignment(member.assignment)
                if isinstance(answer, AssignmentInfo):
                    assignment = answer
                else:
                    problems.append(
                        f"assignment version {answer.version} is newer than this build reads "
                        f"({codec.latest_supported})"
                    )
            except ProtocolError as exc:
                problems.append(f"assignment: {exc}")
    return _Decoded(subscription, assignment, tuple(problems))


def _subscription_data(info: SubscriptionInfo) -> dict[str, Any]:
    """The fields of ``assign``'s input ``subscription``, same names."""
    endpoint = info.user_endpoint
    return {
        "process_id": str(info.process_id),
        "endpoint": f"{endpoint.host}:{endpoint.port}" if endpoint else None,
        "version": info.version,
        "latest_supported_version": info.latest_supported_version,
        "task_offset_sums": {str(t): s for t, s in sorted(info.task_offset_sums.items())},
        "client_tags": dict(sorted(info.client_tags.items())),
        "rack_id": info.rack_id,
        "error_code": info.error_code.name,
        "group_instance_id": info.group_instance_id,
        "unique_field": info.unique_field,
    }


def _member_data(member: LiveMember, decoded: _Decoded) -> dict[str, Any]:
    assignment = None
    if decoded.assignment is not None:
        assignment = member_to_data(
            MemberResult(member.partitions, decoded.assignment, member.assignment)
        )
    return {
        "client_id": member.client_id,
        "client_host": member.client_host,
        "topics": list(member.topics),
        "subscription": (
            _subscription_data(decoded.subscription) if decoded.subscription else None
        ),
        "assignment": assignment,
        "problems": list(decoded.problems),
    }


def _processes(group: LiveGroup, decoded: Mapping[str, _Decoded]) -> dict[str, dict[str, Any]]:
    """Who runs what, per process (an application instance with its consumers)."""
    processes: dict[str, dict[str, Any]] = {}
    for member in sorted(group.members, key=lambda m: m.member_id):
        d = decoded[member.member_id]
        if d.subscription is None:
            continue
        pid = str(d.subscription.process_id)
        endpoint = d.subscription.user_endpoint
        entry = processes.setdefault(
            pid,
            {
                "endpoint": f"{endpoint.host}:{endpoint.port}" if endpoint else None,
                "members": [],
                "versions": [],
                "active_tasks": [],
                "standby_tasks": [],
                "reported_offset_sums": {},
            },
        )
        entry["members"].append(member.member_id)
        versions = [d.subscription.version, d.subscription.latest_supported_version]
        if versions not in entry["versions"]:
            entry["versions"].append(versions)
        for task, offset_sum in d.subscription.task_offset_sums.items():
            entry["reported_offset_sums"][str(task)] = offset_sum
        if d.assignment is not None:
            active = align_active_tasks(d.assignment.active_tasks, member.partitions) or {}
            entry["active_tasks"].extend(str(t) for t in active)
            entry["standby_tasks"].extend(str(t) for t in d.assignment.standby_tasks)
    for entry in processes.values():
        entry["active_tasks"].sort(key=_task_order)
        entry["standby_tasks"].sort(key=_task_order)
        entry["reported_offset_sums"] = dict(
            sorted(entry["reported_offset_sums"].items(), key=lambda kv: _task_order(kv[0]))
        )
    return processes


def _task_order(text: str) -> tuple[bool, bytes, int, int]:
    return task_order(TaskId.parse(text))


def _add_lags(processes: dict[str, dict[str, Any]], result: LeaderResult) -> None:
    """Each process's lag per stateful task it reported or was given, as the leader sees it
    (``-2``: running it as active, caught up; ``-3``: position unknown)."""
    for pid, client in result.clients_before.items():
        entry = processes.get(str(pid))
        if entry is None:
            continue
        tasks = set(entry["reported_offset_sums"]) | set(entry["active_tasks"]) | set(
            entry["standby_tasks"]
        )
        lags = {}
        for text in sorted(tasks, key=_task_order):
            task = TaskId.parse(text)
            if task in client.task_lags:
                lags[text] = client.task_lags[task]
        entry["lags"] = lags


def _replay(result: LeaderResult, decoded: Mapping[str, _Decoded]) -> dict[str, Any]:
    """Does the leader, asked now, give every member the tasks it holds?"""
    differences: list[str] = []
    for member_id, d in sorted(decoded.items()):
        replayed = result.members.get(member_id)
        if d.assignment is None or replayed is None:
            continue
        live = (set(d.assignment.active_tasks), set(d.assignment.standby_tasks))
        now = (set(replayed.info.active_tasks), set(replayed.info.standby_tasks))
        if live != now:
            differences.append(
                f"{member_id}: live active {_tasks(live[0])} standby {_tasks(live[1])}, "
                f"replayed active {_tasks(now[0])} standby {_tasks(now[1])}"
            )
    return {
        "error": result.error.name,
        "detail": result.detail,
        "assignor": result.assignor,
        "followup": result.followup,
        "matches_live": not differences,
        "differences": differences,
    }


def _tasks(tasks: set[TaskId]) -> list[str]:
    return [str(t) for t in sorted(tasks)]


__all__ = ["assign_input", "describe_data", "read_app_json"]
