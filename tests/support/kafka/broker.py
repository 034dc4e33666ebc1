"""A real Apache Kafka broker (KRaft, one combined broker+controller process) for the test suite.

The jars come from Maven Central through ``tests/support/kafka/pom.xml`` and are cached once per
machine (under a file lock, because several test sessions may start at the same moment). Every
broker gets its own temporary folder (config, data, ``server.log``) and fresh ports on
127.0.0.1 only.

This module is synchronous and uses only the standard library so that the pytest fixture,
``python -m tests.support.kafka`` and anybody's script can share it.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

KAFKA_VERSION = "4.1.2"
HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"

#: The line the pinned broker logs once its broker side accepts clients.
READY_MARKER = "Kafka Server started"

#: Small enough to start fast, generous enough for a loaded 2-core CI machine.
DEFAULT_JVM_OPTS = (
    "-Xms256m",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-Djava.awt.headless=true",
    "-XX:+ExitOnOutOfMemoryError",
)


class BrokerError(RuntimeError):
    """The broker could not be resolved, formatted, started or stopped; the message says why."""


# --------------------------------------------------------------------------- jars


def cache_dir() -> Path:
    """Where the resolved jars live: keyed by the pom's content so a changed pom re-resolves."""
    override = os.environ.get("STREAMS_ASSIGNOR_KAFKA_CACHE")
    base = Path(override) if override else Path.home() / ".cache" / "streams-assignor"
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return base / f"kafka-{KAFKA_VERSION}-{digest}"


@contextlib.contextmanager
def _file_lock(path: Path, timeout_s: float) -> Iterator[None]:
    """An exclusive ``flock`` with a bounded wait (another session may be downloading)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BrokerError(
                        f"waited {timeout_s:.0f}s for the lock {path}; is another session stuck "
                        "resolving the Kafka jars? Delete the lock file if no process holds it."
                    ) from None
                time.sleep(0.25)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def resolve_jars(timeout_s: float = 900.0) -> Path:
    """Return the folder holding the broker's runtime jars, running Maven on first use."""
    root = cache_dir()
    libs = root / "libs"
    done = root / "libs.complete"
    if done.exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError("Maven (mvn) is needed to fetch the Kafka jars; install it")
    with _file_lock(root / ".lock", timeout_s):
        if done.exists():  # another session finished while we waited
            return libs
        staging = Path(tempfile.mkdtemp(prefix="libs.", dir=root))
        command = [
            mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
        ]
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise BrokerError(f"mvn took longer than {timeout_s:.0f}s: {command}") from exc
        if result.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
            shutil.rmtree(staging, ignore_errors=True)
            output = (result.stdout + result.stderr)[-4000:]
            raise BrokerError(f"mvn could not resolve the Kafka {KAFKA_VERSION} jars:\n{output}")
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        done.write_text(f"{KAFKA_VERSION}\n")
    return libs


# --------------------------------------------------------------------------- config


def free_port() -> int:
    """A port the kernel considers free right now (raced by others; start() retries on clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_properties(directory: Path, port: int, controller_port: int) -> str:
    """One node that is its own controller quorum, every listener on loopback, RF 1 everywhere."""
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(directory / "data"),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": "1",
        # 50 offsets partitions cost seconds on the first group lookup; a handful is plenty here.
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        # Rebalances in tests should not wait for stragglers, and kill -9 tests want short
        # session timeouts (the broker rejects anything below this minimum).
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "500",
        "auto.create.topics.enable": "true",
        "delete.topic.enable": "true",
        "log.segment.bytes": str(16 * 1024 * 1024),
    }
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def log4j2_properties(log_file: Path) -> str:
    """Everything at INFO into one file that a failing test prints the tail of."""
    return (
        "status = warn\n"
        "appender.file.type = File\n"
        "appender.file.name = file\n"
        f"appender.file.fileName = {log_file}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = INFO\n"
        "rootLogger.appenderRef.file.ref = file\n"
        "logger.statechange.name = state.change.logger\n"
        "logger.statechange.level = WARN\n"
    )


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise BrokerError("a Java 17+ runtime (java) is needed to run the Kafka broker")
    return found


# --------------------------------------------------------------------------- process


def _die_with_parent() -> None:
    """Linux: the broker gets SIGTERM if the Python process that started it dies (even -9)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def _tail(path: Path, lines: int) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 256 * 1024))
            text = handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return f"({path} does not exist)"
    return "\n".join(text.splitlines()[-lines:])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by a parent that is not us) counts as gone.
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
        return status.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@dataclass
