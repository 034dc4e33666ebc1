"""Spark tests need pyspark and a JVM: skipped locally without them, failed in CI."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.families import FAMILIES
from tests.support.requirements import require

#: The tests' sweep: one scenario of every family with every assignor, small groups (``smoke``).
SMALL = {"mix": "smoke", "scenarios": len(FAMILIES), "seed": 11}


def require_spark() -> None:
    """pyspark importable and ``java`` on PATH (or under ``JAVA_HOME``)."""
    require(importlib.util.find_spec("pyspark") is not None, "pyspark")
    java_home = os.environ.get("JAVA_HOME")
    has_java = shutil.which("java") is not None or (
        java_home is not None and (Path(java_home) / "bin" / "java").exists())
    require(has_java, "a JVM (java)")


@pytest.fixture(scope="session", autouse=True)
def _spark_environment() -> None:
    """Executors run this interpreter; everything binds to 127.0.0.1."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="module")
def local_spark() -> Iterator[Any]:
    """One ``local[2]`` session for a module's sweeps (stopped at the module's end)."""
    require_spark()
    from simulator.spark.session import session

    with session("local[2]", app_name="streams-assignor tests") as spark:
        yield spark


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The tests' sweep on ``local[2]``, run once for every module (its own session)."""
    require_spark()
    from simulator.spark.sweep import SweepOptions, sweep

    options = SweepOptions(mix=str(SMALL["mix"]), scenarios=int(SMALL["scenarios"]),
                           seed=int(SMALL["seed"]), out=tmp_path_factory.mktemp("sweep-local"),
                           master="local[2]")
    return sweep(options)
