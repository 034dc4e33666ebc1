"""The topology builder: node grouping as Kafka does it, and the mistakes it refuses."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor.testing import Plan, topology_plans
from assignor.testing import build_plan as replay
from assignor.topology.builder import TopologyBuilder
from assignor.topology.copartition import kafka_copartition_groups
from assignor.topology.model import Topology, TopologyError, changelog_topic_name


def seed_figure_1() -> TopologyBuilder:
    """The node graph of the internals guide (seed 003): three sources, two node groups."""
    builder = TopologyBuilder("app")
    builder.add_source("source-node-1", "topic-1")
    builder.add_source("source-node-2", "topic-2")
    builder.add_source("source-node-3", "topic-3")
    builder.add_processor("processor-1", "source-node-1")
    builder.add_processor("processor-2", "source-node-2")
    builder.add_processor("processor-3", "source-node-3")
    builder.add_processor("processor-4", "processor-1", "processor-2")
    builder.add_sink("sink-1", "output-1", "processor-4")
    builder.add_sink("sink-2", "output-2", "processor-3")
    return builder


def node_sets(topology: Topology) -> dict[int, set[str]]:
    return {sub.id: set(sub.nodes) for sub in topology.subtopologies}


def test_seed_three_sources_make_two_node_groups() -> None:
    topology = seed_figure_1().build()
    assert node_sets(topology) == {
        0: {
            "source-node-1",
            "source-node-2",
            "processor-1",
            "processor-2",
            "processor-4",
            "sink-1",
        },
        1: {"source-node-3", "processor-3", "sink-2"},
    }
    assert topology.subtopology(0).source_topics == ("topic-1", "topic-2")
    assert topology.subtopology(0).sink_topics == ("output-1",)
    assert topology.subtopology(1).source_topics == ("topic-3",)


def test_seed_shared_store_merges_the_groups() -> None:
    builder = seed_figure_1()
    builder.add_state_store("store", "processor-4", "processor-3")
    topology = builder.build()
    (only,) = topology.subtopologies
    assert only.id == 0
    assert set(only.nodes) == {
        "source-node-1", "source-node-2", "source-node-3",
        "processor-1", "processor-2", "processor-3", "processor-4", "sink-1", "sink-2",
    }  # fmt: skip
    assert only.source_topics == ("topic-1", "topic-2", "topic-3")
    assert only.stores == ("store",)
    assert only.changelog_topics == ("app-store-changelog",)


def test_seed_common_descendant_joins_two_transformers() -> None:
    """Seed 003, code snippets 1 and 2: a dummy child of both transformers merges the groups."""
    builder = TopologyBuilder("app")
    builder.add_source("source-1", "topic-1").add_source("source-2", "topic-2")
    builder.add_processor("transformer-1", "source-1").add_processor("transformer-2", "source-2")
    builder.add_state_store("store-1", "transformer-1").add_state_store("store-2", "transformer-2")
    assert [s.source_topics for s in builder.build().subtopologies] == [("topic-1",), ("topic-2",)]
    builder.add_processor("dummy", "transformer-1", "transformer-2")
    (merged,) = builder.build().subtopologies
    assert merged.source_topics == ("topic-1", "topic-2")
    assert merged.changelog_topics == ("app-store-1-changelog", "app-store-2-changelog")


def test_ids_follow_insertion_order_of_each_groups_first_node() -> None:
    builder = TopologyBuilder("app")
    builder.add_source("b-source", "b")
    builder.add_source("a-source", "a")
    builder.add_processor("a-proc", "a-source")
    builder.add_processor("b-proc", "b-source")
    topology = builder.build()
    assert [(s.id, s.source_topics) for s in topology.subtopologies] == [(0, ("b",)), (1, ("a",))]


def test_repartition_topic_is_a_topic_the_application_writes_and_reads() -> None:
    builder = TopologyBuilder("app")
    builder.add_source("orders", "orders").add_processor("key-by-user", "orders")
    builder.add_sink("to-rep", "app-by-user-repartition", "key-by-user")
    builder.add_source("from-rep", "app-by-user-repartition").add_processor("count", "from-rep")
    builder.add_state_store("counts", "count")
    builder.add_sink("out", "totals", "count")
    topology = builder.build()
    upstream, downstream = topology.subtopologies
    assert upstream.repartition_sink_topics == ("app-by-user-repartition",)
    assert upstream.sink_topics == ("app-by-user-repartition",)
    assert downstream.repartition_source_topics == ("app-by-user-repartition",)
    assert downstream.external_source_topics == ()
    assert downstream.repartition_sink_topics == ()
    assert topology.enforced_partitions == {"app-by-user-repartition": None}
    assert topology.external_source_topics == {"orders"}
    assert not upstream.is_stateful and downstream.is_stateful


def test_enforced_repartition_count_is_kept() -> None:
    builder = TopologyBuilder("app").add_source("s", "in").add_processor("p", "s")
    builder.add_sink("k", "rep", "p").add_source("r", "rep").add_processor("q", "r")
    builder.add_repartition_topic("rep", partitions=6)
    assert builder.build().enforced_partitions == {"rep": 6}


def test_unlogged_store_has_no_changelog_and_a_source_can_serve_as_changelog() -> None:
    builder = TopologyBuilder("app").add_source("s", "table-topic").add_processor("p", "s")
    builder.add_state_store("cache", "p", logged=False)
    builder.add_state_store("table", "p", changelog_topic="table-topic")
    (sub,) = builder.build().subtopologies
    assert sub.stores == ("cache", "table")
    assert sub.changelog_topics == ("table-topic",)
    assert sub.source_changelog_topics == ("table-topic",)
    assert sub.created_changelog_topics == ()
    assert changelog_topic_name("app", "cache") == "app-cache-changelog"


def test_global_store_consumes_an_id_but_makes_no_subtopology() -> None:
    builder = TopologyBuilder("app")
    builder.add_global_store("countries", "global-source", "countries", "global-proc")
    builder.add_source("s", "in").add_processor("p", "s")
    (sub,) = builder.build().subtopologies
    assert sub.id == 1  # as in Kafka: the global group took id 0
    assert sub.source_topics == ("in",)
    with pytest.raises(TopologyError, match="Global state store countries"):
        builder.connect_processor_and_stores("p", "countries")


def test_connect_processor_and_stores_later() -> None:
    builder = seed_figure_1().add_state_store("store")
    with pytest.raises(TopologyError, match="store is not connected to any processor"):
        builder.build()
    builder.connect_processor_and_stores("processor-3", "store")
    builder.connect_processor_and_stores("processor-1", "store")
    assert len(builder.build().subtopologies) == 1


def test_copartition_groups_are_kept_as_declared() -> None:
    """Kafka merges groups only at assignment (and not into a full closure), so the frozen
    topology keeps each declared group, in order."""
    builder = TopologyBuilder("app")
    for topic in "abcd":
        builder.add_source(f"s-{topic}", topic)
    builder.copartition("a", "b").copartition("c", "d").copartition("b", "c")
    assert builder.build().copartition_groups == (("a", "b"), ("c", "d"), ("b", "c"))
    builder.copartition("x", "a")
    with pytest.raises(TopologyError, match="x is not a source topic") as caught:
        builder.build()
    assert caught.value.node == "x"


def test_join_of_repartition_topics_with_different_enforced_counts_is_refused_at_build() -> None:
    builder = TopologyBuilder("app").add_source("s", "in").add_processor("p", "s")
    builder.add_sink("k1", "r1", "p").add_sink("k2", "r2", "p")
    builder.add_source("t1", "r1").add_source("t2", "r2").add_processor("j", "t1", "t2")
    builder.add_repartition_topic("r1", 3).add_repartition_topic("r2", 4).copartition("r1", "r2")
    with pytest.raises(TopologyError) as caught:
        builder.build()
    assert str(caught.value) == (
        "Invalid topology: Following topics do not have the same number of partitions: "
        "[{r1=3, r2=4}]"
    )


@pytest.mark.parametrize(
    ("make", "node", "fragment"),
    [
        (lambda b: b.add_processor("p", "nowhere"), "p", "Parent node nowhere of p is unknown"),
        (lambda b: b.add_processor("src", "src"), "src", "already added"),
        (lambda b: b.add_processor("loop", "loop"), "loop", "cycle"),
        (lambda b: b.add_sink("k", "t", "k"), "k", "cycle"),
        (lambda b: b.add_processor("p"), "p", "has no parent"),
        (lambda b: b.add_source("empty"), "empty", "has no topics"),
        (lambda b: b.add_source("again", "in"), "again", "already been registered"),
        (lambda b: b.add_source("twice", "x", "x"), "twice", "already been registered"),
        (lambda b: b.add_processor("after", "sink"), "after", "Sink sink cannot be the parent"),
        (lambda b: b.add_state_store("st", "ghost"), "ghost", "Processor ghost is not added"),
        (lambda b: b.add_state_store("st", "src"), "src", "only processors use stores"),
        (
            lambda b: b.add_state_store("st", "proc", logged=False, changelog_topic="c"),
            "st",
            "not logged",
        ),
        (lambda b: b.connect_processor_and_stores("proc", "nope"), "nope", "not added yet"),
        (lambda b: b.add_repartition_topic("r", 0), "r", "at least one partition"),
    ],
)
def test_mistakes_name_the_node(make, node: str, fragment: str) -> None:  # type: ignore[no-untyped-def]
    builder = TopologyBuilder("app").add_source("src", "in").add_processor("proc", "src")
    builder.add_sink("sink", "out", "proc")
    with pytest.raises(TopologyError, match=fragment) as caught:
        make(builder)
    assert caught.value.node == node


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda b: b.add_state_store("lonely"), "State store lonely is not connected"),
        (lambda b: b.add_repartition_topic("out"), "Repartition topic out must be written"),
        (lambda b: b.add_repartition_topic("in"), "Repartition topic in must be written"),
    ],
)
def test_whole_topology_mistakes_are_found_by_build(make, fragment: str) -> None:  # type: ignore[no-untyped-def]
    builder = TopologyBuilder("app").add_source("src", "in").add_processor("proc", "src")
    builder.add_sink("sink", "out", "proc")
    make(builder)
    with pytest.raises(TopologyError, match=fragment):
        builder.build()


def test_duplicate_store_is_refused() -> None:
    builder = TopologyBuilder("app").add_source("s", "in").add_processor("p", "s")
    builder.add_state_store("st", "p")
    with pytest.raises(TopologyError, match="state store named st") as caught:
        builder.add_state_store("st", "p")
    assert caught.value.node == "st"


def components(plan: Plan) -> list[set[str]]:
    """Connected components of the plan's node graph, by breadth-first search: an oracle that
    shares no code with the builder's union-find."""
    edges: dict[str, set[str]] = {}
    order: list[str] = []
    store_users: dict[str, list[str]] = {}
    for step in plan.steps:
        if step.kind in {"source", "processor", "sink"}:
            order.append(step.name)
            edges.setdefault(step.name, set())
            parents = step.args[1:] if step.kind == "sink" else step.args
            if step.kind != "source":
                for parent in parents:
                    edges[step.name].add(parent)
                    edges[parent].add(step.name)
        elif step.kind == "store":
            store_users.setdefault(step.name, []).extend(step.args)
    for users in store_users.values():
        for a in users:
            for b in users:
                if a != b:
                    edges[a].add(b)
    seen: set[str] = set()
    result = []
    for start in order:  # components come out in the order of their first node
        if start in seen:
            continue
        component, frontier = {start}, [start]
        while frontier:
            for neighbour in edges[frontier.pop()]:
                if neighbour not in component:
                    component.add(neighbour)
                    frontier.append(neighbour)
        seen |= component
        result.append(component)
    return result


