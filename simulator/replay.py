"""One scenario through the coordinator shim, in virtual time, with the real assignor objects.

Every simulated process is what a real application is: one ``StreamsProcess`` (ours) whose
``StreamsPartitionAssignor`` instances sit, one per stream thread, inside ``ShimMember`` consumers
that call them exactly as aiokafka does, bytes included. What is simulated is only the world
around them: the process's local state (``state()`` provider, backed by
:class:`~simulator.state.StateModel`), the changelog end offsets the leader reads (the snapshot
aiokafka's rebalance listener would refresh before each join) and the events of the timeline.
aiokafka's peers (round-robin, sticky) run in the same members instead of ours.

Each consumer's assignor is wrapped in :class:`_HostedAssignor`, which forwards every call
unchanged and observes it: ``metadata()`` marks the start of the member's rebalance (eager
protocol: its tasks stop) and refreshes the end-offset snapshot, ``assign()`` records the
leader's decision, ``on_assignment()`` hands the thread its tasks.

A run ends when the group is stable (no rebalance pending, no follow-up scheduled, every task
processed by a caught-up owner) or at the scenario's bounds (``bounds.settle_s`` virtual seconds
after the last event, ``bounds.max_rebalances`` generations): a non-convergence, never a hang.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, SimpleNamespace
from typing import Any

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

from assignor.adapter.streams_assignor import (
    DEFAULT_END_OFFSETS_MAX_AGE_MS,
    StreamsPartitionAssignor,
    StreamsProcess,
    derive_process_id,
)
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout, plan_tasks
from protocol.codec import Codec
from protocol.ids import HostInfo, ProcessId, TaskId, TopicPartition
from simulator.metrics import (
    Ownership,
    RebalanceRow,
    ScenarioRow,
    Thread,
    Violation,
    check_invariants,
    ownership_from_partitions,
    percentile,
)
from simulator.scenarios import (
    OUR_ASSIGNORS,
    AddPartitionsEvent,
    CrashEvent,
    Event,
    JoinEvent,
    LeaveEvent,
    LoseTagEvent,
    PauseEvent,
    ProcessSpec,
    RestartEvent,
    Scenario,
    UpgradeEvent,
)
from simulator.shim import (
    CoordinatorConfig,
    GroupCoordinator,
    GroupState,
    Journal,
    ShimMember,
    VirtualClock,
    make_cluster,
)
from simulator.state import StateModel

#: Namespace of the process ids of dynamic simulated processes (static ones use the adapter's).
_SIM_NAMESPACE = uuid.UUID("0b5e6c1e-7d4a-5c57-8a8e-51a1c0de0013")
#: Longest virtual sleep while waiting for the group to settle: bounds how stale a check is.
_POLL_S = 5.0
#: Turns of the event loop (no virtual time passes) given to a member before and while it crashes.
_YIELDS = 20
#: The shim's journal keeps this many events (records are always all kept).
_MAX_EVENTS = 20_000


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What one replay produced."""

    scenario: Scenario
    rebalances: list[RebalanceRow]
    summary: ScenarioRow
    violations: list[Violation]
    journal: Journal = field(repr=False, compare=False)


@dataclass(slots=True)
class _Decision:
    """What the leader decided in one generation (recorded inside ``assign()``)."""

    generation: int
    leader: Thread
    ownership: Ownership
    assignor: str
    protocol_version: int | None
    warmups: int
    followup: str
    assign_wall_ms: float
    restore_records: int
    members: int
    processes: int
    #: the tasks that existed when the leader decided (partitions may be added later)
    tasks: tuple[TaskId, ...]


class _Sim:
    """One simulated process: its spec, its current incarnation and its consumers."""

    def __init__(self, spec: ProcessSpec) -> None:
        self.spec = spec
        self.version = spec.protocol_version
        self.members: list[ShimMember] = []
        self.hosted: list[_HostedAssignor] = []
        self.process: StreamsProcess | None = None
        self.up = False
        #: bumped when the disk is wiped: a dynamic process id lives in the state directory
        self.disk_generation = 0

    @property
    def name(self) -> str:
        return self.spec.name


