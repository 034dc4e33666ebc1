"""Kafka's classic group coordinator in one process: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

The rules are those of Apache Kafka's ``GroupMetadataManager``/``ClassicGroup`` (4.x, classic
protocol): member ids handed out with MEMBER_ID_REQUIRED, the first member becomes leader, the
protocol every member supports wins by the members' votes, generations count completed join
phases, rebalance and session timeouts remove members, an empty group waits
``group.initial.rebalance.delay.ms`` for more members, and a static member (``group.instance.id``)
that comes back replaces its old incarnation, fencing it, without a rebalance.

It is a synchronous state machine: a request mutates the group and either answers at once or
parks a future the coordinator completes later (end of the join phase, the leader's SyncGroup).
Timeouts are timers on the injected ``Clock``. Nothing here knows about Kafka Streams or about
what the metadata and assignment bytes mean.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from simulator.shim.clock import Clock
from simulator.shim.errors import ErrorCode
from simulator.shim.records import Journal, RebalanceRecord
from simulator.shim.requests import (
    UNKNOWN_MEMBER_ID,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    Protocols,
    SyncGroupRequest,
    SyncGroupResponse,
)

_NONE = ErrorCode.NONE.value


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Broker-side group settings, with Apache Kafka's defaults."""

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    new_member_join_timeout_ms: int = 300_000
    max_group_size: int = 2**31 - 1


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


