"""The aiokafka adapter without a broker: aiokafka's own structs, a fake cluster, real bytes.

A "rebalance" here is what aiokafka's coordinator does: every member's ``metadata()`` goes
through ConsumerProtocol encoding, one leader's ``assign()`` answers, and each member's
``on_assignment()`` receives its decoded ConsumerProtocolMemberAssignment.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from assignor import StreamsPartitionAssignor, StreamsProcess, decode_answers, derive_process_id
from assignor.config import AssignorConfig
from assignor.leader.model import GroupInput, MemberSubscription
from assignor.leader.pipeline import assign_group
from assignor.member import MemberAssignment
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.ids import ProcessId, TaskId, TopicPartition
from protocol.messages import LATEST_OFFSET, NO_FOLLOWUP_REBALANCE
from tests.integration.streams_member import join_topology

APP = "app"
REPARTITION = "app-by-region-repartition"
TOPOLOGY = join_topology(APP, "orders", "customers", REPARTITION)
COUNTS = {"orders": 4, "customers": 4, REPARTITION: 4}


def _cluster(counts: Mapping[str, int]) -> Any:
    return SimpleNamespace(
        partitions_for_topic=lambda t: set(range(counts[t])) if t in counts else None
    )


def _end_offsets(value: int = 100) -> dict[TopicPartition, int]:
    return {
        TopicPartition(f"{APP}-{store}-changelog", p): value
        for store in ("join-store", "counts")
        for p in range(4)
    }


def _rebalance(
    assignors: Mapping[str, StreamsPartitionAssignor],
    leader: str,
    counts: Mapping[str, int] = COUNTS,
    extra: Mapping[str, ConsumerProtocolMemberMetadata] | None = None,
) -> dict[str, ConsumerProtocolMemberAssignment]:
    """One generation, through aiokafka's wire encodings."""
    metadata = {
        member: ConsumerProtocolMemberMetadata.decode(
            a.metadata(sorted(a.process.source_topics)).encode()
        )
        for member, a in assignors.items()
    }
    metadata.update(extra or {})
    answers = decode_answers(assignors[leader].assign(_cluster(counts), metadata))
    assert set(answers) == set(metadata)
    decoded = {m: ConsumerProtocolMemberAssignment.decode(a.encode()) for m, a in answers.items()}
    for member, assignor in assignors.items():
        assignor.on_assignment(decoded[member])
    return decoded


def _group(
    processes: Sequence[StreamsProcess], consumers: Sequence[int]
) -> dict[str, StreamsPartitionAssignor]:
    return {
        f"m{i}-{c}": process.new_assignor()
        for i, (process, n) in enumerate(zip(processes, consumers, strict=True))
        for c in range(n)
    }


def _process(n: int, **kwargs: Any) -> StreamsProcess:
    kwargs.setdefault("config", AssignorConfig.model_validate({"num.standby.replicas": 1}))
    return StreamsProcess(TOPOLOGY, process_id=ProcessId.for_int(n), **kwargs)


def test_every_task_active_once_standbys_elsewhere_and_equal_to_the_pipeline() -> None:
    processes = [_process(i + 1) for i in range(3)]
    for process in processes:
        process.set_changelog_end_offsets(_end_offsets())
    assignors = _group(processes, [2, 2, 2])
    seen: list[tuple[int, MemberAssignment]] = []
    processes[0].add_listener(lambda a, m: seen.append((a.index, m)))

    answers = _rebalance(assignors, "m0-0")

    actives = Counter(t for a in assignors.values() for t in a.last_assignment.active_tasks)  # type: ignore[union-attr]
    assert set(actives) == {TaskId(s, p) for s in (0, 1) for p in range(4)}
    assert set(actives.values()) == {1}
    for process in processes:
        mine = [a for a in assignors.values() if a.process is process]
        active = {t for a in mine for t in a.last_assignment.active_tasks}  # type: ignore[union-attr]
        standby = {t for a in mine for t in a.last_assignment.standby_tasks}  # type: ignore[union-attr]
        assert not active & standby
    assert sorted(i for i, _ in seen) == [0, 1]

    leader = assignors["m0-0"].last_leader
    assert leader is not None and leader.result.assignor == "high_availability"
    replay = assign_group(TOPOLOGY, processes[0].config, leader.group, processes[0].codec)
    for member, answer in answers.items():
        assert answer.user_data == replay.members[member].user_data
        expected = sorted((tp.topic, tp.partition) for tp in replay.members[member].partitions)
        assert sorted((t, p) for t, ps in answer.assignment for p in ps) == expected


