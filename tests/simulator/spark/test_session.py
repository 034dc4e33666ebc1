"""What the session decides: where it binds, the code it ships, the driver JVM's options."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.simulator.spark.conftest import require_spark

pytestmark = pytest.mark.spark


def test_loopback_only_for_local_masters_and_masters_on_this_machine() -> None:
    require_spark()
    from simulator.spark.session import is_on_this_machine

    assert is_on_this_machine("local[*]") and is_on_this_machine("local[2]")
    assert is_on_this_machine("spark://127.0.0.1:7077")
    assert is_on_this_machine("spark://localhost:7077")
    assert not is_on_this_machine("spark://spark-master.example:7077")
    assert not is_on_this_machine("yarn")


def test_the_code_zip_holds_the_three_packages_without_caches(tmp_path: Path) -> None:
    require_spark()
    from simulator.spark.session import code_zip

    with zipfile.ZipFile(code_zip(tmp_path)) as archive:
        names = archive.namelist()
    for module in ("protocol/__init__.py", "assignor/__init__.py", "simulator/engine.py",
                   "simulator/spark/executor.py", "simulator/shim/__init__.py"):
        assert module in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_the_driver_jvm_starts_with_the_first_jit_tier_unless_the_user_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    require_spark()
    from simulator.spark.session import DRIVER_JAVA_OPTIONS, launch_conf

    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    conf = launch_conf()
    assert conf is not None
    assert conf.get("spark.driver.extraJavaOptions") == DRIVER_JAVA_OPTIONS == \
        "-XX:TieredStopAtLevel=1"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS",
                       "--conf spark.driver.extraJavaOptions=-Xss4m pyspark-shell")
    assert launch_conf() is None


def test_a_started_session_carries_the_driver_options(local_spark: Any) -> None:
    from simulator.spark.session import DRIVER_JAVA_OPTIONS

    options = local_spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
    assert DRIVER_JAVA_OPTIONS in (options or "")
