"""Every event kind of the timeline, replayed through the shim with the real assignor."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.engine import ReplayResult, replay
from simulator.metrics import RebalanceRow
from tests.simulator.support import small_scenario

SESSION_S = 45.0  # the scenarios' default session.timeout.ms
HEARTBEAT_S = 3.0


def run(processes: list[dict[str, Any]] | None = None, events: list[dict[str, Any]] | None = None,
        **overrides: Any) -> ReplayResult:
    result = replay(small_scenario(processes, events, **overrides))
    assert result.violations == []
    return result


def stable_after(result: ReplayResult, at: float) -> list[RebalanceRow]:
    return [r for r in result.rebalances if r.outcome == "stable" and r.started_s >= at]


def test_a_quiet_group_rebalances_once_and_converges() -> None:
    result = run()
    assert [r.generation for r in result.rebalances] == [1]
    assert result.summary.converged
    assert result.rebalances[0].processes == 2
    # nothing processed before the first assignment: the empty group's initial delay (3 s),
    # extended once by 3 s because a second member arrived during it, as Kafka does
    assert result.summary.unavailable_max_s == 6.0


def test_join_adds_the_process_to_the_group() -> None:
    result = run(
        [{"name": "a", "initial_state": "caught_up"}, {"name": "b", "initial_state": "caught_up"},
         {"name": "c", "start": False}],
        [{"kind": "join", "at": 30, "process": "c"}],
    )
    later = stable_after(result, 30)
    assert later and later[0].started_s < 31
    assert later[-1].processes == 3
    assert result.summary.balance_thread <= 1
    assert result.summary.standby_records > 0  # c warmed up before taking tasks over


def test_a_warm_up_close_to_the_end_takes_its_task_over() -> None:
    """Was a finding: the leader's end-offset snapshot came from its own join, older than the
    warm-up's subscription, so Kafka's rule (offset sum beyond the end: lag = end sum) kept the
    warm-up fully behind and probing never stopped. The leader now reads end offsets inside
    assign(), as Kafka does."""
    result = run(
        [{"name": "a", "initial_state": "caught_up"}, {"name": "b", "initial_state": "caught_up"},
         {"name": "c", "start": False}],
        [{"kind": "join", "at": 30, "process": "c"}],
    )
    assert result.summary.converged
    assert result.rebalances[-1].followup == ""
    final = result.rebalances[-1]
    assert final.processes == 3 and result.summary.balance_thread <= 1


def _join_under_write_load() -> ReplayResult:
    return run(
        [{"name": "a", "initial_state": "caught_up"}, {"name": "b", "initial_state": "caught_up"},
         {"name": "c", "start": False}],
        [{"kind": "join", "at": 30, "process": "c"}],
        bounds={"settle_s": 400.0, "max_rebalances": 12},
    )


def test_a_warm_up_converges_with_the_adapters_assign_time_fetch() -> None:
    """Was the adapter half of finding 1: a real application refreshed end offsets only in the
    rebalance listener, before the leader's own join, so under write load a warm-up past that
    snapshot got lag = end sum and probing never stopped. The replay refreshes nothing at
    assign time itself: the adapter's hook on the member's ``_perform_assignment``
    (``assignor.adapter.assign_time_offsets``) does, as it does on aiokafka's coordinator."""
    result = _join_under_write_load()
    assert result.summary.converged
    assert result.rebalances[-1].followup == ""


