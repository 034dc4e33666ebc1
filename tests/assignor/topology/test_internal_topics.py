"""Repartition topic sizing and copartition enforcement, with Kafka's rules and messages."""

from __future__ import annotations

import ctypes
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor.testing import sized_topologies
from assignor.topology._java_order import string_hash
from assignor.topology.builder import TopologyBuilder
from assignor.topology.copartition import kafka_copartition_groups
from assignor.topology.data_form import topology_from_data, topology_to_data
from assignor.topology.internal_topics import (
    CopartitionFailure,
    InternalTopics,
    MissingSourceTopics,
    RepartitionSizingFailed,
    size_internal_topics,
    sizing_order,
    topics_info_hash,
)
from assignor.topology.model import Topology
from protocol.errors import AssignorError


def topology(
    subs: list[dict[str, Any]],
    repartition: dict[str, int | None],
    groups: list[list[str]] | None = None,
) -> Topology:
    return topology_from_data(
        {
            "application_id": "app",
            "subtopologies": subs,
            "repartition_topics": repartition,
            "copartition_groups": groups or [],
        }
    )


def sized(result: object) -> InternalTopics:
    assert isinstance(result, InternalTopics), result
    return result


def chain() -> Topology:
    """orders(ext) -> rep-a ; rep-a + clicks(ext) -> rep-b ; rep-b -> out."""
    return topology(
        [
            {"id": 0, "source_topics": ["orders"], "sink_topics": ["rep-a"]},
            {"id": 1, "source_topics": ["rep-a", "clicks"], "sink_topics": ["rep-b"]},
            {"id": 2, "source_topics": ["rep-b"], "sink_topics": ["out"]},
        ],
        {"rep-a": None, "rep-b": None},
    )


def test_repartition_topic_takes_the_largest_count_upstream() -> None:
    result = sized(size_internal_topics(chain(), {"orders": 8, "clicks": 3}))
    assert result.repartition_partitions == {"rep-a": 8, "rep-b": 8}
    assert result.source_partitions == {"orders": 8, "clicks": 3, "rep-a": 8, "rep-b": 8}
    result = sized(size_internal_topics(chain(), {"orders": 2, "clicks": 5}))
    assert result.repartition_partitions == {"rep-a": 2, "rep-b": 5}


def test_several_writers_take_the_largest_of_all() -> None:
    subs = [
        {"id": 0, "source_topics": ["a"], "sink_topics": ["rep"]},
        {"id": 1, "source_topics": ["b", "c"], "sink_topics": ["rep"]},
        {"id": 2, "source_topics": ["rep"]},
    ]
    result = size_internal_topics(topology(subs, {"rep": None}), {"a": 4, "b": 2, "c": 6})
    assert sized(result).repartition_partitions == {"rep": 6}


def test_enforced_count_wins_and_flows_downstream() -> None:
    subs = [
        {"id": 0, "source_topics": ["orders"], "sink_topics": ["rep-a"]},
        {"id": 1, "source_topics": ["rep-a"], "sink_topics": ["rep-b"]},
        {"id": 2, "source_topics": ["rep-b"]},
    ]
    result = size_internal_topics(topology(subs, {"rep-a": 3, "rep-b": None}), {"orders": 9})
    assert sized(result).repartition_partitions == {"rep-a": 3, "rep-b": 3}


def test_candidate_uses_only_counts_known_so_far() -> None:
    """Kafka does not wait for every upstream count: a subtopology visited before its upstream
    is sized takes the max of what is known. Here the reader of rep-b has the lowest id."""
    subs = [
        {"id": 0, "source_topics": ["rep-b"], "sink_topics": ["out"]},
        {"id": 1, "source_topics": ["rep-a", "clicks"], "sink_topics": ["rep-b"]},
        {"id": 2, "source_topics": ["orders"], "sink_topics": ["rep-a"]},
    ]
    counts = {"orders": 8, "clicks": 3}
    result = size_internal_topics(topology(subs, {"rep-a": None, "rep-b": None}), counts)
    assert sized(result).repartition_partitions == {"rep-a": 8, "rep-b": 3}


