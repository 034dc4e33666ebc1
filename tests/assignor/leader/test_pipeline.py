"""The leader's pipeline, outcome by outcome, from subscription bytes to assignment bytes."""

from __future__ import annotations

import logging

import pytest

from assignor.config import AssignorConfig
from assignor.leader.decode import FUTURE_PROCESS_ID
from assignor.leader.pipeline import assign_group
from assignor.member import interpret_assignment
from assignor.topology.data_form import topology_from_data
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import LATEST_OFFSET, NO_FOLLOWUP_REBALANCE
from tests.assignor.leader.pipeline_support import (
    CHANGELOG,
    SHOP_COUNTS,
    check_served,
    decoded,
    group,
    shop,
    shop_end_offsets,
    subscription,
)

CONFIG = AssignorConfig()
STANDBY = AssignorConfig.model_validate({"num.standby.replicas": 1})
H1, H2, H3 = HostInfo("app-1", 9001), HostInfo("app-2", 9002), HostInfo("app-3", 9003)


def pid(n: int) -> ProcessId:
    return ProcessId.for_int(n)


def three_processes(**sums: dict[str, int]) -> dict[str, bytes]:
    """Processes 1..3 with two consumers each; ``sums`` maps a member to its offset sums."""
    hosts = {1: H1, 2: H2, 3: H3}
    return {
        f"{p}-{c}": subscription(p, endpoint=hosts[p], sums=sums.get(f"m{p}{c}"))
        for p in (1, 2, 3)
        for c in (1, 2)
    }


def served(result, members, *, builds=None, used=None):  # type: ignore[no-untyped-def]
    builds = builds or dict.fromkeys(members, 3)
    check_served(
        result,
        process_of=result_process_of(members),
        builds=builds,
        used=used or builds,
        endpoints={m: getattr(_read(d), "user_endpoint", None) for m, d in members.items()},
    )


def _read(data: bytes):  # type: ignore[no-untyped-def]
    return Codec().decode_subscription(data)


def result_process_of(members: dict[str, bytes]) -> dict[str, ProcessId]:
    return {m: getattr(_read(d), "process_id", FUTURE_PROCESS_ID) for m, d in members.items()}


# --- a normal rebalance ----------------------------------------------------------------------


def test_every_task_active_once_with_standbys_off_the_active_process() -> None:
    members = three_processes()
    result = assign_group(shop(), STANDBY, group(members, leader=1))
    served(result, members)
    assert result.assignor == "high_availability"
    layout = result.layout
    assert layout is not None
    assert len(layout.tasks) == 4 + 3 + 2
    standbys = [t for r in result.members.values() for t in r.info.standby_tasks]
    assert sorted(standbys) == sorted(layout.stateful), "one standby per stateful task"


def test_previous_active_owners_keep_their_caught_up_tasks() -> None:
    members = three_processes(m11={"1_0": LATEST_OFFSET}, m21={"1_1": 995}, m31={"1_2": 1000})
    result = assign_group(shop(), CONFIG, group(members))
    served(result, members)
    owner = {t: m for m, r in result.members.items() for t in r.info.active_tasks}
    assert owner[TaskId(1, 0)].startswith("1-")
    assert owner[TaskId(1, 1)].startswith("2-")
    assert owner[TaskId(1, 2)].startswith("3-")
    assert result.followup == ""
    assert all(r.info.next_rebalance_ms == NO_FOLLOWUP_REBALANCE for r in result.members.values())


def test_host_maps_list_only_members_with_an_endpoint_and_their_partitions() -> None:
    members = {
        "a": subscription(1, endpoint=H1),
        "b": subscription(1, endpoint=H1),
        "c": subscription(2),
        "d": subscription(3, endpoint=H3),
    }
    result = assign_group(shop(), STANDBY, group(members))
    served(result, members)
    hosts = result.members["a"].info.partitions_by_host
    assert set(hosts) == {H1, H3}
    assert hosts[H1] == set(result.members["a"].partitions) | set(result.members["b"].partitions)
    assert hosts[H3] == set(result.members["d"].partitions)
    standby_hosts = result.members["a"].info.standby_partitions_by_host
    assert standby_hosts[H3] == {
        tp for parts in result.members["d"].info.standby_tasks.values() for tp in parts
    }
    assert all(r.info.partitions_by_host == hosts for r in result.members.values())


def test_a_member_with_its_endpoint_in_the_map_is_not_asked_to_rejoin() -> None:
    members = three_processes()
    result = assign_group(shop(), CONFIG, group(members))
    info = decoded(result, "2-1", Codec())
    decision = interpret_assignment(
        info,
        result.members["2-1"].partitions,
        used_version=3,
        latest_supported_version=3,
        endpoint=H2,
        previous=None,
    )
    assert decision.rebalance_at_ms is None


