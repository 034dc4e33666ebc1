"""Kafka's classic group coordinator in one process: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

The rules are those of Apache Kafka's ``GroupMetadataManager``/``ClassicGroup`` (4.x, classic
protocol): member ids handed out with MEMBER_ID_REQUIRED, the first member becomes leader, the
protocol every member supports wins by the members' votes, generations count completed join
phases, rebalance and session timeouts remove members, an empty group waits
``group.initial.rebalance.delay.ms`` for more members, and a static member (``group.instance.id``)
that comes back replaces its old incarnation, fencing it, without a rebalance.

It is a synchronous state machine: a request mutates the group and either answers at once or
parks a future the coordinator completes later (end of the join phase, the leader's SyncGroup).
This module handles the four requests; the group's state lives in ``simulator.shim.group`` and the
timers and phase transitions in ``simulator.shim.phases``. Timeouts are timers on the injected
``Clock``. Nothing here knows about Kafka Streams or about what the metadata and assignment bytes
mean.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from operator import itemgetter

from simulator.shim.errors import ErrorCode
from simulator.shim.group import (
    COMPLETING_REBALANCE,
    EMPTY,
    NONE,
    PREPARING_REBALANCE,
    STABLE,
    CoordinatorConfig,
    Group,
    GroupState,
    Member,
)
from simulator.shim.leases import Lease
from simulator.shim.phases import RebalancePhases
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

__all__ = ["CoordinatorConfig", "GroupCoordinator", "GroupState"]


class GroupCoordinator(RebalancePhases):
    """Every classic group of one simulated broker, on one clock, writing to one journal.

    The four request methods take the request values of ``simulator.shim.requests``. ``join`` and
    ``sync`` return a future (already done when the answer is immediate); ``heartbeat`` and
    ``leave`` answer at once. Construct it as ``GroupCoordinator(clock, config, journal)``.
    """

    # -- inspection -----------------------------------------------------------------------
    def state(self, group_id: str) -> GroupState:
        group = self._groups.get(group_id)
        return group.state if group is not None else EMPTY

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

    def has_members(self, group_id: str, member_ids: AbstractSet[str]) -> bool:
        """Whether the group's members are exactly ``member_ids`` (``set(members(group_id)) ==
        member_ids``, compared in place)."""
        group = self._groups.get(group_id)
        return (group.members.keys() == member_ids if group is not None
                else not member_ids)

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
        self._log(group_id, "join-request", member_id or ("<new {}>".format, request.client_id),
                  (_describe_join, request.protocols, request.group_instance_id))
        # (texts built when the journal is read, from values it may keep: no request object)
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
                group = self._groups[group_id] = Group(group_id)
                group.lease_ended = functools.partial(self._lease_ended, group)
            if not self._accepts(group, member_id):
                group.remove(member_id)
                self._answer_join(future, group_id, ErrorCode.GROUP_MAX_SIZE_REACHED, "")
            elif member_id == UNKNOWN_MEMBER_ID:
                self._join_new(group, request, future)
            else:
                self._join_existing(group, request, future)
        return future

    def _accepts(self, group: Group, member_id: str) -> bool:
        limit = self.config.max_group_size
        if group.state is EMPTY:
            return True
        if group.state is PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.join_future is not None) or (
                group.awaiting_join < limit
            )
        return member_id in group.members or len(group.members) < limit

    def _join_new(
        self, group: Group, request: JoinGroupRequest, future: asyncio.Future[JoinGroupResponse]
    ) -> None:
        names = list(map(_NAME, request.protocols))  # (a comprehension is a frame in 3.11)
        if not group.supports(request.protocol_type, names):
            self._answer_join(future, group.group_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
            return
        prefix = request.group_instance_id or request.client_id
        new_id = f"{prefix}-{random_uuid4(self.clock.random.getrandbits(128))}"
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
            self._answer_join(future, group.group_id, _MEMBER_ID_REQUIRED, new_id)

    def _join_existing(
        self, group: Group, request: JoinGroupRequest, future: asyncio.Future[JoinGroupResponse]
    ) -> None:
        member_id = request.member_id
        names = list(map(_NAME, request.protocols))  # (a comprehension is a frame in 3.11)
        if not group.supports(request.protocol_type, names):
            self._answer_join(
                future, group.group_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id
            )
            return
        if member_id in group.pending_join:
            if request.group_instance_id is not None:
                # A pending id is a dynamic member's; Kafka throws IllegalStateException here
                # rather than let the join take over the instance's mapping.
                self._answer_join(
                    future, group.group_id, ErrorCode.UNKNOWN_SERVER_ERROR, member_id
                )
                return
            self._add_member(group, request, member_id, future)
            return
        error = group.validate(member_id, request.group_instance_id)
        if error != NONE:
            self._answer_join(future, group.group_id, error, member_id)
            return
        member = group.members[member_id]
        state = group.state
        if state is PREPARING_REBALANCE:
            self._update_member(group, member, request, future, f"member {member_id} rejoined")
        elif state is COMPLETING_REBALANCE:
            if member.protocols == request.protocols:
                # A lost JoinGroup response: answer again with the current generation.
                self._answer_current(group, member, future, with_members=True)
            else:
                self._update_member(group, member, request, future,
                                    f"member {member_id} changed its metadata")
        elif state is STABLE:
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
        group: Group,
        member: Member,
        future: asyncio.Future[JoinGroupResponse],
        *,
        with_members: bool,
    ) -> None:
        is_leader = member.member_id == group.leader_id
        members = group.member_list() if with_members and is_leader else ()
        response = JoinGroupResponse(
            NONE, member.member_id, group.generation, group.protocol_name,
            group.leader_id or "", members,
        )
        self._log(group.group_id, "join-current", member.member_id,
                  f"generation {group.generation} unchanged")
        future.set_result(response)

    def _add_member(
        self,
        group: Group,
        request: JoinGroupRequest,
        member_id: str,
        future: asyncio.Future[JoinGroupResponse],
    ) -> None:
        member = Member(
            member_id, request.group_instance_id, request.client_id,
            request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
            request.protocols,
        )
        member.is_new = True
        if (group.state is PREPARING_REBALANCE
                and group.previous_state is EMPTY):
            group.new_member_added = True
        group.add(member, future)
        self._log(group.group_id, "member-added", member_id,
                  f"instance {request.group_instance_id}" if request.group_instance_id else "")
        # A new member cannot heartbeat while parked; bound how long it may stay parked.
        self._schedule_heartbeat(group, member_id, self.config.new_member_join_timeout_ms)
        self._prepare_or_complete(group, f"member {member_id} joined")

    def _update_member(
        self,
        group: Group,
        member: Member,
        request: JoinGroupRequest,
        future: asyncio.Future[JoinGroupResponse],
        reason: str,
    ) -> None:
        group.update(member, request.protocols, request.rebalance_timeout_ms,
                     request.session_timeout_ms, future)
        self._prepare_or_complete(group, reason)

    def _replace_static(
        self,
        group: Group,
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
        if group.state is STABLE:
            if group.protocol_name == group.select_protocol():
                # Same protocol: keep the generation and the assignment, no rebalance. With
                # JoinGroup v5 the answer names the leader as it was before the replacement.
                group.complete_join(member, JoinGroupResponse(
                    NONE, new_id, group.generation, group.protocol_name, leader_before or "",
                ))
                self._log(group.group_id, "static-rejoin-without-rebalance", new_id,
                          f"generation {group.generation} kept")
            else:
                self._prepare_or_complete(group, reason + " with another protocol")
        elif group.state is COMPLETING_REBALANCE:
            self._prepare(group, reason + " while the leader was assigning")
        else:
            self._maybe_complete_join_phase(group)


    # -- SyncGroup ------------------------------------------------------------------------
    def sync(self, request: SyncGroupRequest) -> asyncio.Future[SyncGroupResponse]:
        future: asyncio.Future[SyncGroupResponse] = self.clock.create_future()
        group = self._groups.get(request.group_id)
        member_id = request.member_id
        if group is None or group.state is EMPTY:
            return self._answer_sync(future, request, ErrorCode.UNKNOWN_MEMBER_ID)
        error = group.validate(member_id, request.group_instance_id)
        if error == NONE and request.generation_id != group.generation:
            error = ErrorCode.ILLEGAL_GENERATION
        if error != NONE:
            return self._answer_sync(future, request, error)
        state = group.state
        if state is PREPARING_REBALANCE:
            return self._answer_sync(future, request, ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        if state is COMPLETING_REBALANCE:
            member.sync_future = future
            self._sync_received(group, member_id)
            if member_id == group.leader_id:
                self._log(group.group_id, "sync-leader", member_id,
                          f"generation {group.generation}, {len(request.assignments)} assignments")
                assignment = dict(request.assignments)
                for m in group.members.values():
                    m.assignment = assignment.get(m.member_id, b"")
                self._propagate(group, NONE)
                group.transition(STABLE)
                self._log(group.group_id, "group-stable", "", f"generation {group.generation}")
                self._finish_round(group, "stable", self.clock.time())
        else:  # STABLE: answer with the assignment already held
            self._sync_received(group, member_id)
            future.set_result(SyncGroupResponse(NONE, member.assignment))
        return future

    def _answer_sync(
        self, future: asyncio.Future[SyncGroupResponse], request: SyncGroupRequest, error: int
    ) -> asyncio.Future[SyncGroupResponse]:
        self._log(request.group_id, "sync-error", request.member_id, _code_name(error))
        future.set_result(SyncGroupResponse(error))
        return future


    # -- Heartbeat ------------------------------------------------------------------------
    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        group = self._groups.get(request.group_id)
        if group is None:
            return self._answer_heartbeat(request, ErrorCode.UNKNOWN_MEMBER_ID)
        error = group.validate(request.member_id, request.group_instance_id)
        if error == NONE and request.generation_id != group.generation:
            error = ErrorCode.ILLEGAL_GENERATION
        if error != NONE:
            return self._answer_heartbeat(request, error)
        state = group.state
        if state is EMPTY:
            return self._answer_heartbeat(request, ErrorCode.UNKNOWN_MEMBER_ID)
        member = group.members[request.member_id]
        self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)
        if state is PREPARING_REBALANCE:
            return self._answer_heartbeat(request, ErrorCode.REBALANCE_IN_PROGRESS)
        return HeartbeatResponse(NONE)

    def stand(self, request: HeartbeatRequest, interval_s: float,
              wake: Callable[[], object]) -> bool:
        """Leave a standing order of heartbeats (``simulator.shim.leases``), the first one
        ``interval_s`` from now and every ``interval_s`` after, each as ``request``; False (and
        nothing changes) unless every one of them would now be answered NONE in a Stable group.
        When they stop being so, ``wake()`` is called at the next beat's instant: the member
        sends that beat for real."""
        group = self._groups.get(request.group_id)
        if (group is None or group.state is not STABLE
                or request.generation_id != group.generation
                or group.validate(request.member_id, request.group_instance_id) != NONE):
            return False
        member = group.members[request.member_id]
        session_s = member.session_timeout_ms / 1000.0
        if interval_s <= 0 or interval_s >= session_s:
            return False  # beats that would not keep the session alive stay real
        timer = group.heartbeat_timers.pop(request.member_id, None)
        if timer is not None:
            timer.cancel()
        group.leases[request.member_id] = Lease(
            request.member_id, self.clock.time(), interval_s, session_s, wake,
            fallback_deadline=timer.when() if timer is not None else None,
        )
        return True

    def sit(self, group_id: str, member_id: str) -> None:
        """The member stops beating: its session runs from the last beat it sent (unless the
        run is ending: :meth:`close`)."""
        group = self._groups.get(group_id)
        lease = group.leases.pop(member_id, None) if group is not None else None
        if group is not None and lease is not None and not self.closing:
            self._resume_session(group, lease)

    def close(self) -> None:
        """The run ends now (no virtual time passes any more): members that stop beating from
        now on leave no session timer behind, since none could fire. A replay's end stops
        every member, and those timers were a sixth of a 400-member cold start's teardown."""
        self.closing = True

    def _answer_heartbeat(self, request: HeartbeatRequest, error: int) -> HeartbeatResponse:
        self._log(request.group_id, "heartbeat-error", request.member_id, ErrorCode(error).name)
        return HeartbeatResponse(error)


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
                answers.append((member_id, instance_id, NONE))
            elif member_id in group.pending_join:
                group.remove(member_id)
                self._cancel_heartbeat(group, member_id)
                answers.append((member_id, instance_id, NONE))
            else:
                error = group.validate(member_id, instance_id)
                if error == NONE:
                    self._leave_one(group, member_id)
                    left.append(member_id)
                answers.append((member_id, instance_id, error))
        for member_id, _, error in answers:
            detail = "left" if error == NONE else ErrorCode(error).name
            self._log(group.group_id, "leave", member_id, detail)
        if left:
            reason = f"{', '.join(left)} left the group"
            if group.state in (STABLE, COMPLETING_REBALANCE):
                self._prepare_or_complete(group, reason)
            elif group.state is PREPARING_REBALANCE:
                self._maybe_complete_join_phase(group)
        top = answers[0][2] if len(answers) == 1 else NONE
        return LeaveGroupResponse(top, tuple(answers))

    def _leave_one(self, group: Group, member_id: str) -> None:
        member = group.members[member_id]
        self._cancel_heartbeat(group, member_id)
        group.complete_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)


    def _answer_join(
        self,
        future: asyncio.Future[JoinGroupResponse],
        group_id: str,
        error: int,
        member_id: str,
    ) -> None:
        name = _CODE_NAMES.get(error)  # ``_code_name``, inline: every new member's first answer
        self._log(group_id, "join-error", member_id,
                  name if name is not None else ErrorCode(error).name)
        future.set_result(JoinGroupResponse(error, member_id))


