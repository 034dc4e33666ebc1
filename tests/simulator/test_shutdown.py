"""A replay's end: members at rest are crashed at once, as the step-by-step crash would leave them.

``crash_all`` crashes every running member when a replay ends. When the loop has nothing else to
run and every member is at rest, it skips the crash coroutines' loop steps
(``ShimMember.crash_at_rest``); the journal (every event, in order) and each member's final
state must be those of the step-by-step path, which the same replay takes when the shortcut is
refused.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from simulator import hosting
from simulator.engine import Replay
from simulator.families import generate
from simulator.scenarios import Scenario
from simulator.shim import RealClock, ShimMember, VirtualClock


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


@pytest.mark.parametrize(("family", "params"), [
    ("rolling_restart", {"processes": 6, "threads": 2, "static": True}),
    ("rolling_restart", {"processes": 5, "threads": 1, "static": False}),
    ("crash_recover", {"processes": 6, "threads": 2}),
    ("flapping", {"processes": 4, "threads": 2}),
])
def test_stopping_a_member_on_a_quiet_clock_skips_only_idle_turns(
    family: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``stop_member`` leaves out its first turns of the loop when the clock is quiet, and
    stops a member at rest at once: the journal and every member's end state are those of the
    path that takes the steps (dynamic members' LeaveGroups included)."""
    scenario = generate(family, params, 5)
    skipped: list[int] = []
    quiet = hosting._quiet

    def counted(member: ShimMember) -> bool:
        taken = quiet(member)
        skipped.append(int(taken))
        return taken

    monkeypatch.setattr(hosting, "_quiet", counted)
    at_once: list[str] = []
    close_at_rest = ShimMember.close_at_rest

    def closed(member: ShimMember) -> None:
        at_once.append(member.name)
        close_at_rest(member)

    monkeypatch.setattr(ShimMember, "close_at_rest", closed)
    fast = _end_state(scenario)
    assert sum(skipped) > 0, "no stop found the clock quiet: the test checks nothing"
    assert at_once or family != "rolling_restart", "no member closed at rest"
    monkeypatch.setattr(hosting, "_quiet", lambda member: False)
    slow = _end_state(scenario)
    assert fast == slow


def test_a_clock_is_quiet_only_with_nothing_ready_or_due_now() -> None:
    """The condition of the skip above: a ready callback or a timer due at this instant makes
    the turns it would leave out run something (always skipping passes the replays above)."""
    clock = VirtualClock(seed=1)

    async def main() -> list[bool]:
        member = SimpleNamespace(clock=clock)
        seen = [hosting._quiet(member)]  # type: ignore[arg-type]
        handle = asyncio.get_running_loop().call_soon(lambda: None)
        seen.append(hosting._quiet(member))  # type: ignore[arg-type]
        handle.cancel()
        await asyncio.sleep(0)
        seen.append(hosting._quiet(member))  # type: ignore[arg-type]
        timer = clock.call_later(0.0, lambda: None)
        seen.append(hosting._quiet(member))  # type: ignore[arg-type]
        timer.cancel()
        clock.call_later(1.0, lambda: None)
        seen.append(hosting._quiet(member))  # type: ignore[arg-type]
        seen.append(hosting._quiet(SimpleNamespace(clock=RealClock())))  # type: ignore[arg-type]
        return seen

    try:
        assert clock.run(main()) == [True, False, True, False, True, False]
    finally:
        clock.close()
