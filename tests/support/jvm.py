"""Drive the Java reference: build the harness once, then talk JSON lines to one long-lived JVM.

The build (``mvn dependency:copy-dependencies`` + ``javac``) is cached under a git-ignored folder
and redone only when ``pom.xml`` or a ``java/*.java`` source changes; a file lock keeps two pytest
processes (or a test run and a benchmark) from building over each other. Usable outside pytest::

    from tests.support.jvm import JavaHarness, build_harness
    with JavaHarness(build_harness()) as jvm:
        jvm.call("echo", {"x": 1})
"""

from __future__ import annotations

import collections
import fcntl
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import Any

HERE = Path(__file__).resolve().parents[1] / "conformance"
JAVA_SOURCES = HERE / "java"
POM = HERE / "pom.xml"
DEFAULT_BUILD_DIR = HERE / "target"
DEFAULT_SCENARIOS = 1000
DEFAULT_JVM_ARGS = ("-Xss8m", "-Xmx1g", "-XX:+UseParallelGC")
BUILD_TIMEOUT_S = 900.0
CALL_TIMEOUT_S = 120.0
STARTUP_TIMEOUT_S = 60.0


class HarnessError(RuntimeError):
    """The Java side answered with an exception; ``java_error`` is 'class: message'."""

    def __init__(self, op: str, java_error: str, trace: str) -> None:
        super().__init__(f"Java op {op!r} failed: {java_error}\n{trace}")
        self.op = op
        self.java_error = java_error
        self.trace = trace


class HarnessDied(RuntimeError):
    """The JVM exited, hung past a timeout, or wrote something that is not an answer."""


def scenario_count(default: int = DEFAULT_SCENARIOS) -> int:
    """Random scenarios per conformance test: ``CONFORMANCE_SCENARIOS`` (make conformance: 100k)."""
    raw = os.environ.get("CONFORMANCE_SCENARIOS", "")
    if not raw.strip():
        return default
    value = int(raw)
    if value < 1:
        raise ValueError(f"CONFORMANCE_SCENARIOS must be >= 1, got {raw!r}")
    return value


def build_dir() -> Path:
    override = os.environ.get("CONFORMANCE_BUILD_DIR")
    return Path(override).resolve() if override else DEFAULT_BUILD_DIR


def _digest(paths: Sequence[Path], *extra: str) -> str:
    sha = hashlib.sha256()
    for path in paths:
        sha.update(path.name.encode())
        sha.update(b"\0")
        sha.update(path.read_bytes())
        sha.update(b"\0")
    for item in extra:
        sha.update(item.encode())
    return sha.hexdigest()