# --- probing and follow-ups ------------------------------------------------------------------


def _lagging_group(leader: int | None) -> dict[str, bytes]:
    # only process 3 holds state of 1_0 .. 1_2 (caught up); the balanced plan moves tasks to 1
    # and 2, which are 50,000 records behind, so warm-ups go there and a probe is scheduled
    return {
        "1-1": subscription(1),
        "1-2": subscription(1),
        "2-1": subscription(2),
        "3-1": subscription(3, sums={"1_0": LATEST_OFFSET, "1_1": LATEST_OFFSET, "1_2": 49_990}),
    }


FAR = shop_end_offsets(50_000, 50_000, 50_000)


@pytest.mark.parametrize(("leader", "carrier"), [(2, "2-1"), (1, "1-1"), (None, "1-1")])
def test_probing_rebalance_is_carried_by_the_leader_process_first_consumer(
    leader: int | None, carrier: str
) -> None:
    members = _lagging_group(leader)
    result = assign_group(
        shop(), CONFIG, group(members, now_ms=5_000, leader=leader, end_offsets=FAR)
    )
    served(result, members)
    assert result.task_assignment is not None and result.task_assignment.probing_rebalance_needed
    assert any(result.task_assignment.warmups.values())
    deadlines = {
        m: r.info.next_rebalance_ms
        for m, r in result.members.items()
        if r.info.next_rebalance_ms != NO_FOLLOWUP_REBALANCE
    }
    assert deadlines == {carrier: 5_000 + CONFIG.probing_rebalance_interval_ms}
    assert "probing" in result.followup
    decision = interpret_assignment(
        decoded(result, carrier, Codec()),
        result.members[carrier].partitions,
        used_version=3,
        latest_supported_version=3,
        endpoint=None,
        previous=None,
    )
    assert decision.rebalance_at_ms == 5_000 + CONFIG.probing_rebalance_interval_ms


@pytest.mark.parametrize(
    "end_offsets",
    [None, {TopicPartition(CHANGELOG, 0): 10, TopicPartition(CHANGELOG, 1): 10}],
    ids=["unknown", "one-partition-missing"],
)
def test_unknown_end_offsets_fall_back_to_prior_owners_and_probe(
    end_offsets: dict[TopicPartition, int] | None, caplog: pytest.LogCaptureFixture
) -> None:
    members = three_processes(m21={"1_0": LATEST_OFFSET}, m12={"1_2": LATEST_OFFSET})
    with caplog.at_level(logging.WARNING, logger="assignor.leader.pipeline"):
        result = assign_group(shop(), CONFIG, group(members, end_offsets=end_offsets, leader=3))
    served(result, members)
    assert result.assignor == "fallback_prior"
    owner = {t: m for m, r in result.members.items() for t in r.info.active_tasks}
    assert owner[TaskId(1, 0)].startswith("2-")
    assert owner[TaskId(1, 2)].startswith("1-")
    deadlines = [m for m, r in result.members.items() if r.info.next_rebalance_ms != 2**63 - 1]
    assert deadlines == ["3-1"]
    assert "Failed to fetch end offsets" in caplog.text


def test_legacy_sticky_is_used_when_configured_even_without_lags() -> None:
    config = AssignorConfig.model_validate({"internal.task.assignor.class": "StickyTaskAssignor"})
    members = three_processes()
    result = assign_group(shop(), config, group(members, end_offsets=None))
    served(result, members)
    assert result.assignor == "legacy_sticky"


# --- outcomes for the whole group ------------------------------------------------------------


def _all_errors(result, code: AssignorError) -> None:  # type: ignore[no-untyped-def]
    assert result.error is code
    for member, r in result.members.items():
        assert r.partitions == ()
        info = decoded(result, member, Codec())
        assert info.error_code is code
        assert info.active_tasks == () and dict(info.standby_tasks) == {}


def test_shutdown_requested_by_one_member_reaches_every_member() -> None:
    members = three_processes()
    members["2-2"] = subscription(2, endpoint=H2, error=AssignorError.SHUTDOWN_REQUESTED)
    result = assign_group(shop(), CONFIG, group(members))
    _all_errors(result, AssignorError.SHUTDOWN_REQUESTED)
    assert "2-2" in result.detail
    assert set(result.members) == set(members)
    decision = interpret_assignment(
        decoded(result, "1-1", Codec()),
        (),
        used_version=3,
        latest_supported_version=3,
        endpoint=H1,
        previous=None,
    )
    assert decision.assignment.error is AssignorError.SHUTDOWN_REQUESTED