def test_offset_sums_are_consistent_within_a_process() -> None:
    local = {TaskId(0, p): 40 for p in range(4)} | {TaskId(1, 0): 7}
    process = _process(1, state=lambda: local)
    other = _process(2)
    assignors = _group([process, other], [2, 1])
    _rebalance(assignors, "m1-0")

    sums = {i: process.task_offset_sums(i) for i in (0, 1)}
    reported = Counter(t for s in sums.values() for t in s)
    assert set(reported.values()) == {1}, sums
    assert set(local) <= set(reported) | set().union(*process.running_tasks().values())
    for index, tasks in process.running_tasks().items():
        for task in tasks:
            assert sums[index][task] == LATEST_OFFSET
    # The next join carries exactly that.
    meta = assignors["m0-1"].metadata(sorted(TOPOLOGY.source_topics))
    info = process.codec.decode_subscription(meta.user_data)
    assert dict(info.task_offset_sums) == sums[1]  # type: ignore[union-attr]


def test_unique_field_changes_and_static_member_keeps_its_process_id() -> None:
    process = _process(1)
    assignor = process.new_assignor()
    first = process.codec.decode_subscription(assignor.metadata(["orders"]).user_data)
    second = process.codec.decode_subscription(assignor.metadata(["orders"]).user_data)
    assert first.unique_field != second.unique_field  # type: ignore[union-attr]
    assert derive_process_id(APP, "a") == derive_process_id(APP, "a")
    assert derive_process_id(APP, "a") != derive_process_id(APP, "b")
    assert derive_process_id(APP, None) != derive_process_id(APP, None)
    static = StreamsProcess(TOPOLOGY, group_instance_id="pod-3")
    sub = static.codec.decode_subscription(static.new_assignor().metadata(["orders"]).user_data)
    assert sub.process_id == derive_process_id(APP, "pod-3")  # type: ignore[union-attr]
    assert sub.group_instance_id == "pod-3-0"  # type: ignore[union-attr]


def test_garbage_member_gets_an_error_and_the_rest_are_served() -> None:
    processes = [_process(1), _process(2)]
    assignors = _group(processes, [1, 1])
    junk = ConsumerProtocolMemberMetadata(0, ["orders"], b"\x93\x01garbage")
    answers = _rebalance(assignors, "m0-0", extra={"junk": junk})
    error = Codec().decode_assignment(answers["junk"].user_data)
    assert error.error_code is AssignorError.ASSIGNMENT_ERROR
    assert answers["junk"].assignment == []
    served = [t for a in assignors.values() for t in a.last_assignment.active_tasks]  # type: ignore[union-attr]
    assert len(served) == 8


def test_shutdown_request_reaches_every_member() -> None:
    processes = [_process(1), _process(2)]
    assignors = _group(processes, [2, 1])
    _rebalance(assignors, "m0-0")
    processes[1].request_shutdown()  # unbound consumers: the flag is what travels
    _rebalance(assignors, "m0-0")
    assert {a.last_assignment.error for a in assignors.values()} == {  # type: ignore[union-attr]
        AssignorError.SHUTDOWN_REQUESTED
    }


def test_assign_never_raises() -> None:
    processes = [_process(1)]
    assignors = _group(processes, [1])
    broken = SimpleNamespace(partitions_for_topic=lambda t: 1 / 0)
    meta = ConsumerProtocolMemberMetadata(0, ["orders"], b"")
    answers = decode_answers(assignors["m0-0"].assign(broken, {"a": meta, "b": meta}))
    for answer in answers.values():
        info = Codec(1).decode_assignment(answer.user_data)
        assert info.error_code is AssignorError.ASSIGNMENT_ERROR


def test_missing_repartition_topic_is_an_error_with_a_retry() -> None:
    processes = [_process(1)]
    assignors = _group(processes, [1])
    counts = {"orders": 4, "customers": 4}
    answers = _rebalance(assignors, "m0-0", counts=counts)
    info = Codec().decode_assignment(answers["m0-0"].user_data)
    assert info.error_code is AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA
    assert info.next_rebalance_ms < NO_FOLLOWUP_REBALANCE  # type: ignore[union-attr]