class _HostedAssignor:
    """Forwards aiokafka's assignor calls unchanged; observes them for the simulation."""

    def __init__(self, replay: Replay, sim: _Sim, thread: int, inner: Any) -> None:
        self._replay = replay
        self._sim = sim
        self._thread = thread
        self.inner = inner
        self.member: ShimMember | None = None
        self.name: str = inner.name
        self._followup: asyncio.TimerHandle | None = None

    def metadata(self, topics: Iterable[str]) -> Any:
        replay = self._replay
        replay.advance()
        replay.state.stop(self._sim.name, self._thread)
        process = self._sim.process
        if process is not None:
            replay.refresh_end_offsets(process)
        return self.inner.metadata(topics)

    def assign(self, cluster: ClusterMetadata, members: Mapping[str, Any]) -> Mapping[str, Any]:
        began = time.perf_counter()
        answers = self.inner.assign(cluster, members)
        elapsed_ms = (time.perf_counter() - began) * 1000.0
        assert self.member is not None
        self._replay.record_decision(self, self.member.generation, members, answers, elapsed_ms)
        return answers  # type: ignore[no-any-return]

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        replay = self._replay
        replay.advance()
        self.inner.on_assignment(assignment)
        inner = self.inner
        if isinstance(inner, StreamsPartitionAssignor):
            received = inner.last_assignment
            assert received is not None
            active: Iterable[TaskId] = received.active_tasks
            standby: Iterable[TaskId] = received.standby_tasks
            self._reschedule_followup(inner)
        else:
            owned = ownership_from_partitions(
                {(self._sim.name, self._thread): assignment.partitions()}, replay.layout.tasks
            )
            active, standby = owned.active[(self._sim.name, self._thread)], ()
        replay.state.assign(self._sim.name, self._thread, active, standby)

    def _reschedule_followup(self, inner: StreamsPartitionAssignor) -> None:
        """Move the adapter's follow-up onto virtual time.

        ``FollowupScheduler`` computes its delay against ``time.time()`` (wall clock) while the
        deadline comes from the process's clock (virtual here), so on the virtual clock every
        follow-up would fire at once. Take the deadline, cancel its timer, keep our own.
        """
        if self._followup is not None:
            self._followup.cancel()
            self._followup = None
        at_ms = inner.followups.scheduled_at_ms
        if at_ms is None:
            return
        inner.followups.cancel()
        clock = self._replay.clock
        member = self.member
        assert member is not None
        delay = max(0.0, at_ms / 1000.0 - clock.time())

        def fire() -> None:
            self._followup = None
            if member.running:
                member.request_rejoin()

        self._followup = clock.call_later(delay, fire)

    @property
    def followup_pending(self) -> bool:
        return self._followup is not None

    def cancel_followup(self) -> None:
        if self._followup is not None:
            self._followup.cancel()
            self._followup = None


async def _stop_member(member: ShimMember, *, graceful: bool) -> None:
    """``member.close()`` or ``member.crash()``, working around a shim race (reported): when the
    cancellation of the member's loop arrives while that loop awaits its own heartbeat task
    inside ``_stop_heartbeat`` (a rejoin requested at this very instant),
    ``suppress(CancelledError)`` swallows it, the loop joins again and the stop waits for it
    forever. Letting the ready callbacks run first takes the loop past that point; if a cancel
    is still swallowed, it is delivered again (a bounded number of times; no virtual time
    passes)."""
    for _ in range(_YIELDS):
        await asyncio.sleep(0)
    stopping = asyncio.ensure_future(member.close() if graceful else member.crash())
    for _ in range(_YIELDS):
        if stopping.done():
            break
        await asyncio.sleep(0)
        loop_task = getattr(member, "_task", None)
        if loop_task is not None and not loop_task.done():
            loop_task.cancel()
    await stopping


async def _crash(member: ShimMember) -> None:
    await _stop_member(member, graceful=False)


