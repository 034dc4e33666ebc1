"""One group member process: N aiokafka consumers in one OS process, reporting as JSON lines.

    python -m tests.integration.member_proc --bootstrap 127.0.0.1:9092 --group g \\
        --topics a,b --consumers 2 --assignor tests.integration.factories:roundrobin \\
        [--instance-id p1] [--assignor-config '{"num.standby.replicas": 1}']

Kafka Streams runs several consumers (stream threads) per process sharing one process identity;
the integration tests need exactly that shape as a real process they can ``kill -9``. The
``--assignor module:factory`` callable is called once per consumer with a ``MemberContext`` and
returns that consumer's own assignor instance (``ctx.shared`` is one dict for the whole process).

Every stdout line is one JSON object with ``event`` among: ``started``, ``consumer_started``,
``leader_assign`` (this consumer's assignor ran ``assign()``; with ``--emit-assign-io`` also
its input and output, for an offline replay), ``joined`` (first assignment of a
consumer), ``assigned``, ``revoked``, ``records`` (with ``--emit-records``), ``log`` (warnings),
``error``, ``stopped``. stdin takes ``rejoin`` (every consumer rejoins) and ``stop``.
SIGTERM/SIGINT stop gracefully (consumers leave the group); ``kill -9`` is the crash test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.structs import TopicPartition

_emit_lock = threading.Lock()


@dataclass(frozen=True)
class MemberContext:
    """What an assignor factory may know about the consumer it builds an assignor for."""

    process_name: str
    consumer_index: int
    consumers: int
    group: str
    topics: tuple[str, ...]
    instance_id: str | None
    group_instance_id: str | None
    config: Mapping[str, Any]
    shared: dict[str, Any] = field(compare=False)


class Reporter:
    """Writes one JSON object per line; the only writer to stdout."""

    def __init__(self, process_name: str) -> None:
        self.process_name = process_name

    def emit(self, event: str, **fields: Any) -> None:
        record = {"event": event, "process": self.process_name, "pid": os.getpid(),
                  "t": round(time.time(), 3), **fields}
        line = json.dumps(record, default=_jsonable, sort_keys=True)
        with _emit_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


def _jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return sorted(value, key=str)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _partitions(tps: Iterable[TopicPartition]) -> list[list[Any]]:
    return sorted([tp.topic, tp.partition] for tp in tps)


def _coordinator_view(consumer: AIOKafkaConsumer) -> dict[str, Any]:
    """Generation and member id live on aiokafka's private coordinator; read them in one place."""
    coordinator = getattr(consumer, "_coordinator", None)
    return {
        "generation": getattr(coordinator, "generation", None),
        "member_id": getattr(coordinator, "member_id", None),
    }


def _request_rejoin(consumer: AIOKafkaConsumer) -> bool:
    coordinator = getattr(consumer, "_coordinator", None)
    rejoin = getattr(coordinator, "request_rejoin", None)
    if not callable(rejoin):
        return False
    rejoin()
    return True


def _assign_io(
    cluster: Any, members: Mapping[str, Any], result: Mapping[str, Any]
) -> dict[str, Any]:
    """What the leader's assign() saw and answered, in JSON, so a test can replay it offline."""
    topics = sorted({t for meta in members.values() for t in meta.subscription})
    counts = {t: len(cluster.partitions_for_topic(t) or ()) for t in topics}
    subscriptions = {
        member: {"version": meta.version, "topics": sorted(meta.subscription),
                 "user_data": (meta.user_data or b"").hex()}
        for member, meta in members.items()
    }
    answers = {}
    for member, answer in result.items():
        decoded = (
            ConsumerProtocolMemberAssignment.decode(answer) if isinstance(answer, bytes) else answer
        )
        answers[member] = {
            "partitions": sorted([t, p] for t, ps in decoded.assignment for p in ps),
            "user_data": (decoded.user_data or b"").hex(),
        }
    return {"partition_counts": counts, "subscriptions": subscriptions, "assignments": answers}