def test_a_cycle_of_repartition_topics_cannot_be_sized() -> None:
    subs = [
        {"id": 0, "source_topics": ["loop-1"], "sink_topics": ["loop-2"]},
        {"id": 1, "source_topics": ["loop-2"], "sink_topics": ["loop-1"]},
        {"id": 2, "source_topics": ["in"], "sink_topics": ["fine"]},
        {"id": 3, "source_topics": ["fine"]},
    ]
    repartition = {"loop-1": None, "loop-2": None, "fine": None}
    result = size_internal_topics(topology(subs, repartition), {"in": 2})
    assert isinstance(result, RepartitionSizingFailed)
    assert result.unsized_topics == ("loop-1", "loop-2")
    assert result.code is AssignorError.ASSIGNMENT_ERROR
    assert result.message.startswith(
        "Failed to compute number of partitions for all repartition topics, make sure all user "
        "input topics are created and all Pattern subscriptions match at least one topic in the "
        "cluster"
    )
    # an enforced count anywhere on the cycle breaks it
    repartition["loop-2"] = 5
    assert sized(
        size_internal_topics(topology(subs, repartition), {"in": 2})
    ).repartition_partitions == {
        "loop-1": 5,
        "loop-2": 5,
        "fine": 2,
    }


def test_missing_source_topics_become_incomplete_metadata() -> None:
    result = size_internal_topics(chain(), {"orders": 4, "clicks": 0, "unrelated": 3})
    assert isinstance(result, MissingSourceTopics)
    assert result.code is AssignorError.INCOMPLETE_SOURCE_TOPIC_METADATA
    assert result.topics == ("clicks",)
    assert result.by_subtopology == ((1, ("clicks",)),)
    assert result.message == "Missing source topics. [clicks]"
    result = size_internal_topics(chain(), {})
    assert isinstance(result, MissingSourceTopics)
    assert result.topics == ("clicks", "orders")  # repartition topics are never "missing"
    assert result.message == "Missing source topics. [clicks, orders]"


def joined(left: str, right: str, enforced: dict[str, int | None]) -> Topology:
    """Subtopology 2 joins ``left`` and ``right``: external topics, or rep-* topics that
    subtopologies 0 and 1 write from up-l and up-r."""
    subs: list[dict[str, Any]] = [{"id": 0, "source_topics": ["up-l"], "sink_topics": []}]
    subs.append({"id": 1, "source_topics": ["up-r"], "sink_topics": []})
    for topic, writer in ((left, 0), (right, 1)):
        if topic.startswith("rep"):
            subs[writer]["sink_topics"].append(topic)
    subs.append({"id": 2, "source_topics": [left, right]})
    if not any(t.startswith("rep") for t in (left, right)):
        subs[0]["sink_topics"].append("rep-other")
        subs.append({"id": 3, "source_topics": ["rep-other"]})
        enforced = {"rep-other": None, **enforced}
    return topology(subs, enforced, [[left, right]])


def test_join_of_repartition_topics_takes_the_max() -> None:
    t = joined("rep-l", "rep-r", {"rep-l": None, "rep-r": None})
    result = sized(size_internal_topics(t, {"up-l": 3, "up-r": 5}))
    assert result.repartition_partitions == {"rep-l": 5, "rep-r": 5}


def test_join_of_repartition_topics_takes_the_enforced_count() -> None:
    t = joined("rep-l", "rep-r", {"rep-l": None, "rep-r": 2})
    result = sized(size_internal_topics(t, {"up-l": 3, "up-r": 5}))
    assert result.repartition_partitions == {"rep-l": 2, "rep-r": 2}


def test_join_of_repartition_topics_with_different_enforced_counts_fails() -> None:
    # the build-time check sees two groups, each with an unenforced topic; merged they disagree
    subs = [
        {"id": 0, "source_topics": ["in"], "sink_topics": ["rep-1", "rep-2", "rep-3"]},
        {"id": 1, "source_topics": ["rep-1", "rep-2", "rep-3"]},
    ]
    t = topology(
        subs, {"rep-1": 3, "rep-2": None, "rep-3": 4}, [["rep-1", "rep-2"], ["rep-2", "rep-3"]]
    )
    result = size_internal_topics(t, {"in": 7})
    assert isinstance(result, CopartitionFailure)
    assert result.problem == "enforced_counts_differ"
    assert result.code is AssignorError.ASSIGNMENT_ERROR
    assert result.message == (
        "Invalid topology: Following topics do not have the same number of partitions: "
        "[{rep-1=3, rep-2=7, rep-3=4}]"
    )


