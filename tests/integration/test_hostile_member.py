"""One hostile process among three on the real broker: the honest ones settle and stay settled.

Two honest ``member_proc`` processes (the streams assignor, two consumers each, their own
endpoints) form a stable group; then a third joins that lies about itself:

- ``clone``: it runs with the process id of an honest process but its own endpoint (a copied
  configuration). Kafka Streams' leader would serve both under one client and one endpoint,
  and the consumers whose endpoint is missing would ask for a rebalance every generation;
- ``version-liar``: its consumers send subscription version 1 at every join while declaring
  version 3 supported. Kafka's version probing would make every member rejoin every generation;
- ``flood``: its consumers send a well-formed subscription carrying 100,000 task offset sums, past
  the codec's limit of 65,536 (what one member can legitimately report) but small enough (200 KB)
  for the broker's group record. Before the limits followed from what is legitimate, a leader
  decoded such floods inside ``assign()`` for seconds to a minute, missed its heartbeats and the
  group never settled.

Within a bounded time the group must reach one generation in which every task is active exactly
once among the honest consumers and the hostile one holds an ASSIGNMENT_ERROR; that generation
must last (no further rebalance during many heartbeats), and the leader must log the hostile
process (once, for the guard's refusals). The hostile factories live here: ``member_proc --assignor
tests.integration.test_hostile_member:hostile``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import msgpack
import pytest

from assignor import StreamsPartitionAssignor
from assignor.adapter.admin import ensure_internal_topics
from protocol.codec import LATEST_VERSION
from protocol.ids import ProcessId
from protocol.messages import HEADER_ERROR_CODE_VERSION
from tests.integration.conftest import CreateTopics
from tests.integration.member_driver import (
    MemberProcess,
    current_assignment,
    wait_for_stable_group_async,
)
from tests.integration.member_proc import MemberContext
from tests.integration.streams_member import join_topology, streams

STREAMS = "tests.integration.streams_member:streams"
HOSTILE = "tests.integration.test_hostile_member:hostile"
PARTITIONS = 4
ALL_TASKS = {f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS)}
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_MS = 300
#: the bound on reaching a stable generation once the hostile process has started
WAIT_S = 60.0
#: how long the settled group is watched: many heartbeats of every consumer
WATCH_S = 5.0
GUARD_LOGGER = "assignor.leader.guard"


def hostile(ctx: MemberContext) -> Any:
    """The streams assignor with a lie: ``clone_of`` (a process id to take over) or
    ``stuck_at_version`` (the subscription version every join sends, whatever it was told)."""
    assignor: StreamsPartitionAssignor = streams(ctx)
    clone_of = ctx.config.get("clone_of")
    if clone_of:
        assignor.process.process_id = ProcessId(uuid.UUID(str(clone_of)))
    flood = ctx.config.get("flood_offset_sums")
    if flood:
        honest_user_data = assignor.metadata

        def flooded(topics: Any) -> Any:
            metadata = honest_user_data(topics)
            items = msgpack.unpackb(metadata.user_data, raw=False, strict_map_key=False)
            # the offset sums, [[topology, subtopology, delta, sum, delta, sum...]], are field 5,
            # or 6 from version 4 on (the error code moved in front of them)
            at = 6 if items[0] >= HEADER_ERROR_CODE_VERSION else 5
            items[at] = [[None, 0, 0, 5] + [1, 5] * (int(flood) - 1)]
            metadata.user_data = msgpack.packb(items, use_bin_type=True)
            return metadata

        assignor.metadata = flooded  # type: ignore[method-assign]
    stuck = ctx.config.get("stuck_at_version")
    if stuck is not None:
        honest_metadata = assignor.metadata

        def metadata(topics: Any) -> Any:
            assignor.used_version = int(stuck)
            return honest_metadata(topics)

        assignor.metadata = metadata  # type: ignore[method-assign]
    return assignor


def _infos(members: list[MemberProcess]) -> dict[tuple[str, int], dict[str, Any]]:
    return {
        (m.name, i): e["info"] for m in members for i, e in m.latest_assignments().items()
    }


def _guard_logs(members: list[MemberProcess]) -> list[str]:
    return [
        e["message"] for m in members for e in m.events
        if e["event"] == "log" and e.get("logger") == GUARD_LOGGER
    ]


def _refusal_logs(members: list[MemberProcess]) -> list[str]:
    """The leader's lines about subscriptions it could not read."""
    return [
        e["message"] for m in members for e in m.events
        if e["event"] == "log" and "cannot be read" in e.get("message", "")
    ]


@pytest.mark.parametrize("lie", ["clone", "version-liar", "flood"])
async def test_one_hostile_process_among_three_does_not_stop_the_group_settling(
    lie: str,
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    group = unique_name("hostile")
    names = {
        "orders": unique_name("orders"),
        "customers": unique_name("customers"),
        "repartition": f"{group}-by-region-repartition",
    }
    topology = join_topology(group, names["orders"], names["customers"], names["repartition"])
    await create_topics({names["orders"]: PARTITIONS, names["customers"]: PARTITIONS})
    await ensure_internal_topics(kafka_bootstrap, topology)
    topics = sorted(topology.source_topics)

    def config(port: int, **extra: Any) -> dict[str, Any]:
        return {"topics": names, "bootstrap": kafka_bootstrap, "end_offsets": True,
                "assignor": {"num.standby.replicas": 1}, "endpoint": f"127.0.0.1:{port}",
                **extra}

    honest = [
        spawn(kafka_bootstrap, group, topics, consumers=2, name=f"p{i}", assignor=STREAMS,
              assignor_config=config(7100 + i))
        for i in range(2)
    ]
    before, _ = await wait_for_stable_group_async(honest, WAIT_S, settle_s=1.0)
    infos = _infos(honest)
    victim_pid = next(info["process_id"] for (name, _), info in infos.items() if name == "p1")

    lie_config: dict[str, Any] = {
        "clone": {"clone_of": victim_pid},
        "version-liar": {"stuck_at_version": 1},
        "flood": {"flood_offset_sums": 100_000},
    }[lie]
    bad = spawn(kafka_bootstrap, group, topics, consumers=2, name="hostile", assignor=HOSTILE,
                assignor_config=config(7199, **lie_config))
    everyone = [*honest, bad]
    began = time.monotonic()
    generation, _ = await wait_for_stable_group_async(
        everyone, WAIT_S, newer_than=before, settle_s=1.5
    )
    assert time.monotonic() - began < WAIT_S

    infos = _infos(everyone)
    actives: Counter[str] = Counter()
    for (name, _), info in infos.items():
        if name == "hostile":
            assert info["error"] == "ASSIGNMENT_ERROR", info
            assert info["active"] == [] and info["standby"] == []
        else:
            assert info["error"] == "NONE", info
            assert info["used_version"] == LATEST_VERSION, info
            actives.update(info["active"])
    assert set(actives) == ALL_TASKS, infos
    assert set(actives.values()) == {1}, f"a task is active twice: {infos}"

    # the generation lasts: every consumer still holds it after many heartbeats, none rejoined
    await asyncio.sleep(WATCH_S)
    generations, _ = current_assignment(everyone)
    assert generations == {generation}, generations
    assert all(m.alive() for m in everyone)
    if lie == "flood":
        refusals = _refusal_logs(everyone)
        assert refusals and all("task_offset_sums" in line for line in refusals), refusals
        assert all(len(line) < 1000 for line in refusals), "error messages are capped"
    else:
        logs = _guard_logs(everyone)
        assert len(logs) == 1, logs
        assert "hostile-" in logs[0], logs
