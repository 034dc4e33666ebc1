"""The state of one classic group: its members, its generation, the round being formed.

Kafka keeps this in ``ClassicGroup`` and ``ClassicGroupMember``; here ``Group`` and ``Member`` hold
the same facts (who is in, who has rejoined, who owes a SyncGroup, which protocols every member
supports) and the small rules that only read or write those facts (protocol vote, leader election,
static replacement). What happens *when* (timers, phase transitions, answers) lives in
``simulator.shim.phases`` and ``simulator.shim.coordinator``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final

from protocol.ids import INT32_MAX
from simulator.shim.clock import Timer
from simulator.shim.errors import ErrorCode
from simulator.shim.leases import Lease
from simulator.shim.requests import JoinGroupResponse, Protocols, SyncGroupResponse

NONE = ErrorCode.NONE.value


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Broker-side group settings, with Apache Kafka's defaults."""

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    new_member_join_timeout_ms: int = 300_000
    max_group_size: int = INT32_MAX


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


# The states as module constants: a class attribute of an Enum goes through ``EnumType``'s
# ``__getattr__`` hook (its look-up is never specialized), some 5,000 times in a cold start of
# 400 members; a global load is not. The same members, compared by identity as before.
EMPTY: Final = GroupState.EMPTY
PREPARING_REBALANCE: Final = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE: Final = GroupState.COMPLETING_REBALANCE
STABLE: Final = GroupState.STABLE

# States from which a rebalance may start (Kafka's valid previous states of PreparingRebalance).
CAN_PREPARE = frozenset(
    {STABLE, COMPLETING_REBALANCE, EMPTY}
)


class Member:
    """One member as the coordinator knows it, with the requests it has parked."""

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


class Round:
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


class Group:
    """One classic group's membership and state (Kafka's ``ClassicGroup``)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = EMPTY
        self.previous_state = EMPTY
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static: dict[str, str] = {}
        self.pending_join: dict[str, None] = {}
        self.awaiting_join = 0
        self.supported: dict[str, int] = {}
        self.pending_sync: dict[str, None] = {}
        self.new_member_added = False
        self.join_timer: Timer | None = None
        self.sync_timer: Timer | None = None
        self.heartbeat_timers: dict[str, Timer] = {}
        self.round: Round | None = None
        self.join_polls = 0  # join-phase completions postponed because nobody had rejoined
        #: standing heartbeats of stable members (``simulator.shim.leases``); only while Stable
        self.leases: dict[str, Lease] = {}
        #: what the coordinator does when a lease ends (session timer, wake the member)
        self.lease_ended: Callable[[Lease], object] | None = None

    # -- membership -----------------------------------------------------------------------
    def add(self, member: Member, future: asyncio.Future[JoinGroupResponse] | None) -> None:
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
        self.end_lease(member_id)  # its next beat hears UNKNOWN_MEMBER_ID

    # -- standing heartbeats --------------------------------------------------------------
    def end_lease(self, member_id: str) -> None:
        """End a member's standing heartbeats: its next beat's answer is no longer NONE."""
        lease = self.leases.pop(member_id, None)
        if lease is not None and self.lease_ended is not None:
            self.lease_ended(lease)

    def end_leases(self) -> None:
        """End every lease, in member order (the order their real beats are then sent)."""
        for member_id in [m for m in self.members if m in self.leases]:
            self.end_lease(member_id)
        for member_id in list(self.leases):
            self.end_lease(member_id)

    def update(
        self,
        member: Member,
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
        # A name listed twice counts once (Kafka checks support against the set of names; the
        # first entry's metadata is the one used). Names nobody supports any more are forgotten,
        # so random protocol names cannot grow the table.
        supported = self.supported
        names = ((protocols[0][0],) if len(protocols) == 1  # every member of a replay: one
                 else dict.fromkeys(name for name, _ in protocols))
        for name in names:
            count = supported.get(name, 0) + delta
            if count:
                supported[name] = count
            else:
                del supported[name]

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
        return NONE

    # -- protocols ------------------------------------------------------------------------
    def supports(self, protocol_type: str, names: list[str]) -> bool:
        if self.state is EMPTY:
            return bool(protocol_type) and bool(names)
        size = len(self.members)
        if self.protocol_type != protocol_type:
            return False
        if len(names) == 1:  # one protocol, as every member of a replay: no generator
            return self.supported.get(names[0], 0) == size
        return any(self.supported.get(name, 0) == size for name in names)

    def select_protocol(self) -> str:
        size = len(self.members)
        candidates = {name: None for name, count in self.supported.items() if count == size}
        if len(candidates) == 1:  # every member supports it, so every member votes for it
            return next(iter(candidates))  # (a static rejoin asked all members: O(n^2) a roll)
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
        if self.leases and state is not STABLE:
            self.end_leases()  # leaving Stable: no beat is answered NONE any more
        self.previous_state = self.state
        self.state = state

    def next_generation(self) -> None:
        self.generation += 1
        self.join_polls = 0
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition(EMPTY)
        self.pending_sync.clear()

    def member_list(self) -> tuple[tuple[str, str | None, bytes], ...]:
        protocol = self.protocol_name or ""
        return tuple(
            (m.member_id, m.instance_id, m.metadata(protocol)) for m in self.members.values()
        )

    # -- futures --------------------------------------------------------------------------
    def complete_join(self, member: Member, response: JoinGroupResponse) -> bool:
        future = member.join_future
        if future is None:
            return False
        member.join_future = None
        self.awaiting_join -= 1
        if not future.done():
            future.set_result(response)
        return True

    def complete_sync(self, member: Member, response: SyncGroupResponse) -> bool:
        future = member.sync_future
        if future is None:
            return False
        member.sync_future = None
        if not future.done():
            future.set_result(response)
        return True

    def replace_static(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """Give the instance a new member id, fencing whatever the old incarnation awaits."""
        old = self.members.pop(old_id)
        self.end_lease(old_id)  # the old incarnation's next beat hears UNKNOWN_MEMBER_ID
        self.complete_join(old, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        self.complete_sync(old, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID))
        new = Member(
            new_id, old.instance_id, old.client_id, old.rebalance_timeout_ms,
            old.session_timeout_ms, old.protocol_type, old.protocols, old.assignment,
        )
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static[instance_id] = new_id
        return new