def test_missing_source_topic_is_an_error_assignment_naming_the_topic() -> None:
    counts = {t: n for t, n in SHOP_COUNTS.items() if t != "users"}
    result = assign_group(shop(), CONFIG, group(three_processes(), counts=counts))
    _all_errors(result, AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA)
    assert "users" in result.detail


@pytest.mark.parametrize("actual", [None, 2])
def test_missing_or_missized_repartition_topic_asks_for_a_retry(actual: int | None) -> None:
    counts = dict(SHOP_COUNTS)
    del counts["shop-by-user-repartition"]
    if actual is not None:
        counts["shop-by-user-repartition"] = actual
    result = assign_group(shop(), CONFIG, group(three_processes(), counts=counts, now_ms=7))
    _all_errors(result, AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA)
    assert "shop-by-user-repartition" in result.detail
    retry = 7 + CONFIG.probing_rebalance_interval_ms // 10
    assert {r.info.next_rebalance_ms for r in result.members.values()} == {retry}
    decision = interpret_assignment(
        decoded(result, "1-1", Codec()),
        (),
        used_version=3,
        latest_supported_version=3,
        endpoint=H1,
        previous=None,
    )
    assert decision.rebalance_at_ms == retry


def test_copartition_mismatch_of_external_topics_is_an_assignment_error() -> None:
    # Kafka enforces copartition groups only in a topology with repartition topics
    data = {
        "application_id": "join",
        "subtopologies": [
            {"id": 0, "source_topics": ["orders"], "sink_topics": ["join-rep"]},
            {"id": 1, "source_topics": ["join-rep", "left", "right"]},
        ],
        "repartition_topics": {"join-rep": None},
        "copartition_groups": [["left", "right"]],
    }
    counts = {"orders": 2, "left": 2, "right": 3, "join-rep": 3}
    result = assign_group(
        topology_from_data(data), CONFIG, group({"a": subscription(1)}, counts=counts)
    )
    _all_errors(result, AssignorError.ASSIGNMENT_ERROR)
    assert "Topics not co-partitioned" in result.detail and "left=2, right=3" in result.detail


# --- members that cannot be read -------------------------------------------------------------


def test_a_garbage_member_gets_its_own_error_while_the_rest_are_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    members = three_processes()
    members["zz-garbage"] = b"\x00not msgpack at all"
    with caplog.at_level(logging.ERROR, logger="assignor.leader.pipeline"):
        result = assign_group(shop(), CONFIG, group(members))
    assert set(result.rejected) == {"zz-garbage"}
    assert "zz-garbage" in caplog.text
    rest = {m: d for m, d in members.items() if m != "zz-garbage"}
    served(result, rest)
    # the rejected member's error is readable by the oldest build
    info = decoded(result, "zz-garbage", Codec(1))
    assert info.error_code is AssignorError.ASSIGNMENT_ERROR
    assert result.members["zz-garbage"].partitions == ()


def test_a_group_of_only_garbage_is_an_assignment_error_for_everyone() -> None:
    members = {"a": b"", "b": b"\xff\xff"}
    result = assign_group(shop(), CONFIG, group(members))
    assert result.error is AssignorError.ASSIGNMENT_ERROR
    assert set(result.rejected) == {"a", "b"}
    for member in members:
        assert decoded(result, member, Codec(1)).error_code is AssignorError.ASSIGNMENT_ERROR


def test_an_assignor_crash_becomes_an_assignment_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import assignor.leader.pipeline as pipeline

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("bug in the assignor")

    monkeypatch.setattr(pipeline, "run_task_assignor", boom)
    result = assign_group(shop(), CONFIG, group(three_processes()))
    _all_errors(result, AssignorError.ASSIGNMENT_ERROR)
    assert "bug in the assignor" in result.detail


# --- version probing -------------------------------------------------------------------------


def test_old_build_in_the_group_makes_everyone_use_its_version() -> None:
    members = {
        "new-1": subscription(1),
        "new-2": subscription(2),
        "old-1": subscription(3, build=1),
    }
    builds = {"new-1": 3, "new-2": 3, "old-1": 1}
    result = assign_group(shop(), STANDBY, group(members))
    assert (result.used_version, result.commonly_supported_version) == (1, 1)
    served(result, members, builds=builds)
    # new members were on 3 and got 1 back: they downgrade to 1 and rejoin at once
    decision = interpret_assignment(
        decoded(result, "new-1", Codec()),
        result.members["new-1"].partitions,
        used_version=3,
        latest_supported_version=3,
        endpoint=None,
        previous=None,
    )
    assert (decision.next_used_version, decision.rebalance_at_ms) == (1, 0)


