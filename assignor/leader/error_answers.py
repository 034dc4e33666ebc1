"""The leader's answers other than a normal assignment: an error for every member (Kafka's
``errorAssignment``), an error of its own for each member that could not be read or was refused.

Each is written so its member can read it: refused and unreadable members get version 1, which
every build of the codec reads, and no follow-up, so nothing tells them to rejoin.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from assignor.leader.guard import Screening, remember_upgrades
from assignor.leader.model import DecodedGroup, LeaderResult, MemberResult
from assignor.topology.internal_topics import SizingFailure
from protocol.codec import Codec
from protocol.errors import AssignorError
from protocol.messages import NO_FOLLOWUP_REBALANCE, AssignmentInfo

#: The leader's decisions are logged under one name, the pipeline's, whichever step makes them.
log = logging.getLogger("assignor.leader.pipeline")


def rejected_members(decoded: DecodedGroup, codec: Codec) -> dict[str, MemberResult]:
    """An error assignment for every member whose subscription could not be read.

    Written at version 1, which every build of this codec reads.
    """
    results = {}
    for member_id in decoded.rejected:
        info = AssignmentInfo.error(AssignorError.ASSIGNMENT_ERROR, 1)
        results[member_id] = MemberResult((), info, codec.encode_assignment(info, version=1))
    return results


def error_for_all(
    decoded: DecodedGroup,
    codec: Codec,
    code: AssignorError,
    detail: str,
    followup_ms: int | None = None,
) -> LeaderResult:
    """Kafka's ``errorAssignment``: every readable member gets the code and no partitions."""
    version = codec.latest_supported
    members: dict[str, MemberResult] = {}
    for member_id in decoded.subscriptions:
        info = AssignmentInfo(
            version=min(version, decoded.min_used_version),
            commonly_supported_version=min(version, decoded.min_supported_version),
            error_code=code,
            next_rebalance_ms=NO_FOLLOWUP_REBALANCE if followup_ms is None else followup_ms,
        )
        members[member_id] = MemberResult(
            (), info, codec.encode_assignment(info, version=info.version)
        )
    members.update(rejected_members(decoded, codec))
    return LeaderResult(
        members=members,
        error=code,
        detail=detail,
        rejected=decoded.rejected,
        used_version=decoded.min_used_version,
        commonly_supported_version=decoded.min_supported_version,
        followup="retry after the error" if followup_ms is not None else "",
    )


def answer_refused(
    result: LeaderResult, screening: Screening, decoded: DecodedGroup, codec: Codec
) -> LeaderResult:
    """Give each refused member its own error assignment (version 1, which every build reads,
    and no follow-up, so nothing tells it to rejoin) and the memory for the next generation."""
    members: Mapping[str, MemberResult] = result.members
    if screening.refused:  # (no copy of 10,000 answers when nobody is refused)
        with_refused = dict(result.members)
        for member_id, reason in screening.refused.items():
            info = AssignmentInfo.error(AssignorError.ASSIGNMENT_ERROR, 1)
            with_refused[member_id] = MemberResult(
                (), info, codec.encode_assignment(info, version=1)
            )
            log.debug("member %s refused: %s", member_id, reason)
        members = with_refused
    if result.error is AssignorError.NONE:
        memory = remember_upgrades(
            screening, decoded.subscriptions, result.commonly_supported_version,
            decoded.groups or None,
        )
    else:  # an error answer tells nobody to upgrade
        memory = replace(screening.memory, upgrade_told={})
    return replace(result, members=members, refused=dict(screening.refused), memory=memory)


def sizing_failed(decoded: DecodedGroup, codec: Codec, failure: SizingFailure) -> LeaderResult:
    log.error("%s", failure.message)
    return error_for_all(decoded, codec, failure.code, failure.message)


__all__ = ["answer_refused", "error_for_all", "rejected_members", "sizing_failed"]
