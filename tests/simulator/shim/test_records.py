"""The journal is bounded by default (issue 10 item 5d): a ring of the latest events that counts
what it dropped, so a long simulation cannot grow it without limit."""

from __future__ import annotations

import pytest

from simulator.shim import Journal
from simulator.shim.records import DEFAULT_MAX_EVENTS


def _fill(journal: Journal, count: int) -> None:
    for i in range(count):
        journal.log(float(i), "g", "join-request", f"m{i}", "")


def test_the_default_journal_keeps_the_latest_events_and_counts_the_dropped_ones() -> None:
    journal = Journal()
    _fill(journal, DEFAULT_MAX_EVENTS + 25)
    assert len(journal.events) == DEFAULT_MAX_EVENTS
    assert journal.dropped == 25
    assert journal.events[0].member == "m25"
    assert journal.events[-1].member == f"m{DEFAULT_MAX_EVENTS + 24}"
    assert "25 dropped" in repr(journal)


def test_the_bound_is_configurable_and_none_keeps_everything() -> None:
    small = Journal(max_events=3)
    _fill(small, 10)
    assert [e.member for e in small.events] == ["m7", "m8", "m9"] and small.dropped == 7
    everything = Journal(max_events=None)
    _fill(everything, DEFAULT_MAX_EVENTS + 1)
    assert len(everything.events) == DEFAULT_MAX_EVENTS + 1 and everything.dropped == 0


def test_a_negative_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_events"):
        Journal(max_events=-1)
