"""A replay's end: members at rest are crashed at once, as the step-by-step crash would leave them.

``crash_all`` crashes every running member when a replay ends. When the loop has nothing else to
run and every member is at rest, it skips the crash coroutines' loop steps
(``ShimMember.crash_at_rest``); the journal (every event, in order) and each member's final
state must be those of the step-by-step path, which the same replay takes when the shortcut is
refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator import hosting
from simulator.engine import Replay
from simulator.families import generate
from simulator.scenarios import Scenario
from simulator.shim import ShimMember


def _end_state(scenario: Scenario) -> tuple[str, list[tuple[str, str, int, bool]]]:
    run = Replay(scenario)
    run.run()
    members = [(m.name, m.status, m.generation, m.at_rest)
               for sim in run.sims.values() for m in sim.members]
    return run.journal.text(), members


@pytest.mark.parametrize(("family", "params"), [
    ("cold_start", {"processes": 12, "threads": 2}),
    ("crash_recover", {"processes": 6, "threads": 2, "assignor": "sticky"}),
    ("rolling_restart", {"processes": 5, "threads": 1, "static": True}),
])
def test_crashing_members_at_rest_at_once_ends_as_the_step_by_step_crash(
    family: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = generate(family, params, 3)
    shortcuts: list[int] = []
    at_rest = hosting._all_at_rest

    def counted(members: list[ShimMember]) -> bool:
        taken = at_rest(members)
        shortcuts.append(int(taken))
        return taken

    monkeypatch.setattr(hosting, "_all_at_rest", counted)
    fast = _end_state(scenario)
    assert shortcuts == [1], "the replay did not end at rest: the test checks nothing"
    monkeypatch.setattr(hosting, "_all_at_rest", lambda members: False)
    slow = _end_state(scenario)
    assert fast == slow
    assert all(status == "crashed" and not rest for _, status, _, rest in fast[1])
    last = fast[0].splitlines()[-len(fast[1]):]  # the end: one "crashed" per member
    assert all(" crashed " in line for line in last), last
