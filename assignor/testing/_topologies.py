"""Strategies for topologies (builder calls as data, built, data form) and cluster metadata."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import strategies as st

from assignor.topology.builder import TopologyBuilder
from assignor.topology.data_form import topology_to_data
from assignor.topology.model import Topology, TopologyError

T = TypeVar("T")


# -- topologies and cluster metadata ------------------------------------------------------------

APPLICATION_ID = "app"


@dataclass(frozen=True)
class Step:
    """One builder call: ``kind`` is the method, ``name`` the node or store, ``args`` the rest."""

    kind: str
    name: str
    args: tuple[str, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    external_topics: tuple[str, ...]
    repartition_topics: tuple[str, ...] = field(default=())


def build_plan(plan: Plan, *, reorder: Any = None) -> Topology:
    """Build the plan; ``reorder`` (a function on tuples) may permute every parent list and
    every store's processor list, which must not change the result."""
    shuffle = reorder or (lambda names: names)
    builder = TopologyBuilder(APPLICATION_ID)
    for step in plan.steps:
        options = dict(step.options)
        if step.kind == "source":
            builder.add_source(step.name, *step.args)
        elif step.kind == "processor":
            builder.add_processor(step.name, *shuffle(step.args))
        elif step.kind == "sink":
            topic, *parents = step.args
            builder.add_sink(step.name, topic, *shuffle(tuple(parents)))
        elif step.kind == "store":
            builder.add_state_store(step.name, *shuffle(step.args), **options)
        elif step.kind == "repartition":
            builder.add_repartition_topic(step.name, **options)
        elif step.kind == "copartition":
            builder.copartition(*step.args)
        else:  # pragma: no cover - a plan is made only by the strategies below
            raise AssertionError(step.kind)
    return builder.build()


@st.composite
def topology_plans(
    draw: st.DrawFn,
    *,
    max_sources: int = 5,
    max_processors: int = 8,
    max_repartitions: int = 3,
    enforce: bool = True,
    copartition: bool = True,
) -> Plan:
    """A random but valid plan: every store is used, every repartition topic written and read."""
    steps: list[Step] = []
    upstream: list[str] = []  # sources and processors: what a child may name as parent
    processors: list[str] = []
    external: list[str] = []
    source_topics: list[str] = []

    def add_source(topics: tuple[str, ...]) -> None:
        name = f"source-{len(steps)}"
        steps.append(Step("source", name, topics))
        upstream.append(name)
        source_topics.extend(topics)

    for index in range(draw(st.integers(1, max_sources))):
        topics = tuple(f"in-{index}-{k}" for k in range(draw(st.integers(1, 2))))
        external.extend(topics)
        add_source(topics)

    repartitions: list[str] = []
    for index in range(draw(st.integers(0, max_processors))):
        parents = draw(st.lists(st.sampled_from(upstream), min_size=1, max_size=3, unique=True))
        name = f"processor-{index}"
        steps.append(Step("processor", name, tuple(parents)))
        upstream.append(name)
        processors.append(name)
        action = draw(st.sampled_from(["none", "none", "sink", "repartition", "store"]))
        if action == "sink":
            steps.append(Step("sink", f"sink-{index}", (f"out-{index}", name)))
        elif action == "repartition" and len(repartitions) < max_repartitions:
            topic = f"{APPLICATION_ID}-rep-{len(repartitions)}-repartition"
            repartitions.append(topic)
            steps.append(Step("sink", f"sink-{index}", (topic, name)))
            add_source((topic,))
            if enforce and draw(st.booleans()) and draw(st.booleans()):
                count = draw(st.integers(1, 6))
                steps.append(Step("repartition", topic, (), (("partitions", count),)))
        elif action == "store":
            users = draw(st.lists(st.sampled_from(processors), min_size=1, max_size=3, unique=True))
            logged = draw(st.booleans()) or draw(st.booleans())
            steps.append(Step("store", f"store-{index}", tuple(users), (("logged", logged),)))

    if copartition and len(source_topics) >= 2:
        for _ in range(draw(st.integers(0, 2))):
            group = draw(
                st.lists(st.sampled_from(source_topics), min_size=2, max_size=3, unique=True)
            )
            steps.append(Step("copartition", "", tuple(group)))
    plan = Plan(tuple(steps), tuple(external), tuple(repartitions))
    try:
        build_plan(plan)
    except TopologyError:
        # only a join of repartition topics with different enforced counts is refused at
        # build time; keep the plan without its joins
        plan = Plan(
            tuple(s for s in steps if s.kind != "copartition"),
            plan.external_topics,
            plan.repartition_topics,
        )
    return plan


def topologies(**kwargs: Any) -> st.SearchStrategy[Topology]:
    return topology_plans(**kwargs).map(build_plan)


def partition_counts(
    topics: Sequence[str], *, max_partitions: int = 8
) -> st.SearchStrategy[dict[str, int]]:
    """Cluster metadata for ``topics``: each gets 1..max_partitions partitions."""
    return st.fixed_dictionaries({topic: st.integers(1, max_partitions) for topic in topics})


@st.composite
def sized_topologies(
    draw: st.DrawFn, /, *, max_partitions: int = 8, **kwargs: Any
) -> tuple[Topology, dict[str, int]]:
    """A topology and metadata in which every external source topic exists."""
    topology = draw(topologies(**kwargs))
    counts = draw(
        partition_counts(sorted(topology.external_source_topics), max_partitions=max_partitions)
    )
    return topology, counts


def topology_data(**kwargs: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Topologies in their JSON-ready data form (``topology_from_data`` reads them back)."""
    return topologies(**kwargs).map(topology_to_data)
