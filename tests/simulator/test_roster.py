"""The settle loop's kept answer (``Roster.stable_ids``) against the question asked afresh.

``Roster.stable_ids`` keeps whether every running member is stable on the coordinator's
generation, and their member ids, until the roster hears of a change. Every settle check of
these replays (joins, leaves, crashes, pauses, restarts, static and dynamic members, follow-up
rebalances) also asks every member directly; the two must agree each time.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator.engine import Replay
from simulator.families import generate
from simulator.roster import Roster
from simulator.shim import GroupCoordinator, ShimMember


def _afresh(live: list[ShimMember], generation: int) -> frozenset[str] | None:
    if all(m.stable and m.generation == generation for m in live):
        return frozenset(m.member_id for m in live)
    return None


@pytest.mark.parametrize(("family", "params", "seed"), [
    ("cold_start", {"processes": 6}, 1),
    ("crash_recover", {"processes": 5, "crash": 2}, 2),
    ("flapping", {"processes": 4, "flaps": 2}, 3),
    ("rolling_restart", {"processes": 4, "static": True}, 4),
    ("rolling_upgrade", {"processes": 3}, 5),
    ("scale_in", {"processes": 5, "remove": 2, "assignor": "roundrobin"}, 6),
    ("partitions_added", {"processes": 3}, 7),
])
def test_the_kept_answer_is_the_fresh_one_at_every_check(
    family: str, params: dict[str, Any], seed: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    checks: list[bool] = []
    kept = Roster.stable_ids

    def compared(self: Roster, live: list[ShimMember], generation: int) -> frozenset[str] | None:
        answer = kept(self, live, generation)
        assert answer == _afresh(live, generation)
        checks.append(answer is not None)
        return answer

    monkeypatch.setattr(Roster, "stable_ids", compared)
    Replay(generate(family, params, seed)).run()
    assert checks, "the replay never asked"


def test_has_members_is_set_equality() -> None:
    from simulator.shim import VirtualClock
    coordinator = GroupCoordinator(VirtualClock(0))
    assert coordinator.has_members("nobody", frozenset())
    assert not coordinator.has_members("nobody", frozenset({"a"}))
