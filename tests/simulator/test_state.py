"""The state model: restore, catch-up, growth, standby trail, wipe, pauses; pure over time."""

from __future__ import annotations

import random

import pytest

from protocol.ids import TaskId, TopicPartition
from simulator.scenarios import StateDynamics
from simulator.state import StateModel

T0, T1, T2 = TaskId(0, 0), TaskId(0, 1), TaskId(0, 2)
DYNAMICS = StateDynamics(write_rate=10.0, restore_rate=100.0, standby_trail=5.0,
                         initial_records=1000)


def model(tasks: tuple[TaskId, ...] = (T0, T1), stateful: tuple[TaskId, ...] | None = None
          ) -> StateModel:
    return StateModel(DYNAMICS, tasks, tasks if stateful is None else stateful)


def test_a_caught_up_active_processes_and_grows_its_changelog() -> None:
    state = model((T0,))
    state.add_process("a", {T0: 0})
    state.assign("a", 0, [T0], [])
    state.advance(10.0)
    assert state.end[T0] == pytest.approx(1100.0)
    assert state.disk["a"][T0] == pytest.approx(1100.0)
    assert state.unavailable_s[T0] == 0.0
    assert state.offset_sums("a") == {T0: 1100}


def test_a_new_active_restores_at_the_thread_rate_shared_and_is_unavailable_meanwhile() -> None:
    state = model()
    state.add_process("a")
    state.assign("a", 0, [T0, T1], [])
    assert state.next_change_in() == pytest.approx(20.0)  # 1000 records each at 50/s
    state.advance(10.0)
    assert state.disk["a"][T0] == pytest.approx(500.0)
    assert state.end[T0] == 1000.0  # a restoring task writes nothing
    state.advance(30.0)
    # caught up at 20 s, then processing for 10 s
    assert state.unavailable_s[T0] == pytest.approx(20.0)
    assert state.end[T0] == pytest.approx(1100.0)
    assert state.restored == pytest.approx(2000.0)


def test_two_threads_restore_in_parallel() -> None:
    state = model()
    state.add_process("a")
    state.assign("a", 0, [T0], [])
    state.assign("a", 1, [T1], [])
    state.advance(10.0)
    assert state.all_available()
    assert state.unavailable_s == {T0: pytest.approx(10.0), T1: pytest.approx(10.0)}


def test_restore_resumes_from_the_local_position() -> None:
    state = model((T0,))
    state.add_process("a", {T0: 300})
    state.assign("a", 0, [T0], [])
    assert state.next_change_in() == pytest.approx(3.0)


def test_a_standby_trails_the_active_and_a_stopped_thread_does_nothing() -> None:
    state = model((T0,))
    state.add_process("a", {T0: 0})
    state.add_process("b")
    state.assign("a", 0, [T0], [])
    state.assign("b", 0, [], [T0])
    state.advance(100.0)
    assert state.end[T0] == pytest.approx(2000.0)
    assert state.disk["b"][T0] == pytest.approx(1995.0)
    state.stop("b")
    state.advance(110.0)
    assert state.disk["b"][T0] == pytest.approx(1995.0)
    state.stop("a")
    state.advance(120.0)
    assert state.end[T0] == pytest.approx(2100.0)  # stopped at 110 s
    assert state.unavailable_s[T0] == pytest.approx(10.0)


def test_a_crash_keeps_the_disk_a_wipe_loses_it() -> None:
    state = model((T0,))
    state.add_process("a", {T0: 0})
    state.assign("a", 0, [T0], [])
    state.crash("a")
    assert state.offset_sums("a") == {T0: 1000}
    assert not state.available()
    state.crash("a", wipe=True)
    assert state.offset_sums("a") == {}


def test_stateless_tasks_are_available_whenever_owned() -> None:
    state = model((T0, T2), stateful=(T0,))
    state.add_process("a")
    state.assign("a", 0, [T2], [])
    state.advance(5.0)
    assert state.unavailable_s[T2] == 0.0
    assert state.unavailable_s[T0] == pytest.approx(5.0)


