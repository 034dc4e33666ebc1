"""The streams assignor in real aiokafka consumers, in real OS processes, on the real broker.

Each process is ``member_proc`` with ``tests.integration.streams_member:streams``: one
StreamsProcess per OS process, one assignor per consumer. The tests read what each consumer's
listener saw (``assigned`` events carry ``describe_last_assignment()``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from assignor.adapter.admin import (
    InternalTopicsError,
    ensure_internal_topics,
    fetch_changelog_end_offsets,
)
from assignor.config import AssignorConfig
from assignor.leader.model import GroupInput, MemberSubscription
from assignor.leader.pipeline import assign_group
from protocol.codec import Codec
from protocol.ids import ProcessId, TopicPartition
from tests.integration.conftest import CreateTopics
from tests.integration.member_driver import (
    MemberProcess,
    wait_for_stable_group_async,
)
from tests.integration.streams_member import join_topology

STREAMS = "tests.integration.streams_member:streams"
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_MS = 300
PARTITIONS = 4
ALL_TASKS = {f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS)}
WAIT_S = 60.0


class App:
    """One streams application's names and the member-process config that describes it."""

    def __init__(self, unique_name: Callable[[str], str], bootstrap: str, label: str = "") -> None:
        self.group = unique_name(f"app{label}")
        self.bootstrap = bootstrap
        self.names = {
            "orders": unique_name(f"orders{label}"),
            "customers": unique_name(f"customers{label}"),
            "repartition": f"{self.group}-by-region-repartition",
        }
        self.topology = join_topology(
            self.group, self.names["orders"], self.names["customers"], self.names["repartition"]
        )

    async def create(self, create_topics: CreateTopics) -> None:
        await create_topics({self.names["orders"]: PARTITIONS, self.names["customers"]: PARTITIONS})
        plan = await ensure_internal_topics(self.bootstrap, self.topology)
        assert plan.repartition == {self.names["repartition"]: PARTITIONS}
        assert set(plan.changelog.values()) == {PARTITIONS}

    def config(self, **extra: Any) -> dict[str, Any]:
        return {"topics": self.names, "bootstrap": self.bootstrap, **extra}

    @property
    def topics(self) -> list[str]:
        return sorted(self.topology.source_topics)


def _infos(members: list[MemberProcess]) -> dict[tuple[str, int], dict[str, Any]]:
    """Each live consumer's latest ``describe_last_assignment()``."""
    return {
        (m.name, i): e["info"]
        for m in members
        if m.alive()
        for i, e in m.latest_assignments().items()
    }


def _check_tasks(members: list[MemberProcess]) -> dict[tuple[str, int], dict[str, Any]]:
    infos = _infos(members)
    assert all(info["error"] == "NONE" for info in infos.values()), infos
    actives = Counter(t for info in infos.values() for t in info["active"])
    assert set(actives) == ALL_TASKS, infos
    assert set(actives.values()) == {1}, f"a task is active twice: {infos}"
    return infos


async def _stable(members: list[MemberProcess], newer_than: int = 0) -> int:
    generation, _ = await wait_for_stable_group_async(
        members, WAIT_S, newer_than=newer_than, settle_s=1.5
    )
    return generation


def _leader(members: list[MemberProcess], generation: int) -> tuple[dict[str, Any], dict[str, Any]]:
    events = [
        (m, e)
        for m in members
        for e in m.events
        if e["event"] == "leader_assign" and e["generation"] == generation
    ]
    assert len(events) == 1, events
    member, event = events[0]
    info = member.latest_assignments()[event["consumer"]]["info"]
    return event, info