#: the bits ``random_uuid4`` keeps, and the variant and version bits it sets
_UUID_KEPT, _UUID_SET = ~(0xC000 << 48) & ~(0xF000 << 64), (0x8000 << 48) | (4 << 76)


def random_uuid4(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))``, the same text without building the object
    (it was a tenth of a cold start's coordinator time): the variant and version bits set as
    ``uuid.UUID`` sets them, then the 8-4-4-4-12 hex groups."""
    text = "%032x" % ((bits & _UUID_KEPT) | _UUID_SET)  # (one mask: 400 ids a cold start)
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


#: a protocol's name in a JoinGroup's (name, metadata) pairs
_NAME = itemgetter(0)
_MEMBER_ID_REQUIRED = ErrorCode.MEMBER_ID_REQUIRED  # a global: Enum attributes look up slowly

#: ``ErrorCode(code).name`` by number: every new member's first JoinGroup is answered with an
#: error (MEMBER_ID_REQUIRED), and the enum's lookup cost more than the rest of that answer
_CODE_NAMES = {code.value: code.name for code in ErrorCode}


def _code_name(code: int) -> str:
    """``ErrorCode(code).name``: the enum finds a value in the same kind of table first (and
    raises the same ValueError for a number that is no code)."""
    name = _CODE_NAMES.get(code)
    return name if name is not None else ErrorCode(code).name


def _describe_join(protocols: Protocols, instance_id: str | None) -> str:
    if len(protocols) == 1 and type(protocols[0][0]) is str:  # what the join below computes
        names, size = protocols[0][0], len(protocols[0][1])
    else:
        names = ",".join(name for name, _ in protocols)
        size = sum(len(metadata) for _, metadata in protocols)
    instance = f" instance={instance_id}" if instance_id else ""
    return f"protocols=[{names}] {size} B{instance}"
