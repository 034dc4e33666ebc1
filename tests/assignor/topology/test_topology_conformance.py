"""Node grouping against the real thing: Kafka Streams' own ``Topology.describe()``.

Random processor-API topologies (sources, processors, sinks, shared and unlogged stores, stores
connected late, global stores) are built twice: by our ``TopologyBuilder`` and, in the one
conformance harness JVM (op ``topology_grouping``, ``tests/conformance/java/
TopologyGroupingOp.java``), by ``org.apache.kafka.streams.Topology`` of the pinned kafka-streams
jar. Subtopology ids and the nodes of each must agree, global stores included (they consume an
id).

Needs java, javac and mvn (skips locally without them, fails in CI). ``CONFORMANCE_SCENARIOS``
sets the number of topologies (default 300, at most 20,000).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assignor.topology.builder import TopologyBuilder
from assignor.topology.model import Topology
from tests.support.jvm import HarnessError, JavaHarness, build_harness, scenario_count
from tests.support.requirements import require_tools

pytestmark = pytest.mark.conformance

def random_plan(rng: random.Random) -> list[list[str]]:
    """Builder calls, each a list of words, valid for both builders."""
    steps: list[list[str]] = []
    upstream: list[str] = []
    processors: list[str] = []
    stores: list[str] = []
    counter = 0

    def fresh(prefix: str) -> str:
        nonlocal counter
        counter += 1
        return f"{prefix}-{counter}"

    for _ in range(rng.randint(1, 5)):
        name = fresh("source")
        steps.append(["source", name, *(fresh("topic") for _ in range(rng.randint(1, 2)))])
        upstream.append(name)
        if rng.random() < 0.15:
            steps.append(
                ["global", fresh("gstore"), fresh("gsource"), fresh("gtopic"), fresh("gp")]
            )
    for _ in range(rng.randint(0, 10)):
        name = fresh("proc")
        parents = rng.sample(upstream, rng.randint(1, min(3, len(upstream))))
        steps.append(["processor", name, *parents])
        upstream.append(name)
        processors.append(name)
        roll = rng.random()
        if roll < 0.25:
            steps.append(["sink", fresh("sink"), fresh("out"), name])
        elif roll < 0.45:
            users = rng.sample(processors, rng.randint(0, min(3, len(processors))))
            store = fresh("store")
            stores.append(store)
            steps.append(["store", store, rng.choice(["logged", "unlogged"]), *users])
        elif roll < 0.55 and stores:
            steps.append(["connect", name, *rng.sample(stores, rng.randint(1, len(stores)))])
        elif roll < 0.65:
            name = fresh("source")  # a source added between processors
            steps.append(["source", name, fresh("topic")])
            upstream.append(name)
    # a store nobody uses is legal in Kafka but refused by our build(): give it a user
    used = {w for s in steps if s[0] == "connect" for w in s[2:]}
    used |= {s[1] for s in steps if s[0] == "store" and len(s) > 3}
    for store in stores:
        if store not in used:
            steps.append(["connect", rng.choice(processors), store])
    return steps


def ours(steps: list[list[str]]) -> Topology:
    builder = TopologyBuilder("app")
    for kind, name, *args in steps:
        if kind == "source":
            builder.add_source(name, *args)
        elif kind == "processor":
            builder.add_processor(name, *args)
        elif kind == "sink":
            builder.add_sink(name, args[0], *args[1:])
        elif kind == "store":
            builder.add_state_store(name, *args[1:], logged=args[0] == "logged")
        elif kind == "connect":
            builder.connect_processor_and_stores(name, *args)
        elif kind == "global":
            builder.add_global_store(name, args[0], args[1], args[2])
    return builder.build()


def expected_lines(steps: list[list[str]], topology: Topology) -> list[str]:
    lines = [f"sub {s.id} {' '.join(sorted(s.nodes))}" for s in topology.subtopologies]
    # our model keeps no global groups: their id is the one the subtopology ids skip
    taken = {s.id for s in topology.subtopologies}
    gaps = iter(i for i in range(len(taken) + 100) if i not in taken)
    for step in steps:
        if step[0] == "global":
            lines.append(f"global {next(gaps)} {step[2]} {step[4]}")
    return lines


def kafka_lines(answer: dict[str, Any]) -> list[str]:
    """The op's answer in the same line form as :func:`expected_lines`."""
    lines = [f"sub {sub[0]} {' '.join(sub[1:])}" for sub in answer["subtopologies"]]
    lines += [f"global {g[0]} {g[1]} {g[2]}" for g in answer["globals"]]
    return lines


@pytest.fixture(scope="module")
def java_harness() -> Iterator[JavaHarness]:
    """The one conformance harness (built once, cached), in a JVM for this module."""
    require_tools("java", "javac", "mvn")
    with JavaHarness(build_harness()) as harness:
        yield harness


def test_subtopology_ids_and_nodes_match_kafka(java_harness: JavaHarness) -> None:
    count = scenario_count(300)
    rng = random.Random(20241025)
    plans = [random_plan(rng) for _ in range(min(count, 20_000))]
    answers = java_harness.call_many("topology_grouping", [{"steps": p} for p in plans])
    assert len(answers) == len(plans)
    for steps, answer in zip(plans, answers, strict=True):
        assert not isinstance(answer, HarnessError), answer
        mine = expected_lines(steps, ours(steps))
        assert sorted(kafka_lines(answer)) == sorted(mine), "\n".join(" ".join(s) for s in steps)


def test_the_harness_would_notice_a_difference(java_harness: JavaHarness) -> None:
    """The comparison is not vacuous: a plan with two groups is two lines in Java's answer."""
    steps = [["source", "a", "t1"], ["source", "b", "t2"], ["processor", "p", "a"]]
    answer = java_harness.call("topology_grouping", {"steps": steps})
    assert sorted(kafka_lines(answer)) == ["sub 0 a p", "sub 1 b"]


def test_generator_makes_varied_plans() -> None:
    rng = random.Random(1)
    plans = [random_plan(rng) for _ in range(200)]
    kinds = {step[0] for plan in plans for step in plan}
    assert kinds == {"source", "processor", "sink", "store", "connect", "global"}
    assert any(len(ours(p).subtopologies) > 2 for p in plans)
    assert Path(__file__).name.startswith("test_topology")
