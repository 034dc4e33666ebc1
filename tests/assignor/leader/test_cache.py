"""The leader's cache: reused only for the same topology, counts and end offsets, and never a
different answer from computing afresh."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest

from assignor.config import AssignorConfig
from assignor.leader.cache import LeaderCache, planned_tasks
from assignor.leader.encode import partitions_of
from assignor.leader.model import MemberResult
from assignor.leader.pipeline import assign_group, changelog_end_sums
from assignor.topology.internal_topics import (
    InternalTopics,
    SizingOutcome,
    size_internal_topics,
)
from assignor.topology.model import Topology
from protocol.ids import HostInfo
from tests.assignor.leader.pipeline_support import (
    SHOP_COUNTS,
    group,
    shop,
    shop_end_offsets,
    subscription,
)

STANDBY = AssignorConfig.model_validate({"num.standby.replicas": 1})


def _sources(counts: dict[str, int]) -> dict[str, int]:
    sized = size_internal_topics(shop(), counts)
    assert isinstance(sized, InternalTopics)
    return dict(sized.source_partitions)


def test_the_plan_is_reused_until_the_topology_or_a_count_changes() -> None:
    cache, topology = LeaderCache(), shop()
    sources = _sources(SHOP_COUNTS)
    first = cache.plan(topology, sources)
    assert cache.plan(topology, dict(sources)) is first  # equal counts in a new dict: reused
    assert first == planned_tasks(topology, sources)
    more = _sources({**SHOP_COUNTS, "orders": 5, "shop-by-user-repartition": 5})
    resized = cache.plan(topology, more)
    assert resized is not first and resized == planned_tasks(topology, more)
    assert cache.plan(shop(), more) is not resized  # another topology object: planned again


def test_the_sizing_is_reused_until_the_topology_or_a_count_changes() -> None:
    cache, topology = LeaderCache(), shop()
    computed: list[dict[str, int]] = []

    def sizing(topology: Topology, counts: Mapping[str, int]) -> SizingOutcome:
        computed.append(dict(counts))
        return size_internal_topics(topology, counts)

    first = cache.sizing(topology, SHOP_COUNTS, sizing)
    assert first == size_internal_topics(topology, SHOP_COUNTS)
    assert cache.sizing(topology, dict(SHOP_COUNTS), sizing) is first  # equal counts: reused
    more = {**SHOP_COUNTS, "orders": 5, "shop-by-user-repartition": 5}
    assert cache.sizing(topology, more, sizing) == size_internal_topics(topology, more)
    assert cache.sizing(shop(), more, sizing) == size_internal_topics(topology, more)
    assert len(computed) == 3  # another topology object: sized again
    # a failure is never kept: the pipeline reports it at every rebalance it happens
    missing = {t: n for t, n in SHOP_COUNTS.items() if t != "orders"}
    failed = cache.sizing(topology, missing, sizing)
    assert not isinstance(failed, InternalTopics)
    assert cache.sizing(topology, missing, sizing) == failed and len(computed) == 5


def test_end_sums_are_reused_for_the_same_offsets_object_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = LeaderCache()
    layout = cache.plan(shop(), _sources(SHOP_COUNTS)).layout
    offsets = shop_end_offsets(10, 20, 30)
    sums = cache.end_sums(layout, offsets, changelog_end_sums)
    assert sums == changelog_end_sums(layout, offsets)
    assert cache.end_sums(layout, offsets, changelog_end_sums) is sums
    refreshed = shop_end_offsets(11, 20, 30)  # the process replaces the mapping on a refresh
    assert cache.end_sums(layout, refreshed, changelog_end_sums) == changelog_end_sums(
        layout, refreshed
    )
    # unknown sums are not kept: each rebalance that falls back says which offset is missing
    partial = shop_end_offsets(10, 20)
    with caplog.at_level(logging.WARNING):
        assert cache.end_sums(layout, partial, changelog_end_sums) is None
        assert cache.end_sums(layout, partial, changelog_end_sums) is None
    assert sum("no end offset" in r.getMessage() for r in caplog.records) == 2
    assert cache.end_sums(layout, None, changelog_end_sums) is None


def test_a_cached_leader_decides_as_a_fresh_one_over_rebalances() -> None:
    cache, topology = LeaderCache(), shop()  # one topology object, as a process has
    members = {f"{p}-1": subscription(p) for p in (1, 2, 3)}
    offsets = shop_end_offsets()
    for counts, kept in ((SHOP_COUNTS, members), (SHOP_COUNTS, members), (None, members)):
        given = group(kept, counts=dict(counts) if counts else None, end_offsets=offsets)
        cached = assign_group(topology, STANDBY, given, cache=cache)
        fresh = assign_group(topology, STANDBY, given)
        assert cached.members == fresh.members
        assert cached.summary == fresh.summary is not None
    fewer = {m: d for m, d in members.items() if not m.startswith("3")}
    given = group(fewer, end_offsets=offsets)
    assert assign_group(topology, STANDBY, given, cache=cache).members == assign_group(
        topology, STANDBY, given
    ).members


def test_a_member_of_unchanged_tasks_and_maps_gets_the_last_answer_again() -> None:
    """The answers kept between rebalances: handed out again only under the same maps (by
    value) and versions, and always equal to a fresh leader's, bytes and all."""
    cache, topology = LeaderCache(), shop()
    offsets = shop_end_offsets()

    def members(port_of_3: int) -> dict[str, bytes]:
        return {
            f"{p}-1": subscription(p, endpoint=HostInfo(f"h{p}", port_of_3 if p == 3 else 80))
            for p in (1, 2, 3)
        }

    def served(data: dict[str, bytes]) -> dict[str, MemberResult]:
        given = group(data, end_offsets=offsets)
        cached = assign_group(topology, STANDBY, given, cache=cache)
        assert cached.members == assign_group(topology, STANDBY, given).members
        for member, result in cached.members.items():
            fresh = assign_group(topology, STANDBY, given).members[member]
            assert result.user_data == fresh.user_data and result.info == fresh.info
        return dict(cached.members)

    first = served(members(80))
    again = served(members(80))  # new bytes and maps objects, equal values
    assert any(again[m] is first[m] for m in first)
    moved = served(members(81))  # one endpoint changed: every answer's maps differ
    assert not any(moved[m] is again[m] for m in again)
    assert all(moved[m].user_data != again[m].user_data for m in again)


def test_partitions_by_task_object_give_what_the_layout_gives() -> None:
    """The plan's ``partitions_by_id`` answers for the layout's own task objects; a task that
    is only equal to one (another object) is looked up by value, never by a stale id."""
    planned = planned_tasks(shop(), _sources(SHOP_COUNTS))
    layout = planned.layout
    tasks = list(layout.tasks)
    by_value = [layout.tasks[t] for t in tasks]
    assert partitions_of(tasks, layout, planned.partitions_by_id) == by_value
    copies = [t.model_copy() for t in tasks]  # equal tasks, other objects
    assert all(id(c) not in planned.partitions_by_id for c in copies)
    assert partitions_of(copies, layout, planned.partitions_by_id) == by_value
    mixed = [*tasks[:1], *copies[1:]]
    assert partitions_of(mixed, layout, planned.partitions_by_id) == by_value
    assert partitions_of(tasks, layout, {}) == by_value
