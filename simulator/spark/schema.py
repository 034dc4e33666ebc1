"""Spark schemas of the sweep's tables, from :mod:`simulator.spark.columns` (never inferred).

Inference from Python rows would guess ``LongType`` for a ``float`` field that happened to hold
``0`` in the first rows, and nothing at all for a column that is null in a small sweep; the
Parquet schema would then depend on the data. These schemas depend only on the engine's
dataclasses.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from simulator.spark.columns import (
    REBALANCE_COLUMNS,
    SCENARIO_COLUMNS,
    TABLES,
    VIOLATION_COLUMNS,
    Column,
)

_TYPES: dict[str, DataType] = {
    "long": LongType(), "double": DoubleType(), "string": StringType(), "boolean": BooleanType(),
}


def struct(columns: Sequence[Column]) -> StructType:
    """The ``StructType`` of a table (column order, kinds and nullability as declared)."""
    return StructType([StructField(c.name, _TYPES[c.kind], c.nullable) for c in columns])


SCENARIO_SCHEMA = struct(SCENARIO_COLUMNS)
REBALANCE_SCHEMA = struct(REBALANCE_COLUMNS)
VIOLATION_SCHEMA = struct(VIOLATION_COLUMNS)

#: What ``mapPartitions`` returns per job: its scenario row and its rebalance and violation rows.
BUNDLE_SCHEMA = StructType([
    StructField("scenario", SCENARIO_SCHEMA, False),
    StructField("rebalances", ArrayType(REBALANCE_SCHEMA, False), False),
    StructField("violations", ArrayType(VIOLATION_SCHEMA, False), False),
])

#: Table name -> schema, for reading the Parquet back with the same explicit schema.
SCHEMAS: dict[str, StructType] = {name: struct(columns) for name, columns in TABLES.items()}

__all__ = ["BUNDLE_SCHEMA", "REBALANCE_SCHEMA", "SCENARIO_SCHEMA", "SCHEMAS", "VIOLATION_SCHEMA",
           "struct"]