def test_unknown_end_offsets_fall_back_and_ask_for_a_probing_rebalance() -> None:
    processes = [_process(1, testing_probing_interval_ms=500), _process(2)]
    assignors = _group(processes, [1, 1])
    answers = _rebalance(assignors, "m0-0")
    leader = assignors["m0-0"].last_leader
    assert leader is not None and leader.result.assignor == "fallback_prior"
    infos = {m: Codec().decode_assignment(a.user_data) for m, a in answers.items()}
    deadline = infos["m0-0"].next_rebalance_ms  # type: ignore[union-attr]
    assert deadline == leader.group.now_ms + 500
    assert infos["m1-0"].next_rebalance_ms == NO_FOLLOWUP_REBALANCE  # type: ignore[union-attr]


def test_testing_override_is_the_only_way_below_a_minute() -> None:
    with pytest.raises(ValueError):
        AssignorConfig.model_validate({"probing.rebalance.interval.ms": 500})
    with pytest.raises(ValueError):
        _process(1, testing_probing_interval_ms=0)


@pytest.mark.parametrize("old", [1, 2])
def test_rolling_upgrade_converges_on_the_newest_version(old: int) -> None:
    """Old and new builds side by side, then the old ones replaced one at a time."""
    processes = [_process(1, codec=Codec(old)), _process(2, codec=Codec(old))]
    assignors = _group(processes, [1, 1])
    _rebalance(assignors, "m0-0")
    newest = Codec().latest_supported
    upgraded = _process(1, codec=Codec())
    assignors["m0-0"] = upgraded.new_assignor()
    for _ in range(2):  # a new member on an old group: served at the old version, no error
        _rebalance(assignors, "m1-0")
        assert assignors["m0-0"].last_assignment.error is AssignorError.NONE  # type: ignore[union-attr]
        assert assignors["m0-0"].used_version == old
    assignors["m1-0"] = _process(2, codec=Codec()).new_assignor()
    _rebalance(assignors, "m0-0")  # everyone supports the newest now: told so, rejoin
    assert {a.used_version for a in assignors.values()} == {newest}
    _rebalance(assignors, "m0-0")
    assert {a.last_info.version for a in assignors.values()} == {newest}  # type: ignore[union-attr]
    tasks = Counter(t for a in assignors.values() for t in a.last_assignment.active_tasks)  # type: ignore[union-attr]
    assert len(tasks) == 8 and set(tasks.values()) == {1}


def test_a_newer_member_led_by_an_older_leader_downgrades() -> None:
    old, new = _process(1, codec=Codec(2)), _process(2, codec=Codec())
    assignors = _group([old, new], [1, 1])
    _rebalance(assignors, "m0-0")
    assert assignors["m1-0"].used_version == 2
    assert assignors["m1-0"].last_followup_reason  # it rejoins at the common version
    _rebalance(assignors, "m0-0")
    assert assignors["m1-0"].last_assignment.error is AssignorError.NONE  # type: ignore[union-attr]
    assert len(assignors["m1-0"].last_assignment.active_tasks) > 0  # type: ignore[union-attr]


def test_kept_tasks_are_reported_across_an_eager_rebalance() -> None:
    processes = [_process(1), _process(2)]
    for process in processes:
        process.set_changelog_end_offsets(_end_offsets())
    assignors = _group(processes, [1, 1])
    _rebalance(assignors, "m0-0")
    before = dict(assignors["m0-0"].last_assignment.active_tasks)  # type: ignore[union-attr]
    _rebalance(assignors, "m0-0")
    after = assignors["m0-0"].last_assignment
    assert after is not None and after.changes.kept_active == frozenset(before)
    assert not after.changes.added_active and not after.changes.removed_active


def test_group_input_has_what_aiokafka_hides() -> None:
    process = _process(1, group_instance_id="pod-1")
    process.set_changelog_end_offsets(_end_offsets(5))
    assignor = process.new_assignor()
    meta = assignor.metadata(sorted(TOPOLOGY.source_topics))
    assignor.assign(_cluster(COUNTS), {"m": meta})
    leader = assignor.last_leader
    assert leader is not None
    group: GroupInput = leader.group
    assert group.members == {"m": MemberSubscription(tuple(meta.subscription), meta.user_data)}
    assert group.partition_counts == COUNTS
    assert group.changelog_end_offsets == _end_offsets(5)
    assert group.leader_process_id == process.process_id
    sub = process.codec.decode_subscription(meta.user_data)
    assert sub.group_instance_id == "pod-1-0"  # type: ignore[union-attr]