@given(topology_plans())
def test_subtopologies_are_the_connected_components_in_first_node_order(plan: Plan) -> None:
    topology = replay(plan)
    expected = {i: c for i, c in enumerate(components(plan))}
    assert node_sets(topology) == expected  # every group here has a source: none is dropped
    for sub in topology.subtopologies:
        assert list(sub.nodes) == [n for s in plan.steps for n in [s.name] if n in sub.nodes]


@given(topology_plans(), st.randoms(use_true_random=False))
def test_grouping_ignores_the_order_nodes_are_connected_in(plan: Plan, rng: random.Random) -> None:
    def shuffled(names: tuple[str, ...]) -> tuple[str, ...]:
        permuted = list(names)
        rng.shuffle(permuted)
        return tuple(permuted)

    original = replay(plan)
    reordered = replay(plan, reorder=shuffled)
    assert reordered == original
    assert node_sets(reordered) == node_sets(original)


@given(topology_plans())
def test_every_store_and_changelog_lives_in_exactly_one_subtopology(plan: Plan) -> None:
    topology = replay(plan)
    stores = [s for sub in topology.subtopologies for s in sub.stores]
    changelogs = [c for sub in topology.subtopologies for c in sub.changelog_topics]
    assert len(stores) == len(set(stores))
    assert len(changelogs) == len(set(changelogs))
    logged = {
        step.name for step in plan.steps if step.kind == "store" and dict(step.options)["logged"]
    }
    assert set(changelogs) == {f"app-{store}-changelog" for store in logged}
    assert set(stores) == {step.name for step in plan.steps if step.kind == "store"}