def test_external_topics_must_agree() -> None:
    t = joined("ext-l", "ext-r", {})
    result = size_internal_topics(t, {"ext-l": 3, "ext-r": 4, "up-l": 1, "up-r": 1})
    assert isinstance(result, CopartitionFailure)
    assert result.problem == "external_counts_differ"
    assert result.message == "Invalid topology: Topics not co-partitioned: [{ext-l=3, ext-r=4}]"
    agreeing = {"ext-l": 4, "ext-r": 4, "up-l": 1, "up-r": 1}
    assert isinstance(size_internal_topics(t, agreeing), InternalTopics)


def test_repartition_topic_follows_the_external_topic_of_its_join() -> None:
    t = joined("ext-l", "rep-r", {"rep-r": None})
    result = sized(size_internal_topics(t, {"ext-l": 3, "up-l": 1, "up-r": 8}))
    assert result.repartition_partitions == {"rep-r": 3}  # overrides the computed 8
    assert result.source_partitions["rep-r"] == 3


def test_enforced_repartition_topic_that_disagrees_with_its_join_fails() -> None:
    t = joined("ext-l", "rep-r", {"rep-r": 2})
    result = size_internal_topics(t, {"ext-l": 4, "up-l": 1, "up-r": 8})
    assert isinstance(result, CopartitionFailure)
    assert result.problem == "repartition_count_mismatch"
    assert result.message == (
        "Invalid topology: Number of partitions [2] of repartition topic [rep-r] doesn't match "
        "number of partitions [4] of the source topic."
    )
    assert isinstance(size_internal_topics(t, {"ext-l": 2, "up-l": 1, "up-r": 8}), InternalTopics)


def test_without_repartition_topics_kafka_does_not_check_joins_unless_strict() -> None:
    builder = TopologyBuilder("app").add_source("l", "left").add_source("r", "right")
    builder.add_processor("join", "l", "r").copartition("left", "right")
    t = builder.build()
    assert isinstance(size_internal_topics(t, {"left": 2, "right": 3}), InternalTopics)
    strict = size_internal_topics(t, {"left": 2, "right": 3}, strict=True)
    assert isinstance(strict, CopartitionFailure)
    assert strict.problem == "external_counts_differ"


@given(sized_topologies(), st.booleans())
def test_sizing_properties(case: tuple[Topology, dict[str, int]], strict: bool) -> None:
    t, counts = case
    result = size_internal_topics(t, counts, strict=strict)
    enforced = t.enforced_partitions
    checks_groups = strict or bool(enforced)
    assert isinstance(result, InternalTopics | CopartitionFailure)  # never missing, never stuck
    if isinstance(result, CopartitionFailure):
        assert checks_groups
        assert list(result.group) in kafka_copartition_groups(t.copartition_groups)
        if result.problem == "external_counts_differ":
            assert len({n for _, n in result.topics}) > 1
            assert all(counts[topic] == n for topic, n in result.topics)
        elif result.problem == "repartition_count_mismatch":
            ((topic, n),) = result.topics
            assert enforced[topic] == n != result.expected
        else:
            fixed = {n for topic, n in result.topics if enforced[topic] is not None}
            assert len(fixed) > 1
        return
    sources = result.source_partitions
    assert set(sources) == set(t.source_topics)
    assert all(n >= 1 for n in sources.values())
    assert set(result.repartition_partitions) == set(enforced)
    for topic, n in enforced.items():
        if n is not None:
            assert sources[topic] == n
    if checks_groups:  # the groups Kafka enforces (its merge can leave a declared group out)
        for group in kafka_copartition_groups(t.copartition_groups):
            assert len({sources[topic] for topic in group}) == 1, group
    # copartitioning overrides only unenforced topics of its groups, and nothing downstream
    before = sized(size_internal_topics(replace(t, copartition_groups=()), counts))
    grouped = {topic for group in t.copartition_groups for topic in group}
    for topic in enforced:
        if not (checks_groups and topic in grouped):
            assert sources[topic] == before.source_partitions[topic]
    # without groups, an unenforced topic is sized like one of its writers' inputs, and at
    # least like the largest of their external inputs
    for topic, n in enforced.items():
        if n is not None:
            continue
        writers = [s for s in t.subtopologies if topic in s.sink_topics]
        upstream = {before.source_partitions[u] for s in writers for u in s.source_topics}
        external = [counts[u] for s in writers for u in s.external_source_topics]
        assert before.source_partitions[topic] in upstream
        assert before.source_partitions[topic] >= max(external, default=0)


