"""Task movement decided without the queue equals Kafka's queue-driven steps, move for move.

``settled_movement`` claims that when no poll of a movement step can have two qualifying
clients, the queue's layout cannot change a pick, so the step is decided from the loads alone.
Here both ways run on the same random workspaces, the settled one as the assignor runs it and
the reference with the settled functions disabled (every poll through
``ConstrainedPrioritySet``, itself checked against Kafka's literal queue in
``test_constrained_priority_set.py``), and every client's actives and standbys, the warm-ups,
the budget left and the counts returned must be equal. The workspaces come from the
conformance scenarios' generator (lags, standbys, warm-up budgets, rack tags) in small groups,
placed either as the high-availability assignor places them before movement or at random (any
active owner, up to three standbys anywhere), so both the settled and the fallback path run.
The standby step tried in the order its moves were found (budget spent, each task once) is
compared the same way, and the variants that drop either part of that condition must differ.
A lone client, for which the assignor skips lags and movement altogether, is checked against
the full path too.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import assignor.placement.settled_movement as settled_movement
import assignor.placement.task_movement as task_movement
from assignor.config import AssignorConfig
from assignor.placement.caught_up import Budget, CaughtUp
from assignor.placement.high_availability import (
    HighAvailabilityTaskAssignor,
    _assign_standbys,
    _assign_stateful_actives,
    assign_high_availability,
)
from assignor.placement.workspace import Workspace
from tests.conformance.ha_scenarios import python_inputs, scenario

SEEDS = 400


def _workspace(seed: int, placement: str) -> tuple[Workspace, AssignorConfig]:
    s = scenario(seed, max_clients=12)
    ws = Workspace(python_inputs(s), s.tasks, s.stateful)
    if placement == "assignor":
        _assign_stateful_actives(ws)
        _assign_standbys(ws, s.config)
        return ws, s.config
    rng = random.Random(seed)
    n = len(ws.pids)
    for task in ws.stateful:
        owner = rng.randrange(n)
        ws.assign_active(owner, task)
        others = [c for c in range(n) if c != owner]
        for c in rng.sample(others, min(len(others), rng.randint(0, 3))):
            ws.assign_standby(c, task)
    return ws, s.config


def _movements(seed: int, placement: str) -> dict[str, Any]:
    ws, config = _workspace(seed, placement)
    caught = CaughtUp(ws, config.acceptable_recovery_lag)
    budget = Budget(config.max_warmup_replicas)
    warmups: dict[int, set[int]] = {}
    active_moves = task_movement.assign_active_movements(ws, caught, warmups, budget)
    standby_moves = task_movement.assign_standby_movements(ws, caught, warmups, budget)
    return {
        "moves": (active_moves, standby_moves),
        "active": ws.active,
        "standby": ws.standby,
        "count": ws.count,
        "warmups": warmups,
        "budget": budget.left,
    }


@pytest.mark.parametrize("placement", ["assignor", "random"])
def test_settled_movement_equals_the_queue(
    placement: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = {"active": 0, "standby": 0}
    settled_active = task_movement.settled_active_movements
    settled_standby = task_movement.settled_standby_movements

    def counting_active(*args: Any) -> bool:
        found = settled_active(*args)
        taken["active"] += bool(found and args[2])  # a step with moves, decided here
        return found

    def counting_standby(*args: Any) -> int | None:
        found = settled_standby(*args)
        taken["standby"] += found is not None and bool(args[2])
        return found

    for seed in range(SEEDS):
        with monkeypatch.context() as patched:
            patched.setattr(task_movement, "settled_active_movements", counting_active)
            patched.setattr(task_movement, "settled_standby_movements", counting_standby)
            ours = _movements(seed, placement)
        with monkeypatch.context() as patched:
            patched.setattr(task_movement, "settled_active_movements", lambda *a: False)
            patched.setattr(task_movement, "settled_standby_movements", lambda *a: None)
            kafka = _movements(seed, placement)
        assert ours == kafka, f"seed {seed} ({placement}) differs"
    # the comparison means something only if the settled paths decided real steps
    assert taken["active"] > SEEDS // 10 and taken["standby"] > SEEDS // 20, taken


def test_a_step_with_two_caught_up_standbys_goes_through_the_queue() -> None:
    """The condition itself: a task whose two caught-up clients both hold a standby leaves
    the active step to the queue (which of them is lighter in its array decides)."""
    for seed in range(SEEDS):
        ws, config = _workspace(seed, "random")
        caught = CaughtUp(ws, config.acceptable_recovery_lag)
        for task in ws.stateful:
            candidates = caught.candidates(task)
            if candidates is None:
                continue
            holders = [c for c in candidates if task in ws.standby[c]]
            owner = next(c for c in range(len(ws.pids)) if task in ws.active[c])
            if len(holders) >= 2 and owner not in candidates:
                before = ([set(a) for a in ws.active], [set(s) for s in ws.standby])
                decided = task_movement.settled_active_movements(
                    ws, caught, [(task, owner)], [0], {}, Budget(1)
                )
                assert decided is False
                assert ([set(a) for a in ws.active], [set(s) for s in ws.standby]) == before
                return
    pytest.fail("no random workspace had a task with two caught-up standbys")


def test_a_lone_client_skips_lags_and_movement_with_the_same_result() -> None:
    """One client: the assignor builds no lags and schedules no movement; the full path
    (lags, both movement steps) gives the same tasks, no warm-ups and no probing."""
    checked = 0
    for seed in range(SEEDS):
        s = scenario(seed, max_clients=1)
        clients = python_inputs(s)
        lone = HighAvailabilityTaskAssignor().place_tasks(clients, s.tasks, s.stateful, s.config)
        ws = Workspace(clients, s.tasks, s.stateful)  # with lags
        probing, warmups = assign_high_availability(ws, s.config)
        assert lone.clients == ws.results(), f"seed {seed}"
        assert (lone.probing_rebalance_needed, lone.warmups) == (probing, {}), f"seed {seed}"
        assert not any(warmups.values())
        checked += any(ws.lags.special[t] for t in ws.stateful)  # some client state reported
    assert checked > SEEDS // 4


def _differs(monkeypatch: pytest.MonkeyPatch, order_free: Any, *, first: bool = False) -> list[str]:
    """Seeds (both placements) where the standby step with ``order_free`` as its condition
    decides otherwise than the queue's steps (``first``: stop at the first one)."""
    found = []
    for placement in ("assignor", "random"):
        for seed in range(SEEDS):
            with monkeypatch.context() as patched:
                patched.setattr(task_movement, "_order_free", order_free)
                ours = _movements(seed, placement)
            with monkeypatch.context() as patched:
                patched.setattr(task_movement, "settled_active_movements", lambda *a: False)
                patched.setattr(task_movement, "settled_standby_movements", lambda *a: None)
                kafka = _movements(seed, placement)
            if ours != kafka:
                found.append(f"{placement} {seed}")
                if first:
                    return found
    return found