def test_overlapping_groups_are_checked_one_by_one_when_built() -> None:
    """Kafka's validateCopartition looks at each declared group alone: {r1, r2} (both enforced,
    4 and 5) is refused at once, although merged with {r2, b} it would have an external topic
    and be left to the assignment. The message names Kafka's raw (unprefixed) topic names."""
    builder = TopologyBuilder("app").add_source("s", "in").add_processor("p", "s")
    builder.add_sink("k1", "app-r1", "p").add_sink("k2", "app-r2", "p")
    builder.add_source("t1", "app-r1").add_source("t2", "app-r2").add_source("tb", "b")
    builder.add_processor("j", "t1", "t2", "tb")
    builder.add_repartition_topic("app-r1", 4).add_repartition_topic("app-r2", 5)
    builder.copartition_sources("t2", "tb").copartition_sources("t1", "t2")
    with pytest.raises(TopologyError) as caught:
        builder.build()
    assert str(caught.value) == (
        "Invalid topology: Following topics do not have the same number of partitions: "
        "[{r1=4, r2=5}]"
    )


def test_copartition_sources_takes_every_topic_of_the_nodes_in_kafkas_order() -> None:
    builder = TopologyBuilder("app").add_source("left", "l1", "l2").add_source("right", "r")
    builder.add_processor("j", "left", "right").copartition_sources("right", "left")
    # new HashSet<>(["right", "left"]) iterates "left" first (its hash lands in a lower bucket)
    assert builder.build().copartition_groups == (("l1", "l2", "r"),)
    with pytest.raises(TopologyError, match="j is not a source node"):
        builder.copartition_sources("j")


def test_kafka_merges_a_bridging_group_into_one_set_only() -> None:
    """{b, c} bridges {a, b} and {c, d}: Kafka adds it to the set of its first placed topic
    ('b', in HashSet order), so two overlapping sets remain, visited in their hash order."""
    groups = [("a", "b"), ("c", "d"), ("b", "c")]
    assert kafka_copartition_groups(groups) == [["a", "b", "c"], ["c", "d"]]
    assert kafka_copartition_groups([("x",), ("x", "y")]) == [["x", "y"]]
