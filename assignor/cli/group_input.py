"""A group described as JSON data -> the pipeline's inputs (for ``python -m assignor assign``).

A rebalance is easier to discuss, reproduce and test from a file than from a live group, so the
command line reads one. The form (every key but ``topology``, ``partition_counts`` and
``members`` optional)::

    {
      "topology": {...},                          # assignor.topology.data_form's form
      "partition_counts": {"orders": 4},          # cluster metadata: topic -> partitions
      "changelog_end_offsets": {"store-changelog-0": 120} | {"store-changelog": {"0": 120}}
                               | null,            # absent/null: unknown -> fallback assignor
      "config": {"num.standby.replicas": 1},      # Kafka Streams' names
      "now_ms": 0,
      "leader": "member-a" | "<process uuid>" | 7,
      "leader_version": 3,                        # the leader build's latest codec version
      "members": {
        "member-a": {"user_data_hex": "94..."},
        "member-b": {"topics": ["orders"],
                     "subscription": {"process_id": "<uuid>" | 7, "endpoint": "host:9090",
                                      "task_offset_sums": {"0_1": 123}, "version": 3,
                                      "latest_supported_version": 3, "client_tags": {},
                                      "rack_id": null, "error_code": 0,
                                      "group_instance_id": null, "unique_field": 0}}
      }
    }

An integer process id ``n`` stands for ``UUID(0, n)`` (Kafka's test helper). Every problem raises
:class:`GroupInputError` naming the JSON path of the first bad value, so the user can fix it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from assignor.config import AssignorConfig, UnknownConfigError
from assignor.leader.model import GroupInput, MemberSubscription
from assignor.topology.data_form import topology_from_data
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology, TopologyError
from assignor.topology.tasks import plan_tasks
from protocol.codec import DEFAULT_CODEC, LATEST_VERSION, SUPPORTED_VERSIONS, Codec
from protocol.errors import AssignorError, ProtocolError
from protocol.ids import INT32_MAX, INT64_MAX, HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import SubscriptionInfo

_TOP_KEYS = frozenset(
    {
        "topology",
        "partition_counts",
        "changelog_end_offsets",
        "config",
        "now_ms",
        "leader",
        "leader_version",
        "members",
    }
)
_MEMBER_KEYS = frozenset({"user_data_hex", "subscription", "topics"})
_SUBSCRIPTION_KEYS = frozenset(
    {
        "process_id",
        "endpoint",
        "task_offset_sums",
        "version",
        "latest_supported_version",
        "client_tags",
        "rack_id",
        "error_code",
        "group_instance_id",
        "unique_field",
    }
)


class GroupInputError(ValueError):
    """A group description that cannot be used; ``path`` is where in the JSON it went wrong."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """Everything ``assign_group`` needs, read from one file."""

    topology: Topology
    config: AssignorConfig
    group: GroupInput
    codec: Codec


def read_group_json(text: str) -> GroupDescription:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GroupInputError("$", f"not valid JSON: {exc}") from exc
    return read_group(data)


def read_group(data: Any) -> GroupDescription:
    """Validate the plain form (see the module) and build the pipeline's inputs."""
    top = _object(data, "$", _TOP_KEYS)
    for key in ("topology", "partition_counts", "members"):
        if key not in top:
            raise GroupInputError("$", f"missing required field {key!r}")
    try:
        topology = topology_from_data(top["topology"])
    except TopologyError as exc:
        raise GroupInputError("topology", str(exc)) from exc
    counts = _partition_counts(top["partition_counts"])
    end_offsets = _end_offsets(top.get("changelog_end_offsets"))
    config = _config(top.get("config", {}))
    now_ms = _integer(top.get("now_ms", 0), "now_ms", 0, INT64_MAX)
    leader_version = _integer(
        top.get("leader_version", LATEST_VERSION), "leader_version", 1, LATEST_VERSION
    )
    members = _members(top["members"])
    leader = _leader(top.get("leader"), members)
    group = GroupInput(
        members=members,
        partition_counts=counts,
        changelog_end_offsets=end_offsets,
        now_ms=now_ms,
        leader_process_id=leader,
    )
    return GroupDescription(topology, config, group, Codec(leader_version))