def test_advancing_in_small_steps_equals_one_step() -> None:
    def run(steps: int) -> StateModel:
        state = model((T0, T1, T2))
        state.add_process("a", {T0: 0, T1: 0})
        state.add_process("b")
        state.assign("a", 0, [T0, T1], [T2])
        state.assign("b", 0, [T2], [T0, T1])
        for i in range(1, steps + 1):
            state.advance(40.0 * i / steps)
        return state

    one, many = run(1), run(400)
    for task in (T0, T1, T2):
        assert many.end[task] == pytest.approx(one.end[task])
        assert many.unavailable_s[task] == pytest.approx(one.unavailable_s[task])
        for process in ("a", "b"):
            assert many.disk[process][task] == pytest.approx(one.disk[process][task])


def test_end_offsets_split_a_task_over_its_changelog_partitions_exactly() -> None:
    state = StateModel(DYNAMICS.model_copy(update={"initial_records": 1001}), (T0,), (T0,))
    parts = (TopicPartition("c1", 0), TopicPartition("c2", 0), TopicPartition("c3", 0))
    offsets = state.end_offsets({T0: parts})
    assert sum(offsets.values()) == 1001
    assert set(offsets) == set(parts)



def test_a_settled_process_keeps_only_what_its_threads_were_first_assigned() -> None:
    state = model((T0, T1, T2))
    state.add_process("a", {T0: 0, T1: 0, T2: 0}, settle_threads=2)
    assert set(state.offset_sums("a")) == {T0, T1, T2}
    state.assign("a", 0, [T0], [])
    assert set(state.disk["a"]) == {T0, T1, T2}  # thread 1 not assigned yet
    state.assign("a", 1, [], [T1])
    assert set(state.disk["a"]) == {T0, T1}
    assert state.disk["a"][T0] == pytest.approx(1000.0)  # current, nothing to restore
    state.assign("a", 0, [T2], [])  # later assignments no longer trim
    assert set(state.disk["a"]) == {T0, T1, T2}


def test_a_settled_process_that_crashes_first_keeps_its_whole_disk() -> None:
    state = model((T0, T1))
    state.add_process("a", {T0: 0, T1: 0}, settle_threads=1)
    state.crash("a")
    state.assign("a", 0, [T0], [])
    assert set(state.disk["a"]) == {T0, T1}


def test_family_groups_start_settled_under_their_own_assignor() -> None:
    from simulator.engine import replay
    from simulator.families import generate

    scenario = generate("crash_recover", {"processes": 4, "threads": 2, "partitions": 8}, 7)
    assert {spec.initial_state for spec in scenario.processes} == {"settled"}
    first = replay(scenario).rebalances[0]
    # every client caught up on every task: the balanced assignment at once, no warm-up
    assert first.warmups == 0 and first.followup == "" and first.restore_records == 0


def test_assigned_tasks_are_found_by_rank_by_name_and_without_a_kept_rank() -> None:
    """A thread's tasks are looked up by their kept int rank when every one has it, else by
    the ``TaskId`` itself: unnamed, named, rank-less copies and unknown tasks, from lists and
    one-shot iterators, all end up as the same sorted indices."""
    named = TaskId(0, 1, topology="shop")
    tasks = (T0, T1, T2, named)
    state = model(tasks)
    state.add_process("a")
    copy = T2.model_copy()
    object.__delattr__(copy, "_rank")  # a copy keeps its keys: this one drops its rank
    unknown = TaskId(5, 5)
    cases: list[tuple[list[TaskId], tuple[int, ...]]] = [
        ([T2, T0], (0, 2)),
        ([named, T1], (1, 3)),
        ([copy, T1, unknown], (1, 2)),
        ([unknown], ()),
    ]
    for given, indices in cases:
        for form in (list, iter):
            state.assign("a", 0, form(given), form([]))
            assert state._threads["a"][0].active == indices


