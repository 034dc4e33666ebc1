"""The collector around the leader's ``assign()``: paused for the call, then restored with the
call's survivors in the oldest generation, never thawing what something else froze."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from assignor.adapter import collector
from assignor.adapter.collector import collector_paused


@pytest.fixture(autouse=True)
def _fresh_process_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts as a process that has seen nothing frozen, collector on."""
    monkeypatch.setattr(collector, "_others_froze", [False])
    assert gc.get_freeze_count() == 0, "a test left objects frozen"
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()
        (gc.enable if enabled else gc.disable)()


def _generation_of(marker: object) -> int | None:
    for generation in range(3):
        if any(o is marker for o in gc.get_objects(generation=generation)):
            return generation
    return None


def test_the_survivors_go_to_the_oldest_generation_without_a_collection() -> None:
    collections_before = [s["collections"] for s in gc.get_stats()]
    with collector_paused():
        assert not gc.isenabled()
        survivor = [object()]  # a tracked container made by the body that outlives it
        assert _generation_of(survivor) == 0
    assert gc.isenabled()
    assert _generation_of(survivor) == 2
    assert gc.get_count()[0] < 50  # the young count starts again (not the body's allocations)
    assert gc.get_freeze_count() == 0
    assert [s["collections"] for s in gc.get_stats()] == collections_before


def test_what_an_application_froze_stays_frozen() -> None:
    kept = [object()]
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen > 0 and _generation_of(kept) is None  # (the permanent generation is not listed)
    for _ in range(2):  # the second time without asking (asking walks the frozen heap)
        with collector_paused():
            survivor = [object()]
        assert gc.isenabled()
        assert gc.get_freeze_count() == frozen
        assert _generation_of(survivor) in (0, 1)  # left to the young collections, as before
    assert collector._others_froze == [True]


def test_a_collector_that_was_off_stays_off_and_nothing_moves() -> None:
    gc.disable()
    with collector_paused():
        survivor = [object()]
    assert not gc.isenabled()
    assert _generation_of(survivor) == 0


def test_the_collector_comes_back_when_the_body_raises() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        survivor = [object()]
        raise RuntimeError("boom")
    assert gc.isenabled()
    assert _generation_of(survivor) == 2
