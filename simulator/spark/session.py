"""The SparkSession of a sweep: local and on 127.0.0.1 by default, the same job on a cluster.

Defaults are set only where nothing else set them (``SparkConf.setIfMissing``), so
``spark-submit --conf ...`` and ``--master`` win over them:

- ``local[*]``; when the master is local or a ``spark://`` master on this machine, the driver
  binds and advertises 127.0.0.1 (``SPARK_LOCAL_IP`` too) and the web UI is off: nothing listens
  on another interface. For a remote master the driver's address is Spark's or the user's.
- the driver JVM maps the class-data archive built by ``python -m simulator.spark jvm-archive``
  (:mod:`simulator.spark.jvm_archive`) when one exists for this JDK and pyspark: about 2 s off
  its start, more off its first jobs.
- executors run the driver's interpreter (``PYSPARK_PYTHON``, when not set) with a fixed
  ``PYTHONHASHSEED`` (``spark.executorEnv.PYTHONHASHSEED``): aiokafka's sticky assignor iterates
  sets of strings, so its answers depend on the hash seed.
- the project's own packages (``protocol``, ``assignor``, ``simulator``) are zipped from the
  driver's copy and shipped with ``addPyFile``: executors on other machines run the same code as
  the driver, and need only the third-party dependencies installed
  (``pip install 'streams-assignor'`` or its requirements).
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

#: Executors' hash seed, fixed so that runs compare field for field.
HASH_SEED = "0"
#: The driver JVM's options when the sweep starts it (never under ``spark-submit``, nor when
#: ``PYSPARK_SUBMIT_ARGS`` names driver Java options): the JIT's first tier only. The driver of a
#: sweep plans small jobs and pipes rows; HotSpot's second tier compiles it in background
#: threads that compete with the Python replays for the cores, and its code arrives too late to
#: pay back in a run of minutes. Measured on the 2-core box (a 60-scenario sweep, three runs
#: each, interleaved): 36.1 s median (33.8-36.5) against 39.7 (38.0-42.0), from Spark's start,
#: the replays and the small jobs after.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
#: The packages shipped to executors.
SHIPPED_PACKAGES = ("protocol", "assignor", "simulator")
LOOPBACK = "127.0.0.1"


def is_on_this_machine(master: str) -> bool:
    """``local``, ``local[...]`` or a ``spark://`` master on the loopback interface."""
    if master.startswith("local"):
        return True
    host = master.removeprefix("spark://").split(":", 1)[0]
    return master.startswith("spark://") and host in (LOOPBACK, "localhost")


def code_zip(directory: Path) -> Path:
    """A zip of the project's packages' Python sources, as this interpreter imports them."""
    import importlib

    target = directory / "streams_assignor_code.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in SHIPPED_PACKAGES:
            module = importlib.import_module(package)
            root = Path(module.__file__ or "").parent
            for path in sorted(root.rglob("*")):
                if path.is_file() and path.suffix == ".py" and "__pycache__" not in path.parts:
                    archive.write(path, Path(package) / path.relative_to(root))
    return target


def launch_conf() -> SparkConf | None:
    """What the driver JVM is started with, unless the user's ``PYSPARK_SUBMIT_ARGS`` already
    says (the rest of the configuration is set once it runs, where spark-submit's wins)."""
    if "extraJavaOptions" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return None
    from simulator.spark.jvm_archive import java_options

    # the class-data archive of ``python -m simulator.spark jvm-archive``, when there is one
    options = f"{DRIVER_JAVA_OPTIONS} {java_options(DRIVER_JAVA_OPTIONS)}".strip()
    return SparkConf(loadDefaults=False).set("spark.driver.extraJavaOptions", options)


@contextmanager
def session(master: str | None = None, app_name: str = "streams-assignor sweep",
            shuffle_partitions: int = 8) -> Iterator[SparkSession]:
    """A session configured as the module says, with the project's code shipped to executors;
    stopped (and the code zip removed) on the way out."""
    # Under spark-submit the JVM already runs (PYSPARK_GATEWAY_PORT) with its --master and
    # --conf; otherwise the master is ours and the JVM inherits SPARK_LOCAL_IP when it starts.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if not submitted and is_on_this_machine(master or "local[*]"):
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    # the JVM first, so that SparkConf() holds spark-submit's settings and setIfMissing sees them
    SparkContext._ensure_initialized(conf=None if submitted else launch_conf())
    conf = SparkConf()
    if master is not None:
        conf.setMaster(master)
    conf.setIfMissing("spark.master", "local[*]")
    if is_on_this_machine(conf.get("spark.master") or "local[*]"):
        conf.setIfMissing("spark.driver.host", LOOPBACK)
        conf.setIfMissing("spark.driver.bindAddress", LOOPBACK)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf.setIfMissing("spark.app.name", app_name)
    conf.setIfMissing("spark.ui.enabled", "false")
    # always off: the launcher turns Spark's own stage bar on, and the sweep draws its own
    conf.set("spark.ui.showConsoleProgress", "false")
    conf.setIfMissing("spark.executorEnv.PYTHONHASHSEED", HASH_SEED)
    conf.setIfMissing("spark.sql.shuffle.partitions", str(shuffle_partitions))
    conf.setIfMissing("spark.python.worker.reuse", "true")
    # partition columns (family, assignor) stay strings when the Parquet is read back
    conf.setIfMissing("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    with tempfile.TemporaryDirectory(prefix="streams-assignor-code-") as shipped:
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
        try:
            spark.sparkContext.setLogLevel("ERROR")
            spark.sparkContext.addPyFile(str(code_zip(Path(shipped))))
            yield spark
        finally:
            spark.stop()


def parallelism(spark: SparkSession) -> int:
    """How many tasks the cluster runs at once (cores of ``local[*]`` or of the workers)."""
    return max(1, int(spark.sparkContext.defaultParallelism))


__all__ = ["DRIVER_JAVA_OPTIONS", "HASH_SEED", "LOOPBACK", "SHIPPED_PACKAGES", "code_zip",
           "is_on_this_machine", "launch_conf", "parallelism", "session"]
