"""Word count with a logged store, standbys and restore: a complete stateful aiokafka program.

    <app>-text --split--> <app>-words-repartition --count [store "counts"]--> <app>-counts
                                                         \\--> <app>-counts-changelog

Task ``0_p`` splits lines of partition ``p`` into words and sends each word to partition
``crc32(word) % partitions`` of the repartition topic; task ``1_p`` counts the words of partition
``p`` in its store, writes every new count to its changelog partition ``p`` and to the output.

What the library does: ``StreamsProcess`` places the tasks (sticky, lag-aware, one standby per
stateful task), ``connect()`` creates the internal topics, each consumer's ``MemberAssignment``
names the changelog partitions to restore (actives) and to follow (standbys), and
``StateDirectory`` keeps the process id and a checkpoint per task so a restarted process finds
its state and reports it. What this program does, and any application must:

- a store per task on disk (``store.json`` beside the task's ``.checkpoint``, the checkpoint
  written after the store, so the checkpoint never claims more than the store holds);
- before processing an active stateful task: restore it from its changelog, from the
  checkpoint to the end (a standby kept it nearly current, so little is read);
- while a standby: follow its changelog in the background;
- at-least-once: produce (changelog, output, repartition), flush, then commit the input offsets.
  A crash replays uncommitted input, so a count can only come out too high, never too low.

Run: ``python -m examples.wordcount --app-id wc --state-dir /tmp/wc-1`` (the broker from
``--bootstrap HOST:PORT`` or ``$KAFKA_BOOTSTRAP_SERVERS``, as ``make kafka-up`` prints it)
(several processes with different state dirs share the work). It prints one JSON object per
line (``started``, ``assigned``, ``restored``, ``stopped``) for the test that drives it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
import zlib
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import CommitFailedError, IllegalStateError, KafkaError

from assignor import (
    AssignorConfig,
    MemberAssignment,
    StateDirectory,
    StreamsPartitionAssignor,
    StreamsProcess,
    Topology,
    TopologyBuilder,
)
from protocol import ids
from protocol.ids import TaskId

log = logging.getLogger("wordcount")
#: bounds: a restore reads at most this long, a standby sweep this often
RESTORE_TIMEOUT_S = 60.0
STANDBY_INTERVAL_S = 0.2


def build_topology(app_id: str) -> Topology:
    builder = TopologyBuilder(app_id)
    builder.add_source("lines", f"{app_id}-text")
    builder.add_processor("split", "lines")
    builder.add_sink("to-words", f"{app_id}-words-repartition", "split")
    builder.add_repartition_topic(f"{app_id}-words-repartition")
    builder.add_source("words", f"{app_id}-words-repartition")
    builder.add_processor("count", "words")
    builder.add_state_store("counts", "count")
    builder.add_sink("to-output", f"{app_id}-counts", "count")
    return builder.build()


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


@dataclass
class Store:
    """One task's counts and the next changelog offset they include."""

    counts: dict[str, int] = field(default_factory=dict)
    next_offset: int = 0