def test_the_standby_step_in_any_order_equals_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point 6 of ``settled_movement``: with the budget spent and each task moving once, the
    settled standby step run in the order the moves were found (not Kafka's) decides as the
    queue does; it must have decided real steps for the comparison to mean something."""
    decided = []
    order_free = task_movement._order_free

    def counting(budget: Budget, tasks: list[int]) -> bool:
        free = order_free(budget, tasks)
        decided.append(free and bool(tasks))
        return free

    assert _differs(monkeypatch, counting) == []
    assert sum(decided) > SEEDS // 10, sum(decided)


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(lambda budget, tasks: True, id="any budget, repeated tasks"),
        pytest.param(lambda budget, tasks: len(set(tasks)) == len(tasks), id="any budget"),
        pytest.param(lambda budget, tasks: budget.left <= 0, id="repeated tasks"),
    ],
)
def test_the_order_matters_while_warm_ups_are_left(
    broken: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both parts of the condition are needed: taking the moves in the order found while the
    budget still grants warm-ups, or while a task moves twice (a copy one move placed is
    seen by the other), keeps other copies than Kafka's order does, on some workspace."""
    assert _differs(monkeypatch, broken, first=True)


@pytest.mark.parametrize("placement", ["assignor", "random"])
def test_the_moves_after_the_last_warm_up_as_sets_equal_the_steps(
    placement: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point 7 of ``settled_movement``: the active moves after the one that spends the last
    warm-up, applied together by set operations, leave every client, count, warm-up and the
    budget as the settled step taking every move one at a time does (itself compared with
    the queue above); the comparison must have met tails with swaps and without."""
    tails = {"plain": 0, "with swaps": 0}
    apply_tail = settled_movement._apply_tail

    def counting(*args: Any) -> int:
        holders = args[4]
        swaps = holders is not None and any(h is not None for h in holders)
        tails["with swaps" if swaps else "plain"] += 1
        return apply_tail(*args)

    for seed in range(SEEDS):
        with monkeypatch.context() as patched:
            patched.setattr(settled_movement, "_apply_tail", counting)
            ours = _movements(seed, placement)
        with monkeypatch.context() as patched:
            patched.setattr(settled_movement, "_stepped", lambda lists, holders, left: len(lists))
            steps = _movements(seed, placement)
        assert ours == steps, f"seed {seed} ({placement}) differs"
    assert min(tails.values()) >= 3, tails  # (seeded: 9/14 with the assignor, 4/25 random)
