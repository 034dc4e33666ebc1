"""One real Kafka broker per test session, shared by every integration test.

``kafka_bootstrap`` is the only thing a test needs: "127.0.0.1:PORT" of a broker this session
started (jars from Maven Central, KRaft, loopback only), or the value of
``KAFKA_BOOTSTRAP_SERVERS`` when that points the suite at an existing cluster. When a test that
used the broker fails, the report carries the tail of the broker's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration.member_driver import MemberProcess
from tests.support.kafka.broker import Broker, BrokerError, start
from tests.support.requirements import IN_CI, require_tools

BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"
_BROKER = pytest.StashKey["Broker | None"]()
#: Kafka error code 36: the topic exists already (fine when a test re-creates its own topics).
_TOPIC_ALREADY_EXISTS = 36


def _reachable(bootstrap: str) -> bool:
    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        with contextlib.suppress(OSError, ValueError), socket.create_connection(
            (host.strip("[]") or "127.0.0.1", int(port)), timeout=3.0
        ):
            return True
    return False


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[Broker | None]:
    """The broker this session started, or None when KAFKA_BOOTSTRAP_SERVERS names one."""
    if os.environ.get(BOOTSTRAP_ENV):
        yield None
        return
    require_tools("java", "mvn")
    try:
        broker = start()
    except BrokerError as exc:
        pytest.fail(f"the Kafka broker for the integration tests did not start: {exc}")
    request.config.stash[_BROKER] = broker
    try:
        yield broker
    finally:
        request.config.stash[_BROKER] = None
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: Broker | None) -> str:
    """``host:port[,host:port]`` of the cluster every integration test talks to."""
    if kafka_broker is not None:
        return kafka_broker.bootstrap
    bootstrap = os.environ[BOOTSTRAP_ENV]
    if not _reachable(bootstrap):
        pytest.fail(f"{BOOTSTRAP_ENV}={bootstrap} is set but nothing answers there")
    return bootstrap


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Names (topics, groups) that no other test, or earlier run on a shared cluster, uses."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:60]
    token = uuid.uuid4().hex[:8]
    return lambda kind: f"{stem}-{kind}-{token}"


class CreateTopics(Protocol):
    def __call__(
        self, topics: Mapping[str, int] | Iterable[str], *, partitions: int = ...,
        timeout_s: float = ...,
    ) -> Awaitable[None]: ...


async def _wait_for_leaders(
    admin: AIOKafkaAdminClient, wanted: Mapping[str, int], deadline: float
) -> None:
    """Created is not ready: wait until metadata shows every partition with a leader."""
    missing: dict[str, str] = {}
    while time.monotonic() < deadline:
        missing = {}
        described = await admin.describe_topics(list(wanted))
        seen = {entry["topic"]: entry for entry in described}
        for topic, count in wanted.items():
            entry = seen.get(topic)
            if entry is None or entry["error_code"] != 0:
                missing[topic] = "not in metadata yet"
                continue
            leaders = [p for p in entry["partitions"] if p["leader"] >= 0]
            if len(leaders) < count:
                missing[topic] = f"{len(leaders)}/{count} partitions have a leader"
        if not missing:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"topics not ready in time: {missing}")


@pytest.fixture
def create_topics(kafka_bootstrap: str) -> CreateTopics:
    """``await create_topics({"a": 4, "b": 2})`` or ``await create_topics(["a"], partitions=3)``.

    Returns once every partition has a leader. Replication factor 1 (one broker). Topics are not
    deleted afterwards: use ``unique_name`` so that tests never share one.
    """

    async def create(
        topics: Mapping[str, int] | Iterable[str], *, partitions: int = 1, timeout_s: float = 30.0
    ) -> None:
        wanted = (
            dict(topics) if isinstance(topics, Mapping) else dict.fromkeys(topics, partitions)
        )
        deadline = time.monotonic() + timeout_s
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            response = await admin.create_topics(
                [NewTopic(name, count, 1) for name, count in wanted.items()],
                timeout_ms=int(timeout_s * 1000),
            )
            for topic, code, *rest in response.topic_errors:
                if code not in (0, _TOPIC_ALREADY_EXISTS):
                    message = rest[0] if rest else ""
                    raise RuntimeError(f"creating topic {topic!r} failed: code {code} {message}")
            await _wait_for_leaders(admin, wanted, deadline)
        finally:
            await admin.close()

    return create


# --------------------------------------------------------------------------- hooks


#: Group timeouts short enough for a test to see members leave; a test may pass its own.
FAST_SESSION_TIMEOUT_MS = 3000
FAST_HEARTBEAT_MS = 300


@pytest.fixture
def spawn() -> Iterator[Callable[..., MemberProcess]]:
    """Starts member processes (fast group timeouts unless given) and guarantees they are gone
    after the test, whatever happens."""
    started: list[MemberProcess] = []

    def make(*args: Any, **kwargs: Any) -> MemberProcess:
        kwargs.setdefault("session_timeout_ms", FAST_SESSION_TIMEOUT_MS)
        kwargs.setdefault("heartbeat_interval_ms", FAST_HEARTBEAT_MS)
        member = MemberProcess(*args, **kwargs).start()
        started.append(member)
        return member

    yield make
    for member in started:
        member.terminate(timeout_s=10)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Every test that touches the broker carries the ``kafka`` marker (``-m "not kafka"``)."""
    if "kafka_bootstrap" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.kafka)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[None]:
    """A failing broker test shows the broker's side of the story next to the traceback."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if not report.failed or "kafka_bootstrap" not in getattr(item, "fixturenames", ()):
        return
    broker = item.config.stash.get(_BROKER, None)
    if broker is None:
        return
    lines = 80 if IN_CI else 40
    report.sections.append(
        (f"Kafka broker log, last {lines} lines of {broker.log_file}", broker.log_tail(lines))
    )