class ReportingAssignor:
    """Wraps the factory's assignor: same behaviour, plus events for assign() and its failures."""

    def __init__(self, inner: Any, reporter: Reporter, index: int, emit_io: bool = False) -> None:
        self._inner = inner
        self._reporter = reporter
        self._index = index
        self._emit_io = emit_io
        self.consumer: AIOKafkaConsumer | None = None

    @property
    def name(self) -> str:
        return str(self._inner.name)

    def metadata(self, topics: Iterable[str]) -> Any:
        try:
            return self._inner.metadata(topics)
        except Exception as exc:
            self._error("metadata", exc)
            raise

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> Any:
        began = time.perf_counter()
        try:
            result = self._inner.assign(cluster, members)
        except Exception as exc:
            self._error("assign", exc)
            raise
        elapsed_ms = round((time.perf_counter() - began) * 1000, 3)
        view = _coordinator_view(self.consumer) if self.consumer is not None else {}
        io = _assign_io(cluster, members, result) if self._emit_io else {}
        self._reporter.emit(
            "leader_assign", consumer=self._index, members=sorted(members),
            elapsed_ms=elapsed_ms, **view, **io,
        )
        return result

    def on_assignment(self, assignment: Any) -> None:
        try:
            self._inner.on_assignment(assignment)
        except Exception as exc:
            self._error("on_assignment", exc)
            raise

    def describe(self) -> Any:
        describe = getattr(self._inner, "describe_last_assignment", None)
        if not callable(describe):
            return None
        try:
            return describe()
        except Exception as exc:
            self._error("describe_last_assignment", exc)
            return None

    def __getattr__(self, item: str) -> Any:
        return getattr(self._inner, item)

    def _error(self, where: str, exc: BaseException) -> None:
        self._reporter.emit(
            "error", consumer=self._index, where=where, type=type(exc).__name__, message=str(exc)
        )


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: _Consumer) -> None:
        self._member = member

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        self._member.reporter.emit(
            "revoked", consumer=self._member.index, partitions=_partitions(revoked)
        )
        # aiokafka awaits this before every join: an assignor may prepare for the join here
        # (the Streams assignor refreshes its changelog end offsets).
        before_join = getattr(self._member.assignor._inner, "before_join", None)
        if callable(before_join):
            await before_join()

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        member = self._member
        view = _coordinator_view(member.consumer)
        if not member.joined:
            member.joined = True
            member.reporter.emit("joined", consumer=member.index, **view)
        member.reporter.emit(
            "assigned", consumer=member.index, partitions=_partitions(assigned),
            info=member.assignor.describe(), **view,
        )


@dataclass
class _Consumer:
    index: int
    consumer: AIOKafkaConsumer
    assignor: ReportingAssignor
    reporter: Reporter
    joined: bool = False


def _load_factory(spec: str) -> Callable[[MemberContext], Any]:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SystemExit(f"--assignor must be module:factory, got {spec!r}")
    factory = getattr(importlib.import_module(module_name), attr)
    if not callable(factory):
        raise SystemExit(f"{spec} is not callable")
    return factory  # type: ignore[no-any-return]


class _EventLogHandler(logging.Handler):
    """Library warnings (aiokafka's, the assignor's) become ``log`` events next to the rest."""

    def __init__(self, reporter: Reporter, level: int) -> None:
        super().__init__(level)
        self._reporter = reporter

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self._reporter.emit(
                "log", level=record.levelname, logger=record.name, message=record.getMessage()
            )


async def _poll(member: _Consumer, stop: asyncio.Event, emit_records: bool) -> None:
    while not stop.is_set():
        try:
            batch = await member.consumer.getmany(timeout_ms=200)
        except Exception as exc:
            member.reporter.emit(
                "error", consumer=member.index, where="poll", type=type(exc).__name__,
                message=str(exc),
            )
            await asyncio.sleep(0.5)
            continue
        if emit_records and batch:
            counts = {f"{tp.topic}-{tp.partition}": len(records) for tp, records in batch.items()}
            member.reporter.emit("records", consumer=member.index, counts=counts)


