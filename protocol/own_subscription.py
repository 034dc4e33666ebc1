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

import operator
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgpack

from protocol._subscription_format import _encode_offset_sums as encode_offset_sums
from protocol._subscription_format import encode as format_encode
from protocol.errors import AssignorError
from protocol.ids import INT32_MAX, INT64_MAX, HostInfo, ProcessId, TaskId, trusted_model
from protocol.messages import (
    HEADER_ERROR_CODE_VERSION,
    NAMED_TOPOLOGY_VERSION,
    UNKNOWN_OFFSET_SUM,
    SubscriptionInfo,
)

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


class SubscriptionWriter:
    """``Codec.encode_subscription`` for one member's successive subscriptions (its joins).

    Why: a member's subscription changes from one join to the next only in its offset sums and
    its unique field; the rest (versions, error code, process id, endpoint, client tags, rack
    id, group instance id) is packed once and kept, as the bytes before and after those two
    fields, while the two are packed in one call each time. A field is taken as unchanged
    when it is the very object packed before (the tags: an equal dict of exact strings, kept
    as a copy); anything else is packed in full, and a kept layout is used only after its
    parts were checked to make up exactly the full packing. Versions 2 and later have the
    unique field right after the sums; version 1 is always packed in full.
    """

    __slots__ = (
        "_checked",
        "_encode",
        "_fields",
        "_head",
        "_named",
        "_tags",
        "_tail",
        "_version",
        "_version_to_write",
    )

    def __init__(
        self,
        encode: Callable[[SubscriptionInfo, int | None], bytes],
        version_to_write: Callable[[int | None, int], int],
        checked: Callable[[bytes], bytes],
    ) -> None:
        self._encode = encode
        self._version_to_write = version_to_write
        self._checked = checked
        self._fields: tuple[object, ...] | None = None
        self._tags: dict[str, str] = {}
        self._head = self._tail = b""
        self._version = 0
        self._named = False

    def __call__(self, info: SubscriptionInfo, version: int | None = None) -> bytes:
        version = self._version_to_write(version, info.version)
        fields = self._fields
        if (
            fields is not None
            and version == self._version
            and _same_fields(info, fields)
            and type(info.unique_field) is int
            and _same_tags(info.client_tags, self._tags)
        ):
            middle = msgpack.packb(
                [encode_offset_sums(info.task_offset_sums, named=self._named), info.unique_field],
                use_bin_type=True,
            )
            return self._checked(self._head + middle[1:] + self._tail)
        packed = self._encode(info, version)
        self._keep(info, version, packed)
        return packed

    def _keep(self, info: SubscriptionInfo, version: int, packed: bytes) -> None:
        """Split ``packed`` around the sums and the unique field, when its parts make it up."""
        self._fields = None
        if version < 2 or type(info.unique_field) is not int or not _exact_tags(info.client_tags):
            return
        items = format_encode(info, version)
        at = 6 if version >= HEADER_ERROR_CODE_VERSION else 5  # the sums' place
        pack = msgpack.Packer(use_bin_type=True)
        head = pack.pack_array_header(len(items)) + b"".join(map(pack.pack, items[:at]))
        middle = pack.pack(items[at]) + pack.pack(items[at + 1])
        tail = b"".join(map(pack.pack, items[at + 2 :]))
        if head + middle + tail != packed or items[at + 1] != info.unique_field:
            return
        self._fields = _fields(info)
        self._tags = dict(info.client_tags)
        self._head, self._tail = head, tail
        self._version = version
        self._named = version >= NAMED_TOPOLOGY_VERSION


def _fields(info: SubscriptionInfo) -> tuple[object, ...]:
    """The fields a kept layout holds, besides the client tags."""
    return (
        info.version,
        info.latest_supported_version,
        info.error_code,
        info.process_id,
        info.user_endpoint,
        info.rack_id,
        info.group_instance_id,
    )


def _same_fields(info: SubscriptionInfo, kept: tuple[object, ...]) -> bool:
    """Whether each of ``info``'s kept fields is the very object kept."""
    return all(map(operator.is_, _fields(info), kept))


def _exact_tags(tags: Mapping[str, str]) -> bool:
    """A dict of exact strings (a subclass may compare or pack its own way)."""
    return type(tags) is dict and (
        not tags or (set(map(type, tags)) == {str} and set(map(type, tags.values())) == {str})
    )


def _same_tags(tags: Mapping[str, str], kept: dict[str, str]) -> bool:
    """Equal to the kept tags, exact strings only (so packed and checked alike)."""
    return _exact_tags(tags) and tags == kept


__all__ = ["SubscriptionWriter", "own_subscription"]
