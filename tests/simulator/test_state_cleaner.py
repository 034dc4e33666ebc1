"""Kafka Streams' state directory cleaner in the state model (``simulator.state_cleaner``):
a running process deletes a task's local state once no thread held it for
``state.cleanup.delay.ms``, at runs one delay apart from its start; a held task, a stopped
process and a wiped disk are left alone."""

from __future__ import annotations

import tomllib

from protocol.ids import TaskId
from simulator.scenarios import StateDynamics
from simulator.state import StateModel

T0, T1 = TaskId(0, 0), TaskId(0, 1)
#: 100 s between cleaner runs; no writes, so positions stay where they are
DYNAMICS = StateDynamics(write_rate=0.0, restore_rate=1000.0, standby_trail=0.0,
                         initial_records=1000, state_cleanup_delay_ms=100_000)


def held_then_released(at: float) -> StateModel:
    """Process ``a`` starts at 0 holding T0 and T1 on one thread, and lets T1 go at ``at``."""
    state = StateModel(DYNAMICS, (T0, T1), (T0, T1))
    state.add_process("a", {T0: 0, T1: 0})
    state.assign("a", 0, [T0, T1], [])
    state.advance(at)
    state.assign("a", 0, [T0], [])
    return state


def test_the_default_delay_is_kafkas_and_the_toml_name_is_kafkas() -> None:
    assert StateDynamics().state_cleanup_delay_ms == 600_000
    parsed = tomllib.loads('"state.cleanup.delay.ms" = 5000')
    assert StateDynamics.model_validate(parsed).state_cleanup_delay_ms == 5000


def test_a_released_task_is_deleted_at_the_first_run_a_delay_after_its_release() -> None:
    state = held_then_released(at=10.0)
    state.advance(199.0)  # runs at 100 (10 + 100 not passed yet) and none since
    assert state.offset_sums("a") == {T0: 1000, T1: 1000}
    state.advance(200.0)  # the run at 200 > 10 + 100
    assert state.offset_sums("a") == {T0: 1000}
    assert state.position("a", T1) is None
    # T1 assigned again restores from nothing, not from the deleted position
    state.assign("a", 0, [T0, T1], [])
    assert state.position("a", T1) == 0.0


def test_a_task_another_thread_still_holds_is_not_released() -> None:
    state = StateModel(DYNAMICS, (T0, T1), (T0, T1))
    state.add_process("a", {T0: 0, T1: 0})
    state.assign("a", 0, [T0], [T1])
    state.assign("a", 1, [T1], [])
    state.assign("a", 0, [T0], [])  # thread 0 drops its standby; thread 1 runs T1
    state.advance(1000.0)
    assert state.offset_sums("a") == {T0: 1000, T1: 1000}


def test_a_crashed_process_cleans_nothing_until_it_runs_again() -> None:
    state = held_then_released(at=10.0)
    state.advance(150.0)
    state.crash("a")  # nothing deleted yet: the run at 100 was too early for T1
    state.advance(1000.0)
    assert state.position("a", T0) == 1000.0 and state.position("a", T1) == 1000.0
    state.assign("a", 0, [T0], [])  # restarted at 1000: runs at 1100, 1200...
    state.advance(1099.0)
    assert state.position("a", T1) == 1000.0
    state.advance(1100.0)  # the first run of the new incarnation: T1 released at 10 (before)
    assert state.position("a", T1) is None
    assert state.position("a", T0) == 1000.0


def test_the_state_of_a_task_left_by_the_crash_counts_from_the_crash() -> None:
    state = StateModel(DYNAMICS, (T0,), (T0,))
    state.add_process("a", {T0: 0})
    state.assign("a", 0, [T0], [])
    state.advance(50.0)
    state.crash("a")  # T0 last written at 50
    state.advance(60.0)
    state.stop("a")  # the new incarnation's first join: its cleaner starts at 60
    state.advance(159.0)
    assert state.position("a", T0) == 1000.0  # run at 160 not yet
    state.advance(160.0)  # 160 > 50 + 100
    assert state.position("a", T0) is None
