"""``python -m protocol decode`` on the bytes a real broker keeps for a Streams group's members.

A group of one ``StreamsProcess`` with two consumers runs the quick start's topology; the test
reads every member's JoinGroup metadata and assignment as the coordinator returns them
(DescribeGroups: the whole ConsumerProtocol structs, not our bare user data) and hands each one,
as hex and as a raw file, to the command in its own process. It must find the envelope by itself
and print both the struct's fields and our decoded payload, consistent with the live group.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient

from assignor import AssignorConfig, MemberAssignment, StreamsPartitionAssignor, StreamsProcess
from examples.quickstart import build_topology, create_source_topics

ROOT = Path(__file__).resolve().parents[2]


def decode(argument: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "protocol", "decode", argument],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    printed: dict[str, object] = json.loads(done.stdout)
    return printed


async def _raw_members(bootstrap: str, group: str) -> list[tuple[bytes, bytes]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        for _ in range(50):  # bounded: until the coordinator holds every member's assignment
            responses = await admin.describe_consumer_groups([group])
            (described,) = [g for r in responses for g in r.to_object()["groups"]]
            members = [
                (bytes(m["member_metadata"]), bytes(m["member_assignment"] or b""))
                for m in described["members"]
            ]
            if described["state"] == "Stable" and len(members) == 2 and all(a for _, a in members):
                return members
            await asyncio.sleep(0.2)
    finally:
        await admin.close()
    raise AssertionError(f"group {group} never stable with two assigned members")


async def test_decode_reads_what_the_broker_holds(
    kafka_bootstrap: str, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique_name("decode")
    topology = build_topology(app_id)
    await create_source_topics(kafka_bootstrap, topology)
    process = StreamsProcess(topology, AssignorConfig())
    await process.connect(kafka_bootstrap)
    assigned: dict[int, MemberAssignment] = {}
    ready = asyncio.Event()

    def on_rebalance(assignor: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        assigned[assignor.index] = assignment
        if len(assigned) == 2:
            ready.set()

    process.add_listener(on_rebalance)
    consumers = [
        process.create_consumer(kafka_bootstrap, session_timeout_ms=6000, heartbeat_interval_ms=500)
        for _ in range(2)
    ]
    try:
        for consumer in consumers:
            await consumer.start()
            process.subscribe(consumer)
        await asyncio.wait_for(ready.wait(), 60)
        members = await _raw_members(kafka_bootstrap, app_id)
    finally:
        for consumer in consumers:
            await consumer.stop()
        await process.close()

    actives: dict[str, object] = {}
    for number, (metadata, assignment) in enumerate(members):
        assert metadata[:1] == b"\x00"  # the envelope's int16 version, not our msgpack header
        subscription = decode(metadata.hex())
        assert subscription["kind"] == "subscription"
        assert subscription["process_id"] == str(process.process_id)
        envelope = subscription["consumer_protocol"]
        assert isinstance(envelope, dict) and envelope["kind"] == "subscription"
        assert set(envelope["topics"]) == set(topology.source_topics)
        raw = tmp_path / f"assignment-{number}.bin"
        raw.write_bytes(assignment)
        answer = decode(f"@{raw}")
        assert answer["kind"] == "assignment" and answer["error"] == "NONE"
        wrapped = answer["consumer_protocol"]
        assert isinstance(wrapped, dict) and wrapped["assigned_partitions"]
        # the wire form: one task per assigned partition; the view: each task's partitions,
        # paired with the envelope's as the member pairs them
        assert isinstance(answer["active_task_list"], list)
        tasks = answer["active_tasks"]
        assert isinstance(tasks, dict) and all(tasks.values())
        actives.update(tasks)
    expected = {
        str(task): [str(tp) for tp in sorted(partitions)]
        for a in assigned.values()
        for task, partitions in a.active_tasks.items()
    }
    assert actives == expected and len(expected) == 8
