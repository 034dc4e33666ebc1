"""A classic consumer group driven request by request: JoinGroup and SyncGroup on raw connections.

Why not aiokafka consumers: the question these tests ask is what the broker does with a
SyncGroup of a given size, for groups of up to 1,000 members. A thousand ``AIOKafkaConsumer``
instances in one test process would spend minutes on fetchers, heartbeats and repeated
rebalances as they trickle in; here every member is one connection that sends exactly the
requests of a rebalance (JoinGroup for a member id, JoinGroup with it, SyncGroup), all members
at once, so one generation forms and the leader's SyncGroup carries every member's assignment
in one piece, as aiokafka's leader sends it. The broker stores that generation in one
``__consumer_offsets`` record, which is what is being measured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka.client import AIOKafkaClient
from aiokafka.conn import create_conn
from aiokafka.protocol.group import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest

#: Kafka error codes these tests meet.
NONE = 0
UNKNOWN_SERVER_ERROR = -1
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
COORDINATOR_GROUP = 0  # FindCoordinator key type: a group
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_NOT_READY = (14, 15, 16)

_SESSION_TIMEOUT_MS = 60_000
_REBALANCE_TIMEOUT_MS = 60_000
_JOIN_ATTEMPTS = 5


@dataclass(frozen=True)
class SyncOutcome:
    """What one generation's SyncGroup gave back."""

    #: the leader's SyncGroup error code (0, or e.g. -1 when the group's record was refused)
    leader_error: int
    #: every member's error code and the assignment bytes it received
    received: Mapping[str, tuple[int, bytes]]
    #: the leader's member id and what it saw of the members (id -> JoinGroup metadata)
    leader: str
    members: Mapping[str, bytes]


Assign = Callable[[Mapping[str, bytes]], Mapping[str, bytes]]


async def rebalance(
    bootstrap: str,
    group: str,
    metadata: Sequence[bytes],
    assign: Assign,
    *,
    protocol: str = "stream",
    timeout_s: float = 120.0,
) -> SyncOutcome:
    """One generation of ``len(metadata)`` members; ``assign`` plays the leader's assignor.

    ``metadata[i]`` is member i's ConsumerProtocol subscription bytes; ``assign`` gets them by
    member id and returns the ConsumerProtocol assignment bytes for each member id.
    """
    host, port = await _coordinator(bootstrap, group, timeout_s)
    conns = [await create_conn(host, int(port), request_timeout_ms=int(timeout_s * 1000))
             for _ in metadata]
    try:
        async with asyncio.timeout(timeout_s):
            return await _rebalance(conns, group, metadata, assign, protocol)
    finally:
        for conn in conns:
            conn.close()


async def _coordinator(bootstrap: str, group: str, timeout_s: float) -> tuple[str, int]:
    """The group's coordinator (the first lookup also creates ``__consumer_offsets``)."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                try:
                    node = await client.coordinator_lookup(COORDINATOR_GROUP, group)
                    break
                except Exception:  # coordinator not available yet: the offsets topic loads
                    await asyncio.sleep(0.5)
        broker = client.cluster.broker_metadata(node)
        return broker.host, broker.port
    finally:
        await client.close()


async def _join(conn: Any, group: str, member_id: str, data: bytes, protocol: str) -> Any:
    request = JoinGroupRequest(
        group, _SESSION_TIMEOUT_MS, _REBALANCE_TIMEOUT_MS, member_id, None, "consumer",
        [(protocol, data)],
    )
    return await conn.send(request)


async def _rebalance(
    conns: Sequence[Any], group: str, metadata: Sequence[bytes], assign: Assign, protocol: str
) -> SyncOutcome:
    async def member_id(conn: Any, data: bytes) -> str:
        # The coordinator may still be loading its partition of a fresh __consumer_offsets.
        for _ in range(_JOIN_ATTEMPTS * 10):
            response = await _join(conn, group, "", data, protocol)
            if response.error_code not in _NOT_READY:
                break
            await asyncio.sleep(0.5)
        if response.error_code not in (MEMBER_ID_REQUIRED, NONE):
            raise RuntimeError(f"JoinGroup failed with error code {response.error_code}")
        return str(response.member_id)

    ids = await asyncio.gather(
        *(member_id(conn, data) for conn, data in zip(conns, metadata, strict=True))
    )
    formed: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def joined(conn: Any, mid: str, data: bytes) -> Any:
        """Join until a generation of every member forms; like a consumer, a member whose
        generation is superseded learns it from a heartbeat and joins again."""
        for _ in range(_JOIN_ATTEMPTS * 4):
            response = await _join(conn, group, mid, data, protocol)
            if response.error_code == REBALANCE_IN_PROGRESS:
                continue
            if response.error_code != NONE:
                raise RuntimeError(f"JoinGroup failed with error code {response.error_code}")
            generation = response.generation_id
            complete = response.leader_id == mid and len(response.members) == len(ids)
            if complete and not formed.done():
                formed.set_result(generation)
            while not formed.done():
                beat = await conn.send(HeartbeatRequest(group, generation, mid))
                if beat.error_code != NONE:
                    break
                await asyncio.wait([formed], timeout=0.1)
            if formed.done() and formed.result() == generation:
                return response
        raise RuntimeError(f"no generation with all {len(ids)} members formed")

    responses = await asyncio.gather(
        *(joined(conn, mid, data) for conn, mid, data in zip(conns, ids, metadata, strict=True))
    )
    [leader] = [r for r in responses if r.member_id == r.leader_id]
    members = {m[0]: m[-1] for m in leader.members}
    answers = assign(members)
    generation = formed.result()

    async def sync(conn: Any, mid: str) -> Any:
        given = list(answers.items()) if mid == leader.leader_id else []
        return await conn.send(SyncGroupRequest(group, generation, mid, None, given))

    synced = await asyncio.gather(*(sync(conn, mid) for conn, mid in zip(conns, ids, strict=True)))
    received = {
        mid: (r.error_code, bytes(r.member_assignment or b""))
        for mid, r in zip(ids, synced, strict=True)
    }
    return SyncOutcome(received[leader.leader_id][0], received, leader.leader_id, members)
