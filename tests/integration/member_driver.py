"""Drive ``member_proc`` processes from a test: start, wait for events, kill -9, terminate.

Group members have to be separate OS processes for crash tests to mean anything; this module hides
the plumbing (a reader thread per pipe, bounded waits that explain themselves on timeout) so that a
test reads as a sequence of events::

    with MemberProcess(bootstrap, group, ["t"], consumers=2, name="p1") as p1:
        p1.wait_for(lambda e: e["event"] == "assigned", timeout_s=30)
        p1.kill()
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

Event = dict[str, Any]
Predicate = Callable[[Event], bool]
ConsumerKey = tuple[str, int]
Partition = tuple[str, int]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ASSIGNOR = "tests.integration.factories:roundrobin"


class MemberProcessError(AssertionError):
    """A member process did not do what the test waited for; the message shows what it did do."""


class MemberProcess:
    """One ``python -m tests.integration.member_proc`` process and the events it printed."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: Sequence[str],
        *,
        consumers: int = 1,
        assignor: str = DEFAULT_ASSIGNOR,
        name: str | None = None,
        instance_id: str | None = None,
        assignor_config: Mapping[str, Any] | None = None,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 500,
        rebalance_timeout_ms: int = 20000,
        emit_records: bool = False,
        emit_assign_io: bool = False,
        log_level: str = "WARNING",
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name or f"member-{group}-{id(self):x}"
        self.consumers = consumers
        self.command = [
            sys.executable, "-m", "tests.integration.member_proc",
            "--bootstrap", bootstrap, "--group", group, "--topics", ",".join(topics),
            "--consumers", str(consumers), "--assignor", assignor, "--name", self.name,
            "--session-timeout-ms", str(session_timeout_ms),
            "--heartbeat-interval-ms", str(heartbeat_interval_ms),
            "--rebalance-timeout-ms", str(rebalance_timeout_ms),
            "--log-level", log_level, "--exit-with-parent",
        ]
        if instance_id is not None:
            self.command += ["--instance-id", instance_id]
        if assignor_config:
            self.command += ["--assignor-config", json.dumps(dict(assignor_config))]
        if emit_records:
            self.command.append("--emit-records")
        if emit_assign_io:
            self.command.append("--emit-assign-io")
        self.command += list(extra_args)
        self._env = dict(env) if env is not None else None
        self._events: list[Event] = []
        self._stdout_junk: collections.deque[str] = collections.deque(maxlen=50)
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._changed = threading.Condition()
        self._process: subprocess.Popen[bytes] | None = None
        self._readers: list[threading.Thread] = []

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> MemberProcess:
        if self._process is not None:
            raise RuntimeError(f"{self.name} was started already")
        env = dict(os.environ if self._env is None else self._env)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
        )
        env.setdefault("PYTHONUNBUFFERED", "1")
        self._process = subprocess.Popen(
            self.command, cwd=REPO_ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read_stdout, args=(self._process.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self._process.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        return self

    def __enter__(self) -> MemberProcess:
        return self.start() if self._process is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.terminate()

    @property
    def pid(self) -> int:
        return self._require_process().pid

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def kill(self, timeout_s: float = 10.0) -> None:
        """``kill -9``: no LeaveGroup, no commit; the broker notices after the session timeout."""
        process = self._require_process()
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=timeout_s)
        self._join_readers()

    def terminate(self, timeout_s: float = 15.0) -> int | None:
        """Graceful stop (consumers leave the group), SIGKILL if it takes longer than timeout_s."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10.0)
        self._join_readers()
        return process.returncode

    def send(self, command: str) -> None:
        """A command line for the member's stdin: ``rejoin`` or ``stop``."""
        stdin = self._require_process().stdin
        assert stdin is not None
        stdin.write(command.encode() + b"\n")
        stdin.flush()

    # ----------------------------------------------------------------- events

    @property
    def events(self) -> list[Event]:
        with self._changed:
            return list(self._events)

    def mark(self) -> int:
        """The number of events so far: pass it as ``since`` to wait only for newer ones."""
        with self._changed:
            return len(self._events)

    def wait_for(
        self, predicate: Predicate, timeout_s: float, *, since: int = 0, what: str = "an event"
    ) -> Event:
        """The first event from index ``since`` on that matches; fails clearly on timeout/exit."""
        deadline = time.monotonic() + timeout_s
        index = since
        with self._changed:
            while True:
                while index < len(self._events):
                    event = self._events[index]
                    index += 1
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise MemberProcessError(self._explain(f"no {what} within {timeout_s}s"))
                if not self.alive() and not any(r.is_alive() for r in self._readers):
                    raise MemberProcessError(
                        self._explain(f"exited (code {self.returncode}) before {what}")
                    )
                self._changed.wait(min(remaining, 0.2))

    async def wait_for_async(
        self, predicate: Predicate, timeout_s: float, *, since: int = 0, what: str = "an event"
    ) -> Event:
        """``wait_for`` without blocking the caller's event loop."""
        return await asyncio.to_thread(
            self.wait_for, predicate, timeout_s, since=since, what=what
        )

    def wait_for_event(
        self, name: str, timeout_s: float, *, since: int = 0, **fields: Any
    ) -> Event:
        """``wait_for`` an event by name whose listed fields are equal to the given values."""

        def matches(event: Event) -> bool:
            return event.get("event") == name and all(
                event.get(key) == value for key, value in fields.items()
            )

        described = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        return self.wait_for(matches, timeout_s, since=since, what=f"{name!r} ({described})")

    def latest_assignments(self) -> dict[int, Event]:
        """Each consumer's most recent ``assigned`` event."""
        latest: dict[int, Event] = {}
        for event in self.events:
            if event.get("event") == "assigned":
                latest[int(event["consumer"])] = event
        return latest

    def errors(self) -> list[Event]:
        return [e for e in self.events if e.get("event") == "error"]

    def stderr_tail(self, lines: int = 40) -> str:
        with self._changed:
            return "\n".join(list(self._stderr)[-lines:])

    # ----------------------------------------------------------------- internals

    def _require_process(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise RuntimeError(f"{self.name} has not been started")
        return self._process

    def _read_stdout(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            with self._changed:
                if isinstance(event, dict) and "event" in event:
                    self._events.append(event)
                elif line:
                    self._stdout_junk.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for raw in stream:
            with self._changed:
                self._stderr.append(raw.decode(errors="replace").rstrip("\n"))

    def _join_readers(self) -> None:
        for reader in self._readers:
            reader.join(timeout=5.0)
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()

    def _explain(self, problem: str) -> str:
        recent = self._events[-15:]
        lines = [f"member process {self.name} (pid {self._process and self._process.pid}): "
                 f"{problem}", "last events:"]
        lines += [f"  {json.dumps(e, sort_keys=True)}" for e in recent] or ["  (none)"]
        if self._stdout_junk:
            lines += ["stdout (not JSON):", *(f"  {x}" for x in list(self._stdout_junk)[-10:])]
        if self._stderr:
            lines += ["stderr tail:", *(f"  {x}" for x in list(self._stderr)[-20:])]
        return "\n".join(lines)


# --------------------------------------------------------------------------- group views


def current_assignment(
    members: Iterable[MemberProcess],
) -> tuple[set[int | None], dict[ConsumerKey, list[Partition]]]:
    """Generations seen and partitions per (process, consumer), from each live consumer's latest."""
    generations: set[int | None] = set()
    owned: dict[ConsumerKey, list[Partition]] = {}
    for member in members:
        if not member.alive():
            continue
        latest = member.latest_assignments()
        for index in range(member.consumers):
            event = latest.get(index)
            if event is None:
                generations.add(None)
                continue
            generations.add(event.get("generation"))
            owned[(member.name, index)] = [(t, int(p)) for t, p in event["partitions"]]
    return generations, owned


def wait_for_stable_group(
    members: Sequence[MemberProcess],
    timeout_s: float,
    *,
    newer_than: int = 0,
    settle_s: float = 1.0,
) -> tuple[int, dict[ConsumerKey, list[Partition]]]:
    """Wait until every consumer of every live member holds an assignment of one generation,
    newer than ``newer_than``, unchanged for ``settle_s``; returns (generation, assignment)."""
    deadline = time.monotonic() + timeout_s
    stable_since: float | None = None
    seen: tuple[int, dict[ConsumerKey, list[Partition]]] | None = None
    while time.monotonic() < deadline:
        generations, owned = current_assignment(members)
        live = [m for m in members if m.alive()]
        complete = len(owned) == sum(m.consumers for m in live) and len(generations) == 1
        generation = next(iter(generations)) if complete else None
        if complete and isinstance(generation, int) and generation > newer_than:
            if seen is not None and seen == (generation, owned):
                if stable_since is not None and time.monotonic() - stable_since >= settle_s:
                    return generation, owned
            else:
                seen, stable_since = (generation, owned), time.monotonic()
        else:
            seen, stable_since = None, None
        time.sleep(0.1)
    generations, owned = current_assignment(members)
    detail = "\n".join(
        f"  {key}: generation {m.latest_assignments().get(key[1], {}).get('generation')} {parts}"
        for m in members for key, parts in owned.items() if key[0] == m.name
    )
    raise MemberProcessError(
        f"the group did not settle on one generation > {newer_than} within {timeout_s}s; "
        f"generations seen {sorted(map(str, generations))}; live members "
        f"{[m.name for m in members if m.alive()]}\n{detail}"
    )


async def wait_for_stable_group_async(
    members: Sequence[MemberProcess],
    timeout_s: float,
    *,
    newer_than: int = 0,
    settle_s: float = 1.0,
) -> tuple[int, dict[ConsumerKey, list[Partition]]]:
    """``wait_for_stable_group`` in a worker thread, so that the test's event loop keeps running
    (an in-process producer or consumer next to the member processes keeps working meanwhile)."""
    return await asyncio.to_thread(
        wait_for_stable_group, members, timeout_s, newer_than=newer_than, settle_s=settle_s
    )