def test_a_task_processed_on_two_processes_grows_once_and_both_stores_follow() -> None:
    state = model()
    state.add_process("a", {T0: 0, T1: 0})
    state.add_process("b", {T0: 0})
    state.assign("a", 0, [T0, T1], [])
    state.assign("b", 0, [T0], [])  # a violation: T0 active twice
    state.advance(10.0)
    assert state.end == {T0: 1100.0, T1: 1100.0}
    assert state.disk == {"a": {T0: 1100.0, T1: 1100.0}, "b": {T0: 1100.0}}


def test_a_standby_at_or_past_the_trail_stays_and_replays_nothing() -> None:
    state = model((T0,))
    state.add_process("a")  # nothing on disk: its active restores, the end stands still
    state.add_process("b", {T0: 0})  # a store at the end, past end - trail
    state.assign("a", 0, [T0], [])
    state.assign("b", 0, [], [T0])
    state.advance(5.0)
    assert state.disk["b"][T0] == 1000.0
    assert state.standby_replayed == 0.0
    state.advance(15.0)  # caught up at 10 s, then 5 s of growth: the standby trails again
    assert state.disk["b"][T0] == 1045.0
    assert state.standby_replayed == 45.0


@pytest.mark.parametrize("seed", range(8))
def test_owner_counts_kept_across_changes_match_a_fresh_count(seed: int) -> None:
    """The scan keeps, per task, how many processes process it, adjusting only the parts of
    processes touched since the last scan; after any sequence of assignments, stops, crashes
    (disk kept or wiped) and advances, the tasks it finds without a processing owner, and
    whether some task has two, are those a fresh count over every running thread finds."""
    rng = random.Random(seed)
    tasks = (T0, T1, T2, TaskId(1, 0))
    state = model(tasks, stateful=tasks[:3])  # 1_0 stateless
    processes = ("a", "b", "c")
    for process in processes:
        state.add_process(process, {task: rng.choice((0, 300)) for task in tasks[:3]})
    now = 0.0
    for _ in range(60):
        process, thread = rng.choice(processes), rng.randrange(2)
        action = rng.randrange(4)
        if action == 0:
            state.assign(process, thread, rng.sample(tasks, rng.randrange(3)),
                         rng.sample(tasks, rng.randrange(2)))
        elif action == 1:
            state.stop(process, rng.choice((None, thread)))
        elif action == 2:
            state.crash(process, wipe=rng.random() < 0.3)
        else:
            now += rng.choice((0.5, 2.0, 7.0))
            state.advance(now)
        processed: dict[TaskId, int] = {}
        for owner, threads in state._threads.items():
            for tt in threads.values():
                for i in tt.active if tt.running else ():
                    if state.caught_up(owner, state.tasks[i]):
                        processed[state.tasks[i]] = processed.get(state.tasks[i], 0) + 1
        assert state.available() == set(processed)
        assert state.all_available() == (len(processed) == len(tasks))
        assert state._scan().twice == any(count > 1 for count in processed.values())


def test_tasks_added_later_are_unowned_until_a_thread_processes_them() -> None:
    state = model((T0,))
    state.add_process("a", {T0: 0})
    state.assign("a", 0, [T0], [])
    state.advance(1.0)
    assert state.all_available()
    state.add_tasks([T0, T1, T2], [T1], initial_records=1000)  # T0 known; T2 stateless
    assert state.available() == {T0}
    state.advance(2.0)
    assert state.unavailable_s == {T0: 0.0, T1: 1.0, T2: 1.0}
    state.add_process("b")
    state.assign("b", 0, [T2], [])
    assert state.available() == {T0, T2}
    state.assign("a", 0, [T0, T1], [])  # T1: 1000 records to restore, at 100 a second
    state.advance(3.0)
    assert state.available() == {T0, T2}
    state.advance(20.0)
    assert state.all_available()
    assert state.unavailable_s == {T0: 0.0, T1: 11.0, T2: 1.0}