def _peer_assignor(name: str, member_name: str) -> Any:
    if name == "roundrobin":
        return RoundRobinPartitionAssignor
    # aiokafka's sticky assignor keeps its state on the class (aio-libs/aiokafka#1175)
    return type(f"Sticky_{member_name}", (StickyPartitionAssignor,), {})


class Replay:
    """The run of one scenario (see the module docstring); ``run()`` once."""

    def __init__(self, scenario: Scenario, *, command: str | None = None) -> None:
        self.scenario = scenario
        self.command = command or replay_command(scenario)
        self.topology: Topology = scenario.build_topology()
        self.partitions = dict(scenario.partitions)
        self.notes: list[str] = []
        self.layout, self.cluster = self._layout()
        self.clock = VirtualClock(seed=scenario.seed)
        self.journal = Journal(max_events=_MAX_EVENTS)
        self.coordinator = GroupCoordinator(
            self.clock,
            CoordinatorConfig(
                initial_rebalance_delay_ms=scenario.timeouts.initial_rebalance_delay_ms
            ),
            self.journal,
        )
        self.state = StateModel(scenario.dynamics, self.layout.tasks, self.layout.stateful)
        self.sims = {spec.name: _Sim(spec) for spec in scenario.processes}
        self.decisions: dict[int, _Decision] = {}
        self._snapshot: tuple[tuple[int, int], Mapping[TopicPartition, int]] | None = None
        self._threads_by_client: dict[str, Thread] = {
            f"{spec.name}-{thread}": (spec.name, thread)
            for spec in scenario.processes
            for thread in range(spec.threads)
        }
        self._pending: set[asyncio.Task[None]] = set()
        self._ours = scenario.assignor in OUR_ASSIGNORS
        for sim in self.sims.values():
            self.state.add_process(sim.name, self._initial_behind(sim.spec))

    # -- world --------------------------------------------------------------------------------
    def _layout(self) -> tuple[TaskLayout, ClusterMetadata]:
        """Tasks and cluster metadata for the current partition counts, internal topics sized
        as ``ensure_internal_topics`` would. If the counts cannot be sized (a copartitioned
        topic grew alone) the cluster gets the new counts and the old internal topics, the task
        layout stays: the leader meets the problem itself, as Kafka's would."""
        sizing = size_internal_topics(self.topology, self.partitions)
        if not isinstance(sizing, InternalTopics):
            previous = getattr(self, "layout", None)
            if previous is None:
                raise ValueError(f"scenario {self.scenario.name}: {sizing.message}")
            self.notes.append(f"partitions {self.partitions} cannot be sized: {sizing.message}")
            topics = {tp.topic: 0 for tps in previous.tasks.values() for tp in tps}
            for tps in previous.tasks.values():
                for tp in tps:
                    topics[tp.topic] = max(topics[tp.topic], tp.partition + 1)
            topics.update(self.partitions)
            topics.update(previous.changelog_counts)
            return previous, make_cluster(topics)
        layout = plan_tasks(self.topology, sizing.source_partitions)
        topics = dict(sizing.source_partitions)
        topics.update(layout.changelog_counts)
        return layout, make_cluster(topics)

    def _initial_behind(self, spec: ProcessSpec) -> dict[TaskId, float]:
        if spec.initial_state == "empty":
            return {}
        if spec.initial_state == "caught_up":
            return {task: 0.0 for task in self.layout.stateful}
        return {TaskId.parse(task): float(lag) for task, lag in spec.initial_state.items()}

    def advance(self) -> None:
        self.state.advance(self.clock.time())

    def refresh_end_offsets(self, process: StreamsProcess) -> None:
        """What the adapter's rebalance listener does before every join: refresh the process's
        changelog end-offset snapshot unless it is younger than the adapter's maximum age.

        One read-only snapshot per virtual instant is shared by every process (nothing in the
        adapter mutates it): building and copying thousands of offsets per consumer cost more
        than the assignor on groups of hundreds of members."""
        now_ms = int(self.clock.time() * 1000)
        fetched = process.end_offsets_fetched_at_ms
        if (fetched is not None and process.changelog_end_offsets is not None
                and now_ms - fetched < DEFAULT_END_OFFSETS_MAX_AGE_MS):
            return
        key = (now_ms, id(self.layout))
        if self._snapshot is None or self._snapshot[0] != key:
            offsets = self.state.end_offsets(self.layout.changelogs)
            self._snapshot = (key, MappingProxyType(offsets))
        process.changelog_end_offsets = self._snapshot[1]
        process.end_offsets_fetched_at_ms = now_ms

    # -- processes ----------------------------------------------------------------------------
    def _process_id(self, sim: _Sim) -> ProcessId:
        if sim.spec.static:
            return derive_process_id(self.topology.application_id, sim.name)
        key = f"{self.scenario.seed}\x00{sim.name}\x00{sim.disk_generation}"
        return ProcessId(uuid.uuid5(_SIM_NAMESPACE, key))

    def start(self, sim: _Sim) -> None:
        """A new incarnation of the process: fresh memory, its disk as the state model has it."""
        if sim.up:
            return
        self.advance()
        spec, clock = sim.spec, self.clock
        sim.up = True
        sim.members, sim.hosted = [], []
        sim.process = None
        if self._ours:
            endpoint = None
            if spec.endpoint is not None:
                host, _, port = spec.endpoint.rpartition(":")
                endpoint = HostInfo(host, int(port))
            name = sim.name
            sim.process = StreamsProcess(
                self.topology,
                self.scenario.assignor_config(spec),
                process_id=self._process_id(sim),
                group_instance_id=name if spec.static else None,
                endpoint=endpoint,
                state=lambda: self.state.offset_sums(name),
                codec=Codec(sim.version),
                clock_ms=lambda: int(clock.time() * 1000),
            )
        for thread in range(spec.threads):
            instance = f"{sim.name}-{thread}" if spec.static else None
            if sim.process is not None:
                inner: Any = sim.process.new_assignor()
            else:
                inner = _peer_assignor(self.scenario.assignor, f"{sim.name}_{thread}")
            hosted = _HostedAssignor(self, sim, thread, inner)
            sim.hosted.append(hosted)
            sim.members.append(self._member(hosted, f"{sim.name}-{thread}", instance))

    async def stop(self, sim: _Sim, *, graceful: bool, wipe: bool = False) -> None:
        """The process goes away: cleanly (LeaveGroup if dynamic) or killed; disk kept or not."""
        if not sim.up:
            return
        self.advance()
        sim.up = False
        for hosted in sim.hosted:
            hosted.cancel_followup()
        for member in sim.members:
            await _stop_member(member, graceful=graceful)
        if sim.process is not None:
            await sim.process.close()
        self.advance()
        self.state.crash(sim.name, wipe=wipe)
        if wipe:
            sim.disk_generation += 1

    async def pause(self, sim: _Sim, duration_s: float) -> None:
        """No heartbeats and no processing for ``duration_s``, then the same process resumes
        (same StreamsProcess and assignors, memory intact) with new consumer sessions.

        The shim has no way to stop a member's heartbeats and resume them, so the pause ends
        with new ``ShimMember`` sessions: a static member takes its place back without a
        rebalance, as in aiokafka, but a dynamic one joins as a new member (one rebalance more
        than aiokafka, whose consumer would resume heartbeating under its old id if the pause
        was shorter than the session timeout)."""
        if not sim.up:
            return
        self.advance()
        for member in sim.members:
            await _crash(member)
        self.state.stop(sim.name)
        await self.clock.sleep(duration_s)
        self.advance()
        if not sim.up:
            return
        sim.members = [
            self._member(hosted, old.client_id, old.group_instance_id)
            for old, hosted in zip(sim.members, sim.hosted, strict=True)
        ]

    def _member(self, hosted: _HostedAssignor, client_id: str, instance: str | None
                ) -> ShimMember:
        """A started consumer session around ``hosted`` (bound for follow-up rebalances)."""
        timeouts = self.scenario.timeouts
        member = ShimMember(
            self.coordinator,
            group_id=self.topology.application_id,
            assignors=[hosted],
            topics=sorted(self.topology.source_topics),
            cluster=self.cluster,
            client_id=client_id,
            group_instance_id=instance,
            session_timeout_ms=timeouts.session_timeout_ms,
            rebalance_timeout_ms=timeouts.rebalance_timeout_ms,
            heartbeat_interval_ms=timeouts.heartbeat_interval_ms,
        )
        hosted.member = member
        if isinstance(hosted.inner, StreamsPartitionAssignor):
            hosted.inner.bind(SimpleNamespace(_coordinator=member))
        return member.start()

    def _later(self, delay: float, action: Callable[[], Any]) -> None:
        """Run ``action`` (sync, or returning a coroutine) after ``delay`` virtual seconds."""

        async def run() -> None:
            await self.clock.sleep(delay)
            result = action()
            if asyncio.iscoroutine(result):
                await result

        task = asyncio.get_running_loop().create_task(run())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    # -- events -------------------------------------------------------------------------------
    async def apply(self, event: Event) -> None:
        if isinstance(event, JoinEvent):
            self.start(self.sims[event.process])
        elif isinstance(event, LeaveEvent):
            await self.stop(self.sims[event.process], graceful=True)
        elif isinstance(event, CrashEvent):
            await self.stop(self.sims[event.process], graceful=False, wipe=event.wipe)
        elif isinstance(event, RestartEvent | UpgradeEvent):
            sim = self.sims[event.process]
            graceful = event.graceful if isinstance(event, RestartEvent) else True
            wipe = event.wipe if isinstance(event, RestartEvent) else False
            await self.stop(sim, graceful=graceful, wipe=wipe)
            if isinstance(event, UpgradeEvent):
                sim.version = event.version
            self._later(event.down_s, lambda: self.start(sim))
        elif isinstance(event, PauseEvent):
            sim = self.sims[event.process]
            self._later(0.0, lambda: self.pause(sim, event.duration_s))
        elif isinstance(event, AddPartitionsEvent):
            self._add_partitions(event.topics)
        elif isinstance(event, LoseTagEvent):
            for sim in self.sims.values():
                spec = sim.spec
                value = spec.rack if event.key == "rack" else spec.tags.get(event.key)
                if value == event.value:
                    await self.stop(sim, graceful=False, wipe=event.wipe)

    def _add_partitions(self, topics: Mapping[str, int]) -> None:
        self.advance()
        for topic, count in topics.items():
            self.partitions[topic] = max(count, self.partitions[topic])
        self.layout, self.cluster = self._layout()
        self.state.add_tasks(self.layout.tasks, self.layout.stateful)
        for sim in self.sims.values():
            for member in sim.members:
                member.cluster = self.cluster
                if member.running:  # aiokafka's metadata refresh sees the new partitions
                    member.request_rejoin()

    # -- the leader's decisions ---------------------------------------------------------------
    def _thread_of(self, member_id: str) -> Thread:
        """The thread behind a member id. The coordinator names members
        ``<group.instance.id or client.id>-<uuid>`` as Kafka does, and both are
        ``<process>-<thread>`` here; the ids the members hold are not set yet when the leader
        assigns (their join responses are still on their way)."""
        key = member_id[:-37] if len(member_id) > 37 else member_id
        return self._threads_by_client.get(key, (f"?{member_id}", 0))

    def record_decision(
        self,
        hosted: _HostedAssignor,
        generation: int,
        members: Mapping[str, Any],
        answers: Mapping[str, Any],
        elapsed_ms: float,
    ) -> None:
        self.advance()
        threads = {member_id: self._thread_of(member_id) for member_id in members}
        inner = hosted.inner
        assignor: str = self.scenario.assignor
        version: int | None = None
        warmups, followup = 0, ""
        if isinstance(inner, StreamsPartitionAssignor) and inner.last_leader is not None:
            result = inner.last_leader.result
            active = {threads[m]: frozenset(r.info.active_tasks) for m, r in result.members.items()}
            standby = {threads[m]: frozenset(r.info.standby_tasks)
                       for m, r in result.members.items()}
            parts = {threads[m]: frozenset(r.partitions) for m, r in result.members.items()}
            ownership = Ownership(active, standby, parts)
            assignor = result.assignor or "error"
            version = result.used_version
            if result.task_assignment is not None:
                warmups = sum(len(w) for w in result.task_assignment.warmups.values())
            followup = result.followup
        else:
            parts_of: dict[Thread, list[TopicPartition]] = {}
            for member_id, answer in answers.items():
                partitions = answer.partitions() if hasattr(answer, "partitions") else []
                parts_of[threads[member_id]] = [
                    TopicPartition(topic, p) for topic, p in partitions
                ]
            ownership = ownership_from_partitions(parts_of, self.layout.tasks)
        restore = 0
        previous = self._previous_ownership(generation)
        before = previous.active_process() if previous is not None else {}
        for task, process in ownership.active_process().items():
            end = self.state.end_of(task)
            if end is not None and before.get(task) != process:
                restore += int(max(0.0, end - (self.state.position(process, task) or 0.0)))
        self.decisions[generation] = _Decision(
            generation=generation,
            leader=(hosted._sim.name, hosted._thread),
            ownership=ownership,
            assignor=assignor,
            protocol_version=version,
            warmups=warmups,
            followup=followup,
            assign_wall_ms=elapsed_ms,
            restore_records=restore,
            members=len(members),
            processes=len({process for process, _ in threads.values()}),
            tasks=tuple(self.layout.tasks),
        )

    def _previous_ownership(self, generation: int) -> Ownership | None:
        stable = {r.generation for r in self.journal.stable(self.topology.application_id)}
        earlier = [g for g in self.decisions if g < generation and g in stable]
        return self.decisions[max(earlier)].ownership if earlier else None

    # -- the run ------------------------------------------------------------------------------
    def _live_members(self) -> list[ShimMember]:
        return [m for sim in self.sims.values() if sim.up for m in sim.members if m.running]

    def settled(self) -> bool:
        """No rebalance pending or scheduled, and every owned task processed by a caught-up
        owner (a task the assignment leaves unowned is a violation, not a wait)."""
        group = self.topology.application_id
        live = self._live_members()
        if not live or self._pending:
            return False
        coordinator = self.coordinator
        if coordinator.state(group) is not GroupState.STABLE:
            return False
        generation = coordinator.generation(group)
        if not all(m.stable and m.generation == generation for m in live):
            return False
        if set(coordinator.members(group)) != {m.member_id for m in live}:
            return False
        if any(h.followup_pending for sim in self.sims.values() for h in sim.hosted if sim.up):
            return False
        self.advance()
        return self.state.owned_caught_up()

    def generations(self) -> int:
        return len([r for r in self.journal.records if r.group_id == self.topology.application_id])

    async def _main(self) -> tuple[bool, float, float, str]:
        scenario = self.scenario
        for sim in self.sims.values():
            if sim.spec.start:
                self.start(sim)
        clock = self.clock
        bound = scenario.bounds
        for event in sorted(scenario.events, key=lambda e: e.at):
            if self.generations() >= bound.max_rebalances:
                break
            await clock.sleep(max(0.0, event.at - clock.time()))
            await self.apply(event)
        last_event = clock.time()
        deadline = last_event + bound.settle_s
        note = ""
        converged = False
        for _ in range(int(bound.settle_s / 0.001) + 10):  # every turn waits or ends the loop
            self.advance()
            if self.settled():
                converged = True
                break
            if self.generations() >= bound.max_rebalances:
                note = (f"non-convergence: {bound.max_rebalances} generations "
                        "(bounds.max_rebalances)")
                break
            remaining = deadline - clock.time()
            if remaining <= 0:
                note = f"non-convergence: not stable {bound.settle_s} s after the last event"
                break
            soon = self.state.next_change_in()
            wait = max(0.001, min(_POLL_S, remaining, soon if soon is not None else _POLL_S))
            changes: list[asyncio.Future[Any]] = [m.changed() for m in self._live_members()]
            changes.extend(self._pending)
            if changes:  # wake up at a member's next change, or when a delayed event ran
                await asyncio.wait(changes, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            else:
                await clock.sleep(wait)
        self.advance()
        return converged, last_event, clock.time(), note

    async def _shutdown(self) -> None:
        for task in list(self._pending):
            task.cancel()
        for sim in self.sims.values():
            for hosted in sim.hosted:
                hosted.cancel_followup()
            for member in sim.members:
                if member.running:
                    await _crash(member)

    def run(self) -> ReplayResult:
        began = time.perf_counter()

        async def main() -> tuple[bool, float, float, str]:
            try:
                return await self._main()
            finally:
                await self._shutdown()

        try:
            converged, last_event, end, note = self.clock.run(main())
        finally:
            self.clock.close()
        return self._result(converged, last_event, end, note, time.perf_counter() - began)

    # -- rows ---------------------------------------------------------------------------------
    def _result(
        self, converged: bool, last_event: float, end: float, note: str, wall_s: float
    ) -> ReplayResult:
        scenario = self.scenario
        name = scenario.name
        group = self.topology.application_id
        rows: list[RebalanceRow] = []
        violations: list[Violation] = []
        previous: Ownership | None = None
        active_moves = standby_moves = 0
        final: Ownership | None = None
        records = [r for r in self.journal.records_for(group) if r.outcome != "empty"]
        for record in records:
            decision = self.decisions.get(record.generation)
            moved_active = moved_standby = 0
            if decision is not None and record.outcome == "stable":
                ownership = decision.ownership
                if previous is not None:
                    before = previous.active_process()
                    moved_active = sum(
                        1 for t, p in ownership.active_process().items()
                        if t in before and before[t] != p
                    )
                    moved_standby = len(ownership.standby_pairs() - previous.standby_pairs())
                active_moves += moved_active
                standby_moves += moved_standby
                violations.extend(check_invariants(
                    ownership, decision.tasks,
                    generation=record.generation, time_s=record.ended_at, replay=self.command,
                ))
                previous = final = ownership
            rows.append(RebalanceRow(
                scenario=name,
                generation=record.generation,
                outcome=record.outcome,
                started_s=round(record.started_at, 6),
                ended_s=round(record.ended_at, 6),
                members=len(record.members),
                processes=decision.processes if decision else 0,
                leader=f"{decision.leader[0]}/{decision.leader[1]}" if decision else "",
                assignor=decision.assignor if decision else "",
                protocol_version=decision.protocol_version if decision else None,
                join_bytes=sum(len(b) for b in record.metadata.values()),
                sync_bytes=sum(len(b) for b in record.assignments.values()),
                active_moved=moved_active,
                standby_moved=moved_standby,
                warmups=decision.warmups if decision else 0,
                followup=decision.followup if decision else "",
                restore_records=decision.restore_records if decision else 0,
                reasons="; ".join(record.reasons),
                assign_wall_ms=round(decision.assign_wall_ms, 3) if decision else 0.0,
            ))
        note = "; ".join([*([note] if note else []), *self.notes])
        summary = self._summary(rows, violations, final, converged, last_event, end, note, wall_s,
                                active_moves, standby_moves)
        return ReplayResult(scenario, rows, summary, violations, self.journal)

    def _summary(
        self,
        rows: list[RebalanceRow],
        violations: list[Violation],
        final: Ownership | None,
        converged: bool,
        last_event: float,
        end: float,
        note: str,
        wall_s: float,
        active_moves: int,
        standby_moves: int,
    ) -> ScenarioRow:
        scenario = self.scenario
        config = scenario.assignor_config()
        stateful = len(self.layout.stateful)
        standbys = config.num_standby_replicas
        stable_rows = [r for r in rows if r.outcome == "stable"]
        after = [r for r in stable_rows if r.started_s >= last_event]
        ha = self._ours and scenario.assignor == "high_availability"
        bound = 2 * (stateful + stateful * standbys) if ha else None
        unavailable = self.state.unavailable_s
        worst = max(sorted(unavailable), key=lambda t: unavailable[t], default=None)
        balance_thread, balance_process, coverage, spread = self._final_shape(final, standbys)
        return ScenarioRow(
            scenario=scenario.name,
            family=str(scenario.origin.get("family", "file")),
            seed=scenario.seed,
            assignor=scenario.assignor,
            rebalances=len(stable_rows),
            aborted=len(rows) - len(stable_rows),
            rebalances_after_last_event=len(after),
            converged=converged,
            kafka_bound=bound,
            within_kafka_bound=(converged and len(after) <= bound) if bound is not None else None,
            time_to_stable_s=round(end - last_event, 6) if converged else None,
            end_s=round(end, 6),
            tasks=len(self.layout.tasks),
            stateful_tasks=stateful,
            unavailable_task_s=round(sum(unavailable.values()), 6),
            unavailable_p99_s=round(percentile(list(unavailable.values()), 0.99), 6),
            unavailable_max_s=round(unavailable[worst], 6) if worst is not None else 0.0,
            worst_task=str(worst) if worst is not None else "",
            restored_records=int(self.state.restored),
            standby_records=int(self.state.standby_replayed),
            active_moves=active_moves,
            standby_moves=standby_moves,
            balance_thread=balance_thread,
            balance_process=balance_process,
            standby_coverage=coverage,
            tag_spread=spread,
            violations=len(violations),
            hash_seed=os.environ.get("PYTHONHASHSEED", "random"),
            note=note,
            replay_wall_s=round(wall_s, 3),
        )

    def _final_shape(
        self, final: Ownership | None, standbys: int
    ) -> tuple[int, float, float, float | None]:
        if final is None:
            return 0, 0.0, 0.0, None
        per_thread = [len(tasks) for tasks in final.active.values()]
        balance_thread = max(per_thread) - min(per_thread) if per_thread else 0
        per_process: dict[str, int] = {}
        threads: dict[str, int] = {}
        for (process, _), tasks in final.active.items():
            per_process[process] = per_process.get(process, 0) + len(tasks)
            threads[process] = threads.get(process, 0) + 1
        loads = [per_process[p] / threads[p] for p in per_process]
        balance_process = round(max(loads) - min(loads), 6) if loads else 0.0
        processes = len(per_process)
        wanted = len(self.layout.stateful) * min(standbys, max(0, processes - 1))
        pairs = final.standby_pairs()
        have = len({(t, p) for t, p in pairs if t in self.layout.stateful})
        coverage = round(min(1.0, have / wanted), 6) if wanted else 1.0
        tags = self.scenario.assignor_config().rack_aware_assignment_tags
        spread: float | None = None
        if tags and pairs:
            owner = final.active_process()
            specs = {sim.name: sim.spec for sim in self.sims.values()}
            apart = sum(
                1 for task, process in pairs
                if task in owner and all(
                    specs[process].tags.get(tag) != specs[owner[task]].tags.get(tag)
                    for tag in tags
                )
            )
            spread = round(apart / len(pairs), 6)
        return balance_thread, balance_process, coverage, spread


def replay_command(scenario: Scenario, path: str | None = None) -> str:
    """The command line that replays ``scenario``: its family and seed, or its file."""
    origin = scenario.origin
    if "family" in origin:
        given = sorted(origin.get("params", {}).items())
        params = " ".join(f"--param {k}={v}" for k, v in given if k != "assignor")
        return (f"python -m simulator run --family {origin['family']} --seed {scenario.seed} "
                f"--assignor {scenario.assignor}" + (f" {params}" if params else ""))
    where = path or f"<file of scenario {scenario.name}>"
    return f"python -m simulator run --scenario {where}"


def replay(scenario: Scenario, *, command: str | None = None) -> ReplayResult:
    """Run one scenario and return its rows."""
    return Replay(scenario, command=command).run()


__all__ = ["Replay", "ReplayResult", "replay", "replay_command"]