def test_an_old_leader_serves_future_members_at_its_own_version() -> None:
    members = {"a": subscription(1), "b": subscription(2), "c": subscription(3, build=2)}
    leader = Codec(2)
    result = assign_group(shop(), CONFIG, group(members), leader)
    assert (result.used_version, result.commonly_supported_version) == (2, 2)
    # the two future members form Kafka's FUTURE client and still receive tasks
    process_of = {"a": FUTURE_PROCESS_ID, "b": FUTURE_PROCESS_ID, "c": pid(3)}
    check_served(
        result,
        process_of=process_of,
        builds={"a": 3, "b": 3, "c": 2},
        used={"a": 3, "b": 3, "c": 2},
    )
    assert result.followup
    decision = interpret_assignment(
        decoded(result, "a", Codec()),
        result.members["a"].partitions,
        used_version=3,
        latest_supported_version=3,
        endpoint=None,
        previous=None,
    )
    assert (decision.next_used_version, decision.rebalance_at_ms) == (2, 0)


def test_a_rolling_upgrade_converges_on_the_newest_version() -> None:
    """Three processes upgraded from build 1 to build 3 one at a time, each rebalance replayed
    on each member's side; the group ends stable on version 3 with every task served."""
    builds = {1: 1, 2: 1, 3: 1}
    used = dict(builds)
    rounds = 0
    for upgrade in (None, 1, 2, 3):
        if upgrade is not None:
            builds[upgrade] = used[upgrade] = 3  # the restarted process sends its newest version
        for _ in range(4):  # bounded: a correct group settles in at most two rebalances
            rounds += 1
            members = {
                f"{p}-{c}": subscription(p, build=builds[p], version=used[p])
                for p in builds
                for c in (1, 2)
            }
            # the leader is whichever build the coordinator picked: take the oldest
            leader = Codec(min(builds.values()))
            result = assign_group(shop(), STANDBY, group(members), leader)
            member_builds = {m: builds[int(m[0])] for m in members}
            member_used = {m: used[int(m[0])] for m in members}
            process_of = {
                m: pid(int(m[0]))
                if member_used[m] <= leader.latest_supported
                else FUTURE_PROCESS_ID
                for m in members
            }
            check_served(result, process_of=process_of, builds=member_builds, used=member_used)
            changed = False
            for p in builds:
                info = decoded(result, f"{p}-1", Codec(builds[p]))
                decision = interpret_assignment(
                    info,
                    result.members[f"{p}-1"].partitions,
                    used_version=used[p],
                    latest_supported_version=builds[p],
                    endpoint=None,
                    previous=None,
                )
                if decision.next_used_version != used[p]:
                    used[p] = decision.next_used_version
                    changed = True
                    assert decision.rebalance_at_ms == 0
            if not changed:
                break
        else:
            pytest.fail(f"no stable version after upgrading {upgrade}: used {used}")
    assert used == {1: 3, 2: 3, 3: 3}
    assert result.used_version == result.commonly_supported_version == 3
    assert rounds <= 10


def test_end_offsets_helper_builds_each_changelog_partition() -> None:
    # a guard on the fixture itself: the shop topology logs exactly these partitions
    layout = assign_group(shop(), CONFIG, group(three_processes())).layout
    assert layout is not None
    logged = {tp for parts in layout.changelogs.values() for tp in parts}
    assert logged == set(shop_end_offsets())


def test_a_huge_probing_interval_saturates_instead_of_writing_an_unreadable_deadline() -> None:
    config = AssignorConfig.model_validate({"probing.rebalance.interval.ms": 2**63 - 1})
    members = _lagging_group(None)
    result = assign_group(shop(), config, group(members, now_ms=1_700_000_000_000, end_offsets=FAR))
    assert result.task_assignment is not None and result.task_assignment.probing_rebalance_needed
    for member in members:
        assert decoded(result, member, Codec()).next_rebalance_ms == NO_FOLLOWUP_REBALANCE


class _RefusingCodec(Codec):
    """A codec that cannot write a normal assignment (as one over the payload limit)."""

    def encode_assignment(self, info, version=None):  # type: ignore[no-untyped-def]
        if info.error_code is AssignorError.NONE:
            raise ValueError("the encoded message takes 17000000 bytes, over the limit")
        return super().encode_assignment(info, version)


def test_an_assignment_that_cannot_be_encoded_is_an_error_not_an_exception() -> None:
    result = assign_group(shop(), CONFIG, group(three_processes()), _RefusingCodec())
    _all_errors(result, AssignorError.ASSIGNMENT_ERROR)
    assert "over the limit" in result.detail