def unknown_reported_tasks(description: GroupDescription) -> dict[str, list[TaskId]]:
    """Per member, the tasks it reports offset sums for that the topology does not have.

    The leader ignores such sums (as Kafka does), which is right for state left over from an
    older topology but usually a mistake in a hand-written file; the command line warns.
    Members whose user data does not decode, and topologies that cannot be sized, are left to
    the leader, which reports them properly.
    """
    sized = size_internal_topics(description.topology, description.group.partition_counts)
    if not isinstance(sized, InternalTopics):
        return {}
    known = set(plan_tasks(description.topology, sized.source_partitions).tasks)
    found: dict[str, list[TaskId]] = {}
    for member_id, member in sorted(description.group.members.items()):
        try:
            decoded = description.codec.decode_subscription(member.user_data)
        except ProtocolError:
            continue
        if isinstance(decoded, SubscriptionInfo):
            unknown = [t for t in decoded.task_offset_sums if t not in known]
            if unknown:
                found[member_id] = sorted(unknown, key=str)
    return found


# --- pieces ----------------------------------------------------------------------------------


def _partition_counts(raw: Any) -> dict[str, int]:
    counts = _object(raw, "partition_counts", None)
    result = {}
    for topic, count in counts.items():
        where = f"partition_counts[{topic!r}]"
        _topic_name(topic, where)
        result[topic] = _integer(count, where, 1, INT32_MAX)
    return result


def _end_offsets(raw: Any) -> dict[TopicPartition, int] | None:
    """``"topic-3": offset`` entries, or ``"topic": {"3": offset}`` nested ones, or null."""
    if raw is None:
        return None
    entries = _object(raw, "changelog_end_offsets", None)
    result: dict[TopicPartition, int] = {}
    for key, value in entries.items():
        where = f"changelog_end_offsets[{key!r}]"
        if isinstance(value, Mapping):
            _topic_name(key, where)
            for partition, offset in value.items():
                inner = f"{where}[{partition!r}]"
                if not isinstance(partition, str) or not partition.isdigit():
                    raise GroupInputError(inner, "a partition number must be a decimal string")
                number = _integer(int(partition), inner, 0, INT32_MAX)
                result[TopicPartition(key, number)] = _integer(offset, inner, 0, INT64_MAX)
            continue
        topic, sep, partition = key.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise GroupInputError(
                where, "key must be '<topic>-<partition>' or a topic mapping to {partition: offset}"
            )
        tp = TopicPartition(topic, _integer(int(partition), where, 0, INT32_MAX))
        result[tp] = _integer(value, where, 0, INT64_MAX)
    return result


def _config(raw: Any) -> AssignorConfig:
    entries = _object(raw, "config", None)
    try:
        return AssignorConfig.model_validate(dict(entries))
    except ValidationError as exc:
        first = exc.errors()[0]
        cause = first.get("ctx", {}).get("error")
        if isinstance(cause, UnknownConfigError):
            location = cause.name
        else:
            location = ".".join(str(part) for part in first["loc"])
        raise GroupInputError(f"config[{location!r}]", first["msg"]) from exc


def _members(raw: Any) -> dict[str, MemberSubscription]:
    entries = _object(raw, "members", None)
    if not entries:
        raise GroupInputError("members", "a group has at least one member")
    result = {}
    for member_id, value in entries.items():
        where = f"members[{member_id!r}]"
        if not member_id:
            raise GroupInputError(where, "a member id must be a non-empty string")
        result[member_id] = _member(value, where)
    return result


def _member(raw: Any, where: str) -> MemberSubscription:
    entry = _object(raw, where, _MEMBER_KEYS)
    topics_raw = entry.get("topics", [])
    if not isinstance(topics_raw, list):
        raise GroupInputError(f"{where}.topics", "must be a list of topic names")
    topics = tuple(_topic_name(t, f"{where}.topics[{i}]") for i, t in enumerate(topics_raw))
    has_hex, has_sub = "user_data_hex" in entry, "subscription" in entry
    if has_hex == has_sub:
        raise GroupInputError(where, "give exactly one of 'user_data_hex' and 'subscription'")
    if has_hex:
        text = entry["user_data_hex"]
        if not isinstance(text, str):
            raise GroupInputError(f"{where}.user_data_hex", "must be a string of hex digits")
        try:
            return MemberSubscription(topics, bytes.fromhex(text))
        except ValueError as exc:
            raise GroupInputError(f"{where}.user_data_hex", f"not hex: {exc}") from exc
    info = _subscription(entry["subscription"], f"{where}.subscription")
    return MemberSubscription(topics, DEFAULT_CODEC.encode_subscription(info))


