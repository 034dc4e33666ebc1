"""One lying member among honest ones, through the coordinator shim: the group must settle.

Real ``StreamsProcess`` / ``StreamsPartitionAssignor`` objects in ``ShimMember`` consumers on a
virtual clock: the bytes, the follow-up rebalances (``request_rejoin``) and the leader's memory
between generations are those of production. Two honest processes with two consumers each form a
stable group; then a hostile process joins:

- a clone: process 2's process id with an endpoint of its own (a copied configuration);
- a version liar: a consumer that keeps sending version 1 while declaring version 3.

The group must reach a stable generation and stay on it for many heartbeats, every task active
exactly once among the honest consumers, the hostile one answered with ASSIGNMENT_ERROR, and the
leader must log the hostile member once.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from assignor import StreamsPartitionAssignor, StreamsProcess, decode_answers
from assignor.config import AssignorConfig
from protocol.codec import LATEST_VERSION
from protocol.errors import AssignorError
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from simulator.shim import (
    CoordinatorConfig,
    GroupCoordinator,
    Journal,
    ShimMember,
    VirtualClock,
    make_cluster,
    settle,
)
from tests.integration.streams_member import join_topology

APP = "app"
REPARTITION = "app-by-region-repartition"
TOPOLOGY = join_topology(APP, "orders", "customers", REPARTITION)
CLUSTER = make_cluster({"orders": 4, "customers": 4, REPARTITION: 4})
ALL_TASKS = {TaskId(s, p) for s in (0, 1) for p in range(4)}
HEARTBEAT_MS = 3_000
#: virtual seconds the settled group is watched for: ten heartbeats of every consumer
WATCH_S = 10 * HEARTBEAT_MS / 1000
SETTLE_TIMEOUT_S = 300.0
GUARD_LOGGER = "assignor.leader.guard"


def _process(n: int, endpoint: HostInfo, pid: int | None = None) -> StreamsProcess:
    process = StreamsProcess(
        TOPOLOGY,
        AssignorConfig.model_validate({"num.standby.replicas": 1}),
        process_id=ProcessId.for_int(pid or n),
        endpoint=endpoint,
    )
    # every changelog end offset known: the HA assignor runs, no fallback follow-ups
    process.set_changelog_end_offsets({
        TopicPartition(f"{APP}-{store}-changelog", p): 0
        for store in ("join-store", "counts")
        for p in range(4)
    })
    return process


def stuck_at_version_1(assignor: StreamsPartitionAssignor) -> None:
    """Make a consumer send version 1 at every join, whatever it was told (it still declares
    its codec's latest version): a member that lies about the version it can use."""
    honest_metadata = assignor.metadata

    def metadata(topics):  # type: ignore[no-untyped-def]
        assignor.used_version = 1
        return honest_metadata(topics)

    assignor.metadata = metadata  # type: ignore[method-assign]


class World:
    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.coordinator = GroupCoordinator(
            clock, CoordinatorConfig(initial_rebalance_delay_ms=0), Journal()
        )
        self.members: dict[str, ShimMember] = {}
        self.assignors: dict[str, StreamsPartitionAssignor] = {}

    def start(
        self,
        name: str,
        process: StreamsProcess,
        consumers: int,
        tamper: Callable[[StreamsPartitionAssignor], None] | None = None,
    ) -> None:
        for index in range(consumers):
            assignor = process.new_assignor()
            if tamper is not None:
                tamper(assignor)
            member = ShimMember(
                self.coordinator, group_id=APP, assignors=[assignor],
                topics=sorted(process.source_topics), cluster=CLUSTER,
                client_id=f"{name}-{index}", heartbeat_interval_ms=HEARTBEAT_MS,
                latency_ms=(1.0, 5.0),
            )
            assignor.bind(SimpleNamespace(_coordinator=member))  # what request_rejoin drives
            self.members[f"{name}-{index}"] = member
            self.assignors[f"{name}-{index}"] = assignor
            member.start()

    async def settle(self) -> int:
        return await settle(list(self.members.values()), timeout=SETTLE_TIMEOUT_S)

    def stable_generations(self) -> int:
        return len(self.coordinator.journal.stable(APP))


def _guard_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == GUARD_LOGGER and r.levelno >= logging.WARNING]