class _FakeCoordinator:
    def __init__(self) -> None:
        self.rejoins = 0

    def request_rejoin(self) -> None:
        self.rejoins += 1


async def test_probing_followup_makes_the_leader_process_rejoin() -> None:
    processes = [_process(1, testing_probing_interval_ms=50), _process(2)]
    assignors = _group(processes, [1, 1])
    coordinators = {m: _FakeCoordinator() for m in assignors}
    for member, assignor in assignors.items():
        assignor.bind(SimpleNamespace(_coordinator=coordinators[member]))
    _rebalance(assignors, "m0-0")  # no end offsets: fallback, probing follow-up on the leader
    assert assignors["m0-0"].followups.scheduled_at_ms is not None
    for _ in range(100):
        if coordinators["m0-0"].rejoins:
            break
        await asyncio.sleep(0.01)
    assert coordinators["m0-0"].rejoins == 1
    assert coordinators["m1-0"].rejoins == 0
    processes[0].set_changelog_end_offsets(_end_offsets())
    _rebalance(assignors, "m0-0")  # lags known, nothing to warm up: no further follow-up
    assert assignors["m0-0"].followups.scheduled_at_ms is None


async def test_end_offsets_refresh_is_shared_fresh_and_failure_means_unknown() -> None:
    calls = 0
    fail = False

    async def reader() -> Mapping[TopicPartition, int] | None:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        if fail:
            raise ConnectionError("broker gone")
        return _end_offsets(calls)

    now = [1_000]
    process = _process(1, end_offsets_reader=reader, clock_ms=lambda: now[0])
    await asyncio.gather(*(process.refresh_end_offsets() for _ in range(5)))
    assert calls == 1 and process.changelog_end_offsets == _end_offsets(1)
    await process.refresh_end_offsets()  # still fresh
    assert calls == 1
    now[0] += 5_000
    fail = True
    await process.refresh_end_offsets()
    assert calls == 2 and process.changelog_end_offsets is None


async def test_shutdown_request_rejoins_every_bound_consumer() -> None:
    process = _process(1)
    coordinators = [_FakeCoordinator(), _FakeCoordinator()]
    for coordinator in coordinators:
        process.new_assignor().bind(SimpleNamespace(_coordinator=coordinator))
    process.request_shutdown()
    assert [c.rejoins for c in coordinators] == [1, 1]


@pytest.mark.parametrize("enabled_before", [True, False])
@pytest.mark.parametrize("broken", [False, True])
def test_the_collector_is_held_off_during_assign_and_restored(
    enabled_before: bool, broken: bool
) -> None:
    """The leader's decision runs with automatic garbage collection off (it would scan the whole
    application's heap mid-decision); afterwards the collector is as it was, also on failure."""
    import gc

    processes = [_process(1)]
    processes[0].set_changelog_end_offsets(_end_offsets())
    assignors = _group(processes, [1])
    seen: list[bool] = []

    def partitions_for_topic(topic: str) -> set[int] | None:
        seen.append(gc.isenabled())
        if broken:
            raise RuntimeError("metadata gone")
        return set(range(COUNTS[topic])) if topic in COUNTS else None

    cluster = SimpleNamespace(partitions_for_topic=partitions_for_topic)
    meta = ConsumerProtocolMemberMetadata.decode(
        assignors["m0-0"].metadata(sorted(processes[0].source_topics)).encode()
    )
    (gc.enable if enabled_before else gc.disable)()
    try:
        answers = decode_answers(assignors["m0-0"].assign(cluster, {"m0-0": meta}))
        assert gc.isenabled() is enabled_before
    finally:
        gc.enable()
    assert seen and not any(seen)
    info = processes[0].codec.decode_assignment(answers["m0-0"].user_data)
    expected = AssignorError.ASSIGNMENT_ERROR if broken else AssignorError.NONE
    assert info.error_code == expected


def _offset_sums_by_rule(
    process: StreamsProcess, index: int, provided: Mapping[TaskId, int]
) -> dict[TaskId, int]:
    """The reporting rule spelled out task by task (``task_offset_sums``' specification)."""
    running, standby = process.running_tasks(), process.standby_tasks()
    others_active = {t for i, ts in running.items() if i != index for t in ts}
    others_standby = {t for i, ts in standby.items() if i != index for t in ts}
    own_active, own_standby = running.get(index, frozenset()), standby.get(index, frozenset())
    first = min(a.index for a in process._assignors)
    sums: dict[TaskId, int] = {}
    for task, offset_sum in provided.items():
        if task in own_active or task in others_active:
            continue
        if task in own_standby or (index == first and task not in others_standby):
            sums[task] = offset_sum
    for task in own_active:
        sums[task] = LATEST_OFFSET
    return sums