class WordCount:
    def __init__(
        self, bootstrap: str, app_id: str, state_dir: str, consumers: int, partitions: int
    ) -> None:
        self.bootstrap = bootstrap
        self.partitions = partitions
        self.app_id = app_id
        self.topology = build_topology(app_id)
        self.directory = StateDirectory(state_dir, app_id)
        self.process = StreamsProcess(
            self.topology,
            AssignorConfig.model_validate({"num.standby.replicas": 1}),
            process_id=self.directory.process_id(),
            state=self.directory.offset_sums,
        )
        self.changelog = f"{app_id}-counts-changelog"
        self.repartition = f"{app_id}-words-repartition"
        self.output = f"{app_id}-counts"
        self.consumer_count = consumers
        self.stores: dict[TaskId, Store] = {}
        #: active stateful tasks whose store is restored: only these are processed
        self.ready: set[TaskId] = set()
        self.lock = asyncio.Lock()  # one restore or standby sweep at a time on the reader
        self.stopping = asyncio.Event()
        self.producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        self.reader = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
        )

    # ------------------------------------------------------------------ local state

    def load(self, task: TaskId) -> Store:
        """The task's store as the disk has it; no (or no readable) checkpoint: empty."""
        if task in self.stores:
            return self.stores[task]
        store = Store()
        checkpoint = self.directory.read_checkpoint(task)
        file = self.directory.task_path(task) / "store.json"
        if checkpoint is not None and file.exists():
            saved = json.loads(file.read_text())
            tp = _tp(self.changelog, task.partition)
            if saved.get("next_offset") == checkpoint.get(tp):
                store = Store(dict(saved["counts"]), int(saved["next_offset"]))
        self.stores[task] = store
        return store

    def save(self, task: TaskId) -> None:
        store = self.stores[task]
        folder = self.directory.task_path(task)
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / "store.json.tmp"
        temporary.write_text(
            json.dumps({"counts": store.counts, "next_offset": store.next_offset})
        )
        temporary.replace(folder / "store.json")
        changelog = _tp(self.changelog, task.partition)
        self.directory.write_checkpoint(task, {changelog: store.next_offset})

    async def catch_up(
        self, tasks: Iterable[TaskId], deadline: float | None
    ) -> dict[TaskId, int]:
        """Read the tasks' changelogs from their stores' positions to the end (or as far as the
        deadline allows); returns the records applied per task."""
        ordered = sorted(tasks)
        if not ordered:
            return {}
        parts = {TopicPartition(self.changelog, t.partition): t for t in ordered}
        ends = await self.reader.end_offsets(list(parts))
        stores = {task: self.load(task) for task in ordered}
        todo = {tp: t for tp, t in parts.items() if stores[t].next_offset < ends[tp]}
        applied = dict.fromkeys(ordered, 0)
        if not todo:
            return applied
        self.reader.assign(list(todo))
        for tp, task in todo.items():
            self.reader.seek(tp, stores[task].next_offset)
        for _ in range(100_000):
            if not todo or (deadline is not None and time.monotonic() > deadline):
                break
            batch = await self.reader.getmany(*todo, timeout_ms=200)
            for tp, records in batch.items():
                store = stores[parts[tp]]
                for record in records:
                    word = record.key.decode()
                    store.counts[word] = int(record.value.decode())
                    store.next_offset = record.offset + 1
                    applied[parts[tp]] += 1
            for tp in list(todo):
                if stores[todo[tp]].next_offset >= ends[tp]:
                    del todo[tp]
        for task in ordered:
            self.save(task)
        return applied

    # ------------------------------------------------------------------ rebalances

    def on_assignment(self, assignor: StreamsPartitionAssignor, a: MemberAssignment) -> None:
        """Plain listener: runs inside on_assignment, before the consumer fetches anything, so a
        task that is not restored yet is never processed."""
        self.ready -= set(a.changes.removed_active)
        for task in a.changes.removed_active | a.changes.removed_standby:
            if task not in self._held():
                self.stores.pop(task, None)  # its files stay: a later assignment may reuse them
        emit(
            "assigned",
            consumer=assignor.index,
            active=sorted(map(str, a.active_tasks)),
            standby=sorted(map(str, a.standby_tasks)),
            error=a.error.name,
        )

    async def restore(self, assignor: StreamsPartitionAssignor, a: MemberAssignment) -> None:
        """Async listener: restore this consumer's new stateful actives, then let them run."""
        todo = [t for t in a.active_tasks if t in a.changelogs and t not in self.ready]
        async with self.lock:
            starts = {t: self.load(t).next_offset for t in todo}
            applied = await self.catch_up(todo, time.monotonic() + RESTORE_TIMEOUT_S)
        for task in todo:
            if task in self.process.running_tasks().get(assignor.index, frozenset()):
                self.ready.add(task)  # still ours after the restore: process it
            emit("restored", task=str(task), start=starts[task], applied=applied.get(task, 0))

    def _held(self) -> set[TaskId]:
        held = {t for tasks in self.process.running_tasks().values() for t in tasks}
        return held | {t for tasks in self.process.standby_tasks().values() for t in tasks}

    async def follow_standbys(self) -> None:
        """Keep standby stores close to their changelogs' ends, checkpointed."""
        while not self.stopping.is_set():
            standbys = {t for ts in self.process.standby_tasks().values() for t in ts}
            standbys = {t for t in standbys if t.subtopology == 1}
            if standbys:
                async with self.lock:
                    await self.catch_up(standbys, time.monotonic() + STANDBY_INTERVAL_S * 5)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), STANDBY_INTERVAL_S)

    # ------------------------------------------------------------------ processing

    async def run_consumer(
        self, consumer: AIOKafkaConsumer, assignor: StreamsPartitionAssignor
    ) -> None:
        while not self.stopping.is_set():
            batch = await consumer.getmany(timeout_ms=200, max_records=500)
            assignment = assignor.last_assignment
            if not batch or assignment is None:
                continue
            owner = {tp: task for task, tps in assignment.active_tasks.items() for tp in tps}
            touched: dict[TaskId, list[Any]] = {}
            for tp, records in batch.items():
                task = owner.get(ids.TopicPartition(tp.topic, tp.partition))
                if task is None:
                    continue
                if task.subtopology == 1 and task not in self.ready:
                    consumer.seek(tp, records[0].offset)  # not restored yet: read again later
                    continue
                for record in records:
                    if task.subtopology == 0:
                        for word in record.value.decode().split():
                            part = zlib.crc32(word.encode()) % self.partitions
                            await self.producer.send(
                                self.repartition, b"1", key=word.encode(), partition=part
                            )
                    else:
                        sent = await self._count(task, record.key.decode())
                        touched.setdefault(task, []).append(sent)
            await self.producer.flush()
            for task, deliveries in touched.items():
                store = self.load(task)
                for delivery in deliveries:
                    store.next_offset = max(store.next_offset, delivery.result().offset + 1)
                self.save(task)
            try:
                await consumer.commit()
            except (CommitFailedError, IllegalStateError, KafkaError) as exc:
                log.warning("commit failed (%s); the records will be processed again", exc)

    async def _count(self, task: TaskId, word: str) -> Any:
        """Count one word; returns the changelog write's delivery future."""
        store = self.load(task)
        store.counts[word] = store.counts.get(word, 0) + 1
        value, key = str(store.counts[word]).encode(), word.encode()
        sent = await self.producer.send(self.changelog, value, key=key, partition=task.partition)
        await self.producer.send(self.output, value, key=key, partition=task.partition)
        return sent

    # ------------------------------------------------------------------ life cycle

    async def _fatal_on_error(self, work: Awaitable[None]) -> None:
        """A loop that fails stops the whole program, loudly (never a silent dead loop)."""
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("stopping: a processing loop failed")
            emit("error", error=f"{type(exc).__name__}: {exc}")
            self.stopping.set()

    async def run(self) -> None:
        await self.process.connect(self.bootstrap)
        await self.producer.start()
        await self.reader.start()
        self.process.add_listener(self.on_assignment)
        self.process.add_listener(self.restore)
        consumers = [
            self.process.create_consumer(
                self.bootstrap,
                session_timeout_ms=3000,
                heartbeat_interval_ms=300,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            for _ in range(self.consumer_count)
        ]
        emit("started", process_id=str(self.process.process_id))
        tasks = []
        try:
            for consumer in consumers:
                await consumer.start()
                self.process.subscribe(consumer)
            tasks = [
                asyncio.ensure_future(self._fatal_on_error(self.run_consumer(c, a)))
                for c, a in zip(consumers, self.process.assignors, strict=True)
            ]
            tasks.append(asyncio.ensure_future(self._fatal_on_error(self.follow_standbys())))
            await self.stopping.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for consumer in consumers:
                await consumer.stop()
            await self.process.close()
            await self.reader.stop()
            await self.producer.stop()
            emit("stopped")


def _tp(topic: str, partition: int) -> ids.TopicPartition:
    return ids.TopicPartition(topic, partition)


async def create_topics(bootstrap: str, app_id: str, partitions: int) -> None:
    """The application's own input and output topics (internal ones come from connect())."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [f"{app_id}-text", f"{app_id}-counts"]
        missing = [NewTopic(t, partitions, 1) for t in wanted if t not in existing]
        if missing:
            await admin.create_topics(missing)
    finally:
        await admin.close()


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap`` (default: what ``make kafka-up`` prints), ``--app-id``, ``--partitions``."""
    parser.add_argument(
        "--bootstrap",
        default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS"),
        help="HOST:PORT (default: $KAFKA_BOOTSTRAP_SERVERS, as make kafka-up prints it)",
    )
    parser.add_argument("--app-id", default="wordcount")
    parser.add_argument("--partitions", type=int, default=4)


def parse_common(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parsed arguments; no broker at all is a usage error, said before anything connects."""
    args = parser.parse_args(argv)
    if not args.bootstrap:
        parser.error("no broker: pass --bootstrap HOST:PORT or set KAFKA_BOOTSTRAP_SERVERS")
    return args


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.wordcount")
    add_common_arguments(parser)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--consumers", type=int, default=2)
    args = parse_common(parser, argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    await create_topics(args.bootstrap, args.app_id, args.partitions)
    app = WordCount(args.bootstrap, args.app_id, args.state_dir, args.consumers, args.partitions)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, app.stopping.set)
    await app.run()