@pytest.mark.parametrize("hostile", ["clone", "version-liar"])
def test_one_hostile_process_does_not_keep_the_group_rebalancing(
    hostile: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)

    async def scenario(world: World) -> tuple[int, int]:
        world.start("p1", _process(1, HostInfo("app-1", 9001)), 2)
        world.start("p2", _process(2, HostInfo("app-2", 9002)), 2)
        before = await world.settle()
        if hostile == "clone":
            world.start("h", _process(3, HostInfo("app-3", 9003), pid=2), 2)
        else:
            world.start("h", _process(3, HostInfo("app-3", 9003)), 1, stuck_at_version_1)
        generation = await world.settle()
        stable_before_watch = world.stable_generations()
        await world.clock.sleep(WATCH_S)
        # still the same generation, nobody rejoining, no generation in between
        assert world.coordinator.generation(APP) == generation
        assert all(m.stable for m in world.members.values())
        assert world.stable_generations() == stable_before_watch
        return before, generation

    with VirtualClock(seed=7) as clock:
        world = World(clock)
        before, generation = clock.run(scenario(world))

    # bounded: the clone is refused in its first generation; the liar gets Kafka's version
    # probing twice (told to upgrade, ignored), then is refused
    assert generation - before <= (1 if hostile == "clone" else 3), (before, generation)
    actives: Counter[TaskId] = Counter()
    for name, assignor in world.assignors.items():
        assignment = assignor.last_assignment
        assert assignment is not None, name
        if name.startswith("h-"):
            assert assignment.error is AssignorError.ASSIGNMENT_ERROR, name
            assert not assignment.active_tasks and not assignment.standby_tasks
        else:
            assert assignment.error is AssignorError.NONE, (name, assignment.error_detail)
            assert assignor.used_version == LATEST_VERSION
            actives.update(list(assignment.active_tasks))
    assert set(actives) == ALL_TASKS and set(actives.values()) == {1}, actives
    warnings = _guard_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "h-0" in warnings[0]


def test_the_leader_keeps_its_memory_only_for_generations_that_reached_it() -> None:
    """A generation aborted before the assignment arrived must not count as an instruction the
    members ignored: the memory moves to the process only in the leader's ``on_assignment``."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    from assignor.leader.guard import LeaderMemory

    original, copy = _process(1, HostInfo("app-1", 9001)), _process(9, HostInfo("x", 1), pid=1)
    leader, clone = original.new_assignor(), copy.new_assignor()
    topics = sorted(original.source_topics)

    def join() -> dict[str, ConsumerProtocolMemberMetadata]:
        return {
            "a": ConsumerProtocolMemberMetadata.decode(leader.metadata(topics).encode()),
            "b": ConsumerProtocolMemberMetadata.decode(clone.metadata(topics).encode()),
        }

    answers = decode_answers(leader.assign(CLUSTER, join()))
    assert original.leader_memory == LeaderMemory()  # the sync has not answered yet
    join()  # ... and never does: a new join starts; an old answer arriving late changes nothing
    leader.on_assignment(answers["a"])
    assert original.leader_memory == LeaderMemory()
    answers = decode_answers(leader.assign(CLUSTER, join()))
    leader.on_assignment(answers["a"])  # this generation reached the leader: it counts
    pid = ProcessId.for_int(1)
    assert original.leader_memory.endpoints == {pid: HostInfo("app-1", 9001)}
    assert original.leader_memory.clones == {(pid, HostInfo("x", 1))}
    assert answers["b"].assignment == []