class Broker:
    """A running broker: where to reach it, where its files are, and how to stop it."""

    pid: int
    port: int
    controller_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.directory / "server.log"

    @property
    def properties_file(self) -> Path:
        return self.directory / "server.properties"

    def log_tail(self, lines: int = 60) -> str:
        return _tail(self.log_file, lines)

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return _pid_alive(self.pid)

    def is_ours(self) -> bool:
        """Guard against pid reuse: the pid must still run kafka.Kafka with our properties."""
        line = _cmdline(self.pid)
        return "kafka.Kafka" in line and str(self.properties_file) in line

    def stop(self, timeout_s: float = 30.0, *, remove_files: bool = True) -> None:
        """SIGTERM (controlled shutdown), SIGKILL if it overstays, then drop its folder."""
        if self.alive() and (self.process is not None or self.is_ours()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            if not self._wait_gone(timeout_s):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                if not self._wait_gone(10.0):
                    raise BrokerError(f"broker pid {self.pid} survived SIGKILL")
        if remove_files and not os.environ.get("KAFKA_KEEP_FILES"):
            shutil.rmtree(self.directory, ignore_errors=True)

    def _wait_gone(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None:
                try:
                    self.process.wait(timeout=0.2)
                    return True
                except subprocess.TimeoutExpired:
                    continue
            if not _pid_alive(self.pid):
                return True
            time.sleep(0.1)
        return not self.alive()


def _format_storage(java: str, libs: Path, directory: Path, timeout_s: float) -> None:
    cluster_id = _random_cluster_id()
    command = [
        java, "-Xmx256m", f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
        "-cp", f"{libs}/*", "kafka.tools.StorageTool", "format",
        "-t", cluster_id, "-c", str(directory / "server.properties"), "--standalone",
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if result.returncode != 0:
        raise BrokerError(f"StorageTool format failed:\n{(result.stdout + result.stderr)[-4000:]}")


def _random_cluster_id() -> str:
    """Kafka's cluster ids are a UUID as 22 characters of URL-safe base64 without padding.

    One id in 64 would start with "-", which StorageTool's argument parser reads as an option
    and fails with a usage message; such ids are drawn again.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _wait_ready(broker: Broker, deadline: float) -> str | None:
    """None when ready; otherwise why not (died, or timed out)."""
    while time.monotonic() < deadline:
        if not broker.alive():
            return "the broker process exited during start-up"
        try:
            text = broker.log_file.read_text(errors="replace")
        except FileNotFoundError:
            text = ""
        if READY_MARKER in text:
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", broker.port), timeout=1.0
            ):
                return None
        time.sleep(0.1)
    return "the broker was not ready in time"


def start(
    *,
    detach: bool = False,
    timeout_s: float = 120.0,
    jvm_opts: Sequence[str] = DEFAULT_JVM_OPTS,
    attempts: int = 3,
) -> Broker:
    """Resolve jars, format a fresh folder and start one broker; returns once clients can connect.

    ``detach`` lets the broker outlive this Python process (``make kafka-up``); otherwise the
    broker is tied to it and also dies if the test session is killed.
    """
    java = _java()
    libs = resolve_jars()
    last_problem = ""
    for _ in range(attempts):
        directory = Path(tempfile.mkdtemp(prefix="streams-assignor-kafka-"))
        port, controller_port = free_port(), free_port()
        while controller_port == port:
            controller_port = free_port()
        (directory / "server.properties").write_text(
            server_properties(directory, port, controller_port)
        )
        (directory / "log4j2.properties").write_text(log4j2_properties(directory / "server.log"))
        deadline = time.monotonic() + timeout_s
        try:
            _format_storage(java, libs, directory, timeout_s)
        except (BrokerError, subprocess.TimeoutExpired):
            shutil.rmtree(directory, ignore_errors=True)
            raise
        command = [
            java, *jvm_opts,
            f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={directory}",
            "-cp", f"{libs}/*", "kafka.Kafka", str(directory / "server.properties"),
        ]
        with open(directory / "stdout.log", "wb") as out:
            process = subprocess.Popen(
                command,
                cwd=directory,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=detach,
                preexec_fn=None if detach else _die_with_parent,
            )
        broker = Broker(process.pid, port, controller_port, directory, process)
        problem = _wait_ready(broker, deadline)
        if problem is None:
            return broker
        tail = broker.log_tail(40) + "\n" + _tail(directory / "stdout.log", 20)
        broker.stop(timeout_s=10.0)
        last_problem = f"{problem}; log tail:\n{tail}"
        if not re.search(r"Address already in use|BindException", tail):
            break  # retrying only helps when another process took our port
    raise BrokerError(f"could not start Kafka {KAFKA_VERSION}: {last_problem}")
