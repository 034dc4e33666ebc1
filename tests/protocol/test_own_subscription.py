"""``own_subscription`` builds what ``SubscriptionInfo(...)`` builds, or lets the model decide.

The builder skips pydantic's pass for plain values; each case below is built both ways and
must give equal instances (fields, mapping types, the set of given fields), or, for values the
model converts or refuses, the same converted instance or the same error.
"""

from __future__ import annotations

import uuid
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from protocol.errors import AssignorError
from protocol.ids import INT32_MAX, INT64_MAX, HostInfo, ProcessId, TaskId
from protocol.messages import SubscriptionInfo
from protocol.own_subscription import own_subscription

_PID = ProcessId(uuid.UUID(int=7))


def _fields(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "version": 4,
        "latest_supported_version": 4,
        "process_id": _PID,
        "user_endpoint": HostInfo("h", 1),
        "task_offset_sums": {TaskId(0, 1): 5, TaskId(1, 0): -2},
        "unique_field": 3,
        "error_code": AssignorError.NONE,
        "client_tags": {"rack": "a"},
        "group_instance_id": None,
    }
    fields.update(changes)
    return fields


def _entry_types(info: SubscriptionInfo) -> list[tuple[type, type]]:
    mappings = (info.task_offset_sums, info.client_tags)
    return [(type(k), type(v)) for m in mappings for k, v in m.items()]


def _same(fields: dict[str, Any]) -> SubscriptionInfo:
    """Both constructions of ``fields``: equal in every way a reader can see."""
    built = own_subscription(**fields)
    validated = SubscriptionInfo(**fields)
    assert built == validated
    assert built.__dict__ == validated.__dict__
    assert built.model_fields_set == validated.model_fields_set
    assert [type(v) for v in built.__dict__.values()] == [
        type(v) for v in validated.__dict__.values()
    ]
    assert _entry_types(built) == _entry_types(validated)
    assert built.task_offset_sums is not fields["task_offset_sums"]  # a copy, as pydantic's
    return built


@given(
    st.integers(1, INT32_MAX),
    st.integers(0, 3),
    st.dictionaries(
        st.builds(TaskId, st.integers(0, 3), st.integers(0, 50)),
        st.one_of(st.sampled_from([-3, -2, 0, INT64_MAX]), st.integers(0, 10**12)),
        max_size=30,
    ),
    st.integers(0, 255),
    st.sampled_from(list(AssignorError)),
    st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), max_size=3),
    st.one_of(st.none(), st.text(min_size=1, max_size=249)),
    st.booleans(),
)
def test_drawn_plain_values_build_the_validated_instance(
    version: int,
    newer: int,
    sums: dict[TaskId, int],
    unique: int,
    code: AssignorError,
    tags: dict[str, str],
    instance: str | None,
    proxy: bool,
) -> None:
    _same(
        _fields(
            version=version,
            latest_supported_version=min(version + newer, INT32_MAX),
            task_offset_sums=MappingProxyType(sums) if proxy else sums,
            unique_field=unique,
            error_code=code,
            client_tags=tags,
            group_instance_id=instance,
            user_endpoint=None if proxy else HostInfo("h", 1),
        )
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"task_offset_sums": {TaskId(0, 1): -1}},
        {"task_offset_sums": {TaskId(0, 1): -4}},
        {"task_offset_sums": {TaskId(0, 1): INT64_MAX + 1}},
        {"task_offset_sums": {TaskId(0, 1): "x"}},
        {"version": 0, "latest_supported_version": 0},
        {"version": 5, "latest_supported_version": 4},
        {"latest_supported_version": INT32_MAX + 1},
        {"unique_field": 256},
        {"unique_field": -1},
        {"client_tags": {"": "a"}},
        {"group_instance_id": ""},
        {"group_instance_id": "x" * 250},
        {"process_id": "not a process"},
    ],
)
def test_bad_values_raise_as_the_model_does(changes: dict[str, Any]) -> None:
    fields = _fields(**changes)
    with pytest.raises(ValidationError) as expected:
        SubscriptionInfo(**fields)
    with pytest.raises(ValidationError) as got:
        own_subscription(**fields)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize(
    "changes",
    [
        {"task_offset_sums": {TaskId(0, 1): True}},  # a bool: the model converts it
        {"task_offset_sums": {TaskId(0, 1): 5.0}},
        {"unique_field": True},
        {"client_tags": MappingProxyType({"rack": "a"})},
        {"error_code": 0},
        {"process_id": str(_PID)},
    ],
)
def test_values_the_model_converts_are_left_to_it(changes: dict[str, Any]) -> None:
    fields = _fields(**changes)
    try:
        validated = SubscriptionInfo(**fields)
    except ValidationError as exc:
        with pytest.raises(ValidationError) as got:
            own_subscription(**fields)
        assert str(got.value) == str(exc)
        return
    built = own_subscription(**fields)
    assert built == validated
    assert built.__dict__ == validated.__dict__
    assert [type(v) for v in built.__dict__.values()] == [
        type(v) for v in validated.__dict__.values()
    ]
    assert _entry_types(built) == _entry_types(validated)