async def test_three_processes_standby_equals_pipeline_then_kill_minus_nine(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    """Three processes with a standby get what the pipeline computes for the same inputs; after
    one is killed with SIGKILL, its tasks move to the survivors."""
    app = App(unique_name, kafka_bootstrap)
    await app.create(create_topics)
    config = app.config(assignor={"num.standby.replicas": 1}, end_offsets=True)
    members = [
        spawn(
            kafka_bootstrap,
            app.group,
            app.topics,
            consumers=2,
            name=f"p{i}",
            assignor=STREAMS,
            assignor_config=config,
            emit_assign_io=True,
        )
        for i in range(3)
    ]
    generation = await _stable(members)
    infos = _check_tasks(members)
    by_process: dict[str, tuple[set[str], set[str]]] = {}
    for (name, _), info in infos.items():
        active, standby = by_process.setdefault(name, (set(), set()))
        active.update(info["active"])
        standby.update(info["standby"])
    standbys = Counter(t for _, s in by_process.values() for t in s)
    assert set(standbys) == ALL_TASKS and set(standbys.values()) == {1}
    for name, (active, standby) in by_process.items():
        assert not active & standby, f"{name} holds a task as active and standby"
    assert len({info["process_id"] for info in infos.values()}) == 3

    # The leader's recorded input, replayed through the pure pipeline, gives the same answer.
    event, leader_info = _leader(members, generation)
    ends = leader_info["leader_end_offsets"]
    assert ends is not None, "the leader had no end offsets"
    group = GroupInput(
        members={
            m: MemberSubscription(tuple(s["topics"]), bytes.fromhex(s["user_data"]))
            for m, s in event["subscriptions"].items()
        },
        partition_counts=event["partition_counts"],
        changelog_end_offsets={TopicPartition(t, p): o for t, p, o in ends},
        now_ms=0,
        leader_process_id=ProcessId(leader_info["process_id"]),
    )
    replay = assign_group(
        app.topology, AssignorConfig.model_validate({"num.standby.replicas": 1}), group
    )
    assert replay.assignor == leader_info["leader_assignor"] == "high_availability"
    codec = Codec()
    for member_id, answer in event["assignments"].items():
        recorded = codec.decode_assignment(bytes.fromhex(answer["user_data"]))
        expected = replay.members[member_id]
        assert recorded.model_copy(update={"next_rebalance_ms": 0}) == expected.info.model_copy(
            update={"next_rebalance_ms": 0}
        )
        assert answer["partitions"] == sorted(
            [tp.topic, tp.partition] for tp in expected.partitions
        )

    # kill -9: after the session timeout the survivors run every task, none lost.
    victim = members[1]
    victim_tasks = by_process[victim.name][0]
    assert victim_tasks
    victim.kill()
    began = time.monotonic()
    await _stable(members, newer_than=generation)
    assert time.monotonic() - began < WAIT_S
    infos = _check_tasks(members)
    assert {name for name, _ in infos} == {"p0", "p2"}


async def test_rolling_upgrade_from_an_older_protocol_version(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    """Version 1 everywhere, then each process replaced by the newest build, one at a time."""
    app = App(unique_name, kafka_bootstrap)
    await app.create(create_topics)
    newest = Codec().latest_supported
    old = app.config(codec_version=1)
    members = [
        spawn(
            kafka_bootstrap,
            app.group,
            app.topics,
            consumers=1,
            name=f"v1-{i}",
            assignor=STREAMS,
            assignor_config=old,
        )
        for i in range(3)
    ]
    generation = await _stable(members)
    assert {i["used_version"] for i in _check_tasks(members).values()} == {1}
    for i in range(3):
        members[i].terminate()
        members[i] = spawn(
            kafka_bootstrap,
            app.group,
            app.topics,
            consumers=1,
            name=f"new-{i}",
            assignor=STREAMS,
            assignor_config=app.config(),
        )
        generation = await _stable(members, newer_than=generation)
        infos = _check_tasks(members)
        if i < 2:  # mixed group: everyone is served at the old version
            assert {info["assignment_version"] for info in infos.values()} == {1}
    # The last replacement makes the whole group able to speak the newest version: members are
    # told, rejoin, and the group ends there (possibly after one more generation).
    deadline = time.monotonic() + WAIT_S
    while True:
        infos = _check_tasks(members)
        versions = {(i["used_version"], i["assignment_version"]) for i in infos.values()}
        if versions == {(newest, newest)}:
            break
        assert time.monotonic() < deadline, f"group did not converge on v{newest}: {infos}"
        generation = await _stable(members, newer_than=generation)


async def test_garbage_member_gets_an_error_while_others_are_served(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    """A member whose user data is garbage gets an error assignment; the others are served."""
    app = App(unique_name, kafka_bootstrap)
    await app.create(create_topics)
    members = [
        spawn(
            kafka_bootstrap,
            app.group,
            app.topics,
            consumers=1,
            name=f"p{i}",
            assignor=STREAMS,
            assignor_config=app.config(),
        )
        for i in range(2)
    ]
    generation = await _stable(members)
    junk = spawn(
        kafka_bootstrap,
        app.group,
        app.topics,
        consumers=1,
        name="junk",
        assignor="tests.integration.streams_member:garbage",
    )
    await _stable([*members, junk], newer_than=generation)
    assert junk.latest_assignments()[0]["info"]["error"] == "ASSIGNMENT_ERROR"
    assert junk.latest_assignments()[0]["partitions"] == []
    _check_tasks(members)
    logs = [e["message"] for m in members for e in m.events if e["event"] == "log"]
    assert any("cannot be read" in message for message in logs), logs


async def test_shutdown_request_reaches_every_member(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    """A shutdown request: one process asks, every consumer of every process is told."""
    app = App(unique_name, kafka_bootstrap)
    await app.create(create_topics)
    members = [
        spawn(
            kafka_bootstrap,
            app.group,
            app.topics,
            consumers=2,
            name="p0",
            assignor=STREAMS,
            assignor_config=app.config(),
        ),
        spawn(
            kafka_bootstrap,
            app.group,
            app.topics,
            consumers=1,
            name="p1",
            assignor=STREAMS,
            assignor_config=app.config(shutdown_after_s=6),
        ),
    ]
    generation = await _stable(members)
    _check_tasks(members)
    deadline = time.monotonic() + WAIT_S
    while True:
        generation = await _stable(members, newer_than=generation)
        errors = {key: info["error"] for key, info in _infos(members).items()}
        if set(errors.values()) == {"SHUTDOWN_REQUESTED"}:
            break
        assert time.monotonic() < deadline, errors
    assert len(errors) == 3


async def _fill_changelogs(bootstrap: str, topics: Mapping[str, int], records: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for topic, partitions in topics.items():
            for partition in range(partitions):
                for i in range(records):
                    await producer.send(topic, b"v", key=str(i).encode(), partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


async def test_warmup_catches_up_and_a_probing_rebalance_moves_the_active(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
) -> None:
    """Lag-aware placement with warm-ups and probing rebalances."""
    app = App(unique_name, kafka_bootstrap)
    await app.create(create_topics)
    changelogs = {t: PARTITIONS for t in app.topology.changelog_topics}
    await _fill_changelogs(kafka_bootstrap, changelogs, records=20)
    ends = await fetch_changelog_end_offsets(kafka_bootstrap, app.topology, app.group)
    assert ends is not None and set(ends.values()) == {20}
    config = app.config(
        assignor={"acceptable.recovery.lag": 5, "max.warmup.replicas": 8},
        end_offsets=True,
        restore_after_s=1.0,
        probing_ms=4000,
    )
    first = spawn(
        kafka_bootstrap,
        app.group,
        app.topics,
        consumers=1,
        name="first",
        assignor=STREAMS,
        assignor_config=config,
    )
    generation = await _stable([first])
    assert set(_check_tasks([first])[("first", 0)]["active"]) == ALL_TASKS
    second = spawn(
        kafka_bootstrap,
        app.group,
        app.topics,
        consumers=1,
        name="second",
        assignor=STREAMS,
        assignor_config=config,
    )
    members = [first, second]
    generation = await _stable(members, newer_than=generation)
    joined = _check_tasks(members)[("second", 0)]
    # Not caught up: the newcomer gets warm-ups, not actives, and a probing rebalance follows.
    assert joined["active"] == [] and joined["standby"], joined
    warmups = set(joined["standby"])
    deadline = time.monotonic() + WAIT_S
    while True:
        generation = await _stable(members, newer_than=generation)
        infos = _check_tasks(members)
        moved = set(infos[("second", 0)]["active"])
        if moved:
            break
        assert time.monotonic() < deadline, infos
    assert moved <= warmups | set(infos[("second", 0)]["kept_active"]), (moved, warmups)
    # Membership did not change since the newcomer joined: only the probing follow-up that the
    # leader scheduled (testing_probing_interval_ms) can have started the generation that moved it.
    assert first.alive() and second.alive()


async def test_restarted_static_member_gets_its_tasks_back(
    kafka_bootstrap: str,
    create_topics: CreateTopics,
    unique_name: Callable[[str], str],
    spawn: Callable[..., MemberProcess],
    tmp_path: Path,
) -> None:
    """Static membership: kill -9 and restart under the same group.instance.id (within the
    session timeout) keeps the process id, and its local state brings its tasks back."""
    app = App(unique_name, kafka_bootstrap)
    await app.create(create_topics)
    await _fill_changelogs(
        kafka_bootstrap, dict.fromkeys(app.topology.changelog_topics, PARTITIONS), 20
    )

    def start(i: int) -> MemberProcess:
        config = app.config(
            assignor={"acceptable.recovery.lag": 5},
            end_offsets=True,
            probing_ms=2000,
            state_dir=str(tmp_path / f"state-{i}.json"),
        )
        return spawn(
            kafka_bootstrap,
            app.group,
            app.topics,
            consumers=1,
            name=f"s{i}",
            instance_id=f"s{i}",
            assignor=STREAMS,
            assignor_config=config,
            session_timeout_ms=10_000,
        )

    members = [start(i) for i in range(3)]
    # Whoever joined first runs everything; warm-ups and probing rebalances then spread the
    # tasks. Wait for that to settle: no follow-up pending anywhere.
    generation = await _stable(members)
    deadline = time.monotonic() + WAIT_S
    while True:
        infos = _check_tasks(members)
        if not any(info["followup"] for info in infos.values()):
            break
        assert time.monotonic() < deadline, f"no settled assignment: {infos}"
        generation = await _stable(members, newer_than=generation)
    before = infos[("s1", 0)]
    assert before["active"], infos
    members[1].kill()
    members[1] = start(1)
    # The broker hands a static member that comes back in time its old assignment, often
    # without a new generation; a rebalance, if any, is decided by the lags it reports.
    await members[1].wait_for_async(lambda e: e["event"] == "assigned", WAIT_S)
    await _stable(members, newer_than=generation - 1)
    after = _check_tasks(members)[("s1", 0)]
    assert after["process_id"] == before["process_id"]
    assert after["active"] == before["active"]
    assert {t for t, s in after["sent_offset_sums"].items() if s == 20} >= set(before["active"])


async def test_internal_topics_are_created_once_and_a_wrong_count_is_refused(
    kafka_bootstrap: str, create_topics: CreateTopics, unique_name: Callable[[str], str]
) -> None:
    app = App(unique_name, kafka_bootstrap)
    await app.create(create_topics)
    again = await ensure_internal_topics(kafka_bootstrap, app.topology)  # idempotent
    assert again.all == dict.fromkeys(again.all, PARTITIONS)
    ends = await fetch_changelog_end_offsets(kafka_bootstrap, app.topology, app.group)
    assert ends is not None and len(ends) == 2 * PARTITIONS and set(ends.values()) == {0}

    other = App(unique_name, kafka_bootstrap, label="2")
    wrong = f"{other.group}-counts-changelog"
    await create_topics(
        {
            other.names["orders"]: PARTITIONS,
            other.names["customers"]: PARTITIONS,
            wrong: PARTITIONS + 1,
        }
    )
    with pytest.raises(InternalTopicsError, match=f"{wrong} has {PARTITIONS + 1} partitions"):
        await ensure_internal_topics(kafka_bootstrap, other.topology)