_TASK_POOL = [TaskId(s, p) for s in (0, 1) for p in range(5)]
_TASK_SETS = st.frozensets(st.sampled_from(_TASK_POOL), max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    provided=st.dictionaries(st.sampled_from(_TASK_POOL), st.integers(0, 10**6), max_size=10),
    running=st.lists(_TASK_SETS, min_size=1, max_size=3),
    standby=st.lists(_TASK_SETS, min_size=1, max_size=3),
)
def test_offset_sums_follow_the_rule_whatever_the_consumers_hold(
    provided: dict[TaskId, int], running: list[frozenset[TaskId]],
    standby: list[frozenset[TaskId]],
) -> None:
    """Overlaps included (a task active on one consumer and a standby on another, as between
    two consumers' assignments of different generations): the same sums; the first consumer's
    in the state's order (the others' order is their standbys': no order reaches the bytes,
    whose encoder sorts the sums)."""
    process = _process(1, state=lambda: provided)
    consumers = max(len(running), len(standby))
    for _ in range(consumers):
        process.new_assignor()
    process._running = dict(enumerate(running))
    process._standby = dict(enumerate(standby))
    for index in range(consumers):
        got = process.task_offset_sums(index)
        expected = _offset_sums_by_rule(process, index, provided)
        assert got == expected
        if index == 0:
            assert list(got.items()) == list(expected.items())


_HOLDINGS = st.lists(st.tuples(_TASK_SETS, _TASK_SETS), min_size=2, max_size=2)


@settings(max_examples=150, deadline=None)
@given(
    provided=st.dictionaries(st.sampled_from(_TASK_POOL), st.integers(0, 10**6), max_size=10),
    rounds=st.lists(_HOLDINGS, min_size=1, max_size=4),
)
def test_offset_sums_follow_each_round_recorded(
    provided: dict[TaskId, int], rounds: list[list[tuple[frozenset[TaskId], ...]]]
) -> None:
    """The plans kept between rounds (``_sum_plans``) never outlive a change: after every
    round of assignments recorded (some rounds equal to the one before), the rule's sums."""
    process = _process(1, state=lambda: provided)
    for _ in range(2):
        process.new_assignor()
    for holdings in [rounds[0], *rounds]:  # the first round twice: a repeated assignment
        for index, (active, standby) in enumerate(holdings):
            process._record(
                index,
                MemberAssignment(
                    active_tasks={task: () for task in sorted(active)},
                    standby_tasks={task: () for task in sorted(standby)},
                ),
            )
            for asked in range(2):  # (between two consumers' records too)
                got = process.task_offset_sums(asked)
                assert got == _offset_sums_by_rule(process, asked, provided)


def test_the_last_leader_record_is_released_once_the_answers_are_out() -> None:
    """``assign()`` keeps the record it replaces alive until the leader's own answer arrives
    (``on_assignment``): freeing the last rebalance's group and results inside ``assign()``
    would make every member wait for it (about 1.6 ms at 10,000 consumers)."""
    processes = [_process(i + 1) for i in range(2)]
    for process in processes:
        process.set_changelog_end_offsets(_end_offsets())
    assignors = _group(processes, [2, 1])
    leader = assignors["m0-0"]
    _rebalance(assignors, "m0-0")
    first = leader.last_leader
    assert first is not None and leader._retired_record is None
    metadata = {
        member: ConsumerProtocolMemberMetadata.decode(
            a.metadata(sorted(a.process.source_topics)).encode()
        )
        for member, a in assignors.items()
    }
    answers = decode_answers(leader.assign(_cluster(COUNTS), metadata))
    assert leader.last_leader is not first and leader._retired_record is first
    leader.on_assignment(ConsumerProtocolMemberAssignment.decode(answers["m0-0"].encode()))
    assert leader._retired_record is None
    leader._retired_record = first  # as if that answer never came: the next join drops it
    leader.metadata(sorted(leader.process.source_topics))
    assert leader._retired_record is None
