"""The rebalance state machine of the classic coordinator: join phase, sync phase, timeouts.

``RebalancePhases`` owns every timer (join, initial delay, pending sync, member sessions) and every
phase transition: it starts a rebalance, completes the join phase (removing dynamic members that did
not rejoin, electing a leader, answering every parked JoinGroup), expires late SyncGroups and silent
sessions, and writes one ``RebalanceRecord`` per generation. ``GroupCoordinator`` (the request
handling) builds on it; neither part is meant to be used alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from simulator.shim.clock import Clock
from simulator.shim.deadline import Deadline
from simulator.shim.errors import ErrorCode
from simulator.shim.group import (
    CAN_PREPARE,
    COMPLETING_REBALANCE,
    EMPTY,
    NONE,
    PREPARING_REBALANCE,
    STABLE,
    CoordinatorConfig,
    Group,
    Member,
    Round,
)
from simulator.shim.leases import Lease
from simulator.shim.records import Journal, RebalanceRecord, Text
from simulator.shim.requests import JoinGroupResponse, SyncGroupResponse

# Kafka's timers tick in milliseconds: a rebalance timeout of 0 re-polls a stalled join phase at the
# next tick, not at the same instant.
JOIN_POLL_FLOOR_MS = 1


class RebalancePhases:
    """Timers and phase transitions shared by every group of one coordinator."""

    def __init__(
        self,
        clock: Clock,
        config: CoordinatorConfig | None = None,
        journal: Journal | None = None,
    ) -> None:
        self.clock = clock
        self.config = config or CoordinatorConfig()
        self.journal = journal if journal is not None else Journal()
        self._groups: dict[str, Group] = {}
        #: True while one of the coordinator's own timers runs (``_deadline``)
        self._at_deadline = False
        #: set by ``GroupCoordinator.close``: the run is ending
        self.closing = False
        #: instant -> the members whose lease ended, to beat for real then, in that order
        self._beat_batches: dict[float, list[Callable[[], object]]] = {}

    # -- rebalancing ----------------------------------------------------------------------
    def _prepare_or_complete(self, group: Group, reason: str) -> None:
        if group.state in CAN_PREPARE:
            self._prepare(group, reason)
        else:
            if group.round is not None and len(group.round.reasons) < 8:
                group.round.reasons.append(reason)
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: Group) -> None:
        if (group.state is PREPARING_REBALANCE
                and group.previous_state is not EMPTY
                and group.all_joined()):
            self._complete_join(group)

    def _prepare(self, group: Group, reason: str) -> None:
        now = self.clock.time()
        if group.state is COMPLETING_REBALANCE:
            self._fail_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
            self._finish_round(group, "aborted", now)
        self._cancel_sync_timer(group)
        initial = group.state is EMPTY
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_join_timer(
                group, delay, lambda: self._initial_join_timer(group, delay, remaining)
            )
        group.transition(PREPARING_REBALANCE)
        group.round = Round(now, reason)
        self._log(group.group_id, "prepare-rebalance", "",
                  f"generation {group.generation}: {reason}")
        if not initial:
            if group.all_joined():
                self._complete_join(group)
            else:
                self._schedule_join_timer(
                    group, group.rebalance_timeout_ms(), lambda: self._complete_join(group)
                )

    def _initial_join_timer(self, group: Group, delay: int, remaining: int) -> None:
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

    def _complete_join(self, group: Group) -> None:
        self._cancel_join_timer(group)
        if group.state is not PREPARING_REBALANCE:
            return
        gone = [m.member_id for m in group.members.values()
                if m.join_future is None and m.instance_id is None]
        for member_id in gone:
            group.remove(member_id)
            self._cancel_heartbeat(group, member_id)
        if gone:
            self._log(group.group_id, "removed-not-rejoined", "", ", ".join(gone))
        if not group.elect_joined_leader() and group.members:
            # Kafka polls again after the rebalance timeout "until session timeout removes all the
            # non-responsive members" (only static ones are left here). A 0 ms timeout must not
            # re-poll at the same instant: time would never reach those session timeouts.
            delay = max(group.rebalance_timeout_ms(), JOIN_POLL_FLOOR_MS)
            group.join_polls += 1
            if group.join_polls == 1:  # once per join phase: a 1 ms poll would flood the journal
                self._log(group.group_id, "join-phase-extended", "",
                          f"no member rejoined; polling every {delay} ms")
            self._schedule_join_timer(group, delay, lambda: self._complete_join(group))
            return
        group.next_generation()
        now = self.clock.time()
        round_ = group.round if group.round is not None else Round(now, "unrecorded")
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
                NONE, member.member_id, generation, protocol, leader,
                members if member.member_id == leader else (),
            )
            group.complete_join(member, response)
            self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync[member.member_id] = None
        self._cancel_sync_timer(group)
        group.sync_timer = self.clock.call_later(
            group.rebalance_timeout_ms() / 1000.0,
            self._deadline(lambda: self._expire_pending_sync(group, generation)),
        )

    def _expire_pending_sync(self, group: Group, generation: int) -> None:
        group.sync_timer = None
        if generation != group.generation:
            return
        if group.state not in (COMPLETING_REBALANCE, STABLE):
            return
        if not group.pending_sync:
            return
        late = list(group.pending_sync)
        for member_id in late:
            group.remove(member_id)
            self._cancel_heartbeat(group, member_id)
        self._log(group.group_id, "sync-expired", "", ", ".join(late))
        self._prepare(group, f"members {', '.join(late)} did not send SyncGroup in time")

    def _finish_round(self, group: Group, outcome: str, now: float) -> None:
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


    def _sync_received(self, group: Group, member_id: str) -> None:
        group.pending_sync.pop(member_id, None)
        if not group.pending_sync:
            self._cancel_sync_timer(group)

    def _propagate(self, group: Group, error: int) -> None:
        for member in group.members.values():
            response = SyncGroupResponse(error, member.assignment)
            if group.complete_sync(member, response):
                self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)

    def _fail_syncs(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate(group, error)


    def _schedule_heartbeat(self, group: Group, member_id: str, timeout_ms: int) -> None:
        lease = group.leases.get(member_id)
        if lease is not None:  # standing heartbeats keep the session; remember the deadline
            lease.latest_deadline = self.clock.time() + timeout_ms / 1000.0
            return
        old = group.heartbeat_timers.get(member_id)
        if type(old) is Deadline and not old._cancelled and old._timer is None:
            # ``old.reschedule(...)`` as ``_set_session_timer`` would call it, inline: a session
            # timer is moved at every request and beat (two frames each, 1,200 a cold start)
            old._loop._reschedule(old, max(timeout_ms / 1000.0, 0.0))
            return
        self._set_session_timer(group, member_id, timeout_ms / 1000.0)

    def _lease_ended(self, group: Group, lease: Lease) -> None:
        """A member's standing heartbeats end (``simulator.shim.leases``): its session timer
        goes where its last beat would have left it, and it sends its next beat for real."""
        heard_now = self._at_deadline  # the beat due now, if any, is still to be sent
        self._resume_session(group, lease, including_now=not heard_now)
        now = self.clock.time()
        at = lease.next_beat(now, heard_now=heard_now)
        batch = self._beat_batches.get(at)
        if batch is None:  # members woken together share one timer, and beat in wake order
            batch = self._beat_batches[at] = []
            self.clock.call_later(at - now, functools.partial(self._send_beats, at))
        batch.append(lease.wake)

    def _deadline(self, action: Callable[[], Any]) -> Callable[[], None]:
        """A coordinator timer's callback. Same-instant rule (``simulator.shim.leases``): what
        the coordinator's own deadlines change is heard by the beats due at that instant."""

        def run() -> None:
            self._at_deadline = True
            try:
                action()
            finally:
                self._at_deadline = False

        return run

    def _send_beats(self, at: float) -> None:
        for wake in self._beat_batches.pop(at):
            wake()

    def _resume_session(self, group: Group, lease: Lease, *, including_now: bool = True) -> None:
        """The session timer the lease's beats would have left: last beat + session."""
        now = self.clock.time()
        deadline = lease.session_deadline(now, including_now=including_now)
        if deadline is not None and lease.member_id in group.members:
            self._set_session_timer(group, lease.member_id, deadline - now)

    def _set_session_timer(self, group: Group, member_id: str, delay_s: float) -> None:
        timers = group.heartbeat_timers
        old = timers.get(member_id)
        if old is not None:
            # the same callback (this group, this member): moved in place on the virtual clock
            if type(old) is Deadline and old.reschedule(delay_s):
                return
            old.cancel()
        # one partial per timer rather than two closures: a cold start of 400 members sets
        # 2,000 session timers
        timers[member_id] = self.clock.call_later(
            delay_s, functools.partial(self._session_expired, group, member_id)
        )

    def _session_expired(self, group: Group, member_id: str) -> None:
        """A session timer's callback: a coordinator deadline (``_deadline``)."""
        self._at_deadline = True
        try:
            self._expire_heartbeat(group, member_id)
        finally:
            self._at_deadline = False

    def _cancel_heartbeat(self, group: Group, member_id: str) -> None:
        timer = group.heartbeat_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()

    def _expire_heartbeat(self, group: Group, member_id: str) -> None:
        group.heartbeat_timers.pop(member_id, None)
        if member_id in group.pending_join:
            group.remove(member_id)
            self._log(group.group_id, "pending-member-expired", member_id, "")
            if group.state is PREPARING_REBALANCE and group.all_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.satisfied_heartbeat() or member_id in group.leases:
            return
        self._log(group.group_id, "session-expired", member_id, "")
        self._remove_member(group, member, f"member {member_id} session timed out")

    def _remove_member(self, group: Group, member: Member, reason: str) -> None:
        group.complete_join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self._cancel_heartbeat(group, member.member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_or_complete(group, reason)
        elif group.state is PREPARING_REBALANCE and group.all_joined():
            self._complete_join(group)


    # -- timers and answers ---------------------------------------------------------------
    def _schedule_join_timer(self, group: Group, delay_ms: int, action: Callable[[], Any]) -> None:
        self._cancel_join_timer(group)
        group.join_timer = self.clock.call_later(delay_ms / 1000.0, self._deadline(action))

    def _cancel_join_timer(self, group: Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None

    def _cancel_sync_timer(self, group: Group) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None


    def _log(self, group_id: str, kind: str, member: Text, detail: Text) -> None:
        # ``Journal.log`` inline (the coordinator logs some four events a member and rebalance)
        journal = self.journal
        journal.logged += 1
        journal._logged.append((self.clock.time(), group_id, kind, member, detail))