async def _commands(members: list[_Consumer], stop: asyncio.Event, reporter: Reporter) -> None:
    """Driver commands on stdin; end of input only ends the commands, not the member."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except (OSError, ValueError):
        return  # stdin is a regular file or closed: no commands
    while not stop.is_set():
        line = await reader.readline()
        if not line:
            return
        command = line.decode(errors="replace").strip()
        if command == "stop":
            stop.set()
        elif command == "rejoin":
            done = [_request_rejoin(m.consumer) for m in members]
            reporter.emit("rejoin_requested", ok=all(done))
        elif command:
            reporter.emit("error", where="stdin", type="UnknownCommand", message=command)


async def _watch_parent(parent: int, stop: asyncio.Event) -> None:
    """An orphan (the driving test died) stops on its own instead of lingering in the group."""
    while not stop.is_set():
        if os.getppid() != parent:
            stop.set()
            return
        await asyncio.sleep(0.5)


async def run(args: argparse.Namespace) -> int:
    reporter = Reporter(args.name or f"member-{os.getpid()}")
    level = getattr(logging, args.log_level.upper())
    logging.getLogger().addHandler(_EventLogHandler(reporter, level))
    logging.getLogger().setLevel(level)
    if args.stderr_log:
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.DEBUG)
        logging.getLogger().addHandler(handler)

    topics = tuple(t for t in args.topics.split(",") if t)
    config = json.loads(args.assignor_config) if args.assignor_config else {}
    factory = _load_factory(args.assignor)
    shared: dict[str, Any] = {}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    members: list[_Consumer] = []
    for index in range(args.consumers):
        group_instance_id = f"{args.instance_id}-{index}" if args.instance_id else None
        context = MemberContext(
            process_name=reporter.process_name, consumer_index=index, consumers=args.consumers,
            group=args.group, topics=topics, instance_id=args.instance_id,
            group_instance_id=group_instance_id, config=config, shared=shared,
        )
        assignor = ReportingAssignor(factory(context), reporter, index, args.emit_assign_io)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=args.bootstrap,
            group_id=args.group,
            group_instance_id=group_instance_id,
            client_id=f"{reporter.process_name}-{index}",
            partition_assignment_strategy=(assignor,),
            session_timeout_ms=args.session_timeout_ms,
            heartbeat_interval_ms=args.heartbeat_interval_ms,
            rebalance_timeout_ms=args.rebalance_timeout_ms,
            max_poll_interval_ms=args.max_poll_interval_ms,
            auto_offset_reset="earliest",
        )
        assignor.consumer = consumer
        # An assignor that schedules its own follow-up rebalances needs its consumer.
        bind = getattr(assignor._inner, "bind", None)
        if callable(bind):
            bind(consumer)
        members.append(_Consumer(index, consumer, assignor, reporter))

    reporter.emit(
        "started", consumers=args.consumers, group=args.group, topics=list(topics),
        assignor=args.assignor, instance_id=args.instance_id,
    )
    exit_code = 0
    tasks: list[asyncio.Task[None]] = []
    try:
        for member in members:
            await member.consumer.start()
            member.consumer.subscribe(topics, listener=_Listener(member))
            reporter.emit("consumer_started", consumer=member.index)
        tasks = [asyncio.create_task(_poll(m, stop, args.emit_records)) for m in members]
        tasks.append(asyncio.create_task(_commands(members, stop, reporter)))
        if args.exit_with_parent:
            tasks.append(asyncio.create_task(_watch_parent(os.getppid(), stop)))
        await stop.wait()
    except Exception as exc:
        reporter.emit("error", where="main", type=type(exc).__name__, message=str(exc))
        exit_code = 1
    finally:
        for task in tasks:
            task.cancel()
        for member in members:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(member.consumer.stop(), timeout=10)
        reporter.emit("stopped", exit_code=exit_code)
    return exit_code


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.integration.member_proc")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topics", required=True, help="comma-separated topic names")
    parser.add_argument("--consumers", type=int, default=1)
    parser.add_argument("--assignor", required=True, help="module:factory(MemberContext)")
    parser.add_argument("--assignor-config", default="", help="JSON object for the factory")
    parser.add_argument("--instance-id", default=None, help="static membership: <id>-<consumer>")
    parser.add_argument("--name", default=None, help="label carried by every event")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=500)
    parser.add_argument("--rebalance-timeout-ms", type=int, default=20000)
    parser.add_argument("--max-poll-interval-ms", type=int, default=300000)
    parser.add_argument("--emit-records", action="store_true")
    parser.add_argument(
        "--emit-assign-io", action="store_true",
        help="leader_assign events carry the subscriptions, partition counts and answers (hex)",
    )
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--stderr-log", action="store_true", help="also log to stderr (debug)")
    parser.add_argument("--exit-with-parent", action="store_true")
    args = parser.parse_args(argv)
    if args.consumers < 1:
        parser.error("--consumers must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    # Run the importable module, not __main__, so that factories importing MemberContext from
    # tests.integration.member_proc see the very class the runner builds.
    sys.exit(importlib.import_module("tests.integration.member_proc").main())
