"""``python -m assignor describe`` against a live group on the real broker.

Two application instances (one consumer each, one standby replica) form a group; the command,
run as a separate process, must read the coordinator's copy of every member's subscription and
assignment and say who runs what, with versions, endpoints, reported offset sums, lags and the
leader's reasons.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assignor import AssignorConfig, MemberAssignment, StreamsPartitionAssignor, StreamsProcess
from assignor.topology.data_form import topology_to_data
from protocol.codec import LATEST_VERSION
from protocol.errors import AssignorError
from protocol.ids import HostInfo
from tests.integration.conftest import CreateTopics
from tests.integration.streams_member import join_topology

PARTITIONS = 2
ALL_TASKS = {f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS)}


async def _run_cli(*args: str, timeout_s: float = 90) -> tuple[int, str, str]:
    """The command as a user runs it, in its own process (our event loop keeps heartbeating)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "assignor", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_describe_decodes_a_live_group(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    group = unique_name("app")
    orders, customers = unique_name("orders"), unique_name("customers")
    topology = join_topology(group, orders, customers, f"{group}-by-region-repartition")
    await create_topics({orders: PARTITIONS, customers: PARTITIONS})
    config = AssignorConfig.model_validate({"num.standby.replicas": 1})
    latest: dict[int, MemberAssignment] = {}
    processes = []
    for i in range(2):
        process = StreamsProcess(topology, config, endpoint=HostInfo("127.0.0.1", 9100 + i))

        def listener(
            _: StreamsPartitionAssignor, assignment: MemberAssignment, i: int = i
        ) -> None:
            latest[i] = assignment

        process.add_listener(listener)
        processes.append(process)
    await processes[0].connect(kafka_bootstrap)  # creates the internal topics
    await processes[1].connect(kafka_bootstrap)
    consumers = [
        p.create_consumer(kafka_bootstrap, session_timeout_ms=10000, heartbeat_interval_ms=500)
        for p in processes
    ]
    try:
        for process, consumer in zip(processes, consumers, strict=True):
            await consumer.start()
            process.subscribe(consumer)
        for _ in range(600):  # both instances hold tasks: the group has settled on both
            if len(latest) == 2 and all(
                a.error is AssignorError.NONE and a.active_tasks for a in latest.values()
            ):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"the group did not settle: {latest}")
        expected_active = {
            str(processes[i].process_id): sorted(str(t) for t in a.active_tasks)
            for i, a in latest.items()
        }

        app = tmp_path / "app.json"
        app.write_text(
            json.dumps(
                {"topology": topology_to_data(topology), "config": {"num.standby.replicas": 1}}
            )
        )
        saved = tmp_path / "group.json"
        code, out, err = await _run_cli(
            "describe", "--bootstrap", kafka_bootstrap, "--group", group,
            "--app", str(app), "--explain", "--save-input", str(saved),
        )
        assert code == 0, err
        data: dict[str, Any] = json.loads(out)
    finally:
        for consumer in consumers:
            await consumer.stop()
        for process in processes:
            await process.close()

    assert data["state"] == "Stable" and data["protocol"] == "stream"
    assert len(data["members"]) == 2
    for member in data["members"].values():
        assert member["problems"] == []
        assert member["subscription"]["version"] == LATEST_VERSION
        assert member["assignment"]["error"] == "NONE"
    processes_seen = data["processes"]
    assert {pid: p["active_tasks"] for pid, p in processes_seen.items()} == expected_active
    assert sorted(t for p in processes_seen.values() for t in p["active_tasks"]) == sorted(
        ALL_TASKS
    )
    for entry in processes_seen.values():
        # one standby replica: each instance keeps the other's tasks warm
        assert set(entry["standby_tasks"]) == ALL_TASKS - set(entry["active_tasks"])
        assert entry["versions"] == [[LATEST_VERSION, LATEST_VERSION]]
        # nothing was produced: every changelog is empty, so every lag is 0 (or -2, "running
        # it", if the instance already ran the task when it joined this generation)
        assert set(entry["lags"]) == ALL_TASKS
        assert set(entry["lags"].values()) <= {0, -2}
        assert entry["endpoint"] in {"127.0.0.1:9100", "127.0.0.1:9101"}
    assert set(data["partitions_by_host"]) == {"127.0.0.1:9100", "127.0.0.1:9101"}
    assert data["replay"]["matches_live"], data["replay"]["differences"]
    roles = {(e["task"], e["role"]) for e in data["explain"]}
    assert roles == {(t, r) for t in ALL_TASKS for r in ("active", "standby")}
    assert all(e["reason"] for e in data["explain"])

    # the saved input reproduces the decision offline
    code, out, err = await _run_cli("assign", "--input", str(saved))
    assert code == 0, err
    offline = json.loads(out)
    for member_id, member in data["members"].items():
        live = member["assignment"]
        assert offline["members"][member_id]["active_tasks"] == live["active_tasks"]
        assert offline["members"][member_id]["standby_tasks"] == live["standby_tasks"]


async def test_describe_says_what_is_wrong(kafka_bootstrap: str) -> None:
    code, _, err = await _run_cli(
        "describe", "--bootstrap", kafka_bootstrap, "--group", "no-such-group-anywhere"
    )
    assert code == 2
    assert "group 'no-such-group-anywhere' has no members" in err
    code, _, err = await _run_cli(
        "describe", "--bootstrap", kafka_bootstrap, "--group", "g", "--explain"
    )
    assert code == 2 and "--explain needs --app FILE" in err
