"""Step 1b of the pipeline: keep one lying member from making the whole group rebalance forever.

Two claims a member can make that Kafka Streams' leader takes at face value, each of which makes
Kafka (4.1.2) loop:

**Process-id clones.** Kafka groups consumers into clients by process id and takes the client's
endpoint from whichever consumer it meets first. Two instances configured with the same process
id but different endpoints therefore share one client and one host-map entry; the consumers of
the instance whose endpoint is missing from the host map ask for an immediate rebalance to
publish it (``verifyHostInfo``), every generation, forever. Here a process id has one endpoint
per generation: the one it was served under last time (the leader remembers), else the endpoint
of its smallest member id. Members of that id announcing another endpoint get an
``ASSIGNMENT_ERROR`` assignment of their own and no tasks; nothing tells them to rejoin.

**Version liars.** A member that sends version ``u`` while declaring it supports ``L > u`` makes
the leader answer everyone at ``u`` and announce ``L`` as commonly supported: the honest members
"downgrade" to ``L`` (their own version) and rejoin, the liar is told to upgrade, rejoins, and
sends ``u`` again. Kafka loops the same way for v3..v10 subscriptions claiming v11. Here the
leader remembers which members it told to upgrade; a member that ignores that instruction
``IGNORED_UPGRADES_BEFORE_REFUSAL`` times in a row is refused (an ``ASSIGNMENT_ERROR``
assignment of its own, as long as it keeps lying) and left out of the group's versions, so the
honest members are answered at their own version and stay put.

Both are logged once, when first noticed, not every generation: :class:`LeaderMemory` carries
what was noticed from one ``assign()`` to the next (the adapter keeps it on ``StreamsProcess``
and replaces it only once the leader's own assignment arrived, so a generation that never
reached the members does not count). It only ever holds current members, so it stays as small as
the group.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from operator import attrgetter, ge, itemgetter

from protocol.ids import HostInfo, ProcessId
from protocol.messages import SubscriptionInfo

_FIRST = itemgetter(0)
_VERSION = attrgetter("version")
_LATEST_SUPPORTED = attrgetter("latest_supported_version")

log = logging.getLogger(__name__)

#: members grouped by the subscription object they share (``DecodedGroup.groups``)
Groups = tuple[tuple[SubscriptionInfo, tuple[str, ...]], ...]

#: How many consecutive upgrade instructions a member may ignore before it is refused. Two, not
#: one: an instruction can be lost when a new rebalance aborts the generation that carried it.
IGNORED_UPGRADES_BEFORE_REFUSAL = 2


@dataclass(frozen=True, slots=True)
class LeaderMemory:
    """What the leader remembers between generations (pure data; the pipeline returns the next)."""

    #: member id -> (version it was last told to upgrade to, how many times in a row it ignored it)
    upgrade_told: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: members refused as version liars (already logged)
    version_liars: frozenset[str] = frozenset()
    #: the endpoint each process id was served under in the last generation
    endpoints: Mapping[ProcessId, HostInfo | None] = field(default_factory=dict)
    #: (process id, endpoint) pairs refused as clones (already logged)
    clones: frozenset[tuple[ProcessId, HostInfo | None]] = frozenset()


@dataclass(frozen=True, slots=True)
class Screening:
    """Which members the leader refuses this generation, and why."""

    #: member id -> reason, each answered with an ``ASSIGNMENT_ERROR`` assignment of its own
    refused: Mapping[str, str]
    #: memory so far (``upgrade_told`` is completed by :func:`remember_upgrades` once the
    #: group's versions are known)
    memory: LeaderMemory


def screen_members(
    subscriptions: Mapping[str, SubscriptionInfo],
    memory: LeaderMemory,
    groups: Groups | None = None,
) -> Screening:
    """Find process-id clones and version liars among the decoded members.

    ``groups``: the members grouped by their subscription object, as
    ``DecodedGroup.groups`` (computed here when not given).
    """
    if groups is None:
        groups = group_members(subscriptions)
    refused: dict[str, str] = {}
    clones, endpoints = _find_clones(groups, memory)
    refused.update(clones)
    liars, newly_lying = _find_version_liars(subscriptions, groups, memory, exclude=refused)
    refused.update(liars)

    logged_clones = set()
    new_clones = []
    for member_id in sorted(clones):
        info = subscriptions[member_id]
        key = (info.process_id, info.user_endpoint)
        logged_clones.add(key)
        if key not in memory.clones:
            new_clones.append(member_id)
    if new_clones:
        log.warning(
            "refusing member(s) that reuse another instance's process id with a different "
            "endpoint (misconfigured process id?); they get ASSIGNMENT_ERROR until the "
            "conflict ends: %s",
            "; ".join(f"{m}: {clones[m]}" for m in new_clones),
        )
    # one warning per lying process, not per consumer: its threads are flagged one by one
    known = {subscriptions[m].process_id for m in memory.version_liars if m in subscriptions}
    newly_lying = [m for m in newly_lying if subscriptions[m].process_id not in known]
    if newly_lying:
        log.warning(
            "refusing member(s) that keep sending an older subscription version than they "
            "declare to support, ignoring the leader's upgrade instruction; they get "
            "ASSIGNMENT_ERROR while they do: %s",
            "; ".join(f"{m}: {liars[m]}" for m in newly_lying),
        )
    return Screening(
        refused=refused,
        memory=LeaderMemory(
            upgrade_told=memory.upgrade_told,
            version_liars=frozenset(liars),
            endpoints=endpoints,
            clones=frozenset(logged_clones),
        ),
    )


def remember_upgrades(
    screening: Screening,
    subscriptions: Mapping[str, SubscriptionInfo],
    commonly_supported: int,
    groups: Groups | None = None,
) -> LeaderMemory:
    """Record which served members this generation tells to upgrade to ``commonly_supported``,
    counting how many times in a row each has been told so already (``groups``: as in
    :func:`screen_members`)."""
    told: dict[str, tuple[int, int]] = {}
    distinct = _distinct(subscriptions) if groups is None else map(_FIRST, groups)
    if min(map(_VERSION, distinct), default=commonly_supported) >= commonly_supported:
        return replace(screening.memory, upgrade_told=told)  # nobody is told to upgrade
    previous = screening.memory.upgrade_told
    for member_id, info in subscriptions.items():
        if member_id in screening.refused or info.version >= commonly_supported:
            continue
        version, ignored = previous.get(member_id, (0, 0))
        ignored = ignored + 1 if version == commonly_supported and version > 0 else 0
        told[member_id] = (commonly_supported, ignored)
    return replace(screening.memory, upgrade_told=told)


def _find_clones(
    groups: Groups, memory: LeaderMemory
) -> tuple[dict[str, str], dict[ProcessId, HostInfo | None]]:
    """Members whose process id is announced elsewhere with another endpoint, and the endpoint
    each process id keeps (remembered one first, else that of its smallest member id)."""
    by_process: dict[ProcessId, dict[HostInfo | None, list[str]]] = {}
    # Members often share one decoded subscription (``assignor.leader.decode``): its process
    # id and endpoint are hashed once per group, not for every member. The groups come in the
    # order of their first member, so each process's endpoints are in the order of their
    # smallest member id.
    # Consecutive groups of one process (its consumers' ids mostly sort together) share the
    # decoder's process id and endpoint objects: those reuse the last list without hashing.
    last: tuple[object, object, list[str]] = (_NOT_SEEN, _NOT_SEEN, [])
    for info, member_ids in groups:
        process_id, endpoint = info.process_id, info.user_endpoint
        if process_id is not last[0] or endpoint is not last[1]:
            announcing = by_process.setdefault(process_id, {}).setdefault(endpoint, [])
            last = (process_id, endpoint, announcing)
        last[2].extend(member_ids)
    refused: dict[str, str] = {}
    endpoints: dict[ProcessId, HostInfo | None] = {}
    for process_id, announced in by_process.items():
        remembered = memory.endpoints.get(process_id, _NOT_SEEN)
        if isinstance(remembered, _NotSeen) or remembered not in announced:
            keep = next(iter(announced))  # the endpoint of the smallest member id first
        else:
            keep = remembered
        endpoints[process_id] = keep
        for endpoint, announcing in announced.items():
            if endpoint == keep:
                continue
            for member_id in sorted(announcing):
                refused[member_id] = (
                    f"process id {process_id} already runs at endpoint {_show(keep)}, "
                    f"this member announces {_show(endpoint)}"
                )
    return refused, endpoints


def _find_version_liars(
    subscriptions: Mapping[str, SubscriptionInfo],
    groups: Groups,
    memory: LeaderMemory,
    *,
    exclude: Mapping[str, str],
) -> tuple[dict[str, str], list[str]]:
    """Members that sent a version below one they were told to upgrade to, and still claim to
    support it, ``IGNORED_UPGRADES_BEFORE_REFUSAL`` times in a row (or were refused for it before
    and still send less than they claim). Returns (refused with reasons, newly refused)."""
    liars: dict[str, str] = {}
    new: list[str] = []
    infos = list(map(_FIRST, groups))  # (each check below runs in C over 2,010 groups)
    if all(map(ge, map(_VERSION, infos), map(_LATEST_SUPPORTED, infos))):
        return liars, new  # every member sends all it claims: no lie, whatever it was told
    for member_id in sorted(subscriptions):
        if member_id in exclude:
            continue
        info = subscriptions[member_id]
        sent, claimed = info.version, info.latest_supported_version
        if sent >= claimed:  # sends all it claims: no lie, whatever it was told
            continue
        reason = (
            f"sends version {sent} while declaring version {claimed} supported, and ignored "
            "the leader's instruction to upgrade"
        )
        if member_id in memory.version_liars:
            liars[member_id] = reason
            continue
        told, ignored = memory.upgrade_told.get(member_id, (0, 0))
        if sent < told <= claimed and ignored + 1 >= IGNORED_UPGRADES_BEFORE_REFUSAL:
            liars[member_id] = reason
            new.append(member_id)
    return liars, new


def group_members(subscriptions: Mapping[str, SubscriptionInfo]) -> Groups:
    """The members grouped by subscription object, as ``DecodedGroup.groups``: member ids
    sorted, groups in the order of their first member."""
    members_of: dict[int, tuple[SubscriptionInfo, list[str]]] = {}
    for member_id in sorted(subscriptions):
        info = subscriptions[member_id]
        members_of.setdefault(id(info), (info, []))[1].append(member_id)
    return tuple([(info, tuple(ids)) for info, ids in members_of.values()])


def _distinct(subscriptions: Mapping[str, SubscriptionInfo]) -> Iterable[SubscriptionInfo]:
    """Each subscription object once: the consumers of a process that sent the same bytes
    share one (``assignor.leader.decode``), so at 10,000 consumers a question asked of every
    member is asked of a few distinct messages instead."""
    return {id(info): info for info in subscriptions.values()}.values()


class _NotSeen:
    """Marks a process id the leader has not served before (``None`` is a valid endpoint)."""


_NOT_SEEN = _NotSeen()


def _show(endpoint: HostInfo | None) -> str:
    return "none" if endpoint is None else f"{endpoint.host}:{endpoint.port}"


__all__ = [
    "IGNORED_UPGRADES_BEFORE_REFUSAL",
    "Groups",
    "LeaderMemory",
    "Screening",
    "group_members",
    "remember_upgrades",
    "screen_members",
]