def test_without_the_assign_time_fetch_the_warm_up_never_finishes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The control for the test above: with the hook off (the listener's snapshot alone), the
    same scenario does not converge, so the test above checks the hook, not luck."""
    from assignor.adapter import streams_assignor

    monkeypatch.setattr(streams_assignor, "install_assign_time_refresh",
                        lambda *args, **kwargs: False)
    result = _join_under_write_load()
    assert not result.summary.converged


def test_the_leader_never_sees_an_offset_sum_beyond_its_end_offsets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka fetches end offsets inside assign(), after every subscription: an honest member's
    offset sum never exceeds them, whatever the changelogs wrote during the join."""
    from assignor.adapter.streams_assignor import StreamsPartitionAssignor

    beyond: list[str] = []
    decisions = 0
    original = StreamsPartitionAssignor.assign

    def checked(self: StreamsPartitionAssignor, cluster: Any, members: Any) -> Any:
        nonlocal decisions
        answers = original(self, cluster, members)
        assert self.last_leader is not None
        decisions += 1
        for client in self.last_leader.result.clients_before.values():
            lags = client.task_lags
            for task, offset_sum in lags.offset_sums.items():
                end = lags.end_sums.get(task)
                if end is not None and offset_sum > end:
                    beyond.append(f"{task}: {offset_sum} > {end}")
        return answers

    monkeypatch.setattr(StreamsPartitionAssignor, "assign", checked)
    run([{"name": "a", "initial_state": "caught_up"}, {"name": "b", "initial_state": "caught_up"},
         {"name": "c", "start": False}],
        [{"kind": "join", "at": 30, "process": "c"}, {"kind": "leave", "at": 200, "process": "b"}])
    assert decisions >= 3
    assert beyond == []


def test_leave_starts_a_rebalance_at_once() -> None:
    result = run(events=[{"kind": "leave", "at": 30, "process": "a"}])
    later = stable_after(result, 30)
    assert later[0].started_s < 31
    assert "left the group" in later[0].reasons
    assert later[-1].processes == 1
    assert result.summary.converged


def test_a_crash_is_found_by_the_session_timeout() -> None:
    result = run(events=[{"kind": "crash", "at": 30, "process": "a"}])
    later = stable_after(result, 30)
    assert 30 + SESSION_S - HEARTBEAT_S <= later[0].started_s <= 30 + SESSION_S
    assert "session timed out" in later[0].reasons
    assert later[-1].processes == 1
    # a's tasks waited for the timeout, then restored on b (standby-less, from b's stale disk)
    assert result.summary.unavailable_max_s > SESSION_S - HEARTBEAT_S


STATIC = [{"name": "a", "static": True, "initial_state": "caught_up"},
          {"name": "b", "static": True, "initial_state": "caught_up"}]


def test_a_static_restart_within_the_session_timeout_does_not_rebalance() -> None:
    result = run(STATIC, [{"kind": "restart", "at": 30, "process": "a", "down_s": 10}])
    assert stable_after(result, 1) == []
    # a's two tasks were down for the 10 s of the restart (plus the initial 6 s)
    assert result.summary.unavailable_max_s == 16.0
    assert result.summary.restored_records == 0


def test_a_static_restart_beyond_the_session_timeout_rebalances_twice() -> None:
    result = run(STATIC, [{"kind": "restart", "at": 30, "process": "a", "down_s": 60}])
    later = stable_after(result, 30)
    assert len(later) >= 2
    assert "session timed out" in later[0].reasons
    assert later[-1].processes == 2
    assert result.summary.converged


def test_a_restart_with_a_wiped_disk_restores_more_than_one_with_its_disk() -> None:
    kept = run(events=[{"kind": "restart", "at": 30, "process": "a", "down_s": 5}])
    wiped = run(events=[{"kind": "restart", "at": 30, "process": "a", "down_s": 5,
                         "wipe": True}])
    assert kept.summary.converged and wiped.summary.converged
    # a came back with nothing: its state was rebuilt (as warm-ups or restoring actives)
    def rebuilt(result: ReplayResult) -> int:
        return result.summary.restored_records + result.summary.standby_records

    assert rebuilt(wiped) > rebuilt(kept) + 10_000


def test_a_pause_longer_than_the_session_timeout_rebalances_and_the_process_comes_back() -> None:
    result = run(events=[{"kind": "pause", "at": 30, "process": "a", "duration_s": 60}])
    later = stable_after(result, 30)
    assert "session timed out" in later[0].reasons
    assert later[0].processes == 1
    assert later[-1].processes == 2
    assert result.summary.converged


def test_a_short_pause_of_a_static_member_does_not_rebalance() -> None:
    result = run(STATIC, [{"kind": "pause", "at": 30, "process": "a", "duration_s": 10}])
    assert [r.generation for r in result.rebalances] == [1]
    # a's tasks stood still for the 10 s of the pause (plus the initial 6 s)
    assert result.summary.unavailable_max_s == 16.0
    assert result.summary.converged


@pytest.mark.parametrize("static", [False, True])
def test_overlapping_pauses_stall_the_process_until_the_later_end(static: bool) -> None:
    # a pauses at 30 for 10 s, and again at 35 for 60 s: one stall from 30 to 95 (beyond the
    # session timeout), one resume at 95, one consumer per thread afterwards
    processes = [{"name": n, "static": static, "initial_state": "caught_up"} for n in "ab"]
    result = run(processes, [{"kind": "pause", "at": 30, "process": "a", "duration_s": 10},
                             {"kind": "pause", "at": 35, "process": "a", "duration_s": 60}])
    later = stable_after(result, 30)
    assert [(r.started_s, r.members) for r in later] == [(30 + SESSION_S, 1), (95.0, 2)]
    assert "session timed out" in later[0].reasons
    assert result.summary.converged


def test_a_restart_during_a_pause_ends_the_pause() -> None:
    # the paused incarnation is killed at 50 and a new one starts at 55: the pause's end at 90
    # resumes nothing (it used to start a second set of consumers next to the new ones)
    result = run(events=[{"kind": "pause", "at": 30, "process": "a", "duration_s": 60},
                         {"kind": "restart", "at": 50, "process": "a", "down_s": 5}])
    assert result.rebalances[-1].members == 2
    assert [r.started_s for r in stable_after(result, 30)] == [50.0, 55.0]
    assert result.summary.converged


def test_a_rolling_upgrade_ends_on_the_newest_version() -> None:
    old = [{"name": "a", "protocol_version": 1, "initial_state": "caught_up"},
           {"name": "b", "protocol_version": 1, "initial_state": "caught_up"}]
    result = run(old, [{"kind": "upgrade", "at": 30, "process": "a", "version": 3},
                       {"kind": "upgrade", "at": 90, "process": "b", "version": 3}])
    versions = [r.protocol_version for r in result.rebalances if r.outcome == "stable"]
    assert versions[0] == 1
    assert 1 in versions[:-1] and versions[-1] == 3
    assert result.summary.converged


def test_added_partitions_make_new_tasks_that_get_owned() -> None:
    result = run(events=[{"kind": "add_partitions", "at": 30, "topics": {"input": 8}}])
    assert result.summary.tasks == 8
    later = stable_after(result, 30)
    assert later and later[0].started_s < 31
    assert result.summary.converged


def test_losing_a_rack_crashes_every_process_in_it() -> None:
    racks = [{"name": "a", "rack": "r1", "initial_state": "caught_up"},
             {"name": "b", "rack": "r1", "initial_state": "caught_up"},
             {"name": "c", "rack": "r2", "initial_state": "caught_up"}]
    result = run(racks, [{"kind": "lose_tag", "at": 30, "key": "rack", "value": "r1"}])
    later = stable_after(result, 30)
    assert later[0].started_s >= 30 + SESSION_S - HEARTBEAT_S
    assert later[-1].processes == 1
    assert result.summary.converged


def test_losing_every_process_says_so_at_the_bound() -> None:
    """A group with no process left cannot settle: the run still ends at its bound as a
    non-convergence (every task unavailable until then), and the note says why, so a total
    outage is not read as an assignor that failed to converge."""
    racks = [{"name": "a", "rack": "r1", "initial_state": "caught_up"},
             {"name": "b", "rack": "r1", "initial_state": "caught_up"}]
    result = run(racks, [{"kind": "lose_tag", "at": 30, "key": "rack", "value": "r1"}],
                 bounds={"settle_s": 100.0, "max_rebalances": 60})
    assert not result.summary.converged
    assert result.summary.note == (
        "non-convergence: not stable 100.0 s after the last event (no process running)")
    assert result.summary.end_s == 130.0


def test_a_run_that_ends_at_its_bound_mid_rebalance_stops_cleanly() -> None:
    # The bound falls while the members rejoin for a probing rebalance: stopping them then used
    # to hang (the shim's stop race, worked around in simulator.hosting.stop_member). The
    # probing rebalance starts at 93 s (join at 30, probing interval 60 s, 3 s of rejoins).
    result = run(
        [{"name": "a", "initial_state": "caught_up"}, {"name": "b", "initial_state": "caught_up"},
         {"name": "c", "start": False}],
        [{"kind": "join", "at": 30, "process": "c"}],
        bounds={"settle_s": 64.0, "max_rebalances": 60},
    )
    assert not result.summary.converged
    assert result.summary.note == (
        "non-convergence: not stable 64.0 s after the last event (KIP-441 movements pending: the "
        "rebalance since scheduled a probing rebalance; 2 active and 2 standby replicas moved, "
        "the last round 2/2, max.warmup.replicas=2)")
    assert result.summary.end_s == 94.0


def test_a_rejoin_asked_by_a_member_rebalances_and_moves_nothing() -> None:
    result = run(CAUGHT_UP, [{"kind": "rejoin", "at": 30, "process": "a", "by": "member"}])
    later = stable_after(result, 30)
    assert later and later[0].started_s < 31
    assert "rejoined" in later[0].reasons
    assert [r.active_moved for r in later] == [0] * len(later)
    assert later[-1].processes == 2
    assert result.summary.converged


@pytest.mark.parametrize("static", [False, True])
def test_a_member_removed_by_the_coordinator_joins_again_as_a_new_member(static: bool) -> None:
    processes = [{**p, "static": static} for p in CAUGHT_UP]
    result = run(processes, [{"kind": "rejoin", "at": 30, "process": "a", "by": "coordinator"}])
    later = stable_after(result, 30)
    assert later and "left the group" in later[0].reasons  # the operator's removal
    # a hears UNKNOWN_MEMBER_ID at its next heartbeat and joins anew (a new member id), within
    # a few heartbeats; here before the rebalance its removal began had completed
    assert any(" a-0-" in r.reasons and "joined" in r.reasons for r in later)
    assert later[-1].processes == 2
    assert later[-1].started_s < 30 + 3 * HEARTBEAT_S + 3.0
    assert result.summary.converged


CAUGHT_UP = [{"name": "a", "initial_state": "caught_up"},
             {"name": "b", "initial_state": "caught_up"}]
