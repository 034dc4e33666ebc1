"""One scenario through the coordinator shim, in virtual time, with the real assignor objects.

Every simulated process is what a real application is: one ``StreamsProcess`` (ours) whose
``StreamsPartitionAssignor`` instances sit, one per stream thread, inside ``ShimMember`` consumers
that call them exactly as aiokafka does, bytes included. What is simulated is only the world
around them: local state (``state()``, backed by :class:`~simulator.state.StateModel`), the
changelog end offsets (the listener's snapshot before each join; the reader the leader's hook
calls before ``assign()``) and the timeline. aiokafka's peers run in the same members.

Each assignor is hosted in a :class:`~simulator.hosting.HostedAssignor` (forwards every call,
tells this replay what it saw); decisions are read back in ``simulator.decisions``, rows built
in ``simulator.summary``; the collector keeps off the older heap (``simulator.heap``).

A run ends when the group is stable (no rebalance pending, no follow-up scheduled, every task
processed by a caught-up owner) or at the scenario's bounds (``bounds.settle_s`` virtual seconds
after the last event, ``bounds.max_rebalances`` generations): a non-convergence, never a hang.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.cluster import ClusterMetadata

from assignor.adapter.process import DEFAULT_END_OFFSETS_MAX_AGE_MS, StreamsProcess
from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout
from protocol.ids import TaskId, TopicPartition
from simulator.decisions import Decision, read_decision
from simulator.end_offsets import EndOffsetsSnapshot
from simulator.faust_peer import FAUST, faust_limits, faust_topics
from simulator.heap import older_heap_frozen
from simulator.hosting import (
    HostedAssignor,
    SimulatedProcess,
    crash,
    crash_all,
    force_rejoin,
    peer_assignor,
    start_member,
    stop_member,
)
from simulator.incarnations import Incarnations
from simulator.layout import cluster_layout
from simulator.metrics import Ownership, RebalanceRow, ScenarioRow, Thread, Violation
from simulator.roster import Roster
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
)
from simulator.state import StateModel
from simulator.summary import rebalance_history, replay_command, scenario_row

#: Longest virtual sleep while waiting for the group to settle: bounds how stale a check is.
_POLL_S = 5.0
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
        self.sims = {spec.name: SimulatedProcess(spec) for spec in scenario.processes}
        self.decisions: dict[int, Decision] = {}
        self._snapshot: tuple[tuple[int, int], EndOffsetsSnapshot] | None = None
        self._threads_by_client: dict[str, Thread] = {
            f"{spec.name}-{thread}": (spec.name, thread)
            for spec in scenario.processes
            for thread in range(spec.threads)
        }
        self._pending: set[asyncio.Task[None]] = set()
        self._roster = Roster(self.sims.values())
        self._ours = scenario.assignor in OUR_ASSIGNORS
        self._incarnations = Incarnations(
            scenario, self.topology, offset_sums=self.state.offset_sums,
            read_end_offsets=self.read_end_offsets,
            clock_ms=lambda: int(self.clock.time() * 1000),
        )
        for sim in self.sims.values():
            spec = sim.spec
            # "settled" starts caught up too; the state model trims it at the first assignment
            self.state.add_process(
                sim.name, self._initial_behind(spec),
                at_end=(self.layout.stateful if spec.initial_state in ("caught_up", "settled")
                        else ()),
                settle_threads=spec.threads if spec.initial_state == "settled" else 0)
        self._topics: list[str] = sorted(self.topology.source_topics)
        if scenario.assignor == FAUST:  # it subscribes to changelogs too; what it cannot say
            self._topics = faust_topics(self.topology)
            self.notes.extend(faust_limits(scenario))

    # -- world --------------------------------------------------------------------------------
    def _layout(self) -> tuple[TaskLayout, ClusterMetadata]:
        """Tasks and cluster metadata for the current partition counts (``simulator.layout``);
        counts that cannot be sized keep the previous layout, with a note in the summary."""
        previous = getattr(self, "layout", None)
        layout, cluster, problem = cluster_layout(
            self.topology, self.partitions, previous, scenario=self.scenario.name
        )
        if problem:
            self.notes.append(problem)
        return layout, cluster

    def _initial_behind(self, spec: ProcessSpec) -> dict[TaskId, float]:
        if isinstance(spec.initial_state, dict):
            return {TaskId.parse(task): float(lag) for task, lag in spec.initial_state.items()}
        return {}

    def advance(self) -> None:
        now = self.clock.time()
        if now > self.state.now:  # (else the state model has nothing to do: a call saved)
            self.state.advance(now)

    def refresh_end_offsets(self, process: StreamsProcess) -> None:
        """The adapter's listener before every join: refresh unless younger than its max age."""
        now_ms, fetched = int(self.clock.time() * 1000), process.end_offsets_fetched_at_ms
        if (fetched is not None and process.changelog_end_offsets is not None
                and now_ms - fetched < DEFAULT_END_OFFSETS_MAX_AGE_MS):
            return
        process.changelog_end_offsets = self._end_offsets_now(now_ms)
        process.end_offsets_fetched_at_ms = now_ms

    async def read_end_offsets(self) -> Mapping[TopicPartition, int]:
        """Every simulated process's ``end_offsets_reader``: the changelog ends now."""
        self.advance()
        return self._end_offsets_now(int(self.clock.time() * 1000)).frozen()

    def _end_offsets_now(self, now_ms: int) -> EndOffsetsSnapshot:
        # one read-only snapshot per virtual instant, shared: copies cost more than assign();
        # built when first read (a listener's snapshot before a join is read only by a leader
        # whose assign-time read failed)
        key = (now_ms, id(self.layout))
        if self._snapshot is None or self._snapshot[0] != key:
            self._snapshot = (key, self.state.end_offsets_snapshot(self.layout.changelogs))
        return self._snapshot[1]

    # -- processes ----------------------------------------------------------------------------
    def start(self, sim: SimulatedProcess) -> None:
        """A new incarnation of the process: fresh memory, its disk as the state model has it."""
        if sim.up:
            return
        self.advance()
        spec = sim.spec
        sim.up = True
        self._roster.changed()
        sim.incarnation += 1
        sim.paused_until = None
        sim.members, sim.hosted = [], []
        sim.process = None
        if self._ours:
            sim.process = self._incarnations.build(sim)
        for thread in range(spec.threads):
            instance = f"{sim.name}-{thread}" if spec.static else None
            if sim.process is not None:
                inner: Any = sim.process.new_assignor()
            else:
                inner = peer_assignor(self.scenario, self.topology, spec, thread)
            hosted = HostedAssignor(self, sim, thread, inner)
            sim.hosted.append(hosted)
            sim.members.append(self._member(hosted, f"{sim.name}-{thread}", instance))

    async def stop(self, sim: SimulatedProcess, *, graceful: bool, wipe: bool = False) -> None:
        """The process goes away: cleanly (LeaveGroup if dynamic) or killed; disk kept or not."""
        if not sim.up:
            return
        self.advance()
        sim.up = False
        self._roster.changed()
        for hosted in sim.hosted:
            hosted.cancel_followup()
        for member in sim.members:
            await stop_member(member, graceful=graceful)
        if sim.process is not None:
            await sim.process.close()
        self.advance()
        self.state.crash(sim.name, wipe=wipe)
        if wipe:
            sim.disk_generation += 1

    async def pause(self, sim: SimulatedProcess, duration_s: float) -> None:
        """No heartbeats and no processing for ``duration_s``, then the same process resumes
        (same StreamsProcess and assignors, memory intact) with new consumer sessions.

        The shim has no way to stop a member's heartbeats and resume them, so the pause ends
        with new ``ShimMember`` sessions: a static member takes its place back without a
        rebalance, as in aiokafka, but a dynamic one joins as a new member (one rebalance more
        than aiokafka, whose consumer would resume heartbeating under its old id if the pause
        was shorter than the session timeout). A pause while paused extends the pause to the
        later end; a pause resumes nothing once its incarnation was stopped or restarted."""
        if not sim.up or not sim.begin_pause(self.clock.time() + duration_s):
            return
        incarnation = sim.incarnation
        self.advance()
        for member in sim.members:
            await crash(member)
        self.state.stop(sim.name)
        for _ in range(len(self.scenario.events) + 1):  # each later pause extends it once
            if sim.paused_until is None or self.clock.time() >= sim.paused_until:
                break
            await self.clock.sleep(sim.paused_until - self.clock.time())
        if not sim.up or sim.incarnation != incarnation:
            return
        sim.paused_until = None
        self.advance()
        sim.members = [
            self._member(hosted, old.client_id, old.group_instance_id)
            for old, hosted in zip(sim.members, sim.hosted, strict=True)
        ]

    def _member(self, hosted: HostedAssignor, client_id: str, instance: str | None
                ) -> ShimMember:
        """A started consumer session around ``hosted`` (bound for follow-up rebalances)."""
        self._roster.changed()  # the caller puts it in ``sim.members`` before anything runs
        return start_member(
            hosted, self.coordinator, self._topics, self.cluster, self.scenario.timeouts,
            group_id=self.topology.application_id,
            client_id=client_id,
            instance=instance,
            on_change=self._roster.member_changed,
        )

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
        elif event.kind == "rejoin":
            force_rejoin(self.coordinator, self.sims[event.process], event.by)
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
        hosted: HostedAssignor,
        generation: int,
        members: Mapping[str, Any],
        answers: Mapping[str, Any],
        elapsed_ms: float,
    ) -> None:
        self.advance()
        threads = {member_id: self._thread_of(member_id) for member_id in members}
        self.decisions[generation] = read_decision(
            hosted.inner,
            generation,
            threads,
            answers,
            leader=(hosted.sim.name, hosted.thread),
            default_assignor=self.scenario.assignor,
            elapsed_ms=elapsed_ms,
            layout=self.layout,
            state=self.state,
            previous=self._previous_ownership(generation),
        )

    def _previous_ownership(self, generation: int) -> Ownership | None:
        stable = {r.generation for r in self.journal.stable(self.topology.application_id)}
        earlier = [g for g in self.decisions if g < generation and g in stable]
        return self.decisions[max(earlier)].ownership if earlier else None

    # -- the run ------------------------------------------------------------------------------
    def _live_members(self) -> list[ShimMember]:
        return self._roster.live()

    def settled(self, live: list[ShimMember] | None = None) -> bool:
        """No rebalance pending or scheduled, and every owned task processed by a caught-up
        owner (an unowned task is a violation, not a wait); ``live``: the running members."""
        group = self.topology.application_id
        live = self._live_members() if live is None else live
        if not live or self._pending:
            return False
        coordinator = self.coordinator
        if coordinator.state(group) is not GroupState.STABLE:
            return False
        ids = self._roster.stable_ids(live, coordinator.generation(group))
        if ids is None or not coordinator.has_members(group, ids):
            return False
        self.advance()  # (a no-op in the settle loop, which has just advanced)
        if not self.state.owned_caught_up():  # first: while tasks restore, it is the answer
            return False
        return not any(h.followup_pending for sim in self.sims.values() for h in sim.hosted
                       if sim.up)

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
            live = self._live_members()
            if self.settled(live):
                converged = True
                break
            if self.generations() >= bound.max_rebalances:
                note = (f"non-convergence: {bound.max_rebalances} generations "
                        "(bounds.max_rebalances)")
                break
            remaining = deadline - clock.time()
            if remaining <= 0:
                note = f"non-convergence: not stable {bound.settle_s} s after the last event"
                if not live:  # every process gone: nothing could have settled
                    note += " (no process running)"
                break
            soon = self.state.next_change_in()
            wait = max(0.001, min(_POLL_S, remaining, soon if soon is not None else _POLL_S))
            changes = [*self._roster.arm(live, clock.create_future), *self._pending]
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
        self.coordinator.close()
        members = [m for sim in self.sims.values() for m in sim.members]
        for member in members:  # the settle loop is over: no one reads the roster any more
            member.on_change = None  # (400 reports of a cold start's end crashes, unheard)
        await crash_all(members)

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
        group = self.topology.application_id
        history = rebalance_history(
            self.scenario.name, self.journal.records_for(group), self.decisions, self.command
        )
        note = "; ".join([*([note] if note else []), *self.notes])
        summary = scenario_row(
            self.scenario,
            history,
            layout=self.layout,
            state=self.state,
            specs={sim.name: sim.spec for sim in self.sims.values()},
            ours=self._ours,
            converged=converged,
            last_event=last_event,
            end=end,
            note=note,
            wall_s=wall_s,
        )
        return ReplayResult(self.scenario, history.rows, summary, history.violations, self.journal)


def replay(scenario: Scenario, *, command: str | None = None) -> ReplayResult:
    """Run one scenario and return its rows."""
    with older_heap_frozen():
        return Replay(scenario, command=command).run()


__all__ = ["Replay", "ReplayResult", "replay", "replay_command"]