def _run(cmd: list[str], what: str, cwd: Path) -> None:
    done = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-4000:]
        raise RuntimeError(f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n{tail}")


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".build.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_harness(directory: Path | None = None) -> str:
    """Resolve jars and compile the harness if needed; return the JVM classpath."""
    root = directory or build_dir()
    lib, classes = root / "lib", root / "classes"
    sources = sorted(JAVA_SOURCES.glob("*.java"))
    if not sources:
        raise RuntimeError(f"no Java sources under {JAVA_SOURCES}")
    with _locked(root):
        lib_stamp = root / "lib.stamp"
        lib_digest = _digest([POM])
        if not lib_stamp.exists() or lib_stamp.read_text() != lib_digest:
            shutil.rmtree(lib, ignore_errors=True)
            _run(
                [
                    "mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
                    f"-DoutputDirectory={lib}", "-DincludeScope=runtime",
                ],
                "resolving the kafka-streams jars with Maven",
                HERE,
            )
            lib_stamp.write_text(lib_digest)
        classes_stamp = root / "classes.stamp"
        classes_digest = _digest([POM, *sources], _javac_version())
        if not classes_stamp.exists() or classes_stamp.read_text() != classes_digest:
            shutil.rmtree(classes, ignore_errors=True)
            classes.mkdir(parents=True)
            _run(
                ["javac", "-nowarn", "-encoding", "UTF-8", "-cp", f"{lib}/*", "-d", str(classes)]
                + [str(s) for s in sources],
                "compiling the Java harness",
                HERE,
            )
            classes_stamp.write_text(classes_digest)
    return f"{classes}{os.pathsep}{lib}/*"


def _javac_version() -> str:
    done = subprocess.run(["javac", "-version"], capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).strip()


_EOF = object()


class JavaHarness:
    """One JVM running ``Harness``; ``call`` sends a request and waits for its answer.

    Thread-safe (one request in flight at a time). Any protocol failure (exit, timeout, garbage)
    closes the JVM and raises ``HarnessDied`` with the tail of its stderr.
    """

    def __init__(
        self,
        classpath: str,
        jvm_args: Sequence[str] | None = None,
        call_timeout: float = CALL_TIMEOUT_S,
    ) -> None:
        args = list(DEFAULT_JVM_ARGS if jvm_args is None else jvm_args)
        args += os.environ.get("CONFORMANCE_JAVA_OPTS", "").split()
        self.call_timeout = call_timeout
        self._lock = threading.Lock()
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._answers: queue.Queue[object] = queue.Queue()
        started = time.perf_counter()
        self._proc = subprocess.Popen(
            ["java", *args, "-cp", classpath, "Harness"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.call("echo", {}, timeout=STARTUP_TIMEOUT_S)
        self.startup_seconds = time.perf_counter() - started

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._answers.put(line)
        self._answers.put(_EOF)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line.rstrip("\n"))

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def stderr_tail(self, lines: int = 40) -> str:
        return "\n".join(list(self._stderr)[-lines:])

    def _die(self, why: str) -> HarnessDied:
        self._kill()
        return HarnessDied(
            f"{why} (exit code {self._proc.returncode}); JVM stderr tail:\n{self.stderr_tail()}"
        )

    def _send(self, lines: list[str]) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            for line in lines:
                stdin.write(line)
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the reader notices the exit and reports it with stderr

    def _receive(self, op: str, timeout: float) -> dict[str, Any]:
        try:
            raw = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise self._die(f"Java op {op!r} gave no answer within {timeout:.0f}s") from None
        if raw is _EOF:
            self._proc.wait(timeout=10)
            raise self._die(f"the Java harness exited during op {op!r}")
        try:
            answer = json.loads(str(raw))
        except json.JSONDecodeError:
            raise self._die(f"the Java harness wrote a non-JSON line: {str(raw)[:200]!r}") from None
        if not isinstance(answer, dict):
            raise self._die(f"the Java harness wrote a non-object answer: {str(raw)[:200]!r}")
        return answer

    @staticmethod
    def _request(op: str, payload: dict[str, Any] | None) -> str:
        body = dict(payload or {})
        body["op"] = op
        return json.dumps(body, separators=(",", ":")) + "\n"

    def call(
        self, op: str, payload: dict[str, Any] | None = None, timeout: float | None = None
    ) -> Any:
        """Run one op; return its ``result`` or raise ``HarnessError`` / ``HarnessDied``."""
        with self._lock:
            if not self.alive:
                raise self._die("the Java harness is not running")
            self._send([self._request(op, payload)])
            answer = self._receive(op, self.call_timeout if timeout is None else timeout)
        if "error" in answer:
            raise HarnessError(op, str(answer["error"]), str(answer.get("trace", "")))
        return answer.get("result")

    def call_many(
        self,
        op: str,
        payloads: Sequence[dict[str, Any]],
        timeout_each: float | None = None,
    ) -> list[Any]:
        """Pipeline many requests of one op; each item is a result or a ``HarnessError``."""
        lines = [self._request(op, p) for p in payloads]
        timeout = self.call_timeout if timeout_each is None else timeout_each
        results: list[Any] = []
        with self._lock:
            if not self.alive:
                raise self._die("the Java harness is not running")
            # A writer thread, so a large batch cannot deadlock on full pipes in both directions.
            writer = threading.Thread(target=self._send, args=(lines,), daemon=True)
            writer.start()
            for _ in lines:
                answer = self._receive(op, timeout)
                if "error" in answer:
                    results.append(
                        HarnessError(op, str(answer["error"]), str(answer.get("trace", "")))
                    )
                else:
                    results.append(answer.get("result"))
            writer.join(timeout=timeout)
        return results

    def _kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            with suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=10)

    def close(self) -> None:
        """Close stdin so the JVM exits on its own; kill it if it does not within 10 s."""
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, OSError):
                self._kill()

    def __enter__(self) -> JavaHarness:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def main() -> None:
    """``python -m tests.support.jvm``: build, start, report timings."""
    started = time.perf_counter()
    classpath = build_harness()
    built = time.perf_counter() - started
    with JavaHarness(classpath) as jvm:
        print(f"build/check {built:.2f}s, JVM start {jvm.startup_seconds:.2f}s", file=sys.stderr)
        print(classpath)


if __name__ == "__main__":
    main()
