"""The replay's collector policy: the older heap frozen for the body, restored afterwards.

``simulator.heap.older_heap_frozen`` must leave the process as it found it (collector on, nothing
frozen), respect an application's own policy (collector off, or a heap it froze itself), and
still collect the cycles a body makes.
"""

from __future__ import annotations

import gc
import weakref

from simulator import heap
from simulator.heap import older_heap_frozen


class _Node:
    """A cyclic object whose death a weak reference can observe."""

    def __init__(self) -> None:
        self.me = self


def test_the_older_heap_is_frozen_only_inside_and_restored_after() -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with older_heap_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_cycles_made_inside_are_still_collected_inside() -> None:
    with older_heap_frozen():
        node = _Node()
        dead = weakref.ref(node)
        del node
        gc.collect()
        assert dead() is None


def test_an_old_cycle_waits_until_the_heap_doubled_then_is_collected() -> None:
    gc.collect()  # counts at zero: no automatic pass between here and the freeze
    node = _Node()
    dead = weakref.ref(node)
    del node
    before = heap._after_collection[0]
    try:
        heap._after_collection[0] = 1  # the heap has "doubled" since the last collection
        with older_heap_frozen():
            gc.collect()  # the frozen part is not looked at
            assert dead() is not None
        assert dead() is None  # collected between replays
        assert heap._after_collection[0] is not None and heap._after_collection[0] > 1
    finally:
        heap._after_collection[0] = before


def test_an_applications_own_policy_is_left_alone() -> None:
    gc.disable()
    try:
        with older_heap_frozen():
            assert gc.get_freeze_count() == 0 and not gc.isenabled()
    finally:
        gc.enable()
    gc.freeze()
    try:
        # A frozen object that dies leaves the permanent generation, so the count may only
        # shrink (by what other threads or finalizers free meanwhile); a freeze of our own
        # would grow it and an unfreeze empty it.
        frozen = gc.get_freeze_count()
        with older_heap_frozen():
            assert 0 < gc.get_freeze_count() <= frozen
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_the_heap_is_restored_when_the_body_raises() -> None:
    try:
        with older_heap_frozen():
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_bodys_own_cycles_are_freed_when_it_ends() -> None:
    with older_heap_frozen():
        node = _Node()
        dead = weakref.ref(node)
        del node
        assert dead() is not None  # a cycle: reference counting alone does not free it
    assert dead() is None


def test_young_and_middle_collections_are_rarer_inside_and_thresholds_restored() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with older_heap_frozen():
            assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, heap.MIDDLE_THRESHOLD, 10)
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(10**6, 500, 5)  # a caller's higher thresholds are not lowered
        with older_heap_frozen():
            assert gc.get_threshold() == (10**6, 500, 5)
        assert gc.get_threshold() == (10**6, 500, 5)
    finally:
        gc.set_threshold(*before)


def test_a_process_freed_at_exit_replays_without_the_collector_unless_told() -> None:
    try:
        heap.freed_at_exit()
        assert not gc.isenabled()
        with older_heap_frozen():  # the collector off is a policy it leaves alone
            assert gc.get_freeze_count() == 0 and not gc.isenabled()
        heap.freed_at_exit(collect=True)
        assert gc.isenabled()
    finally:
        gc.enable()
