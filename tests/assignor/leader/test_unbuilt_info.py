"""A one-task member's result carries its ``AssignmentInfo`` unbuilt until someone reads it.

The encode step writes such answers from their fields alone (``AnswerWriter.one_task``) and
hands back results whose model is built on first read. Whoever reads ``info`` must get exactly
the model the bytes carry, and the results must behave as plain ``MemberResult`` values.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Sequence
from typing import Any

import pytest

from assignor import TopologyBuilder
from assignor.config import AssignorConfig
from assignor.leader import encode
from assignor.leader.model import (
    MemberResult,
    _UnbuiltInfoResult,
    member_result,
    store_one_task_results,
    unbuilt_info_result,
)
from assignor.leader.one_task_members import answer_one_task_members
from assignor.leader.pipeline import assign_group
from protocol.codec import LATEST_VERSION, Codec
from protocol.ids import HostInfo, TaskId, TopicPartition
from protocol.messages import AssignmentInfo
from tests.assignor.leader.pipeline_support import decoded, group, shop, subscription

STANDBY = AssignorConfig.model_validate({"num.standby.replicas": 1})


def _many_threads(build: int = 3) -> dict[str, bytes]:
    """Three processes of six consumers over the shop's nine tasks: most busy consumers hold
    one task, as at 1,000 threads per client."""
    return {
        f"{p}-{c}": subscription(p, build=build, endpoint=HostInfo(f"app-{p}", 9000 + p))
        for p in (1, 2, 3)
        for c in range(6)
    }


def test_the_unbuilt_model_is_the_one_the_bytes_carry() -> None:
    result = assign_group(shop(), STANDBY, group(_many_threads(), leader=1))
    unbuilt = [m for m, r in result.members.items() if isinstance(r, _UnbuiltInfoResult)]
    assert unbuilt, "no one-task member took the writer's path from fields"
    codec = Codec()
    for member in unbuilt:
        info = result.members[member].info
        assert info == decoded(result, member, codec)
        assert result.members[member].info is info  # built once, the same at every read
        assert len(info.active_tasks) + len(info.standby_tasks) == 1


def test_members_of_one_task_answered_together_match_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the host maps' budget (each member its own endpoint's entry, as at 1,000 threads
    per client) the busy members of one task each are answered together per process
    (``assignor.leader.one_task_members``): the same bytes, partitions and models as each
    written on its own, and as the codec writes them."""
    monkeypatch.setattr(encode, "GROUP_HOST_MAPS_BUDGET_BYTES", 100)
    answered: list[str] = []

    def spied(ids: list[str], *args: Any) -> Sequence[str]:
        rest = answer_one_task_members(ids, *args)
        answered.extend(m for m in ids if m not in rest)
        return rest

    monkeypatch.setattr(encode, "answer_one_task_members", spied)
    together = assign_group(shop(), STANDBY, group(_many_threads(LATEST_VERSION), leader=1))
    assert answered, "no member of one task was answered together"
    monkeypatch.setattr(encode, "answer_one_task_members", lambda ids, *_: ids)
    alone = assign_group(shop(), STANDBY, group(_many_threads(LATEST_VERSION), leader=1))
    assert together.members.keys() == alone.members.keys()
    codec = Codec()
    for member, result in together.members.items():
        other = alone.members[member]
        assert result.user_data == other.user_data
        assert result.partitions == other.partitions
        assert result.info == other.info == decoded(together, member, codec)
        assert not result.info.host_maps_complete


def _values() -> tuple[AssignmentInfo, dict[str, object]]:
    info = AssignmentInfo(
        version=10,
        commonly_supported_version=10,
        active_tasks=(TaskId(0, 1),),
        partitions_by_host={HostInfo("h", 1): frozenset({TopicPartition("t", 1)})},
    )
    return info, dict(info.__dict__)


def test_equal_to_the_plain_result_both_ways_and_through_copies() -> None:
    info, fields = _values()
    parts = (TopicPartition("t", 1),)
    lazy = unbuilt_info_result(
        parts, fields, info.active_tasks, info.standby_tasks, b"x", None
    )
    plain = MemberResult(parts, info, b"x")
    assert lazy == plain and plain == lazy
    assert lazy != MemberResult(parts, info, b"y") and MemberResult(parts, info, b"y") != lazy
    for again in (copy.copy(lazy), copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
        assert again == plain and again.info == info


def test_unread_results_compare_by_their_fields() -> None:
    info, fields = _values()
    other = info.model_copy(update={"active_tasks": (TaskId(0, 2),)})
    lazy = unbuilt_info_result((), fields, info.active_tasks, info.standby_tasks, b"x", None)
    assert lazy != MemberResult((), other, b"x")
    assert lazy.info == info


def test_the_members_own_tasks_replace_those_of_the_shared_fields() -> None:
    """The encoder hands every busy member of an endpoint the same fields and the member's own
    tasks: the model is built from the member's tasks, and the shared fields stay as they were."""
    info, fields = _values()
    mine = info.model_copy(update={"active_tasks": (TaskId(0, 2),)})
    lazy = unbuilt_info_result((), fields, (TaskId(0, 2),), {}, b"x", None)
    assert lazy.info == mine and lazy.info != info
    assert fields == dict(info.__dict__)


def test_a_member_of_many_standbys_reads_the_model_its_bytes_carry() -> None:
    """A member of several standby tasks is written from the plan's packed entries, its map
    of standby tasks made only when its model is read: the same model the bytes carry."""
    builder = TopologyBuilder("app")
    builder.add_source("source", "events")
    builder.add_processor("count", "source").add_state_store("counts", "count")
    members = {
        f"{p}-0": subscription(p, endpoint=HostInfo(f"app-{p}", 9000 + p)) for p in (1, 2, 3)
    }
    result = assign_group(
        builder.build(), STANDBY, group(members, counts={"events": 12}, end_offsets=None)
    )
    codec = Codec()
    late = [r for r in result.members.values() if isinstance(r, _UnbuiltInfoResult)]
    assert late, "no member of many standbys took the path from packed entries"
    for member, answer in result.members.items():
        info = answer.info
        assert len(info.standby_tasks) > 1
        assert info == decoded(result, member, codec)
        assert answer.info is info
        assert codec.encode_assignment(info, version=result.used_version) == answer.user_data


def test_results_built_fast_are_frozen_instances_of_their_own_class() -> None:
    """The hot paths fill results through a writable twin of each class (plain slot stores),
    then hand them over as the frozen class itself: the same type, values and refusals of
    change as the constructor's."""
    info, fields = _values()
    parts = (TopicPartition("t", 1),)
    results: dict[str, MemberResult] = {}
    store_one_task_results(results, fields, [("a", TaskId(0, 1), parts)], [b"x"], standby=False)
    store_one_task_results(results, fields, [("s", TaskId(0, 1), parts)], [b"y"], standby=True)
    made = [
        results["a"],
        results["s"],
        unbuilt_info_result(parts, fields, info.active_tasks, {}, b"x", None),
        member_result(parts, info, b"x", None),
    ]
    assert [type(r) for r in made] == [_UnbuiltInfoResult] * 3 + [MemberResult]
    assert results["a"] == MemberResult(parts, info, b"x") == made[2] == made[3]
    standby_info = info.model_copy(
        update={"active_tasks": (), "standby_tasks": {TaskId(0, 1): parts}}
    )
    assert results["s"] == MemberResult((), standby_info, b"y")
    for result in made:
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.user_data = b"changed"  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            del result.partitions
        assert result.user_data in (b"x", b"y")
