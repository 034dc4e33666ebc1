"""The sweep's three tables, as columns derived from the engine's row dataclasses.

One derivation serves two readers: :mod:`simulator.spark.schema` turns these columns into Spark
``StructType`` s (the explicit schemas the DataFrames and the Parquet files carry), and
:mod:`simulator.spark.executor` uses the same list to turn a row object into a tuple of exactly
those types (Spark refuses an ``int`` in a ``DoubleType`` column, and a dataclass field typed
``float`` may well hold ``0``). So a field the engine adds to ``RebalanceRow``, ``ScenarioRow`` or
``Violation`` reaches the Parquet with no change here; a field of a type this module cannot map
fails loudly at import (:class:`TypeError`), not as a silent string.

Every table starts with the same key columns (which scenario of the mix, family, assignor,
seed), so the tables join on ``(case_id, assignor)``. Metric columns are nullable: a replay that
raised has a row with ``error`` and ``replay`` set and no metrics.

This module imports no pyspark: the executor side uses it too.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.metrics import RebalanceRow, ScenarioRow, Violation

#: The Python types a column may hold, by the name :mod:`simulator.spark.schema` maps to Spark.
KINDS: dict[type, str] = {bool: "boolean", int: "long", float: "double", str: "string"}


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: its name, value kind (``long``, ``double``...) and nullability."""

    name: str
    kind: str
    nullable: bool
    #: the dataclass field it comes from (``None`` for the sweep's own key columns)
    source: str | None = None
    doc: str = ""


#: Columns every table starts with: the mix's case, its family and seed, and the assignor.
KEY_COLUMNS: tuple[Column, ...] = (
    Column("case_id", "long", False, doc="index of the scenario in the mix (0-based)"),
    Column("family", "string", False, doc="the family that generated the scenario"),
    Column("assignor", "string", False, doc="the assignor the scenario ran with"),
    Column("seed", "long", False, doc="the family's seed"),
)

#: Columns only the scenario table has, before the engine's fields.
CASE_COLUMNS: tuple[Column, ...] = (
    Column("params", "string", False,
           doc="the family parameters the mix set, as JSON (defaults for the rest)"),
    Column("processes", "long", True,
           doc="processes in the scenario, including those that join later"),
    Column("members", "long", True,
           doc="group members (stream threads) of all those processes"),
)

#: Columns only the scenario table has, after the engine's fields.
OUTCOME_COLUMNS: tuple[Column, ...] = (
    Column("error", "string", True,
           doc="the exception the replay raised (type: message), null when it ran"),
    Column("replay", "string", False, doc="the command line that replays this scenario"),
)

#: Engine fields renamed because a key column already has the name (same value or not).
RENAMED: dict[tuple[type, str], str] = {
    (RebalanceRow, "assignor"): "leader_assignor",
}


def _kind_of(hint: Any, where: str) -> tuple[str, bool]:
    """(kind, nullable) of a field's type hint: ``T`` or ``T | None`` for T in :data:`KINDS`."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1 and inner[0] in KINDS:
            return KINDS[inner[0]], True
    elif hint in KINDS:
        return KINDS[hint], False
    raise TypeError(f"{where}: type {hint!r} has no Parquet column kind; the sweep maps "
                    f"{', '.join(t.__name__ for t in KINDS)} and their optionals")


def _field_docs(cls: type) -> dict[str, str]:
    """The ``#:`` comment right above each field of ``cls`` (the engine documents fields so).

    A field declared under another's comment (``ended_s`` under ``started_s``'s) gets none here:
    telling a grouped field from an undocumented one would be a guess.
    """
    import inspect

    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    docs: dict[str, str] = {}
    comment: list[str] = []
    for line in source.splitlines()[1:]:
        text = line.strip()
        name = text.split(":", 1)[0]
        if text.startswith("#:"):
            comment.append(text[2:].strip())
            continue
        if comment and ":" in text and name.isidentifier():
            docs[name] = " ".join(comment)
        comment = []
    return docs


def engine_columns(cls: type, skip: Sequence[str] = ()) -> tuple[Column, ...]:
    """The columns of dataclass ``cls`` in field order (metrics nullable), minus ``skip``."""
    hints = typing.get_type_hints(cls)
    docs = _field_docs(cls)
    columns = []
    for field in dataclasses.fields(cls):
        if field.name in skip:
            continue
        kind, _ = _kind_of(hints[field.name], f"{cls.__name__}.{field.name}")
        name = RENAMED.get((cls, field.name), field.name)
        columns.append(Column(name, kind, True, field.name, docs.get(field.name, "")))
    return tuple(columns)


_KEY_NAMES = tuple(c.name for c in KEY_COLUMNS)

#: One row per scenario and assignor (errors included): keys, case, ``ScenarioRow``, outcome.
SCENARIO_COLUMNS: tuple[Column, ...] = (
    KEY_COLUMNS + CASE_COLUMNS + engine_columns(ScenarioRow, skip=_KEY_NAMES) + OUTCOME_COLUMNS
)
#: One row per rebalance (generation) of every scenario that ran.
REBALANCE_COLUMNS: tuple[Column, ...] = KEY_COLUMNS + engine_columns(RebalanceRow)
#: One row per violated invariant of every scenario that ran.
VIOLATION_COLUMNS: tuple[Column, ...] = KEY_COLUMNS + engine_columns(Violation)

#: The tables of a sweep's output folder, by sub-folder name.
TABLES: dict[str, tuple[Column, ...]] = {
    "scenarios": SCENARIO_COLUMNS,
    "rebalances": REBALANCE_COLUMNS,
    "violations": VIOLATION_COLUMNS,
}

#: Columns that depend on the machine, not the scenario: left out of determinism comparisons.
def is_machine_dependent(name: str) -> bool:
    """``*_wall_ms`` / ``*_wall_s`` timings and the executor's hash seed."""
    return name.endswith(("_wall_ms", "_wall_s")) or name == "hash_seed"


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "long": int, "double": float, "string": str, "boolean": bool,
}


def to_tuple(columns: Sequence[Column], values: dict[str, Any]) -> tuple[Any, ...]:
    """``values`` (by column name) as a tuple in column order, each coerced to its kind.

    A missing or ``None`` value stays ``None`` (nullable columns) ; a non-nullable column
    without a value is a bug in the sweep, so it raises.
    """
    out: list[Any] = []
    for column in columns:
        value = values.get(column.name)
        if value is None:
            if not column.nullable:
                raise ValueError(f"column {column.name} may not be null")
            out.append(None)
        else:
            out.append(_CONVERT[column.kind](value))
    return tuple(out)


def row_values(row: object, cls: type) -> dict[str, Any]:
    """A dataclass row's fields by column name (renamed fields under their column name)."""
    return {
        RENAMED.get((cls, field.name), field.name): getattr(row, field.name)
        for field in dataclasses.fields(cls)
    }


__all__ = [
    "KEY_COLUMNS",
    "REBALANCE_COLUMNS",
    "SCENARIO_COLUMNS",
    "TABLES",
    "VIOLATION_COLUMNS",
    "Column",
    "engine_columns",
    "is_machine_dependent",
    "row_values",
    "to_tuple",
]
