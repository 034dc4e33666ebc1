"""A member's own ``SubscriptionInfo``, built without pydantic's pass when its values are plain.

Why: every consumer of every process builds its subscription at every join, and in a group of
hundreds that probes every minute pydantic's validation (a Python validator walking the offset
sums, a copy of each mapping) was about a third of the member's ``metadata()``. The values come
from the member itself (its version, its process id, the sums its state provider reports), so
they are nearly always exactly the plain types the model wants. This builder checks each value
for exactly that (exact types, the model's bounds, its cross-field rules) and then builds the
instance as pydantic would have (the same field values, copies of the mappings, the same set of
fields given). Anything else (a subclass, a float, a bool for an int, a bad value) goes to the
model's own constructor, which converts it or raises exactly as before.
``tests/protocol/test_own_subscription.py`` compares both on drawn and broken values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from protocol.errors import AssignorError
from protocol.ids import INT32_MAX, INT64_MAX, HostInfo, ProcessId, TaskId, trusted_model
from protocol.messages import UNKNOWN_OFFSET_SUM, SubscriptionInfo

#: ``types.MappingProxyType`` (a state provider's read-only view), without importing ``types``
_PROXY: Final = type(type.__dict__)
#: ``group_instance_id``'s length bound (the model's ``max_length``)
_INSTANCE_ID_CHARS: Final = 249
#: the fields a member names (all but ``rack_id``): the validated instance's ``model_fields_set``
_GIVEN: Final = frozenset(
    {
        "version",
        "latest_supported_version",
        "process_id",
        "user_endpoint",
        "task_offset_sums",
        "unique_field",
        "error_code",
        "client_tags",
        "group_instance_id",
    }
)


def _plain_sums(sums: Mapping[TaskId, int]) -> bool:
    """Every key exactly a ``TaskId``, every value exactly an int within ``OffsetSum`` and not
    -1 (the model's validator): what the model would keep unchanged."""
    if not set(map(type, sums)) <= {TaskId}:
        return False
    values = sums.values()
    if not set(map(type, values)) <= {int}:
        return False
    if not values:
        return True
    return min(values) >= UNKNOWN_OFFSET_SUM and max(values) <= INT64_MAX and -1 not in values


def _plain_tags(tags: Mapping[str, str]) -> bool:
    """Exactly str keys and values, no empty key (the model's validator)."""
    if not tags:
        return True
    return (
        set(map(type, tags)) == {str}
        and set(map(type, tags.values())) == {str}
        and "" not in tags
    )


def own_subscription(
    *,
    version: int,
    latest_supported_version: int,
    process_id: ProcessId,
    user_endpoint: HostInfo | None,
    task_offset_sums: Mapping[TaskId, int],
    unique_field: int,
    error_code: AssignorError,
    client_tags: Mapping[str, str],
    group_instance_id: str | None,
) -> SubscriptionInfo:
    """``SubscriptionInfo(...)`` of these fields (``rack_id`` left unset), equal to the model's
    own construction, which also decides (converts or raises) whenever a value is not plain."""
    if (
        type(version) is int
        and type(latest_supported_version) is int
        and 1 <= version <= latest_supported_version <= INT32_MAX
        and type(process_id) is ProcessId
        and (user_endpoint is None or type(user_endpoint) is HostInfo)
        and type(unique_field) is int
        and 0 <= unique_field <= 255
        and type(error_code) is AssignorError
        and (
            group_instance_id is None
            or (
                type(group_instance_id) is str
                and 0 < len(group_instance_id) <= _INSTANCE_ID_CHARS
            )
        )
        and type(task_offset_sums) in (dict, _PROXY)
        and _plain_sums(task_offset_sums)
        and isinstance(client_tags, Mapping)
        and _plain_tags(client_tags)
    ):
        values: dict[str, Any] = {
            "version": version,
            "latest_supported_version": latest_supported_version,
            "process_id": process_id,
            "user_endpoint": user_endpoint,
            "task_offset_sums": dict(task_offset_sums),
            "unique_field": unique_field,
            "error_code": error_code,
            "client_tags": dict(client_tags),
            "rack_id": None,
            "group_instance_id": group_instance_id,
        }
        return trusted_model(SubscriptionInfo, values, fields_set=set(_GIVEN))
    return SubscriptionInfo(
        version=version,
        latest_supported_version=latest_supported_version,
        process_id=process_id,
        user_endpoint=user_endpoint,
        task_offset_sums=task_offset_sums,
        unique_field=unique_field,
        error_code=error_code,
        client_tags=client_tags,
        group_instance_id=group_instance_id,
    )


__all__ = ["own_subscription"]
