"""A group member that hosts an aiokafka-style assignor and talks to the shim's coordinator.

It reproduces what aiokafka 0.14's ``GroupCoordinator``/``CoordinatorGroupRebalance`` do around
the assignor, bytes included: ``assignor.metadata(topics)`` on every join, encoded unless it is
already bytes; the leader decodes every member's metadata with ``ConsumerProtocol.METADATA``,
calls ``assignor.assign(cluster, members)`` synchronously and encodes each result unless it is
bytes; every member decodes its assignment with ``ConsumerProtocol.ASSIGNMENT`` and calls
``assignor.on_assignment(assignment)`` (those four codecs through ``consumer_bytes``: aiokafka's
bytes and objects, cheaper). Around that it keeps aiokafka's loop: MEMBER_ID_REQUIRED
retry, heartbeats every ``heartbeat_interval_ms`` (which stop while rejoining), rejoin on
REBALANCE_IN_PROGRESS, reset on UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION, no LeaveGroup for a
static member.

Deliberate differences from aiokafka (see the README): one JoinGroup carries every assignor's
protocol (aiokafka sends one per assignor, aio-libs/aiokafka#1168); an error aiokafka would hand
to the application (a failing ``assign``) is followed by a rejoin after ``retry_backoff_ms``, as
if the application kept polling; a fatal error (fencing, an undecodable assignment) stops the
member with ``status == "failed"``; so does any other exception from a hosted assignor, rather than
leaving the member "joining" forever. A leader that cannot decode a member's metadata (aiokafka's
``_perform_assignment`` would fail the whole assignment, and every later leader with it) leaves
that member out of ``assign()`` and hands it a valid empty assignment, so one garbled client cannot
stall the group. JoinGroup and SyncGroup wait at most ``request_timeout_ms`` (aiokafka's 40,000 ms
default) for the coordinator's answer; then, as aiokafka does, the member rejoins (after
``retry_backoff_ms``) keeping its member id.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.structs import TopicPartition

from simulator.shim.calls import call
from simulator.shim.clock import Timer
from simulator.shim.consumer_bytes import (
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    partition_count,
)
from simulator.shim.coordinator import GroupCoordinator
from simulator.shim.errors import ErrorCode, MemberFailed, RequestTimedOut, error_class
from simulator.shim.flag import Flag
from simulator.shim.heartbeat import Heartbeats
from simulator.shim.records import Text
from simulator.shim.requests import (
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from simulator.shim.settle import settle

__all__ = ["Assignor", "MemberFailed", "ShimMember", "settle"]

_FATAL_JOIN = frozenset({
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ErrorCode.INVALID_SESSION_TIMEOUT,
    ErrorCode.INVALID_GROUP_ID, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.GROUP_MAX_SIZE_REACHED,
})
#: codes each join compares with, as globals (an Enum class attribute is a slow look-up)
_NONE, _MEMBER_ID_REQUIRED = ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED
#: the statuses of a running member (it never comes back from the others)
_RUNNING = frozenset({"created", "joining", "stable"})
# What the leader hands a member whose metadata it cannot read: a valid assignment of nothing, so
# that member stays in the group harmlessly instead of failing to decode b"".
_EMPTY_ASSIGNMENT = ConsumerProtocolMemberAssignment(0, [], b"").encode()


class Assignor(Protocol):
    """aiokafka's assignor interface, duck-typed as aiokafka's coordinator uses it."""

    @property
    def name(self) -> str: ...

    def metadata(self, topics: Iterable[str]) -> Any: ...

    def assign(self, cluster: ClusterMetadata, members: Mapping[str, Any]) -> Mapping[str, Any]:
        ...

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None: ...


class ShimMember:
    """One consumer of a group, driven by the shim (see the module docstring).

    ``status`` moves through ``created`` -> ``joining`` <-> ``stable`` and ends in ``left``,
    ``crashed`` or ``failed``. ``on_assigned`` (optional) runs after ``on_assignment`` with the
    member, like a rebalance listener.
    """

    _loop: asyncio.AbstractEventLoop  # the running loop, from start() on

    def __init__(
        self,
        coordinator: GroupCoordinator,
        *,
        group_id: str,
        assignors: Sequence[Assignor],
        topics: Iterable[str],
        cluster: ClusterMetadata,
        client_id: str = "consumer",
        group_instance_id: str | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 30_000,
        heartbeat_interval_ms: int = 3_000,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 40_000,
        latency_ms: tuple[float, float] = (0.0, 0.0),
        assign_delay_ms: float = 0.0,
        on_assigned: Callable[[ShimMember], object] | None = None,
        on_change: Callable[[ShimMember], object] | None = None,
    ) -> None:
        if not assignors:
            raise ValueError("a member needs at least one assignor")
        if request_timeout_ms <= 0:
            raise ValueError(f"request_timeout_ms must be positive, not {request_timeout_ms}")
        self.coordinator = coordinator
        self.clock = coordinator.clock
        self.journal = coordinator.journal
        self.group_id = group_id
        self.assignors = tuple(assignors)
        self.topics = tuple(topics)
        self.cluster = cluster
        self.client_id = client_id
        self.group_instance_id = group_instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.latency_ms = latency_ms
        self.assign_delay_ms = assign_delay_ms
        self.on_assigned = on_assigned
        #: called with the member at each change ``changed()`` reports: one watcher of many
        #: members waits on one future instead of a future per member
        self.on_change = on_change

        self.member_id = UNKNOWN_MEMBER_ID
        self.generation = NO_GENERATION
        self.protocol: str | None = None
        self.assignment: ConsumerProtocolMemberAssignment | None = None
        self.status = "created"
        #: ``status`` is one of created, joining, stable: kept by ``_set_status`` (the roster
        #: and the settle loop ask it of every member at every change; a property was a call)
        self.running = True
        self.error: BaseException | None = None
        self.assign_seconds = 0.0  # wall time spent inside assignor.assign (not in the journal)
        self.assign_calls = 0
        self.joins = 0

        self._rejoin: Flag | None = None
        self._task: asyncio.Task[None] | None = None
        self._heartbeats: Heartbeats | None = None
        self._changed: asyncio.Future[None] | None = None
        self._request_timer: Timer | None = None  # restarted at each request (virtual clock)

    # -- public controls ------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.group_instance_id or self.client_id

    @property
    def rejoin_requested(self) -> bool:
        return self._rejoin is not None and self._rejoin.value

    @property
    def stable(self) -> bool:
        rejoin = self._rejoin  # rejoin_requested, inline: the settle loop asks every member
        return self.status == "stable" and not (rejoin is not None and rejoin.value)

    def partitions(self) -> list[TopicPartition]:
        return self.assignment.partitions() if self.assignment is not None else []

    def start(self) -> ShimMember:
        """Begin joining (call from inside the clock's loop)."""
        if self._task is not None:
            raise RuntimeError(f"member {self.name} was already started")
        loop = self._loop = asyncio.get_running_loop()
        self._rejoin = Flag(loop)
        self._rejoin.set()
        name = self.group_instance_id or self.client_id  # ``name``, without a property's call
        self._task = loop.create_task(self._run(), name=f"member-{name}")
        return self

    def request_rejoin(self) -> None:
        """What aiokafka's ``request_rejoin()`` does: rejoin at the next opportunity."""
        if self._rejoin is not None and not self._rejoin.value:
            self._log("rejoin-requested", "")
            self._rejoin.set()
            self._notify()

    def subscribe(self, topics: Iterable[str]) -> None:
        """Change the subscription; the new topics go out with the next JoinGroup."""
        self.topics = tuple(topics)
        self.request_rejoin()

    async def close(self) -> None:
        """Stop like ``AIOKafkaConsumer.stop()``: LeaveGroup unless static, then forget the id."""
        await self._stop_tasks()
        if self.generation > 0 and self.group_instance_id is None and self.member_id:
            await self._delay()
            self.coordinator.leave(
                LeaveGroupRequest(self.group_id, ((self.member_id, None),))
            )
            await self._delay()
        self._set_status("left", f"after generation {self.generation}")
        self.member_id, self.generation = UNKNOWN_MEMBER_ID, NO_GENERATION

    async def crash(self) -> None:
        """Vanish without a word: no LeaveGroup, parked requests stay parked at the coordinator."""
        await self._stop_tasks()
        self._set_status("crashed", "")

    @property
    def at_rest(self) -> bool:
        """Stable and idle: its loop has ended until a rejoin request (none is pending: the
        flag's ``waker`` is armed), its heartbeats are at rest (``Heartbeats.at_rest``).
        Nothing of it is queued on the loop."""
        heartbeats, rejoin = self._heartbeats, self._rejoin
        return (self.status == "stable" and rejoin is not None and rejoin.waker is not None
                and heartbeats is not None and heartbeats.at_rest)

    def crash_at_rest(self) -> None:
        """``await crash()`` for a member :attr:`at_rest`, done at once: heartbeats stopped,
        its loop cancelled (it ends at the loop's next step, as it would under ``crash()``),
        status ``crashed``. With many members crashing together on a loop with nothing else to
        run, ``crash()`` takes four loop steps per member and ends in the same state, with the
        same journal events in the same order (each member's ``crashed``, in call order)."""
        assert self.at_rest
        self._stop_at_rest()
        self._set_status("crashed", "")

    def _stop_at_rest(self) -> None:
        """What both at-rest stops share: heartbeats stopped, no rejoin to start the loop again
        (at rest it has no task: nothing to cancel, no cancellation step at the replay's end)."""
        heartbeats, self._heartbeats = self._heartbeats, None
        assert heartbeats is not None
        heartbeats.stop_at_rest()
        self._end_loop()

    def close_at_rest(self) -> None:
        """``await close()`` for a member :attr:`at_rest` (so without latency), done at once as
        :meth:`crash_at_rest` does: heartbeats stopped, its loop cancelled, the LeaveGroup of a
        dynamic member, status ``left``, the id forgotten. On a loop with nothing else to run,
        ``close()`` takes four loop steps and a task of its own to end in this state, with the
        same journal events in the same order (nothing its loop's end does is logged)."""
        assert self.at_rest and self.latency_ms[1] <= 0
        self._stop_at_rest()
        if self.generation > 0 and self.group_instance_id is None and self.member_id:
            self.coordinator.leave(
                LeaveGroupRequest(self.group_id, ((self.member_id, None),))
            )
        self._set_status("left", f"after generation {self.generation}")
        self.member_id, self.generation = UNKNOWN_MEMBER_ID, NO_GENERATION

    def changed(self) -> asyncio.Future[None]:
        """A future that completes at the member's next change of status or generation."""
        if self._changed is None or self._changed.done():
            self._changed = self.clock.create_future()
        return self._changed

    # -- the coordination loop ------------------------------------------------------------
    async def _run(self) -> None:
        rejoin = self._rejoin
        assert rejoin is not None
        try:
            while True:
                if rejoin.value or self.assignment is None:
                    if self._heartbeats is not None:  # (a stop of none never suspends)
                        await self._stop_heartbeat()
                    self._set_status("joining", "")
                    if await self._join_and_sync():
                        self._heartbeats = Heartbeats(self)
                        self._heartbeats.start()
                        self._set_status("stable", ("generation {}".format, self.generation))
                    else:
                        await self.clock.sleep(self.retry_backoff_ms / 1000.0)
                    continue
                # At rest: the task ends, and the next rejoin request starts another (_wake) at
                # the loop step that would have woken this one. A replay's end used to step 400
                # cancellations of tasks waiting here.
                rejoin.waker = self._wake
                return
        except MemberFailed as failure:
            self.error = failure.__cause__ or failure
            await self._stop_heartbeat()
            self._set_status("failed", str(failure))
        except Exception as error:  # a hosted assignor's bug must not leave us "joining" forever
            self.error = error
            await self._stop_heartbeat()
            self._set_status("failed", f"unexpected {type(error).__name__}: {error}")

    def _wake(self) -> None:
        self._task = self._loop.create_task(self._run(), name=f"member-{self.name}")

    def _end_loop(self) -> None:
        """The member's loop stops for good: its task (if it runs) cancelled, no rejoin wakes it."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        if self._rejoin is not None:
            self._rejoin.waker = None

    async def _join_and_sync(self) -> bool:
        self.joins += 1
        protocols = []
        for assignor in self.assignors:
            metadata = assignor.metadata(self.topics)
            if not isinstance(metadata, bytes):
                metadata = encode_metadata(metadata)
            protocols.append((assignor.name, metadata))
        # positional (JoinGroupRequest's field order): seven keywords cost more than the rest of
        # building it, twice per new member
        request = JoinGroupRequest(
            self.group_id, self.member_id, tuple(protocols), "consumer", self.session_timeout_ms,
            self.rebalance_timeout_ms, self.group_instance_id, self.client_id,
        )
        try:
            response = await call(self, self.coordinator.join, request)
        except RequestTimedOut:
            return False  # aiokafka: coordinator marked dead, rejoin with the same member id
        while response.error_code == _MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            request = JoinGroupRequest(
                request.group_id, self.member_id, request.protocols, request.protocol_type,
                request.session_timeout_ms, request.rebalance_timeout_ms,
                request.group_instance_id, request.client_id,
            )
            try:
                response = await call(self, self.coordinator.join, request)
            except RequestTimedOut:
                return False
        code = response.error_code
        if code == _NONE:
            self.member_id = response.member_id
            self.generation = response.generation_id
            self.protocol = response.protocol_name
            if response.leader_id == response.member_id:
                assignment = await self._lead(response)
            else:
                assignment = await self._sync(())
            if assignment is None:
                return False
            self._complete(assignment)
            return True
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self._reset_generation()
            return False
        if code in _FATAL_JOIN:
            raise MemberFailed(f"JoinGroup failed: {ErrorCode(code).name}") from error_class(code)()
        raise MemberFailed(f"unexpected JoinGroup error {code}") from error_class(code)()

    async def _lead(self, response: JoinGroupResponse) -> bytes | None:
        protocol = response.protocol_name or ""
        try:
            assignments, undecodable = await self._perform_assignment(response)
            encoded = []
            for member_id, assignment in assignments.items():
                encoded.append((member_id, bytes(
                    assignment if isinstance(assignment, bytes) else encode_assignment(assignment)
                )))
        except Exception as error:  # aiokafka wraps it in KafkaError and hands it to the app
            self.error = error
            self._log("assign-failed", f"{type(error).__name__}: {error}")
            return None
        encoded.extend((member_id, _EMPTY_ASSIGNMENT) for member_id in undecodable)
        self._log("assigned", f"generation {self.generation}, protocol {protocol}, "
                              f"{len(assignments)} members")
        if self.assign_delay_ms > 0:
            await self.clock.sleep(self.assign_delay_ms / 1000.0)
        return await self._sync(tuple(encoded))

    async def _perform_assignment(
        self, response: JoinGroupResponse
    ) -> tuple[Mapping[str, Any], list[str]]:
        """aiokafka's coroutine of that name (decode, then a synchronous ``assign()``), named
        alike so that ``assignor.adapter.assign_time_offsets`` hooks it here as it hooks
        aiokafka's; also returns the members whose metadata could not be decoded."""
        assignor = self._assignor(response.protocol_name or "")
        members = {}
        undecodable = []
        for member_id, _instance, metadata in response.members:
            try:
                members[member_id] = decode_metadata(metadata)
            except Exception as error:  # another client's bytes: not this member's fault
                undecodable.append(member_id)
                self._log("metadata-undecodable",
                          f"{member_id}: {len(metadata)} B, {type(error).__name__}: {error}; "
                          "left out of assign(), given an empty assignment")
        started = time.perf_counter()
        try:
            return assignor.assign(self.cluster, members), undecodable
        finally:  # the assign() call alone: not the decoding, nor a hook's awaits before it
            self.assign_seconds += time.perf_counter() - started
            self.assign_calls += 1

    async def _sync(self, assignments: tuple[tuple[str, bytes], ...]) -> bytes | None:
        assert self._rejoin is not None
        # aiokafka forgets earlier rejoin requests right before it sends SyncGroup.
        self._rejoin.clear()
        request = SyncGroupRequest(
            self.group_id, self.generation, self.member_id, assignments, self.group_instance_id
        )
        try:
            response: SyncGroupResponse = await call(self, self.coordinator.sync, request)
        except RequestTimedOut:
            self._rejoin.set()  # aiokafka: request_rejoin() and start over
            return None
        code = response.error_code
        if code == _NONE:
            return response.member_assignment
        self._rejoin.set()
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._reset_generation()
        elif code != ErrorCode.REBALANCE_IN_PROGRESS:
            raise MemberFailed(f"SyncGroup failed: {ErrorCode(code).name}") from error_class(code)()
        return None

    def _complete(self, data: bytes) -> None:
        assignor = self._assignor(self.protocol or "")
        try:
            assignment = decode_assignment(data)
        except Exception as error:  # aiokafka's coordination task dies on this
            raise MemberFailed(f"undecodable assignment of {len(data)} bytes") from error
        self.assignment = assignment
        assignor.on_assignment(assignment)
        # the count now, the text when read: the journal keeps no reference to the assignment
        self._log("assignment", ("generation {}: {} partitions, {} B".format, self.generation,
                                 partition_count(assignment), len(data)))
        if self.on_assigned is not None:
            self.on_assigned(self)

    def _assignor(self, protocol: str) -> Assignor:
        for assignor in self.assignors:
            if assignor.name == protocol:
                return assignor
        raise MemberFailed(f"coordinator selected protocol {protocol!r} this member lacks")

    def _reset_generation(self) -> None:
        self.member_id, self.generation = UNKNOWN_MEMBER_ID, NO_GENERATION
        if self._rejoin is not None:
            self._rejoin.set()

    # -- plumbing -------------------------------------------------------------------------
    async def _delay(self) -> None:
        low, high = self.latency_ms
        if high > 0:
            await self.clock.sleep(self.clock.random.uniform(low, high) / 1000.0)

    async def _stop_heartbeat(self) -> None:
        heartbeats, self._heartbeats = self._heartbeats, None
        if heartbeats is not None:
            await heartbeats.stop()

    async def _stop_tasks(self) -> None:
        await self._stop_heartbeat()
        task, self._task = self._task, None
        if self._rejoin is not None:  # (a member at rest has no task, only this to forget)
            self._rejoin.waker = None
        current = asyncio.current_task()
        if task is not None and task is not current and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _set_status(self, status: str, detail: Text) -> None:
        if status != self.status or status == "stable":
            self.status = status
            self.running = status in _RUNNING
            self._log(status, detail)
        changed = self._changed  # ``_notify``, inline: three status changes a member a rebalance
        if changed is not None and not changed.done():
            changed.set_result(None)
        if self.on_change is not None:
            self.on_change(self)

    def _notify(self) -> None:
        changed = self._changed
        if changed is not None and not changed.done():
            changed.set_result(None)
        if self.on_change is not None:
            self.on_change(self)

    def _log(self, kind: str, detail: Text) -> None:
        # ``Journal.log`` inline (a member logs some four events a rebalance: a frame each)
        journal = self.journal
        journal.logged += 1
        journal._logged.append((self.clock.time(), self.group_id, kind,
                                self.member_id or ("<{}>".format, self.group_instance_id
                                                   or self.client_id), detail))
