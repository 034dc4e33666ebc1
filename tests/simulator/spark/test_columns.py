"""The tables' columns come from the engine's dataclasses, with key columns first and values
coerced to their kinds (no Spark needed)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from simulator.metrics import RebalanceRow, ScenarioRow, Violation
from simulator.spark import columns


def test_every_engine_field_is_a_column() -> None:
    for cls, table in ((ScenarioRow, columns.SCENARIO_COLUMNS),
                       (RebalanceRow, columns.REBALANCE_COLUMNS),
                       (Violation, columns.VIOLATION_COLUMNS)):
        sources = {c.source for c in table if c.source is not None}
        keys = {c.name for c in columns.KEY_COLUMNS}
        assert {f.name for f in dataclasses.fields(cls)} - keys <= sources
        assert [c.name for c in table[:4]] == ["case_id", "family", "assignor", "seed"]
        names = [c.name for c in table]
        assert len(names) == len(set(names))
    assert "leader_assignor" in {c.name for c in columns.REBALANCE_COLUMNS}


def test_values_are_coerced_to_their_kind_and_keys_may_not_be_null() -> None:
    table = (columns.Column("a", "double", True), columns.Column("b", "long", False))
    assert columns.to_tuple(table, {"a": 0, "b": 3}) == (0.0, 3)
    assert isinstance(columns.to_tuple(table, {"a": 0, "b": 3})[0], float)
    assert columns.to_tuple(table, {"b": 1}) == (None, 1)
    with pytest.raises(ValueError, match="b may not be null"):
        columns.to_tuple(table, {"a": 1.0})


def test_a_field_of_an_unmapped_type_fails_loudly() -> None:
    @dataclass
    class Odd:
        tasks: list[str]

    with pytest.raises(TypeError, match=r"Odd\.tasks"):
        columns.engine_columns(Odd)


def test_machine_dependent_columns_are_named_so() -> None:
    assert columns.is_machine_dependent("assign_wall_ms")
    assert columns.is_machine_dependent("replay_wall_s")
    assert columns.is_machine_dependent("hash_seed")
    assert not columns.is_machine_dependent("unavailable_task_s")
