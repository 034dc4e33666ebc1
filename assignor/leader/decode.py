"""Step 1 of the pipeline: every member's user data read, and (1b) the refused members set aside.

A member whose bytes cannot be read is set aside with the reason, never fatal; members on a
version newer than this leader's become one client under ``FUTURE_PROCESS_ID``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import replace
from operator import attrgetter
from typing import cast

from assignor.leader.guard import Groups, group_members
from assignor.leader.model import DecodedGroup, MemberSubscription, ProcessOf, SubscriptionOf
from protocol.codec import Codec
from protocol.errors import AssignorError, ProtocolError
from protocol.ids import ProcessId
from protocol.messages import SubscriptionInfo, VersionHeader

#: The leader's decisions are logged under one name, the pipeline's, whichever step makes them.
log = logging.getLogger("assignor.leader.pipeline")

#: All members on a version newer than ours form one client under this id, as Kafka's FUTURE_ID.
FUTURE_PROCESS_ID = ProcessId(uuid.UUID("00000000-0000-0000-0000-00000000fffe"))
_VERSION = attrgetter("version")
_LATEST_SUPPORTED = attrgetter("latest_supported_version")
_ERROR_CODE = attrgetter("error_code")


def decode_group(members: Mapping[str, MemberSubscription], codec: Codec) -> DecodedGroup:
    """Read every member's user data; a member that cannot be read is set aside, not fatal.

    Each distinct byte string is read once: the consumers of one process that run no task send
    the same bytes (same process, endpoint, join count, no offset sums), so at Kafka's
    ManyThreadsPerClient point (10 processes of 1,000 consumers) most of 10,000 subscriptions
    are repeats. The decoded messages are frozen, so the members share them.
    """
    ordered = sorted(members)
    read: dict[bytes, SubscriptionInfo | VersionHeader | ProtocolError] = {}
    plain_group = _plain_group(members, ordered, codec, read)
    if plain_group is not None:
        return plain_group
    # the members of each decoded subscription object, by the object's id (kept alive by
    # ``subscriptions``)
    members_of: dict[int, tuple[SubscriptionInfo, list[str]]] = {}
    subscriptions: dict[str, SubscriptionInfo] = {}
    rejected: dict[str, str] = {}
    process_of: dict[str, ProcessId] = {}
    used = supported = codec.latest_supported
    future: int | None = None
    shutdown: list[str] = []
    # Bytes already read as a plain member's (no shutdown request): its message, process id
    # and group, so a repeat costs three stores (8,000 of 10,000 consumers at 1,000 threads
    # per client).
    plain: dict[bytes, tuple[SubscriptionInfo, ProcessId, list[str]]] = {}
    for member_id in ordered:
        data = members[member_id].user_data
        # bytes only: anything else the codec accepts is read, not kept (it may not hash)
        cacheable = type(data) is bytes
        if cacheable:
            seen = plain.get(data)
            if seen is not None:
                subscriptions[member_id] = seen[0]
                process_of[member_id] = seen[1]
                seen[2].append(member_id)
                continue
        decoded = read.get(data) if cacheable else None
        if decoded is None:
            try:
                decoded = codec.decode_subscription(data)
            except ProtocolError as exc:
                decoded = exc
            if cacheable:
                read[data] = decoded
        if isinstance(decoded, SubscriptionInfo):  # the common case first: a plain member
            subscriptions[member_id] = decoded
            process_of[member_id] = decoded.process_id
            group = members_of.get(id(decoded))
            if group is None:
                group = members_of[id(decoded)] = (decoded, [member_id])
            else:
                group[1].append(member_id)
            if decoded.error_code is AssignorError.SHUTDOWN_REQUESTED:
                shutdown.append(member_id)
            elif cacheable:
                plain[data] = (decoded, decoded.process_id, group[1])
            continue
        if isinstance(decoded, ProtocolError):
            rejected[member_id] = str(decoded)
            log.error("member %s sent a subscription that cannot be read: %s", member_id, decoded)
        else:  # a version newer than ours: only its header was read
            future = max(future or 0, decoded.version)
            log.info(
                "member %s sent a future subscription (version %d, newer than this leader's "
                "%d); it is served at the lowest version in use (version probing)",
                member_id,
                decoded.version,
                codec.latest_supported,
            )
            future_info = subscriptions[member_id] = SubscriptionInfo(
                version=codec.latest_supported,
                latest_supported_version=codec.latest_supported,
                process_id=FUTURE_PROCESS_ID,
            )
            members_of[id(future_info)] = (future_info, [member_id])
            process_of[member_id] = FUTURE_PROCESS_ID
            if decoded.error_code == AssignorError.SHUTDOWN_REQUESTED:
                shutdown.append(member_id)  # versions from 4 carry the code in the header
    # Every subscription read lands in ``members_of`` (a future member's stand-in is at the
    # leader's own versions, which change nothing), so the versions in use are theirs.
    for info, _ in members_of.values():
        used = min(used, info.version)
        supported = min(supported, info.latest_supported_version)
    return DecodedGroup(
        subscriptions=subscriptions,
        rejected=rejected,
        process_of=process_of,
        min_used_version=used,
        min_supported_version=supported,
        future_version=future,
        shutdown_requested_by=tuple(shutdown),
        groups=tuple([(info, tuple(ids)) for info, ids in members_of.values()]),
    )


def _plain_group(
    members: Mapping[str, MemberSubscription],
    ordered: list[str],
    codec: Codec,
    read: dict[bytes, SubscriptionInfo | VersionHeader | ProtocolError],
) -> DecodedGroup | None:
    """:func:`decode_group` when every member sent bytes that read as a plain subscription
    (no error, no shutdown request, no future version): one loop to group the members by
    their bytes, each distinct byte string read once, and the table of each member's message
    left to be built if read (``SubscriptionOf``); ``None`` for anything else (what was read
    stays in ``read``, so the general loop reads nothing twice).

    At Kafka's ManyThreadsPerClient point (10,000 consumers, 2,010 distinct subscriptions in
    its second rebalance) the general loop's bookkeeping per member cost more than reading
    the distinct bytes.
    """
    # Each member's payload and the members of each distinct payload (in the order of their
    # first member) in one loop: three passes (the payloads, the distinct ones, the groups)
    # took half as long again.
    datas: list[bytes] = []
    grouped: dict[bytes, list[str]] = {}
    add_data = datas.append
    find = grouped.get
    try:
        for member_id in ordered:
            data = members[member_id].user_data
            add_data(data)
            ids = find(data)
            if ids is None:
                grouped[data] = [member_id]
            else:
                ids.append(member_id)
    except TypeError:  # (bytes that cannot be hashed: read per member)
        return None
    distinct = list(grouped)
    # Anything but bytes is read per member, not shared (checked on the distinct payloads: a
    # type that compares equal to bytes would have been kept under the first one's key, and
    # equal bytes read the same).
    if set(map(type, distinct)) != {bytes}:
        return None
    used = supported = codec.latest_supported
    # Read in one pass and checked over all of them in C (2,010 distinct payloads at Kafka's
    # ManyThreadsPerClient point). A payload that cannot be read ends the pass: what was read
    # before it (``list.extend`` keeps what it took before the error) and its error stay in
    # ``read``, and the general loop reads only the rest.
    decoded: list[SubscriptionInfo | VersionHeader] = []
    try:
        decoded.extend(codec.read_subscriptions(distinct))
    except ProtocolError as exc:
        read.update(zip(distinct, decoded, strict=False))
        read[distinct[len(decoded)]] = exc
        return None
    read.update(zip(distinct, decoded, strict=True))
    if set(map(type, decoded)) != {SubscriptionInfo} or set(map(_ERROR_CODE, decoded)) != {
        AssignorError.NONE
    }:
        return None
    infos = cast(dict[bytes, SubscriptionInfo], read)
    used = min(used, *map(_VERSION, infos.values()))
    supported = min(supported, *map(_LATEST_SUPPORTED, infos.values()))
    subscriptions = SubscriptionOf(ordered, datas, infos)
    return DecodedGroup(
        subscriptions=subscriptions,
        rejected={},
        process_of=ProcessOf(subscriptions),
        min_used_version=used,
        min_supported_version=supported,
        future_version=None,
        shutdown_requested_by=(),
        groups=tuple([(infos[data], tuple(ids)) for data, ids in grouped.items()]),
    )


def without_refused(
    decoded: DecodedGroup, refused: Mapping[str, str], codec: Codec
) -> DecodedGroup:
    """Step 1b: the group without the refused members, whose versions no longer count."""
    if not refused:
        return decoded
    kept = {m: s for m, s in decoded.subscriptions.items() if m not in refused}
    # Without its refused members a group may start later than it did: back in the order of
    # first members, which the later steps rely on (a process's first group holds its smallest
    # member id).
    groups = sorted(
        (
            (info, ids)
            for info, ids in (
                (info, tuple([m for m in ids if m not in refused])) for info, ids in decoded.groups
            )
            if ids
        ),
        key=lambda group: group[1][0],
    )
    return replace(
        decoded,
        subscriptions=kept,
        groups=tuple(groups),
        process_of={m: p for m, p in decoded.process_of.items() if m not in refused},
        min_used_version=min([codec.latest_supported, *(s.version for s in kept.values())]),
        min_supported_version=min(
            [codec.latest_supported, *(s.latest_supported_version for s in kept.values())]
        ),
    )


def member_groups(decoded: DecodedGroup) -> Groups:
    """``decoded.groups``, or, when whoever built ``decoded`` left them out, the same groups
    computed from ``decoded.subscriptions``."""
    if decoded.groups or not decoded.subscriptions:
        return decoded.groups
    return group_members(decoded.subscriptions)


__all__ = ["FUTURE_PROCESS_ID", "decode_group", "member_groups", "without_refused"]