def downstream_of_a_join(first: str, second: str) -> Topology:
    """big(6) -> ``first``; ``first`` JOIN small(2) -> ``second``; ``second`` -> sub 2."""
    return topology(
        [
            {"id": 0, "source_topics": ["big"], "sink_topics": [first]},
            {"id": 1, "source_topics": [first, "small"], "sink_topics": [second]},
            {"id": 2, "source_topics": [second]},
        ],
        {first: None, second: None},
        [[first, "small"]],
    )


def test_copartitioning_does_not_resize_downstream_repartition_topics() -> None:
    """Kafka (checked with its own classes) visits subtopology 1 before 2 here: app-right is
    sized from app-left's computed 6; the join then cuts app-left to 2 but not app-right."""
    t = downstream_of_a_join("app-left", "app-right")
    assert [sub for sub, _ in sizing_order(t)] == [0, 1, 2]
    result = sized(size_internal_topics(t, {"big": 6, "small": 2}))
    assert result.repartition_partitions == {"app-left": 2, "app-right": 6}


def test_a_topic_visited_before_its_upstream_uses_only_what_is_known() -> None:
    """Other names, other hash order: Kafka visits subtopology 2 before 1, when app-rep-a has no
    count yet, so app-rep-b takes small's 2 (our old walk by id gave 6; Kafka's own classes
    agree on 2, see tests/conformance/test_topology_sizing.py)."""
    t = downstream_of_a_join("app-rep-a", "app-rep-b")
    assert [sub for sub, _ in sizing_order(t)] == [0, 2, 1]
    result = sized(size_internal_topics(t, {"big": 6, "small": 2}))
    assert result.repartition_partitions == {"app-rep-a": 2, "app-rep-b": 2}


def test_sizing_order_replays_java_hash_set_of_topics_infos() -> None:
    """TopicsInfo.hashCode packs the source set's hash over the changelog map's; a changelog
    moves the subtopology in the walk."""
    t = downstream_of_a_join("app-rep-a", "app-rep-b")
    assert [topics_info_hash(s) for s in t.subtopologies] == [
        java_topics_info_hash(["big"], []),
        java_topics_info_hash(["app-rep-a", "small"], []),
        java_topics_info_hash(["app-rep-b"], []),
    ]
    with_store = replace(t.subtopologies[2], changelog_topics=("app-s-changelog",))
    assert topics_info_hash(with_store) == java_topics_info_hash(["app-rep-b"], ["app-s-changelog"])
    assert topics_info_hash(with_store) != topics_info_hash(t.subtopologies[2])


def java_topics_info_hash(sources: list[str], changelogs: list[str]) -> int:
    """The same hash spelled out step by step as the Java source reads, with ctypes ints."""
    src = ctypes.c_int32(sum(string_hash(t) for t in sources)).value
    log = 0
    for name in changelogs:
        config = ctypes.c_int32(31 * (31 * (31 * 1 + string_hash(name)) + 0) + 1237).value
        log = ctypes.c_int32(log + (string_hash(name) ^ config)).value
    packed = ctypes.c_int64((src << 32) | (log & 0xFFFFFFFFFFFFFFFF)).value
    remainder = abs(packed) % 0xFFFFFFFF * (1 if packed >= 0 else -1)  # Java's % keeps the sign
    return ctypes.c_int32(remainder).value


@given(sized_topologies(), st.data())
def test_any_missing_external_topic_is_reported(
    case: tuple[Topology, dict[str, int]], data: st.DataObject
) -> None:
    t, counts = case
    gone = data.draw(st.sets(st.sampled_from(sorted(counts)), min_size=1))
    result = size_internal_topics(t, {k: v for k, v in counts.items() if k not in gone})
    assert isinstance(result, MissingSourceTopics)
    assert set(result.topics) == gone
    assert {topic for _, topics in result.by_subtopology for topic in topics} == gone


@pytest.mark.parametrize("strict", [False, True])
def test_sizing_does_not_touch_its_inputs(strict: bool) -> None:
    counts = {"orders": 8, "clicks": 3}
    t = chain()
    before = topology_to_data(t)
    size_internal_topics(t, counts, strict=strict)
    assert counts == {"orders": 8, "clicks": 3}
    assert topology_to_data(t) == before
