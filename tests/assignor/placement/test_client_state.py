"""ClientState, its construction from member reports, and Kafka's lag rules."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor.placement.client_state import (
    ClientState,
    ConsumerReport,
    build_client_state,
    prev_tasks_by_lag,
)
from assignor.placement.lags import (
    LONG_MAX,
    TaskLags,
    compute_task_lags,
    end_offset_sum,
    is_caught_up,
    task_lag,
    unknown_end_offset_sums,
)
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from protocol.messages import SubscriptionInfo

T00, T01, T02, T10 = TaskId(0, 0), TaskId(0, 1), TaskId(0, 2), TaskId(1, 0)
PID = ProcessId.for_int(1)


# --- lags --------------------------------------------------------------------------------------


def test_lag_rules() -> None:
    assert task_lag(-2, 500) == -2  # running active: caught up whatever the end
    assert task_lag(-3, 500) == -3  # unknown position
    assert task_lag(0, 500) == 500  # no local state: the whole changelog
    assert task_lag(200, 500) == 300
    assert task_lag(700, 500) == 500  # beyond the end: corrupt, restore from scratch
    assert task_lag(0, -3) == -3  # end offsets unknown
    assert task_lag(10, -3) == -3


def test_end_offset_sum_saturates_like_java() -> None:
    assert end_offset_sum([1, 2, 3]) == 6
    assert end_offset_sum([LONG_MAX, 1, 5]) == LONG_MAX
    assert end_offset_sum([LONG_MAX - 1, 1]) == LONG_MAX
    assert end_offset_sum([]) == 0
    with pytest.raises(ValueError, match="negative"):
        end_offset_sum([-1])


def test_unknown_end_offsets_make_every_lag_unknown_except_running_tasks() -> None:
    end = unknown_end_offset_sums([T00, T01])
    lags = compute_task_lags({T00: -2, T01: 40}, end)
    assert lags == {T00: -2, T01: -3}


def test_caught_up() -> None:
    assert is_caught_up(-2, 0)
    assert not is_caught_up(-3, 10_000)  # unknown is not caught up ...
    assert is_caught_up(10_000, 10_000)
    assert not is_caught_up(10_001, 10_000)
    assert is_caught_up(10**15, LONG_MAX)  # ... but an unbounded lag accepts everyone


offset_sums = st.dictionaries(
    st.sampled_from([T00, T01, T02, T10]),
    st.one_of(st.sampled_from([-2, -3]), st.integers(0, 2**40)),
)
end_sums = st.dictionaries(
    st.sampled_from([T00, T01, T02, T10]),
    st.one_of(st.just(-3), st.integers(0, 2**40), st.just(LONG_MAX)),
)


@given(offset_sums, end_sums)
def test_sparse_lag_view_equals_kafkas_dense_lags(
    offsets: dict[TaskId, int], ends: dict[TaskId, int]
) -> None:
    view = TaskLags(offsets, ends)
    assert dict(view) == compute_task_lags(offsets, ends)
    assert set(view) == set(ends)
    for task in ends:
        assert task in view
    assert TaskId(9, 9) not in view


# --- ClientState -------------------------------------------------------------------------------


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        ClientState(PID, capacity=0)


def test_a_task_cannot_be_active_and_standby() -> None:
    with pytest.raises(ValueError, match="both as active and as standby"):
        ClientState(PID, capacity=1, active=frozenset({T00}), standby=frozenset({T00}))


def test_loads_are_per_thread_doubles() -> None:
    state = ClientState(PID, capacity=3).with_assignment([T00, T01], [T02])
    assert state.active_load == 2 / 3
    assert state.assigned_load == 1.0
    assert state.assigned_count == 3
    assert state.without_assignment().assigned == frozenset()


def test_build_from_reports_follows_kafkas_bookkeeping() -> None:
    tp = TopicPartition
    task_for_partition = {tp("in", 0): T00, tp("in", 1): T01, tp("in", 2): T02, tp("s", 0): T10}
    end = {T00: 100, T01: 100, T02: 100}  # T10 is stateless
    state = build_client_state(
        PID,
        [
            ConsumerReport("c-2", {T01: 40, T02: -2}, (tp("s", 0),)),
            ConsumerReport("c-1", {T00: 90}, (tp("in", 0),)),
        ],
        task_for_partition,
        end,
        client_tags={"zone": "a"},
    )
    assert state.capacity == 2
    assert state.consumers == ("c-1", "c-2")
    # owned partitions -> previous actives (also the stateless T10); -2 -> previous active
    assert state.previous_active == {T00, T02, T10}
    assert state.previous_standby == {T01}
    assert state.previous_active_by_consumer == {"c-1": {T00}, "c-2": {T10}}
    assert dict(state.task_lags) == {T00: 10, T01: 60, T02: -2}
    assert state.is_stateful(T00) and not state.is_stateful(T10)
    assert state.prev_tasks_by_lag("c-2") == (T02, T01)
    assert state.prev_tasks_by_lag("unknown") == ()
    assert state.previous_owner_of(tp("s", 0)) == "c-2"
    assert state.client_tags == {"zone": "a"}


def test_later_consumer_wins_and_unknown_partitions_are_dropped() -> None:
    tp = TopicPartition
    state = build_client_state(
        PID,
        [ConsumerReport("a", {T00: 5}, (tp("x", 9),)), ConsumerReport("b", {T00: -2})],
        {tp("in", 0): T00},
        {T00: 10},
        known_tasks_only=True,
    )
    assert state.lag_for(T00) == -2
    assert state.owned_partitions == {}
    with pytest.raises(KeyError, match="no lag for task 1_0"):
        state.lag_for(T10)


def test_report_from_subscription() -> None:
    info = SubscriptionInfo(
        version=3, latest_supported_version=3, process_id=PID, task_offset_sums={T00: -2}
    )
    report = ConsumerReport.from_subscription("c", info, [TopicPartition("in", 0)])
    assert report.task_offset_sums == {T00: -2}
    assert tuple(report.owned_partitions) == (TopicPartition("in", 0),)


def test_a_client_needs_a_consumer() -> None:
    with pytest.raises(ValueError, match="no consumers"):
        build_client_state(PID, [], {}, {})


# --- a thread's previous tasks by lag ---------------------------------------------------------

_SUMS = st.one_of(
    st.sampled_from([-3, -2, -1, 0]),  # the sentinels, and a sum no member should send
    st.integers(min_value=0, max_value=120),  # within, at or beyond the end (corrupt)
)


@given(
    data=st.data(),
    named=st.booleans(),
    tasks=st.sets(st.tuples(st.integers(0, 3), st.integers(0, 40)), max_size=30),
)
def test_previous_tasks_by_lag_equals_the_sort_by_lag_and_task(
    data: st.DataObject, named: bool, tasks: set[tuple[int, int]]
) -> None:
    """``prev_tasks_by_lag`` on a ``TaskLags`` view (lags computed in C, sorted by rank) gives
    the order of the plain sort by (lag, ``TaskId`` order) on the same lags as a dict: with
    sentinels, corrupt sums, ties of lag, tasks no longer stateful and named tasks (which take
    the general path). Hypothesis found the sentinel fix-up necessary: without it a -2 sorts
    as a lag of end + 2."""
    ids = [TaskId(s, p, topology="t" if named and p % 2 else None) for s, p in sorted(tasks)]
    if named and {t.topology for t in ids} == {None, "t"}:
        ids = [t for t in ids if t.topology is None]  # Kafka cannot order a mix: neither do we
    ends = {t: data.draw(st.integers(0, 100)) for t in ids if data.draw(st.booleans())}
    sums = {t: data.draw(_SUMS) for t in ids if data.draw(st.booleans())}
    previous = frozenset(t for t in ids if data.draw(st.booleans()))
    view = TaskLags(sums, ends)
    expected = sorted((t for t in previous if t in ends), key=lambda t: (dict(view)[t], t.sort_key))
    assert prev_tasks_by_lag(previous, view) == tuple(expected)
    assert prev_tasks_by_lag(previous, dict(view)) == tuple(expected)


def test_with_assignment_equals_dataclasses_replace() -> None:
    """The constructor call with every field read at once gives ``replace``'s state, field
    for field (lags, consumers, tags, host, previous tasks kept), and still refuses a task
    both active and standby."""
    base = ClientState(
        PID,
        capacity=2,
        consumers=("c1", "c2"),
        previous_active=frozenset([T00]),
        previous_standby=frozenset([T01]),
        task_lags={T00: 0, T01: 5},
        previous_tasks_by_consumer={"c1": frozenset([T00])},
        client_tags={"zone": "a"},
        host_info=HostInfo("h", 1),
        rack="r1",
        active=frozenset([T02]),
    )
    for active, standby in (([T00, T01], [T02]), ([], []), ([T02], [])):
        ours = base.with_assignment(active, standby)
        theirs = replace(base, active=frozenset(active), standby=frozenset(standby))
        assert ours == theirs
        kept = [f.name for f in fields(ClientState) if f.name not in ("active", "standby")]
        assert all(getattr(ours, name) is getattr(base, name) for name in kept)
    with pytest.raises(ValueError, match="both as active and as standby"):
        base.with_assignment([T00], [T00])
