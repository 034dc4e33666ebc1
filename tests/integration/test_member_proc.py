"""The multi-process member runner against the real broker, proven with aiokafka's round robin:
3 processes x 2 consumers own every partition exactly once; after ``kill -9`` of one process and
the session timeout, the survivors own everything; a graceful stop leaves at once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from tests.integration.conftest import CreateTopics
from tests.integration.member_driver import (
    ConsumerKey,
    MemberProcess,
    MemberProcessError,
    Partition,
    wait_for_stable_group,
    wait_for_stable_group_async,
)

SESSION_TIMEOUT_MS = 3000
HEARTBEAT_MS = 300
PARTITIONS = 12
WAIT_S = 60.0


def _owners(assignment: dict[ConsumerKey, list[Partition]]) -> Counter[Partition]:
    return Counter(tp for partitions in assignment.values() for tp in partitions)


def _leader_event(members: list[MemberProcess], generation: int) -> dict[str, Any]:
    found = [
        e for m in members for e in m.events
        if e["event"] == "leader_assign" and e["generation"] == generation
    ]
    assert len(found) == 1, f"expected one leader for generation {generation}: {found}"
    return found[0]


def _replay_roundrobin(leader: dict[str, Any]) -> dict[str, Any]:
    counts: dict[str, int] = leader["partition_counts"]
    cluster = SimpleNamespace(partitions_for_topic=lambda t: set(range(counts[t])))
    members = {
        member: ConsumerProtocolMemberMetadata(
            sub["version"], sub["topics"], bytes.fromhex(sub["user_data"])
        )
        for member, sub in leader["subscriptions"].items()
    }
    answers = RoundRobinPartitionAssignor.assign(cluster, members)
    return {
        member: {
            "partitions": sorted([t, p] for t, ps in answer.assignment for p in ps),
            "user_data": (answer.user_data or b"").hex(),
        }
        for member, answer in answers.items()
    }


async def test_three_processes_then_kill_minus_nine(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    topic, group = unique_name("t"), unique_name("g")
    await create_topics({topic: PARTITIONS})
    every_partition = {(topic, p) for p in range(PARTITIONS)}
    members = [
        spawn(
            kafka_bootstrap, group, [topic], consumers=2, name=f"p{i}",
            assignor="tests.integration.factories:describing_roundrobin",
            assignor_config={"label": f"p{i}"},
            session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS,
            emit_assign_io=True,
        )
        for i in range(3)
    ]

    generation, assignment = await wait_for_stable_group_async(members, WAIT_S)
    owners = _owners(assignment)
    assert set(owners) == every_partition
    assert set(owners.values()) == {1}, f"a partition is owned twice: {assignment}"
    assert len(assignment) == 6
    assert all(len(parts) == PARTITIONS // 6 for parts in assignment.values())

    # The factory contract: one assignor instance per consumer, one shared dict per process.
    for member in members:
        infos = [event["info"] for event in member.latest_assignments().values()]
        assert sorted(info["consumer_index"] for info in infos) == [0, 1]
        assert len({info["instance_token"] for info in infos}) == 2
        assert len({info["process_token"] for info in infos}) == 1
        assert {info["config"]["label"] for info in infos} == {member.name}
    process_tokens = {
        e["info"]["process_token"] for m in members for e in m.latest_assignments().values()
    }
    assert len(process_tokens) == 3

    # What the leader answered is what the members got, and replaying its recorded input through
    # the same assignor offline gives the same answer (the pattern for checking a real assignor).
    leader = _leader_event(members, generation)
    member_ids = {
        (m.name, e["consumer"]): e["member_id"] for m in members
        for e in m.latest_assignments().values()
    }
    for key, partitions in assignment.items():
        recorded = leader["assignments"][member_ids[key]]["partitions"]
        assert [tuple(tp) for tp in recorded] == partitions
    assert _replay_roundrobin(leader) == leader["assignments"]

    victim = members[1]
    victim_partitions = {tp for key, parts in assignment.items() if key[0] == victim.name
                         for tp in parts}
    victim.kill()
    assert victim.returncode == -9
    survivors = [members[0], members[2]]

    new_generation, after = await wait_for_stable_group_async(
        survivors, WAIT_S, newer_than=generation
    )
    owners_after = _owners(after)
    assert set(owners_after) == every_partition
    assert set(owners_after.values()) == {1}
    assert {key[0] for key in after} == {"p0", "p2"}
    moved_to = {key for key, parts in after.items() if victim_partitions & set(parts)}
    assert moved_to, "the killed process's partitions went nowhere"
    # The broker only noticed the crash after the session timeout: no LeaveGroup was sent.
    assert len(_leader_event(survivors, new_generation)["members"]) == 4
    assert all(not m.errors() for m in survivors), [m.errors() for m in survivors]


async def test_graceful_stop_leaves_the_group_and_waits_are_bounded(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    topic, group = unique_name("t"), unique_name("g")
    await create_topics({topic: 4})
    # A session timeout far longer than the test: only a LeaveGroup can make this rebalance quick.
    slow = {"session_timeout_ms": 60_000, "heartbeat_interval_ms": 500}
    first = spawn(kafka_bootstrap, group, [topic], name="first", **slow)
    second = spawn(kafka_bootstrap, group, [topic], name="second", **slow)
    generation, assignment = wait_for_stable_group([first, second], WAIT_S)
    assert len(assignment) == 2

    with pytest.raises(MemberProcessError, match="no 'nonexistent'"):
        first.wait_for_event("nonexistent", timeout_s=0.3)

    assert second.terminate(timeout_s=15) == 0
    assert second.events[-1]["event"] == "stopped"
    new_generation, after = wait_for_stable_group([first], 20.0, newer_than=generation)
    assert after == {("first", 0): [(topic, p) for p in range(4)]}

    mark = first.mark()
    first.send("rejoin")
    first.wait_for_event("rejoin_requested", 10.0, since=mark, ok=True)
    rejoined = await first.wait_for_async(
        lambda e: e["event"] == "assigned" and e["generation"] > new_generation, 20.0, since=mark
    )
    assert rejoined["partitions"] == [[topic, p] for p in range(4)]


async def test_static_member_restarted_after_kill_gets_its_partitions_back(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    """KIP-345 through aiokafka against Kafka 4.1.2: a static member that comes back within the
    session timeout is handed its old assignment by the broker, with no new generation."""
    topic, group = unique_name("t"), unique_name("g")
    await create_topics({topic: 6})
    static = {"consumers": 2, "session_timeout_ms": 20_000, "heartbeat_interval_ms": 500}
    p0 = spawn(kafka_bootstrap, group, [topic], name="p0", instance_id="i0", **static)
    p1 = spawn(kafka_bootstrap, group, [topic], name="p1", instance_id="i1", **static)
    generation, before = await wait_for_stable_group_async([p0, p1], WAIT_S)

    p1.kill()
    again = spawn(kafka_bootstrap, group, [topic], name="p1", instance_id="i1", **static)
    generation_after, after = await wait_for_stable_group_async([p0, again], WAIT_S)

    assert generation_after == generation
    assert after == before
    assert not [e for e in p0.events if e["event"] == "assigned" and e["generation"] > generation]
    assert not [e for e in again.events if e["event"] == "leader_assign"]
