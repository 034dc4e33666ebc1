"""``explain``: every replica explained, with reasons consistent with what the leader saw."""

from __future__ import annotations

from assignor.config import AssignorConfig
from assignor.leader.explain import explain
from assignor.leader.pipeline import assign_group
from protocol.ids import TaskId
from protocol.messages import LATEST_OFFSET
from tests.assignor.leader.pipeline_support import group, shop, shop_end_offsets, subscription

LAG_100 = AssignorConfig.model_validate({"acceptable.recovery.lag": 100, "num.standby.replicas": 1})


def test_every_replica_has_one_entry_and_warmups_match_the_assignment() -> None:
    members = {
        "a": subscription(1),
        "b": subscription(2),
        "c": subscription(3, sums={"1_0": LATEST_OFFSET, "1_1": LATEST_OFFSET, "1_2": 0}),
    }
    result = assign_group(
        shop(), LAG_100, group(members, end_offsets=shop_end_offsets(10**6, 10**6, 10**6))
    )
    placements = explain(result, LAG_100)
    assert result.task_assignment is not None and result.layout is not None
    after = result.task_assignment.clients
    expected = {(t, pid) for pid, c in after.items() for t in c.active | c.standby}
    assert {(p.task, p.process_id) for p in placements} == expected
    assert len(placements) == len(expected)
    warm = {(p.task, p.process_id) for p in placements if p.role == "warmup"}
    assert warm == {(t, pid) for pid, ts in result.task_assignment.warmups.items() for t in ts}
    assert warm, "this group needs warm-ups"
    for p in placements:
        assert p.member is not None and p.member in members


def test_no_caught_up_client_is_said_so() -> None:
    # nobody holds state of 1_2 at all: every client is 10^6 behind
    members = {"a": subscription(1, sums={"1_2": 500_000}), "b": subscription(2)}
    result = assign_group(
        shop(), LAG_100, group(members, end_offsets=shop_end_offsets(10**6, 10**6, 10**6))
    )
    reasons = {(p.task, p.role): p.reason for p in explain(result, LAG_100)}
    active = reasons[(TaskId(1, 2), "active")]
    assert active.startswith("no caught-up client (acceptable.recovery.lag 100)")


def test_an_error_result_has_nothing_to_explain() -> None:
    result = assign_group(shop(), LAG_100, group({"a": b"junk"}))
    assert explain(result, LAG_100) == []
