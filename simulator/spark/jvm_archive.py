"""The driver JVM's class-data archive: Spark's classes mapped in at start, not loaded one by one.

Why: a sweep's driver JVM spends seconds loading and verifying the same few thousand Spark
classes every time it starts and at its first DataFrame job (its start took 3.8-4.2 s here, the
first job's planning another second). HotSpot can dump the classes one run loaded into an
archive (``-XX:ArchiveClassesAtExit``) and map it into later runs (``-XX:SharedArchiveFile``):
measured on the 2-core box, a small sweep's Spark start 3.8-3.9 s -> 2.1-2.2 s and its whole
run 13.8-14.4 s -> 10.1-12.5 s (two pairs, alternated).

The archive is built once per environment by ``python -m simulator.spark jvm-archive`` (the
Makefile's install step runs it): a child process replays a tiny sweep with the dump option,
waits for its JVM to exit (the dump happens then), and only then is the file moved into place
and its size and time recorded beside it. HotSpot does not survive a truncated archive (it dies
with SIGBUS), so a session uses the archive only when the file is exactly what the build wrote;
anything else (no archive, another JDK or pyspark, a half-written file) starts the JVM as
before, silently. The archive's name carries what it depends on (the pyspark version and
install, the ``java`` binary, the driver's options), so an upgrade simply finds none.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Environment variable naming the folder of the archives (default: the environment's
#: ``share/streams-assignor``, so that removing the virtualenv removes them).
DIR_ENV = "STREAMS_ASSIGNOR_JVM_ARCHIVE_DIR"
#: Longest a build may take (a tiny sweep and the JVM's dump), seconds.
BUILD_TIMEOUT_S = 600
#: HotSpot's options around the archive: use it when it maps, say nothing when it does not.
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"
#: The first four bytes of a dynamic archive (HotSpot's ``CDS_DYNAMIC_ARCHIVE_MAGIC``, stored
#: little-endian on the platforms Spark runs on).
MAGIC = (0xF00BABA8).to_bytes(4, "little")


class ArchiveError(RuntimeError):
    """The archive could not be built (the reason is in the message)."""


def archive_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or Path(sys.prefix) / "share" / "streams-assignor")


def _java() -> Path | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path(driver_options: str) -> Path | None:
    """Where the archive for this pyspark, this ``java`` and these driver options lives
    (``None`` when there is no ``java`` to key it by)."""
    import pyspark

    java = _java()
    if java is None:
        return None
    stat = java.stat()
    key = json.dumps([pyspark.__version__, str(Path(pyspark.__file__).parent), str(java),
                      stat.st_size, stat.st_mtime_ns, driver_options])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return archive_dir() / f"spark-driver-{digest}.jsa"


def _head(path: Path) -> bytes:
    with path.open("rb") as archive:
        return archive.read(len(MAGIC))


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".ok")


def _fingerprint(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def usable(path: Path | None) -> bool:
    """Whether ``path`` is an archive exactly as a build left it (its recorded size and time)."""
    if path is None:
        return False
    try:
        return bool(json.loads(_stamp(path).read_text(encoding="utf-8")) == _fingerprint(path))
    except (OSError, ValueError):
        return False


def java_options(driver_options: str) -> str:
    """The options that map the archive into the driver JVM, or ``""`` without a usable one."""
    path = archive_path(driver_options)
    return f"-XX:SharedArchiveFile={path} {QUIET}" if usable(path) else ""


def build(driver_options: str, timeout_s: float = BUILD_TIMEOUT_S) -> Path:
    """Build the archive for ``driver_options`` (see the module docstring); its path."""
    target = archive_path(driver_options)
    if target is None:
        raise ArchiveError("no java found (JAVA_HOME or PATH): nothing to build an archive for")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="streams-assignor-jvm-archive-") as scratch:
        command = [sys.executable, "-m", "simulator.spark.jvm_archive", str(partial), scratch]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            partial.unlink(missing_ok=True)
            raise ArchiveError(f"the training sweep took over {timeout_s:.0f} s") from exc
    if done.returncode != 0 or not partial.is_file() or _head(partial) != MAGIC:
        partial.unlink(missing_ok=True)
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise ArchiveError(f"the training sweep exited {done.returncode} without an archive: "
                           + " | ".join(tail))
    os.replace(partial, target)
    stamp = _stamp(target)
    stamp_partial = stamp.with_name(f"{stamp.name}.{os.getpid()}.part")
    stamp_partial.write_text(json.dumps(_fingerprint(target)), encoding="utf-8")
    os.replace(stamp_partial, stamp)
    return target


def _train(archive: Path, scratch: Path) -> None:
    """The child's work: a tiny sweep on a JVM that dumps its classes to ``archive`` at exit,
    then the JVM's exit awaited, so that the file is whole when this process ends."""
    from pyspark import SparkContext

    from simulator.spark import session
    from simulator.spark.sweep import SweepOptions, sweep

    session.DRIVER_JAVA_OPTIONS += f" -XX:ArchiveClassesAtExit={archive} {QUIET}"
    sweep(SweepOptions(mix="smoke", scenarios=11, out=scratch / "sweep"))
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if gateway is None or process is None:
        raise ArchiveError("no driver JVM of this process to wait for")
    gateway.shutdown()
    if process.stdin is not None:
        process.stdin.close()  # the gateway server exits when its stdin closes
    code = process.wait(timeout=BUILD_TIMEOUT_S)
    if code != 0:
        raise ArchiveError(f"the training JVM exited with status {code}")


if __name__ == "__main__":  # the child of :func:`build`
    _train(Path(sys.argv[1]), Path(sys.argv[2]))


__all__ = ["BUILD_TIMEOUT_S", "DIR_ENV", "MAGIC", "QUIET", "ArchiveError", "archive_dir",
           "archive_path", "build", "java_options", "usable"]