def _subscription(raw: Any, where: str) -> SubscriptionInfo:
    entry = _object(raw, where, _SUBSCRIPTION_KEYS)
    if "process_id" not in entry:
        raise GroupInputError(where, "missing required field 'process_id'")
    version = _integer(entry.get("version", LATEST_VERSION), f"{where}.version", 1, LATEST_VERSION)
    latest = _integer(
        entry.get("latest_supported_version", version),
        f"{where}.latest_supported_version",
        version,
        max(SUPPORTED_VERSIONS),
    )
    endpoint = entry.get("endpoint")
    if endpoint is not None:
        if not isinstance(endpoint, str):
            raise GroupInputError(f"{where}.endpoint", "must be 'host:port' or null")
        try:
            endpoint = HostInfo.parse(endpoint)
        except ValueError as exc:
            raise GroupInputError(f"{where}.endpoint", str(exc)) from exc
    sums = {}
    for task, offset in _object(
        entry.get("task_offset_sums", {}), f"{where}.task_offset_sums", None
    ).items():
        at = f"{where}.task_offset_sums[{task!r}]"
        try:
            task_id = TaskId.parse(task)
        except ValueError as exc:
            raise GroupInputError(at, str(exc)) from exc
        sums[task_id] = _integer(offset, at, -3, INT64_MAX)
    code = entry.get("error_code", 0)
    try:
        error = AssignorError[code] if isinstance(code, str) else AssignorError(code)
    except (KeyError, ValueError) as exc:
        names = ", ".join(e.name for e in AssignorError)
        raise GroupInputError(
            f"{where}.error_code", f"{code!r} is not one of {names} (or their numbers)"
        ) from exc
    fields = {
        "version": version,
        "latest_supported_version": latest,
        "process_id": _process_id(entry["process_id"], f"{where}.process_id"),
        "user_endpoint": endpoint,
        "task_offset_sums": sums,
        "error_code": error,
        "client_tags": entry.get("client_tags", {}),
        "rack_id": entry.get("rack_id"),
        "group_instance_id": entry.get("group_instance_id"),
        "unique_field": entry.get("unique_field", 0),
    }
    try:
        return SubscriptionInfo.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise GroupInputError(f"{where}.{field}", first["msg"]) from exc


def _leader(raw: Any, members: Mapping[str, MemberSubscription]) -> ProcessId | None:
    """A member id (its process is looked up) or a process id."""
    if raw is None:
        return None
    if isinstance(raw, str) and raw in members:
        try:
            decoded = DEFAULT_CODEC.decode_subscription(members[raw].user_data)
        except ProtocolError as exc:
            raise GroupInputError("leader", f"member {raw!r} has unreadable user data") from exc
        if not isinstance(decoded, SubscriptionInfo):
            raise GroupInputError("leader", f"member {raw!r} sent a future version")
        return decoded.process_id
    return _process_id(raw, "leader")


def _process_id(raw: Any, where: str) -> ProcessId:
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw <= INT64_MAX:
        return ProcessId.for_int(raw)
    if isinstance(raw, str):
        try:
            return ProcessId(uuid.UUID(raw))
        except ValueError:
            pass
    raise GroupInputError(
        where, f"{raw!r} is neither a UUID string nor a non-negative integer (UUID(0, n))"
    )


# --- checks ----------------------------------------------------------------------------------


def _object(raw: Any, where: str, allowed: frozenset[str] | None) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise GroupInputError(where, f"must be an object, not {_json_type(raw)}")
    if allowed is not None:
        unknown = sorted(str(k) for k in raw if k not in allowed)
        if unknown:
            raise GroupInputError(
                where,
                f"unknown field(s) {', '.join(unknown)}; expected some of "
                f"{', '.join(sorted(allowed))}",
            )
    return raw


def _integer(raw: Any, where: str, low: int, high: int) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise GroupInputError(where, f"must be an integer, not {_json_type(raw)}")
    if not low <= raw <= high:
        raise GroupInputError(where, f"{raw} is out of range [{low}, {high}]")
    return raw


def _topic_name(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw or len(raw) > 249:
        raise GroupInputError(where, "a topic name is a string of 1 to 249 characters")
    return raw


def _json_type(raw: Any) -> str:
    return {
        type(None): "null",
        bool: "a boolean",
        str: "a string",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "an object",
    }.get(type(raw), type(raw).__name__)


__all__ = ["GroupDescription", "GroupInputError", "read_group", "read_group_json"]
