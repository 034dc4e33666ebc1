"""Invariants and ownership, on hand-made generations."""

from __future__ import annotations

from protocol.ids import TaskId, TopicPartition
from simulator.metrics import Ownership, check_invariants, ownership_from_partitions, percentile

T0, T1 = TaskId(0, 0), TaskId(0, 1)
A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
B0, B1 = TopicPartition("b", 0), TopicPartition("b", 1)
TASKS = {T0: (A0, B0), T1: (A1, B1)}


def kinds(ownership: Ownership) -> list[str]:
    violations = check_invariants(ownership, TASKS, generation=3, time_s=12.5, replay="cmd")
    assert all(v.replay == "cmd" and v.generation == 3 for v in violations)
    return [v.kind for v in violations]


def test_a_clean_generation_has_no_violation() -> None:
    clean = Ownership(active={("p", 0): frozenset({T0}), ("q", 0): frozenset({T1})},
                      standby={("p", 0): frozenset({T1}), ("q", 0): frozenset({T0})},
                      partitions={})
    assert kinds(clean) == []


def test_each_broken_invariant_is_named() -> None:
    twice = Ownership(active={("p", 0): frozenset({T0}), ("q", 0): frozenset({T0})},
                      standby={}, partitions={})
    assert kinds(twice) == ["active_twice", "unowned"]
    same_process = Ownership(active={("p", 0): frozenset({T0, T1})},
                             standby={("p", 1): frozenset({T0})}, partitions={})
    assert kinds(same_process) == ["standby_on_active_process"]


def test_partition_level_ownership_needs_every_partition_of_a_task() -> None:
    split = ownership_from_partitions({("p", 0): [A0, A1, B1], ("q", 0): [B0]}, TASKS)
    assert split.active == {("p", 0): frozenset({T1}), ("q", 0): frozenset()}
    assert split.split == frozenset({T0})
    assert kinds(split) == ["unowned", "copartition_split"]
    doubled = ownership_from_partitions({("p", 0): [A0, B0, A1, B1], ("q", 0): [A1]}, TASKS)
    assert kinds(doubled) == ["partition_twice"]


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 0.99) == 0.0
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert percentile([5.0, 1.0], 0.5) == 1.0
