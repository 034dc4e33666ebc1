"""The bound on active moves per membership change (``moves``) on whole groups drawn from
``assignor.testing``, and proof that the check catches an assignor that breaks it. The state
machine checks the same rule at every generation it sees decided."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from assignor.leader.pipeline import assign_group
from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.task_assignor import TaskAssignment
from assignor.testing import Group, configs, groups
from tests.properties.moves import unforced_moves

HA_GROUPS = groups(processes=st.integers(1, 5), threads=st.integers(1, 3),
                   config=configs(assignor="high_availability"))
FEW = settings(max_examples=max(10, settings().max_examples // 4))


def _moves(group: Group) -> list[str]:
    config = group.assignor_config()
    result = assign_group(group.topology, config, group.group_input())
    return unforced_moves(result, config.acceptable_recovery_lag)


@FEW
@given(group=HA_GROUPS)
def test_a_caught_up_process_keeps_the_actives_balance_leaves_it(group: Group) -> None:
    assert _moves(group) == []


def _rotate_actives(result: TaskAssignment) -> TaskAssignment:
    """Every client gets the next client's actives: balance is kept, stickiness is not."""
    pids = sorted(result.clients, key=lambda p: p.sort_key)
    clients = {pid: result.clients[pid].with_assignment(
        result.clients[pids[(i + 1) % len(pids)]].active, ()) for i, pid in enumerate(pids)}
    return dataclasses.replace(result, clients=clients)


def test_the_check_catches_an_assignor_that_moves_caught_up_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = HighAvailabilityTaskAssignor.place_tasks

    def rotating(self: HighAvailabilityTaskAssignor, *args: Any, **kwargs: Any) -> TaskAssignment:
        return _rotate_actives(original(self, *args, **kwargs))

    monkeypatch.setattr(HighAvailabilityTaskAssignor, "place_tasks", rotating)
    found: list[str] = []

    @settings(max_examples=200, database=None, derandomize=True,
              phases=[Phase.generate])
    @given(group=groups(processes=st.integers(2, 4), config=configs(assignor="high_availability")))
    def search(group: Group) -> None:
        found.extend(_moves(group))
        assert not found

    with pytest.raises(AssertionError):
        search()
    assert "caught up" in found[0]