_CAN_PREPARE = frozenset(
    {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
)


class _Member:
    __slots__ = (
        "assignment",
        "client_id",
        "instance_id",
        "is_new",
        "join_future",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "sync_future",
    )

    def __init__(
        self,
        member_id: str,
        instance_id: str | None,
        client_id: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        assignment: bytes = b"",
    ) -> None:
        self.member_id = member_id
        self.instance_id = instance_id
        self.client_id = client_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.join_future: asyncio.Future[JoinGroupResponse] | None = None
        self.sync_future: asyncio.Future[SyncGroupResponse] | None = None
        self.is_new = False

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol!r}")

    def vote(self, candidates: dict[str, None]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {list(candidates)}")

    def satisfied_heartbeat(self) -> bool:
        # A member parked in JoinGroup/SyncGroup is alive by definition, unless it is new.
        if self.is_new:
            return False
        return self.join_future is not None or self.sync_future is not None


class _Round:
    """The record of the generation being formed, filled in as the rebalance goes."""

    __slots__ = ("joined_at", "leader", "members", "metadata", "protocol", "reasons",
                 "started_at", "static")

    def __init__(self, started_at: float, reason: str) -> None:
        self.started_at = started_at
        self.joined_at = started_at
        self.reasons = [reason]
        self.members: tuple[str, ...] = ()
        self.leader: str | None = None
        self.protocol: str | None = None
        self.metadata: dict[str, bytes] = {}
        self.static: dict[str, str] = {}


class _Group:
    """One classic group's membership and state (Kafka's ``ClassicGroup``)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state = GroupState.EMPTY
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, _Member] = {}
        self.static: dict[str, str] = {}
        self.pending_join: dict[str, None] = {}
        self.awaiting_join = 0
        self.supported: dict[str, int] = {}
        self.pending_sync: dict[str, None] = {}
        self.new_member_added = False
        self.join_timer: asyncio.TimerHandle | None = None
        self.sync_timer: asyncio.TimerHandle | None = None
        self.heartbeat_timers: dict[str, asyncio.TimerHandle] = {}
        self.round: _Round | None = None

    # -- membership -----------------------------------------------------------------------
    def add(self, member: _Member, future: asyncio.Future[JoinGroupResponse] | None) -> None:
        if member.instance_id is not None:
            self.static[member.instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member.protocols, 1)
        member.join_future = future
        if future is not None:
            self.awaiting_join += 1
        self.pending_join.pop(member.member_id, None)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member.protocols, -1)
            if member.join_future is not None:
                self.awaiting_join -= 1
            if member.instance_id is not None:
                self.static.pop(member.instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join.pop(member_id, None)
        self.pending_sync.pop(member_id, None)

    def update(
        self,
        member: _Member,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        future: asyncio.Future[JoinGroupResponse] | None,
    ) -> None:
        self._count_protocols(member.protocols, -1)
        member.protocols = protocols
        self._count_protocols(protocols, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if future is not None and member.join_future is None:
            self.awaiting_join += 1
        elif future is None and member.join_future is not None:
            self.awaiting_join -= 1
        member.join_future = future

    def _count_protocols(self, protocols: Protocols, delta: int) -> None:
        supported = self.supported
        for name, _ in protocols:
            supported[name] = supported.get(name, 0) + delta

    def all_joined(self) -> bool:
        return len(self.members) == self.awaiting_join and not self.pending_join

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def validate(self, member_id: str, instance_id: str | None) -> int:
        """UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID when the caller is not who it claims."""
        if instance_id is not None:
            existing = self.static.get(instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return _NONE

    # -- protocols ------------------------------------------------------------------------
    def supports(self, protocol_type: str, names: list[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        size = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported.get(name, 0) == size for name in names
        )

    def select_protocol(self) -> str:
        size = len(self.members)
        candidates = {name: None for name, count in self.supported.items() if count == size}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best, best_count = "", -1
        for name, count in votes.items():  # first-voted protocol wins a tie
            if count > best_count:
                best, best_count = name, count
        return best

    # -- leaders and generations ----------------------------------------------------------
    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else promote a member that did; False if none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].join_future is not None:
            return True
        for member in self.members.values():
            if member.join_future is not None:
                self.leader_id = member.member_id
                return True
        return False

    def transition(self, state: GroupState) -> None:
        self.previous_state = self.state
        self.state = state

    def next_generation(self) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition(GroupState.EMPTY)
        self.pending_sync.clear()

    def member_list(self) -> tuple[tuple[str, str | None, bytes], ...]:
        protocol = self.protocol_name or ""
        return tuple(
            (m.member_id, m.instance_id, m.metadata(protocol)) for m in self.members.values()
        )

    # -- futures --------------------------------------------------------------------------
    def complete_join(self, member: _Member, response: JoinGroupResponse) -> bool:
        future = member.join_future
        if future is None:
            return False
        member.join_future = None
        self.awaiting_join -= 1
        if not future.done():
            future.set_result(response)
        return True

    def complete_sync(self, member: _Member, response: SyncGroupResponse) -> bool:
        future = member.sync_future
        if future is None:
            return False
        member.sync_future = None
        if not future.done():
            future.set_result(response)
        return True

    def replace_static(self, instance_id: str, old_id: str, new_id: str) -> _Member:
        """Give the instance a new member id, fencing whatever the old incarnation awaits."""
        old = self.members.pop(old_id)
        self.complete_join(old, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        self.complete_sync(old, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID))
        new = _Member(
            new_id, old.instance_id, old.client_id, old.rebalance_timeout_ms,
            old.session_timeout_ms, old.protocol_type, old.protocols, old.assignment,
        )
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static[instance_id] = new_id
        return new


class GroupCoordinator:
    """Every classic group of one simulated broker, on one clock, writing to one journal.

    The four request methods take the request values of ``simulator.shim.requests``. ``join`` and
    ``sync`` return a future (already done when the answer is immediate); ``heartbeat`` and
    ``leave`` answer at once.
    """

    def __init__(
        self,
        clock: Clock,
        config: CoordinatorConfig | None = None,
        journal: Journal | None = None,
    ) -> None:
        self.clock = clock
        self.config = config or CoordinatorConfig()
        self.journal = journal if journal is not None else Journal()
        self._groups: dict[str, _Group] = {}

    # -- inspection -----------------------------------------------------------------------
    def state(self, group_id: str) -> GroupState:
        group = self._groups.get(group_id)
        return group.state if group is not None else GroupState.EMPTY

    def generation(self, group_id: str) -> int:
        group = self._groups.get(group_id)
        return group.generation if group is not None else 0

    def leader(self, group_id: str) -> str | None:
        group = self._groups.get(group_id)
        return group.leader_id if group is not None else None

    def protocol(self, group_id: str) -> str | None:
        group = self._groups.get(group_id)
        return group.protocol_name if group is not None else None

    def members(self, group_id: str) -> tuple[str, ...]:
        group = self._groups.get(group_id)
        return tuple(group.members) if group is not None else ()

    def static_members(self, group_id: str) -> dict[str, str]:
        """``group.instance.id`` -> current member id."""
        group = self._groups.get(group_id)
        return dict(group.static) if group is not None else {}

    def assignment(self, group_id: str, member_id: str) -> bytes:
        """The assignment bytes the coordinator holds for a member (empty when none)."""
        group = self._groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        return member.assignment if member is not None else b""

    # -- JoinGroup ------------------------------------------------------------------------
    def join(self, request: JoinGroupRequest) -> asyncio.Future[JoinGroupResponse]:
        future: asyncio.Future[JoinGroupResponse] = self.clock.create_future()
        group_id, member_id = request.group_id, request.member_id
        self._log(group_id, "join-request", member_id or f"<new {request.client_id}>",
                  _describe_join(request))
        config = self.config
        if not group_id:
            self._answer_join(future, group_id, ErrorCode.INVALID_GROUP_ID, member_id)
        elif not (config.min_session_timeout_ms <= request.session_timeout_ms
                  <= config.max_session_timeout_ms):
            self._answer_join(future, group_id, ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        else:
            group = self._groups.get(group_id)
            if group is None:
                if member_id != UNKNOWN_MEMBER_ID:
                    self._answer_join(future, group_id, ErrorCode.UNKNOWN_MEMBER_ID, member_id)
                    return future
                group = self._groups[group_id] = _Group(group_id)
            if not self._accepts(group, member_id):
                group.remove(member_id)
                self._answer_join(future, group_id, ErrorCode.GROUP_MAX_SIZE_REACHED, "")
            elif member_id == UNKNOWN_MEMBER_ID:
                self._join_new(group, request, future)
            else:
                self._join_existing(group, request, future)
        return future

    def _accepts(self, group: _Group, member_id: str) -> bool:
        limit = self.config.max_group_size
        if group.state is GroupState.EMPTY:
            return True
        if group.state is GroupState.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.join_future is not None) or (
                group.awaiting_join < limit
            )
        return member_id in group.members or len(group.members) < limit

    def _join_new(
        self, group: _Group, request: JoinGroupRequest, future: asyncio.Future[JoinGroupResponse]
    ) -> None:
        names = [name for name, _ in request.protocols]
        if not group.supports(request.protocol_type, names):
            self._answer_join(future, group.group_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
            return
        prefix = request.group_instance_id or request.client_id
        new_id = f"{prefix}-{uuid.UUID(int=self.clock.random.getrandbits(128), version=4)}"
        instance = request.group_instance_id
        if instance is not None:
            existing = group.static.get(instance)
            if existing is not None:
                self._replace_static(group, request, existing, new_id, future)
            else:
                self._add_member(group, request, new_id, future)
        else:
            # JoinGroup v4+: hand out an id and make the member come back with it.
            group.pending_join[new_id] = None
            self._schedule_heartbeat(group, new_id, request.session_timeout_ms)
            self._answer_join(future, group.group_id, ErrorCode.MEMBER_ID_REQUIRED, new_id)

    def _join_existing(
        self, group: _Group, request: JoinGroupRequest, future: asyncio.Future[JoinGroupResponse]
    ) -> None:
        member_id = request.member_id
        names = [name for name, _ in request.protocols]
        if not group.supports(request.protocol_type, names):
            self._answer_join(
                future, group.group_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id
            )
            return
        if member_id in group.pending_join:
            self._add_member(group, request, member_id, future)
            return
        error = group.validate(member_id, request.group_instance_id)
        if error != _NONE:
            self._answer_join(future, group.group_id, error, member_id)
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member(group, member, request, future, f"member {member_id} rejoined")
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.protocols == request.protocols:
                # A lost JoinGroup response: answer again with the current generation.
                self._answer_current(group, member, future, with_members=True)
            else:
                self._update_member(group, member, request, future,
                                    f"member {member_id} changed its metadata")
        elif state is GroupState.STABLE:
            if member_id == group.leader_id:
                self._update_member(group, member, request, future, f"leader {member_id} rejoined")
            elif member.protocols != request.protocols:
                self._update_member(group, member, request, future,
                                    f"member {member_id} changed its metadata")
            else:
                self._answer_current(group, member, future, with_members=False)
        else:
            self._answer_join(future, group.group_id, ErrorCode.UNKNOWN_MEMBER_ID, member_id)

    def _answer_current(
        self,
        group: _Group,
        member: _Member,
        future: asyncio.Future[JoinGroupResponse],
        *,
        with_members: bool,
    ) -> None:
        is_leader = member.member_id == group.leader_id
        members = group.member_list() if with_members and is_leader else ()
        response = JoinGroupResponse(
            _NONE, member.member_id, group.generation, group.protocol_name,
            group.leader_id or "", members,
        )
        self._log(group.group_id, "join-current", member.member_id,
                  f"generation {group.generation} unchanged")
        future.set_result(response)

    def _add_member(
        self,
        group: _Group,
        request: JoinGroupRequest,
        member_id: str,
        future: asyncio.Future[JoinGroupResponse],
    ) -> None:
        member = _Member(
            member_id, request.group_instance_id, request.client_id,
            request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
            request.protocols,
        )
        member.is_new = True
        if (group.state is GroupState.PREPARING_REBALANCE
                and group.previous_state is GroupState.EMPTY):
            group.new_member_added = True
        group.add(member, future)
        self._log(group.group_id, "member-added", member_id,
                  f"instance {request.group_instance_id}" if request.group_instance_id else "")
        # A new member cannot heartbeat while parked; bound how long it may stay parked.
        self._schedule_heartbeat(group, member_id, self.config.new_member_join_timeout_ms)
        self._prepare_or_complete(group, f"member {member_id} joined")

    def _update_member(
        self,
        group: _Group,
        member: _Member,
        request: JoinGroupRequest,
        future: asyncio.Future[JoinGroupResponse],
        reason: str,
    ) -> None:
        group.update(member, request.protocols, request.rebalance_timeout_ms,
                     request.session_timeout_ms, future)
        self._prepare_or_complete(group, reason)

    def _replace_static(
        self,
        group: _Group,
        request: JoinGroupRequest,
        old_id: str,
        new_id: str,
        future: asyncio.Future[JoinGroupResponse],
    ) -> None:
        instance = request.group_instance_id
        assert instance is not None
        leader_before = group.leader_id
        self._cancel_heartbeat(group, old_id)
        member = group.replace_static(instance, old_id, new_id)
        self._log(group.group_id, "static-replaced", new_id,
                  f"instance {instance} was {old_id}; the old incarnation is fenced")
        self._schedule_heartbeat(group, new_id, member.session_timeout_ms)
        group.update(member, request.protocols, request.rebalance_timeout_ms,
                     request.session_timeout_ms, future)
        reason = f"static member {instance} rejoined as {new_id}"
        if group.state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # Same protocol: keep the generation and the assignment, no rebalance. With
                # JoinGroup v5 the answer names the leader as it was before the replacement.
                group.complete_join(member, JoinGroupResponse(
                    _NONE, new_id, group.generation, group.protocol_name, leader_before or "",
                ))
                self._log(group.group_id, "static-rejoin-without-rebalance", new_id,
                          f"generation {group.generation} kept")
            else:
                self._prepare_or_complete(group, reason + " with another protocol")
        elif group.state is GroupState.COMPLETING_REBALANCE:
            self._prepare(group, reason + " while the leader was assigning")
        else:
            self._maybe_complete_join_phase(group)

    # -- rebalancing ----------------------------------------------------------------------
    def _prepare_or_complete(self, group: _Group, reason: str) -> None:
        if group.state in _CAN_PREPARE:
            self._prepare(group, reason)
        else:
            if group.round is not None and len(group.round.reasons) < 8:
                group.round.reasons.append(reason)
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: _Group) -> None:
        if (group.state is GroupState.PREPARING_REBALANCE
                and group.previous_state is not GroupState.EMPTY
                and group.all_joined()):
            self._complete_join(group)

    def _prepare(self, group: _Group, reason: str) -> None:
        now = self.clock.time()
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._fail_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
            self._finish_round(group, "aborted", now)
        self._cancel_sync_timer(group)
        initial = group.state is GroupState.EMPTY
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_join_timer(
                group, delay, lambda: self._initial_join_timer(group, delay, remaining)
            )
        group.transition(GroupState.PREPARING_REBALANCE)
        group.round = _Round(now, reason)
        self._log(group.group_id, "prepare-rebalance", "",
                  f"generation {group.generation}: {reason}")
        if not initial:
            if group.all_joined():
                self._complete_join(group)
            else:
                self._schedule_join_timer(
                    group, group.rebalance_timeout_ms(), lambda: self._complete_join(group)
                )

    def _initial_join_timer(self, group: _Group, delay: int, remaining: int) -> None:
        group.join_timer = None
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            next_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            next_remaining = max(remaining - delay, 0)
            self._schedule_join_timer(
                group, next_delay,
                lambda: self._initial_join_timer(group, next_delay, next_remaining),
            )
        else:
            self._complete_join(group)

    def _complete_join(self, group: _Group) -> None:
        self._cancel_join_timer(group)
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        gone = [m.member_id for m in group.members.values()
                if m.join_future is None and m.instance_id is None]
        for member_id in gone:
            group.remove(member_id)
            self._cancel_heartbeat(group, member_id)
        if gone:
            self._log(group.group_id, "removed-not-rejoined", "", ", ".join(gone))
        if not group.elect_joined_leader() and group.members:
            self._log(group.group_id, "join-phase-extended", "",
                      "no member rejoined; waiting another rebalance timeout")
            self._schedule_join_timer(
                group, group.rebalance_timeout_ms(), lambda: self._complete_join(group)
            )
            return
        group.next_generation()
        now = self.clock.time()
        round_ = group.round if group.round is not None else _Round(now, "unrecorded")
        group.round = round_
        round_.joined_at = now
        if not group.members:  # the generation is empty
            self._log(group.group_id, "group-empty", "", f"generation {group.generation}")
            self._finish_round(group, "empty", now)
            return
        leader = group.leader_id or ""
        protocol = group.protocol_name
        generation = group.generation
        members = group.member_list()
        round_.members = tuple(m[0] for m in members)
        round_.leader = leader
        round_.protocol = protocol
        round_.metadata = {m[0]: m[2] for m in members}
        round_.static = {m[0]: m[1] for m in members if m[1] is not None}
        self._log(group.group_id, "join-complete", leader,
                  f"generation {generation}, protocol {protocol}, {len(members)} members")
        for member in list(group.members.values()):
            response = JoinGroupResponse(
                _NONE, member.member_id, generation, protocol, leader,
                members if member.member_id == leader else (),
            )
            group.complete_join(member, response)
            self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync[member.member_id] = None
        self._cancel_sync_timer(group)
        group.sync_timer = self.clock.call_later(
            group.rebalance_timeout_ms() / 1000.0,
            lambda: self._expire_pending_sync(group, generation),
        )

    def _expire_pending_sync(self, group: _Group, generation: int) -> None:
        group.sync_timer = None
        if generation != group.generation:
            return
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if not group.pending_sync:
            return
        late = list(group.pending_sync)
        for member_id in late:
            group.remove(member_id)
            self._cancel_heartbeat(group, member_id)
        self._log(group.group_id, "sync-expired", "", ", ".join(late))
        self._prepare(group, f"members {', '.join(late)} did not send SyncGroup in time")

    def _finish_round(self, group: _Group, outcome: str, now: float) -> None:
        round_ = group.round
        group.round = None
        if round_ is None:
            return
        assignments: dict[str, bytes] = {}
        sent: dict[str, int] = {}
        received: dict[str, int] = {}
        if outcome == "stable":
            members = group.members
            assignments = {mid: members[mid].assignment for mid in round_.members
                           if mid in members}
            total_metadata = sum(len(b) for b in round_.metadata.values())
            total_assignment = sum(len(b) for b in assignments.values())
            for mid in round_.members:
                own_meta = len(round_.metadata.get(mid, b""))
                own_assignment = len(assignments.get(mid, b""))
                if mid == round_.leader:
                    sent[mid] = own_meta + total_assignment
                    received[mid] = total_metadata + own_assignment
                else:
                    sent[mid] = own_meta
                    received[mid] = own_assignment
        self.journal.add(RebalanceRecord(
            group_id=group.group_id,
            generation=group.generation,
            outcome=outcome,
            protocol=round_.protocol,
            leader=round_.leader,
            members=round_.members,
            static_members=MappingProxyType(round_.static),
            reasons=tuple(round_.reasons),
            started_at=round_.started_at,
            joined_at=round_.joined_at,
            ended_at=now,
            metadata=MappingProxyType(round_.metadata),
            assignments=MappingProxyType(assignments),
            sent_bytes=MappingProxyType(sent),
            received_bytes=MappingProxyType(received),
        ))

    # -- SyncGroup ------------------------------------------------------------------------
    def sync(self, request: SyncGroupRequest) -> asyncio.Future[SyncGroupResponse]:
        future: asyncio.Future[SyncGroupResponse] = self.clock.create_future()
        group = self._groups.get(request.group_id)
        member_id = request.member_id
        if group is None or group.state is GroupState.EMPTY:
            return self._answer_sync(future, request, ErrorCode.UNKNOWN_MEMBER_ID)
        error = group.validate(member_id, request.group_instance_id)
        if error == _NONE and request.generation_id != group.generation:
            error = ErrorCode.ILLEGAL_GENERATION
        if error != _NONE:
            return self._answer_sync(future, request, error)
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            return self._answer_sync(future, request, ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        if state is GroupState.COMPLETING_REBALANCE:
            member.sync_future = future
            self._sync_received(group, member_id)
            if member_id == group.leader_id:
                self._log(group.group_id, "sync-leader", member_id,
                          f"generation {group.generation}, {len(request.assignments)} assignments")
                assignment = dict(request.assignments)
                for m in group.members.values():
                    m.assignment = assignment.get(m.member_id, b"")
                self._propagate(group, _NONE)
                group.transition(GroupState.STABLE)
                self._log(group.group_id, "group-stable", "", f"generation {group.generation}")
                self._finish_round(group, "stable", self.clock.time())
        else:  # STABLE: answer with the assignment already held
            self._sync_received(group, member_id)
            future.set_result(SyncGroupResponse(_NONE, member.assignment))
        return future

    def _answer_sync(
        self, future: asyncio.Future[SyncGroupResponse], request: SyncGroupRequest, error: int
    ) -> asyncio.Future[SyncGroupResponse]:
        self._log(request.group_id, "sync-error", request.member_id, ErrorCode(error).name)
        future.set_result(SyncGroupResponse(error))
        return future

    def _sync_received(self, group: _Group, member_id: str) -> None:
        group.pending_sync.pop(member_id, None)
        if not group.pending_sync:
            self._cancel_sync_timer(group)

    def _propagate(self, group: _Group, error: int) -> None:
        for member in group.members.values():
            response = SyncGroupResponse(error, member.assignment)
            if group.complete_sync(member, response):
                self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)

    def _fail_syncs(self, group: _Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate(group, error)

    # -- Heartbeat ------------------------------------------------------------------------
    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        group = self._groups.get(request.group_id)
        if group is None:
            return self._answer_heartbeat(request, ErrorCode.UNKNOWN_MEMBER_ID)
        error = group.validate(request.member_id, request.group_instance_id)
        if error == _NONE and request.generation_id != group.generation:
            error = ErrorCode.ILLEGAL_GENERATION
        if error != _NONE:
            return self._answer_heartbeat(request, error)
        state = group.state
        if state is GroupState.EMPTY:
            return self._answer_heartbeat(request, ErrorCode.UNKNOWN_MEMBER_ID)
        member = group.members[request.member_id]
        self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)
        if state is GroupState.PREPARING_REBALANCE:
            return self._answer_heartbeat(request, ErrorCode.REBALANCE_IN_PROGRESS)
        return HeartbeatResponse(_NONE)

    def _answer_heartbeat(self, request: HeartbeatRequest, error: int) -> HeartbeatResponse:
        self._log(request.group_id, "heartbeat-error", request.member_id, ErrorCode(error).name)
        return HeartbeatResponse(error)

    def _schedule_heartbeat(self, group: _Group, member_id: str, timeout_ms: int) -> None:
        timers = group.heartbeat_timers
        old = timers.get(member_id)
        if old is not None:
            old.cancel()
        timers[member_id] = self.clock.call_later(
            timeout_ms / 1000.0, lambda: self._expire_heartbeat(group, member_id)
        )

    def _cancel_heartbeat(self, group: _Group, member_id: str) -> None:
        timer = group.heartbeat_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()

    def _expire_heartbeat(self, group: _Group, member_id: str) -> None:
        group.heartbeat_timers.pop(member_id, None)
        if member_id in group.pending_join:
            group.remove(member_id)
            self._log(group.group_id, "pending-member-expired", member_id, "")
            if group.state is GroupState.PREPARING_REBALANCE and group.all_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.satisfied_heartbeat():
            return
        self._log(group.group_id, "session-expired", member_id, "")
        self._remove_member(group, member, f"member {member_id} session timed out")

    def _remove_member(self, group: _Group, member: _Member, reason: str) -> None:
        group.complete_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self._cancel_heartbeat(group, member.member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_or_complete(group, reason)
        elif group.state is GroupState.PREPARING_REBALANCE and group.all_joined():
            self._complete_join(group)

    # -- LeaveGroup -----------------------------------------------------------------------
    def leave(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        group = self._groups.get(request.group_id)
        if group is None:
            self._log(request.group_id, "leave-error", "", "unknown group")
            return LeaveGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID)
        answers: list[tuple[str, str | None, int]] = []
        left: list[str] = []
        for member_id, instance_id in request.members:
            if member_id == UNKNOWN_MEMBER_ID:
                current = group.static.get(instance_id) if instance_id is not None else None
                if current is None:
                    answers.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                    continue
                self._leave_one(group, current)
                left.append(current)
                answers.append((member_id, instance_id, _NONE))
            elif member_id in group.pending_join:
                group.remove(member_id)
                self._cancel_heartbeat(group, member_id)
                answers.append((member_id, instance_id, _NONE))
            else:
                error = group.validate(member_id, instance_id)
                if error == _NONE:
                    self._leave_one(group, member_id)
                    left.append(member_id)
                answers.append((member_id, instance_id, error))
        for member_id, _, error in answers:
            detail = "left" if error == _NONE else ErrorCode(error).name
            self._log(group.group_id, "leave", member_id, detail)
        if left:
            reason = f"{', '.join(left)} left the group"
            if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self._prepare_or_complete(group, reason)
            elif group.state is GroupState.PREPARING_REBALANCE:
                self._maybe_complete_join_phase(group)
        top = answers[0][2] if len(answers) == 1 else _NONE
        return LeaveGroupResponse(top, tuple(answers))

    def _leave_one(self, group: _Group, member_id: str) -> None:
        member = group.members[member_id]
        self._cancel_heartbeat(group, member_id)
        group.complete_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)

    # -- timers and answers ---------------------------------------------------------------
    def _schedule_join_timer(self, group: _Group, delay_ms: int, action: Callable[[], Any]) -> None:
        self._cancel_join_timer(group)
        group.join_timer = self.clock.call_later(delay_ms / 1000.0, action)

    def _cancel_join_timer(self, group: _Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None

    def _cancel_sync_timer(self, group: _Group) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _answer_join(
        self,
        future: asyncio.Future[JoinGroupResponse],
        group_id: str,
        error: int,
        member_id: str,
    ) -> None:
        self._log(group_id, "join-error", member_id, ErrorCode(error).name)
        future.set_result(JoinGroupResponse(error, member_id))

    def _log(self, group_id: str, kind: str, member: str, detail: str) -> None:
        self.journal.log(self.clock.time(), group_id, kind, member, detail)


def _describe_join(request: JoinGroupRequest) -> str:
    names = ",".join(name for name, _ in request.protocols)
    size = sum(len(metadata) for _, metadata in request.protocols)
    instance = f" instance={request.group_instance_id}" if request.group_instance_id else ""
    return f"protocols=[{names}] {size} B{instance}"
