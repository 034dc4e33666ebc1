"""The leader's end offsets are read right before assign(), bounded, and never lost on failure."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from assignor import StreamsProcess
from assignor.adapter import assign_time_offsets
from assignor.adapter.assign_time_offsets import (
    AssignTimeRefreshUnsupportedError,
    check_assign_time_refresh_supported,
    install_assign_time_refresh,
)
from protocol.ids import TopicPartition
from tests.integration.streams_member import join_topology

CHANGELOG = TopicPartition("app-counts-changelog", 0)
TOPOLOGY = join_topology("app", "orders", "customers", "app-by-region-repartition")


class Reader:
    """End offsets that grow by 10 at each read; can be told to fail or hang."""

    def __init__(self) -> None:
        self.reads = 0
        self.mode = "ok"

    async def __call__(self) -> Mapping[TopicPartition, int] | None:
        self.reads += 1
        if self.mode == "fail":
            raise ConnectionError("broker gone")
        if self.mode == "hang":
            await asyncio.sleep(3600)
        return {CHANGELOG: 10 * self.reads}


class Coordinator:
    """aiokafka's GroupCoordinator as far as the hook is concerned."""

    def __init__(self, process: StreamsProcess) -> None:
        self.process = process
        self.seen: list[Mapping[TopicPartition, int] | None] = []

    async def _perform_assignment(self, response: Any) -> str:
        self.seen.append(self.process.changelog_end_offsets)  # what assign() would read
        return f"assigned {response}"


def _process(reader: Reader, timeout_s: float = 5.0) -> StreamsProcess:
    return StreamsProcess(
        TOPOLOGY, end_offsets_reader=reader, assign_end_offsets_timeout_s=timeout_s
    )


def test_installed_aiokafka_has_the_hooked_coroutine() -> None:
    check_assign_time_refresh_supported()


def test_a_changed_aiokafka_is_refused_at_consumer_creation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from aiokafka.consumer.group_coordinator import GroupCoordinator

    def sync_perform(self: Any, response: Any, extra: Any) -> None: ...

    monkeypatch.setattr(GroupCoordinator, "_perform_assignment", sync_perform)
    with pytest.raises(AssignTimeRefreshUnsupportedError, match=r"0\.14"):
        check_assign_time_refresh_supported()
    with pytest.raises(AssignTimeRefreshUnsupportedError):
        StreamsProcess(TOPOLOGY).create_consumer("127.0.0.1:1")


async def test_the_leader_assigns_on_offsets_read_after_the_join() -> None:
    reader = Reader()
    process = _process(reader)
    await process.refresh_end_offsets(force=True)  # the listener's snapshot, at the join
    coordinator = Coordinator(process)
    assert install_assign_time_refresh(coordinator, process, 5.0)
    assert not install_assign_time_refresh(coordinator, process, 5.0)  # once, not stacked
    assert await coordinator._perform_assignment("g1") == "assigned g1"
    assert coordinator.seen == [{CHANGELOG: 20}]
    assert reader.reads == 2


async def test_a_failed_or_slow_fetch_keeps_the_previous_snapshot(
        caplog: pytest.LogCaptureFixture) -> None:
    reader = Reader()
    process = _process(reader, timeout_s=0.05)
    await process.refresh_end_offsets(force=True)
    coordinator = Coordinator(process)
    install_assign_time_refresh(coordinator, process, 0.05)
    caplog.set_level(logging.DEBUG, logger=assign_time_offsets.__name__)
    reader.mode = "fail"
    await coordinator._perform_assignment("g2")
    reader.mode = "hang"
    await coordinator._perform_assignment("g3")
    assert coordinator.seen == [{CHANGELOG: 10}, {CHANGELOG: 10}]
    ours = [r for r in caplog.records if r.name == assign_time_offsets.__name__]
    assert [r.levelno for r in ours] == [logging.WARNING, logging.DEBUG]
    assert "previous snapshot" in ours[0].getMessage()
    await process.close()


async def test_an_aiokafka_consumer_gets_the_hook_once_started() -> None:
    """aiokafka creates the coordinator in start(); the assignor hooks it at the next join."""
    reader = Reader()
    process = _process(reader)
    consumer = process.create_consumer("127.0.0.1:1")
    assignor = process.assignors[0]
    coordinator = Coordinator(process)
    consumer._coordinator = coordinator  # what start() does
    assignor.metadata(["orders"])
    assert await coordinator._perform_assignment("g4") == "assigned g4"
    assert coordinator.seen == [{CHANGELOG: 10}]


def test_a_coordinator_without_the_coroutine_is_left_alone_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    process = StreamsProcess(TOPOLOGY)
    double = SimpleNamespace()
    assert not install_assign_time_refresh(double, process, 1.0)
    assert not install_assign_time_refresh(double, process, 1.0)
    warnings = [r for r in caplog.records if "no _perform_assignment" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
