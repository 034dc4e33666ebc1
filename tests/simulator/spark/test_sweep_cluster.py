"""A real Spark standalone cluster on 127.0.0.1 (master and one worker, from the pyspark package)
runs the tests' sweep and gives the scenario rows local mode gives. Every process it starts is
stopped by its pid, with bounded waits."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.simulator.spark.conftest import SMALL, require_spark
from tests.simulator.spark.test_sweep_local import deterministic_rows

pytestmark = pytest.mark.spark

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
POLL_S = 0.5


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _start(log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``spark-class`` ``args``, its output in ``log``, in its own session (spark-class execs
    java, so the pid is the JVM's)."""
    home = _spark_home()
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_NO_DAEMONIZE="1", SPARK_LOG_DIR=str(log.parent))
    with log.open("wb") as out:
        return subprocess.Popen([str(home / "bin" / "spark-class"), *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if text in log.read_text(encoding="utf-8", errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(POLL_S)
    tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
    raise AssertionError(f"{log.name}: no {text!r} within {START_TIMEOUT_S:.0f}s:\n{tail}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL, each wait bounded; only this pid."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:PORT`` of a master with one registered worker."""
    require_spark()
    logs = tmp_path_factory.mktemp("standalone")
    port = _free_port()
    started: list[subprocess.Popen[bytes]] = []
    try:
        master = _start(logs / "master.log", "org.apache.spark.deploy.master.Master",
                        "--host", "127.0.0.1", "--port", str(port),
                        "--webui-port", str(_free_port()))
        started.append(master)
        _wait_for(logs / "master.log", "I have been elected leader", master)
        url = f"spark://127.0.0.1:{port}"
        worker = _start(logs / "worker.log", "org.apache.spark.deploy.worker.Worker", url,
                        "--host", "127.0.0.1", "--webui-port", str(_free_port()),
                        "--cores", "2", "--memory", "2g", "--work-dir", str(logs / "work"))
        started.append(worker)
        _wait_for(logs / "worker.log", "Successfully registered with master", worker)
        yield url
    finally:
        for process in reversed(started):
            _stop(process)
        assert all(p.poll() is not None for p in started), "every started process is gone"


def test_standalone_cluster_gives_the_rows_of_local_mode(
        small_sweep: Any, cluster: str, tmp_path: Path) -> None:
    from simulator.spark.sweep import SweepOptions, sweep

    result = sweep(SweepOptions(mix=str(SMALL["mix"]), scenarios=int(SMALL["scenarios"]),
                                seed=int(SMALL["seed"]), out=tmp_path / "cluster",
                                master=cluster))
    assert result.summary["run"]["machine"]["master"] == cluster
    assert deterministic_rows(result.out) == deterministic_rows(small_sweep.out)
