"""A leader's long-lived codec packs and compares the shared host maps once per rebalance.

Every member of a group receives the same host maps; the leader's ``Codec`` packs them for the
first member and splices the bytes into every other member's payload. A probing rebalance that
moves nothing produces maps *equal* to the previous rebalance's but built anew. The codec must
then compare them partition by partition once (for the first member), not once per member: at
10,000 partitions over 100 members that was 2,019,900 ``TopicPartition.__eq__`` calls per
rebalance. These tests count the comparisons and check the bytes against a fresh codec's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from protocol import AssignmentInfo, AssignorError, Codec, HostInfo, TaskId, TopicPartition
from protocol.messages import NO_FOLLOWUP_REBALANCE

HOSTS = 20
PARTITIONS_PER_HOST = 50
MEMBERS = 30


def _host_maps() -> tuple[
    dict[HostInfo, frozenset[TopicPartition]], dict[HostInfo, frozenset[TopicPartition]]
]:
    """Both host maps, every partition a new object (as a new rebalance's pipeline makes)."""
    active = {}
    standby = {}
    for h in range(HOSTS):
        host = HostInfo(f"host-{h}", 9000)
        mine = range(h * PARTITIONS_PER_HOST, (h + 1) * PARTITIONS_PER_HOST)
        active[host] = frozenset(TopicPartition("events", p) for p in mine)
        standby[host] = frozenset(
            TopicPartition("events", (p + PARTITIONS_PER_HOST) % (HOSTS * PARTITIONS_PER_HOST))
            for p in mine
        )
    return active, standby


def _rebalance() -> list[AssignmentInfo]:
    """One rebalance's answers: every member shares the same two map objects (the leader's
    pipeline builds them with ``model_construct``, as here)."""
    active, standby = _host_maps()
    return [
        AssignmentInfo.model_construct(
            version=3,
            commonly_supported_version=3,
            active_tasks=(TaskId(0, m),),
            standby_tasks={},
            partitions_by_host=active,
            standby_partitions_by_host=standby,
            error_code=AssignorError.NONE,
            next_rebalance_ms=NO_FOLLOWUP_REBALANCE,
        )
        for m in range(MEMBERS)
    ]


@pytest.fixture
def partition_comparisons(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts ``TopicPartition.__eq__`` calls while the test runs."""
    calls = [0]
    original = TopicPartition.__eq__

    def counting(self: TopicPartition, other: object) -> bool:
        calls[0] += 1
        return original(self, other)

    monkeypatch.setattr(TopicPartition, "__eq__", counting)
    yield calls


def test_equal_maps_in_new_objects_are_compared_once_per_rebalance(
    partition_comparisons: list[int],
) -> None:
    leader = Codec()
    for info in _rebalance():
        leader.encode_assignment(info)
    second = _rebalance()  # the same placement, decided again: equal maps, new objects
    partition_comparisons[0] = 0
    payloads = [leader.encode_assignment(info) for info in second]
    both_maps = 2 * HOSTS * PARTITIONS_PER_HOST
    # One full comparison (the first member) and none for the 29 others; before the fix every
    # member compared every partition (30 x 2,000 = 60,000 calls here).
    assert partition_comparisons[0] <= both_maps
    assert payloads == [Codec().encode_assignment(info) for info in second]


def test_changed_maps_are_packed_again() -> None:
    leader = Codec()
    first = _rebalance()
    for info in first:
        leader.encode_assignment(info)
    active, _ = _host_maps()
    moved = next(iter(active))
    active[moved] = active[moved] | {TopicPartition("events", 99_999)}
    changed = first[0].model_copy(update={"partitions_by_host": active})
    assert leader.encode_assignment(changed) == Codec().encode_assignment(changed)
    # and back: the cache follows the maps, whatever came before
    assert leader.encode_assignment(first[1]) == Codec().encode_assignment(first[1])


def test_a_map_changed_in_place_is_noticed() -> None:
    leader = Codec()
    info = _rebalance()[0]
    leader.encode_assignment(info)
    host = next(iter(info.partitions_by_host))
    info.partitions_by_host[host] = frozenset()  # type: ignore[index]
    assert leader.encode_assignment(info) == Codec().encode_assignment(info)
