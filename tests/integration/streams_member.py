"""Factories that make ``member_proc`` consumers run the streams assignor (one StreamsProcess per
OS process, one assignor per consumer), plus the topology the integration tests share.

``--assignor-config`` keys (all optional except ``topics``):
    topics: {"orders": ..., "customers": ..., "repartition": ...} names used by the topology
    app: application id (default: the group)
    assignor: AssignorConfig under Kafka's names, e.g. {"num.standby.replicas": 1}
    codec_version: an older Codec(latest_supported=N), for rolling-upgrade tests
    endpoint: "host:port" for interactive-query host maps
    probing_ms: StreamsProcess(testing_probing_interval_ms=...)
    shutdown_after_s: the process requests an application shutdown this long after it starts
    state_dir: a JSON file standing for the state directory (survives a restart)
    restore_after_s: the state provider reports a standby (warm-up) task as caught up to the
        leader's end offsets once this process has held it that long (simulated restoration)
    end_offsets: true -> the process reads changelog end offsets from the broker at "bootstrap"
    refresh_loop: false -> no background refresh between joins (default true): end offsets are
        then read only before each join and by the leader right before assign(), as in an
        application using ``process.rebalance_listener()``
    listener_snapshot_only: true -> the leader does not refresh end offsets right before
        assign() (the adapter's hook is skipped): the control for the test that it matters
    following: true -> with restore_after_s, a restored standby keeps following the changelog:
        reported at this process's latest end offsets, not frozen at the first ones
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from assignor import StreamsPartitionAssignor, StreamsProcess
from assignor.config import AssignorConfig
from assignor.member import MemberAssignment
from assignor.topology.builder import TopologyBuilder
from assignor.topology.model import Topology
from protocol.codec import Codec
from protocol.errors import AssignorError, ProtocolError
from protocol.ids import HostInfo, TaskId, TopicPartition
from protocol.messages import AssignmentInfo
from tests.integration.member_proc import MemberContext


def join_topology(app: str, orders: str, customers: str, repartition: str) -> Topology:
    """A copartitioned join with a logged store, feeding a repartitioned, logged aggregation."""
    builder = TopologyBuilder(app)
    builder.add_source("orders-source", orders).add_source("customers-source", customers)
    builder.add_processor("join", "orders-source", "customers-source")
    builder.add_state_store("join-store", "join")
    builder.copartition(orders, customers)
    builder.add_sink("by-region", repartition, "join")
    builder.add_repartition_topic(repartition)
    builder.add_source("region-source", repartition)
    builder.add_processor("count", "region-source")
    builder.add_state_store("counts", "count")
    return builder.build()


def topology_from_config(group: str, config: Mapping[str, Any]) -> Topology:
    names = config["topics"]
    return join_topology(
        str(config.get("app", group)), names["orders"], names["customers"], names["repartition"]
    )


class RestoringState:
    """A state provider that simulates restoration: a task this process holds as standby is
    reported caught up (at the leader's end offsets) once held for ``restore_after_s``."""

    def __init__(
        self, process_ref: list[StreamsProcess], restore_after_s: float, following: bool = False
    ) -> None:
        self._process_ref = process_ref
        self._after = restore_after_s
        self._following = following
        self._held_since: dict[TaskId, float] = {}
        self._restored: dict[TaskId, int] = {}

    def on_assignment(self, _: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        now = time.monotonic()
        for task in (*assignment.standby_tasks, *assignment.active_tasks):
            self._held_since.setdefault(task, now)

    def __call__(self) -> Mapping[TaskId, int]:
        process = self._process_ref[0]
        ends = process.changelog_end_offsets or {}
        topology = process.topology
        now = time.monotonic()
        for task, since in self._held_since.items():
            if now - since < self._after or (task in self._restored and not self._following):
                continue
            sub = topology.subtopology(task.subtopology)
            offsets = [
                ends.get(tp) for tp in _changelog_partitions(sub.changelog_topics, task.partition)
            ]
            if offsets and all(o is not None for o in offsets):
                self._restored[task] = sum(o for o in offsets if o is not None)
        return dict(self._restored)


class StateDirectory:
    """A state provider backed by a JSON file that outlives the process (a state directory):
    every task this process holds is recorded at its changelog end-offset sum, as if fully
    restored, so that a restarted instance reports the state it left behind."""

    def __init__(self, path: str, process_ref: list[StreamsProcess]) -> None:
        self._path = Path(path)
        self._process_ref = process_ref

    def on_assignment(self, _: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        process = self._process_ref[0]
        ends = process.changelog_end_offsets or {}
        sums = {str(t): s for t, s in self().items()}
        for task in (*assignment.active_tasks, *assignment.standby_tasks):
            sub = process.topology.subtopology(task.subtopology)
            offsets = [
                ends.get(tp) for tp in _changelog_partitions(sub.changelog_topics, task.partition)
            ]
            if offsets and all(o is not None for o in offsets):
                sums[str(task)] = sum(o for o in offsets if o is not None)
        self._path.write_text(json.dumps(sums))

    def __call__(self) -> Mapping[TaskId, int]:
        if not self._path.exists():
            return {}
        return {TaskId.parse(t): int(s) for t, s in json.loads(self._path.read_text()).items()}


def _changelog_partitions(topics: tuple[str, ...], partition: int) -> list[TopicPartition]:
    return [TopicPartition(t, partition) for t in topics]


def _process(ctx: MemberContext) -> StreamsProcess:
    """One StreamsProcess per OS process, made by the first consumer's factory call."""
    existing = ctx.shared.get("streams_process")
    if isinstance(existing, StreamsProcess):
        return existing
    config = ctx.config
    endpoint = None
    if config.get("endpoint"):
        host, _, port = str(config["endpoint"]).rpartition(":")
        endpoint = HostInfo(host, int(port))
    ref: list[StreamsProcess] = []
    restore_after = config.get("restore_after_s")
    restoring = (
        RestoringState(ref, float(restore_after), bool(config.get("following")))
        if restore_after is not None
        else None
    )
    directory = StateDirectory(str(config["state_dir"]), ref) if config.get("state_dir") else None
    process = StreamsProcess(
        topology_from_config(ctx.group, config),
        AssignorConfig.model_validate(dict(config.get("assignor", {}))),
        group_instance_id=ctx.instance_id,
        endpoint=endpoint,
        state=restoring or directory,
        codec=Codec(int(config.get("codec_version", Codec().latest_supported))),
        testing_probing_interval_ms=config.get("probing_ms"),
        end_offsets_max_age_ms=0,
    )
    ref.append(process)
    if restoring is not None:
        process.add_listener(restoring.on_assignment)
    if directory is not None:
        process.add_listener(directory.on_assignment)
    ctx.shared["streams_process"] = process
    loop = asyncio.get_running_loop()
    if config.get("end_offsets"):
        connected = loop.create_task(
            process.connect(str(ctx.config["bootstrap"]), group_id=ctx.group)
        )
        ctx.shared["connected"] = connected
        if config.get("refresh_loop", True):
            ctx.shared["reader_task"] = loop.create_task(_refresh_end_offsets(process, connected))
    if config.get("shutdown_after_s") is not None:
        loop.call_later(float(config["shutdown_after_s"]), process.request_shutdown)
    return process


async def _refresh_end_offsets(process: StreamsProcess, connected: asyncio.Task[None]) -> None:
    """Keep the snapshot fresh between joins too (warm-ups catch up while nothing rebalances)."""
    await connected
    while True:
        await asyncio.sleep(0.3)
        await process.refresh_end_offsets(force=True)


def _before_join(process: StreamsProcess, ctx: MemberContext) -> Callable[[], Awaitable[None]]:
    """What ``process.rebalance_listener()`` does in an application: fresh end offsets before
    each join, so the leader never assigns without lags only because it joined too early."""

    async def before_join() -> None:
        connected = ctx.shared.get("connected")
        if isinstance(connected, asyncio.Task):
            await asyncio.wait_for(asyncio.shield(connected), timeout=30)
            await process.refresh_end_offsets(force=True)

    return before_join


def streams(ctx: MemberContext) -> Any:
    """``member_proc --assignor tests.integration.streams_member:streams``."""
    process = _process(ctx)
    assignor = process.new_assignor(ctx.group_instance_id)
    assignor.before_join = _before_join(process, ctx)  # type: ignore[attr-defined]
    if ctx.config.get("listener_snapshot_only"):
        assignor._hook_leader_path = lambda: None  # type: ignore[method-assign]
    return assignor


class GarbageAssignor:
    """Claims the "stream" protocol but sends junk user data; records what it is answered."""

    name = "stream"

    def __init__(self) -> None:
        self.last: dict[str, Any] = {"error": None}

    def metadata(self, topics: Any) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(0, sorted(topics), b"\xc1 not a subscription")

    def assign(self, cluster: Any, members: Any) -> Any:
        raise RuntimeError("a garbage member must never lead")

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        try:
            info = Codec().decode_assignment(assignment.user_data or b"")
        except ProtocolError as exc:
            self.last = {"error": f"unreadable: {exc}"}
            return
        error = info.error_code if isinstance(info, AssignmentInfo) else AssignorError.NONE
        self.last = {
            "error": error.name,
            "partitions": sorted([t, p] for t, ps in assignment.assignment for p in ps),
        }

    def describe_last_assignment(self) -> dict[str, Any]:
        return dict(self.last)


def garbage(ctx: MemberContext) -> Any:
    return GarbageAssignor()


__all__ = ["GarbageAssignor", "RestoringState", "garbage", "join_topology", "streams"]
