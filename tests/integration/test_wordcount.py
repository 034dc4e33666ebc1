"""The word-count example survives ``kill -9`` on the real broker (at-least-once, state kept).

Two processes of two consumers run ``python -m examples.wordcount``; a known text is produced in
three parts; after the first, one process is killed with SIGKILL (no LeaveGroup, no flush), the
survivor takes its tasks over from its standbys, then the killed one restarts on its state
directory. Every word's final count must be at least its true count (records replayed after the
crash may be counted twice, none may be lost), and no word's count may start again from 1 once
it was higher (the state was restored from the changelog, not rebuilt from nothing).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from assignor import StateDirectory
from tests.integration.conftest import CreateTopics

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4
WORDS = [f"w{i:02d}" for i in range(20)]


class _App:
    """One ``python -m examples.wordcount`` process, its JSON events read from a file."""

    def __init__(
        self, name: str, bootstrap: str, app_id: str, state_dir: Path, logs: Path
    ) -> None:
        self.name = name
        self.out = logs / f"{name}.out"
        self.err = logs / f"{name}.err"
        args = [
            sys.executable, "-m", "examples.wordcount", "--bootstrap", bootstrap,
            "--app-id", app_id, "--state-dir", str(state_dir), "--consumers", "2",
            "--partitions", str(PARTITIONS),
        ]
        with open(self.out, "a") as out, open(self.err, "a") as err:
            self.proc = subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=err)

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = []
        for line in self.out.read_text().splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if kind is None or event["event"] == kind:
                found.append(event)
        return found

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def describe(self) -> str:
        tail = "\n".join(self.err.read_text().splitlines()[-20:])
        return f"{self.name} (pid {self.proc.pid}, alive {self.alive()}) stderr:\n{tail}"


async def _until(check: Callable[[], bool], timeout_s: float, what: str, apps: list[_App]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        await asyncio.sleep(0.2)
    details = "\n".join(a.describe() for a in apps)
    raise AssertionError(f"{what} not within {timeout_s} s\n{details}")


class _Output:
    """Every (word, count) the application wrote, in order, per word."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest"
        )
        self.topic = topic
        self.counts: dict[str, list[int]] = {}

    async def start(self) -> None:
        await self.consumer.start()
        self.consumer.assign([TopicPartition(self.topic, p) for p in range(PARTITIONS)])

    async def poll(self) -> None:
        batch = await self.consumer.getmany(timeout_ms=200, max_records=5000)
        for records in batch.values():
            for record in records:
                self.counts.setdefault(record.key.decode(), []).append(int(record.value))

    def last(self) -> dict[str, int]:
        return {word: values[-1] for word, values in self.counts.items()}


async def test_wordcount_survives_kill_9_with_its_state(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    app_id = unique_name("wc")
    await create_topics({f"{app_id}-text": PARTITIONS, f"{app_id}-counts": PARTITIONS})
    apps = [
        _App(name, kafka_bootstrap, app_id, tmp_path / name, tmp_path) for name in ("p1", "p2")
    ]
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    output = _Output(kafka_bootstrap, f"{app_id}-counts")
    await producer.start()
    await output.start()
    truth: Counter[str] = Counter()
    line_number = 0

    async def produce(lines: int) -> None:
        nonlocal line_number
        for _ in range(lines):
            words = [WORDS[(line_number * 7 + k * 3) % len(WORDS)] for k in range(5)]
            truth.update(words)
            await producer.send(
                f"{app_id}-text", " ".join(words).encode(), partition=line_number % PARTITIONS
            )
            line_number += 1
        await producer.flush()

    def all_assigned(names: list[_App]) -> bool:
        active = set()
        for app in names:
            latest: dict[int, list[str]] = {}
            for event in app.events("assigned"):
                latest[event["consumer"]] = event["active"] if event["error"] == "NONE" else []
            active |= {t for tasks in latest.values() for t in tasks}
        return len(active) == 2 * PARTITIONS

    try:
        await _until(lambda: all_assigned(apps), 120, "both instances running", apps)
        victim, survivor = apps
        first_process_id = victim.events("started")[0]["process_id"]
        local = StateDirectory(tmp_path / "p1", app_id)
        await produce(50)
        # the victim has checkpointed state (its actives and the standbys it follows)
        await _until(
            lambda: len([s for s in local.offset_sums().values() if s > 0]) == PARTITIONS,
            120,
            "the victim checkpointed every counting task",
            apps,
        )
        await produce(50)
        victim.kill()  # mid-stream: the last lines are not processed yet
        killed_at = time.time()
        await produce(100)
        await _until(lambda: all_assigned([survivor]), 120, "the survivor took over", apps)
        # the killed instance comes back on its state directory (same process id, its stores)
        apps[0] = victim = _App("p1-again", kafka_bootstrap, app_id, tmp_path / "p1", tmp_path)

        def both_share_the_work() -> bool:
            mine = [e for e in victim.events("assigned") if e["error"] == "NONE"]
            return bool(mine and mine[-1]["active"]) and all_assigned(apps)

        await _until(both_share_the_work, 120, "the restarted instance took tasks again", apps)
        await produce(100)

        deadline = time.monotonic() + 180
        while True:
            await output.poll()
            last = output.last()
            if all(last.get(word, 0) >= n for word, n in truth.items()):
                break
            assert time.monotonic() < deadline, (
                f"counts short: { {w: (last.get(w), n) for w, n in truth.items()} }\n"
                + "\n".join(a.describe() for a in apps)
            )
    finally:
        for app in apps:
            app.stop()
        await producer.stop()
        await output.consumer.stop()

    # at-least-once: nothing lost (duplicates after the crash are allowed)
    assert all(output.last()[word] >= n for word, n in truth.items())
    # state restored, never rebuilt: once above 1, a word's count never starts again at 1
    for word, values in output.counts.items():
        first_high = next((i for i, v in enumerate(values) if v >= 2), len(values))
        assert 1 not in values[first_high:], f"{word} restarted from scratch: {values}"
    # the survivor took the victim's counting tasks over from its standbys: it restored them
    # from the positions its standbys had reached, not from the changelog's beginning
    takeovers = [
        e for e in survivor.events("restored") if e["t"] > killed_at and e["start"] > 0
    ]
    assert takeovers, survivor.events("restored")
    # the restarted instance found its stores on disk: it restored from its checkpoints
    assert victim.events("started")[0]["process_id"] == first_process_id
    assert any(e["start"] > 0 for e in victim.events("restored")), victim.events("restored")
    assert os.path.exists(tmp_path / "p1" / app_id / "kafka-streams-process-metadata")
