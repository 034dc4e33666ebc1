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
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    require_spark()
    from simulator.spark.jvm_archive import DIR_ENV
    from simulator.spark.session import DRIVER_JAVA_OPTIONS, launch_conf

    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.setenv(DIR_ENV, str(tmp_path))  # no class-data archive there
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


def _fake_archive(path: Path, stamped: bool = True) -> None:
    """A file that passes for a built archive (its magic, and the stamp a build writes)."""
    import json

    from simulator.spark.jvm_archive import MAGIC

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(MAGIC + bytes(60))
    if stamped:
        stat = path.stat()
        path.with_name(path.name + ".ok").write_text(json.dumps([stat.st_size, stat.st_mtime_ns]))


def test_the_class_archive_is_mapped_only_when_it_is_what_a_build_left(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """HotSpot dies (SIGBUS) on a truncated archive: anything but the file a build wrote and
    stamped starts the JVM without one."""
    require_spark()
    from simulator.spark.jvm_archive import DIR_ENV, archive_path, java_options, usable
    from simulator.spark.session import DRIVER_JAVA_OPTIONS, launch_conf

    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    path = archive_path(DRIVER_JAVA_OPTIONS)
    assert path is not None and path.parent == tmp_path
    assert archive_path("-Xss4m") != path  # keyed by the driver's options
    assert not usable(path) and java_options(DRIVER_JAVA_OPTIONS) == ""
    _fake_archive(path, stamped=False)
    assert not usable(path)  # written, never stamped: perhaps half written
    _fake_archive(path)
    assert usable(path)
    conf = launch_conf()
    assert conf is not None
    options = conf.get("spark.driver.extraJavaOptions") or ""
    assert options.startswith(DRIVER_JAVA_OPTIONS)
    assert f"-XX:SharedArchiveFile={path}" in options and "-Xshare:auto" in options
    with path.open("r+b") as archive:  # cut short after the stamp
        archive.truncate(10)
    assert not usable(path) and java_options(DRIVER_JAVA_OPTIONS) == ""
    path.with_name(path.name + ".ok").write_text("not json")
    assert not usable(path)


def test_without_java_there_is_no_archive_to_build(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    require_spark()
    from simulator.spark.jvm_archive import DIR_ENV, ArchiveError, archive_path, build

    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert archive_path("-XX:TieredStopAtLevel=1") is None
    with pytest.raises(ArchiveError, match="no java found"):
        build("-XX:TieredStopAtLevel=1")


def test_the_installed_archive_is_mapped_into_the_session_jvm(local_spark: Any) -> None:
    """``make install`` builds the archive (``python -m simulator.spark jvm-archive``); the
    sessions the tests start carry it. Outside CI a checkout installed otherwise may not have
    one: then there is nothing to check."""
    import os

    from simulator.spark.jvm_archive import archive_path, usable
    from simulator.spark.session import DRIVER_JAVA_OPTIONS

    path = archive_path(DRIVER_JAVA_OPTIONS)
    if not usable(path):
        if os.environ.get("CI") == "true":
            pytest.fail(f"no usable class-data archive at {path}: make install builds one")
        pytest.skip("no class-data archive built here (python -m simulator.spark jvm-archive)")
    bean = local_spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert f"-XX:SharedArchiveFile={path}" in list(bean.getInputArguments())
