"""How the real assignor objects are hosted in simulated processes and their consumers.

Each consumer's assignor (ours, or one of aiokafka's peers) is wrapped in
:class:`HostedAssignor`, which forwards every call unchanged and observes it for the simulation:
``metadata()`` marks the start of the member's rebalance (eager protocol: its tasks stop) and
refreshes the end-offset snapshot, ``assign()`` records the leader's decision,
``on_assignment()`` hands the thread its tasks. What it tells is told to a :class:`Simulation`
(the replay in ``simulator.engine``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from types import SimpleNamespace
from typing import Any, Protocol

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.structs import TopicPartition as PartitionTuple

from assignor.adapter.process import StreamsProcess
from assignor.adapter.streams_assignor import StreamsPartitionAssignor
from assignor.topology.model import Topology
from assignor.topology.tasks import TaskLayout
from protocol.ids import TaskId
from simulator.faust_peer import FAUST, faust_assignor, faust_tasks, read_faust_assignment
from simulator.metrics import held_tasks, tasks_by_partition
from simulator.scenarios import GroupTimeouts, ProcessSpec, Scenario
from simulator.shim import GroupCoordinator, LeaveGroupRequest, ShimMember, Timer, VirtualClock
from simulator.shim.deadline import Deadline
from simulator.state import StateModel

#: Turns of the event loop (no virtual time passes) given to a member before and while it crashes.
_YIELDS = 20


class Simulation(Protocol):
    """What a hosted assignor tells, and reads from, the replay it runs in."""

    state: StateModel
    layout: TaskLayout
    clock: VirtualClock

    def advance(self) -> None: ...

    def refresh_end_offsets(self, process: StreamsProcess) -> None: ...

    def record_decision(
        self,
        hosted: HostedAssignor,
        generation: int,
        members: Mapping[str, Any],
        answers: Mapping[str, Any],
        elapsed_ms: float,
    ) -> None: ...


#: The last layout's (topic, partition) -> tasks index: every peer member's ``on_assignment``
#: of a replay reads the same layout (one entry: a worker replays many scenarios in turn).
_INDEX: list[tuple[Mapping[TaskId, Any], dict[tuple[str, int], tuple[TaskId, ...]]]] = []


def _partition_index(
    tasks: Mapping[TaskId, Any],
) -> dict[tuple[str, int], tuple[TaskId, ...]]:
    if not _INDEX or _INDEX[0][0] is not tasks:
        _INDEX[:] = [(tasks, tasks_by_partition(tasks))]
    return _INDEX[0][1]


class SimulatedProcess:
    """One simulated process: its spec, its current incarnation and its consumers."""

    def __init__(self, spec: ProcessSpec) -> None:
        self.spec = spec
        #: ``spec.name``, kept as a plain attribute: the hosted calls and the state model's
        #: bookkeeping read it some 2,000 times in a cold start of 400 members
        self.name = spec.name
        self.version = spec.protocol_version
        self.members: list[ShimMember] = []
        self.hosted: list[HostedAssignor] = []
        self.process: StreamsProcess | None = None
        self.up = False
        #: bumped when the disk is wiped: a dynamic process id lives in the state directory
        self.disk_generation = 0
        #: bumped by every start: a pause resumes only the incarnation it paused
        self.incarnation = 0
        #: virtual time a pause in progress ends at (None: not paused); overlapping pauses
        #: extend it rather than stacking resumes
        self.paused_until: float | None = None

    def begin_pause(self, until: float) -> bool:
        """Pause until ``until``; if a pause is in progress, extend it instead and say False
        (that pause's resume is the one that will happen)."""
        if self.paused_until is not None:
            self.paused_until = max(self.paused_until, until)
            return False
        self.paused_until = until
        return True


class HostedAssignor:
    """Forwards aiokafka's assignor calls unchanged; observes them for the simulation."""

    def __init__(
        self, replay: Simulation, sim: SimulatedProcess, thread: int, inner: Any
    ) -> None:
        self._replay = replay
        self.sim = sim
        self.thread = thread
        self.inner = inner
        self.member: ShimMember | None = None
        self.name: str = inner.name
        self._followup: Timer | None = None

    def metadata(self, topics: Iterable[str]) -> Any:
        replay = self._replay
        replay.advance()
        replay.state.stop(self.sim.name, self.thread)
        process = self.sim.process
        if process is not None:
            replay.refresh_end_offsets(process)
        return self.inner.metadata(topics)

    def assign(self, cluster: ClusterMetadata, members: Mapping[str, Any]) -> Mapping[str, Any]:
        """The leader's assignment. For ours, the adapter's hook on the member's
        ``_perform_assignment`` has just read end offsets (as Kafka's leader reads them inside
        ``assign()``); nothing here refreshes them, so the replay tests the adapter's path."""
        self._replay.advance()
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
            tasks = replay.layout.tasks
            if self.name == FAUST:  # as Faust's on_assignment has just decoded it
                decoded = getattr(inner, "_assignment", None)
                parts, standby = (faust_tasks(decoded, replay.layout) if decoded is not None
                                  else read_faust_assignment(assignment, replay.layout))
                active = held_tasks((PartitionTuple(tp.topic, tp.partition) for tp in parts),
                                    tasks, _partition_index(tasks))
            else:
                active = held_tasks(assignment.partitions(), tasks, _partition_index(tasks))
                standby = ()
        replay.state.assign(self.sim.name, self.thread, active, standby)

    def _reschedule_followup(self, inner: StreamsPartitionAssignor) -> None:
        """Move the adapter's follow-up onto virtual time.

        ``FollowupScheduler`` computes its delay against ``time.time()`` (wall clock) while the
        deadline comes from the process's clock (virtual here), so on the virtual clock every
        follow-up would fire at once. Take the deadline, cancel its timer, keep our own.
        """
        old, self._followup = self._followup, None
        at_ms = inner.followups.scheduled_at_ms
        if at_ms is None:
            if old is not None:
                old.cancel()
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

        # the old timer moved in place (cancel, then a new one: the same order), else a new one
        if type(old) is Deadline and old.restart(delay, fire):
            self._followup = old
        else:
            if old is not None:
                old.cancel()
            self._followup = clock.call_later(delay, fire)

    @property
    def followup_pending(self) -> bool:
        return self._followup is not None

    def cancel_followup(self) -> None:
        if self._followup is not None:
            self._followup.cancel()
            self._followup = None


class ChangeWatch:
    """The settle loop's wake-up: one future that any watched member completes when its status
    or generation changes (``ShimMember.on_change``). A future per member, re-armed at every
    wake-up, cost O(members) per change of any member: O(members^2) per rebalance."""

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None
        self._watched: set[ShimMember] = set()

    def arm(self, members: Iterable[ShimMember],
            create: Callable[[], asyncio.Future[Any]]) -> list[asyncio.Future[Any]]:
        """Watch ``members`` (and only them) from now on; the future to wait on (none when
        there is no member)."""
        self._watched = set(members)
        if not self._watched:
            return []
        if self._future is None or self._future.done():
            self._future = create()
        return [self._future]

    def notify(self, member: ShimMember) -> None:
        future = self._future
        if future is not None and not future.done() and member in self._watched:
            future.set_result(None)


async def stop_member(member: ShimMember, *, graceful: bool) -> None:
    """``member.close()`` or ``member.crash()``, working around a shim race (reported): when the
    cancellation of the member's loop arrives while that loop awaits its own heartbeat task
    inside ``_stop_heartbeat`` (a rejoin requested at this very instant),
    ``suppress(CancelledError)`` swallows it, the loop joins again and the stop waits for it
    forever. Letting the ready callbacks run first takes the loop past that point; if a cancel
    is still swallowed, it is delivered again (a bounded number of times; no virtual time
    passes). When the virtual clock is quiet (nothing ready, nothing due at this instant), those
    first turns would run nothing but this coroutine, so they are skipped: the same state, the
    same journal (a rolling restart of 100 processes spent two thirds of its 3,000 loop steps
    in them); a member at rest then stops at once (``ShimMember.close_at_rest`` /
    ``crash_at_rest``), as the step-by-step stop would leave it."""
    if _quiet(member):
        if member.at_rest:  # then those steps would end it as this does at once
            member.close_at_rest() if graceful else member.crash_at_rest()
            return
    else:
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


async def crash(member: ShimMember) -> None:
    await stop_member(member, graceful=False)


async def crash_all(members: Iterable[ShimMember]) -> None:
    """Crash every running member at once (a replay's end, its rows decided): what
    :func:`stop_member` does for one member, with its loop turns shared. Stopped one after the
    other, each stop's 40 loop turns added up; gathered, each turn still stepped one coroutine
    per member (a cold start of 400 members spent more in these turns than in ``assign()``)."""
    running = [member for member in members if member.running]
    at_rest = bool(running) and _all_at_rest(running)
    if not at_rest:  # (at rest, with nothing else to run, the loop's turns would run nothing)
        for _ in range(_YIELDS):
            await asyncio.sleep(0)
        at_rest = bool(running) and _all_at_rest(running)
    if at_rest:
        for member in running:
            member.crash_at_rest()
        return
    stopping = [(member, asyncio.ensure_future(member.crash())) for member in running]
    for _ in range(_YIELDS):
        if all(stop.done() for _, stop in stopping):
            break
        await asyncio.sleep(0)
        for member, _ in stopping:
            loop_task = getattr(member, "_task", None)
            if loop_task is not None and not loop_task.done():
                loop_task.cancel()
    await asyncio.gather(*(stop for _, stop in stopping))


def _quiet(member: ShimMember) -> bool:
    """The member runs on a virtual clock with nothing to run at this instant (a turn of the
    loop would resume only the caller)."""
    clock = member.clock
    return isinstance(clock, VirtualClock) and clock.quiet()


def _all_at_rest(members: list[ShimMember]) -> bool:
    """True when crashing ``members`` can skip the loop: their virtual clock has nothing to run
    at this instant and every one of them is at rest (``ShimMember.at_rest``). Then the crashes'
    loop steps would run nothing but the crashes themselves, so ``crash_at_rest`` one after the
    other ends in the same state and journal (a cold start of 400 members spent an eighth of its
    simulator calls in those steps)."""
    clock = members[0].clock
    return (isinstance(clock, VirtualClock) and clock.quiet()
            and all(member.clock is clock and member.at_rest for member in members))


def peer_assignor(scenario: Scenario, topology: Topology, spec: ProcessSpec, thread: int) -> Any:
    """The assignor of thread ``thread`` of ``spec`` for a peer scenario (not ours)."""
    name, member_name = scenario.assignor, f"{spec.name}_{thread}"
    if name == FAUST:
        replicas = scenario.assignor_config(spec).num_standby_replicas
        return faust_assignor(topology, f"{spec.name}-{thread}", replicas)
    if name == "roundrobin":
        return RoundRobinPartitionAssignor
    # aiokafka's sticky assignor keeps its state on the class (aio-libs/aiokafka#1175)
    return type(f"Sticky_{member_name}", (StickyPartitionAssignor,), {})



def start_member(
    hosted: HostedAssignor,
    coordinator: GroupCoordinator,
    topics: Iterable[str],
    cluster: ClusterMetadata,
    timeouts: GroupTimeouts,
    *,
    group_id: str,
    client_id: str,
    instance: str | None,
    on_change: Callable[[ShimMember], object] | None = None,
) -> ShimMember:
    """A started consumer session around ``hosted``, subscribed to ``topics`` in the group
    ``group_id`` (bound for follow-up rebalances)."""
    member = ShimMember(
        coordinator,
        group_id=group_id,
        assignors=[hosted],
        topics=sorted(topics),
        cluster=cluster,
        client_id=client_id,
        group_instance_id=instance,
        session_timeout_ms=timeouts.session_timeout_ms,
        rebalance_timeout_ms=timeouts.rebalance_timeout_ms,
        heartbeat_interval_ms=timeouts.heartbeat_interval_ms,
        on_change=on_change,
    )
    hosted.member = member
    if isinstance(hosted.inner, StreamsPartitionAssignor):
        hosted.inner.bind(SimpleNamespace(_coordinator=member))
    return member.start()


def force_rejoin(coordinator: GroupCoordinator, sim: SimulatedProcess, by: str) -> None:
    """``RejoinEvent``: each running consumer of ``sim`` asks to rejoin (``by = "member"``), or
    the coordinator removes it as an operator's LeaveGroup naming its member id would
    (``by = "coordinator"``; the consumer finds out at its next heartbeat)."""
    for member in sim.members:
        if not member.running:
            continue
        if by == "member":
            member.request_rejoin()
        elif member.member_id:
            coordinator.leave(LeaveGroupRequest(member.group_id, ((member.member_id, None),)))


__all__ = [
    "ChangeWatch",
    "HostedAssignor",
    "SimulatedProcess",
    "Simulation",
    "crash",
    "crash_all",
    "force_rejoin",
    "peer_assignor",
    "start_member",
    "stop_member",
]

