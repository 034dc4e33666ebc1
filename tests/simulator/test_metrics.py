"""Invariants and ownership, on hand-made generations."""

from __future__ import annotations

from protocol.ids import TaskId, TopicPartition
from simulator.metrics import Ownership, check_invariants, ownership_from_partitions, percentile

T0, T1 = TaskId(0, 0), TaskId(0, 1)
A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
B0, B1 = TopicPartition("b", 0), TopicPartition("b", 1)
TASKS = {T0: (A0, B0), T1: (A1, B1)}


#: member ids of threads p/0, p/1 and q/0
P0, P1, Q0 = "p-0-m1", "p-1-m2", "q-0-m3"
THREADS = {P0: ("p", 0), P1: ("p", 1), Q0: ("q", 0)}


def kinds(ownership: Ownership) -> list[str]:
    violations = check_invariants(ownership, TASKS, generation=3, time_s=12.5, replay="cmd")
    assert all(v.replay == "cmd" and v.generation == 3 for v in violations)
    return [v.kind for v in violations]


def test_a_clean_generation_has_no_violation() -> None:
    clean = Ownership(active={P0: frozenset({T0}), Q0: frozenset({T1})},
                      standby={P0: frozenset({T1}), Q0: frozenset({T0})},
                      partitions={}, threads=THREADS)
    assert kinds(clean) == []


def test_each_broken_invariant_is_named() -> None:
    twice = Ownership(active={P0: frozenset({T0}), Q0: frozenset({T0})},
                      standby={}, partitions={}, threads=THREADS)
    assert kinds(twice) == ["active_twice", "unowned"]
    same_process = Ownership(active={P0: frozenset({T0, T1})},
                             standby={P1: frozenset({T0})}, partitions={}, threads=THREADS)
    assert kinds(same_process) == ["standby_on_active_process"]


def test_partition_level_ownership_needs_every_partition_of_a_task() -> None:
    split = ownership_from_partitions({P0: [A0, A1, B1], Q0: [B0]}, TASKS, THREADS)
    assert split.active == {P0: frozenset({T1}), Q0: frozenset()}
    assert split.split == frozenset({T0})
    assert kinds(split) == ["unowned", "copartition_split"]
    doubled = ownership_from_partitions({P0: [A0, B0, A1, B1], Q0: [A1]}, TASKS, THREADS)
    assert kinds(doubled) == ["partition_twice"]


def test_two_members_of_one_thread_in_one_generation_are_both_counted() -> None:
    """An incarnation that left without a LeaveGroup stays in the group next to the one that
    replaced it: both are members with their own tasks (keyed by thread, the second overwrote
    the first and its tasks looked unowned)."""
    old, new = "p-0-old", "p-0-new"
    threads = {old: ("p", 0), new: ("p", 0), Q0: ("q", 0)}
    both = Ownership(active={old: frozenset({T0}), new: frozenset({T1}), Q0: frozenset()},
                     standby={}, partitions={}, threads=threads)
    assert kinds(both) == []
    assert both.active_process() == {T0: "p", T1: "p"}
    read = ownership_from_partitions({old: [A0, B0], new: [A1, B1]}, TASKS, threads)
    assert read.active == {old: frozenset({T0}), new: frozenset({T1})}
    assert kinds(read) == []


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 0.99) == 0.0
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert percentile([5.0, 1.0], 0.5) == 1.0
