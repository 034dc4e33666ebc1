"""Repartition sizing and copartition enforcement equal Kafka 4.1.2's, on random topologies.

Each scenario is a list of builder steps run twice: by our ``TopologyBuilder`` +
``size_internal_topics`` and, in the harness JVM, by Kafka's ``InternalTopologyBuilder``
(``validateCopartition`` at build), ``RepartitionTopics.setup()`` and the real
``CopartitionedTopicsEnforcer`` (``TopologySizingOp.java``; only the cluster is stubbed). The
outcome must be identical: the same repartition counts, or the same failure with the same
message. Scenarios mix DAGs and cycles of repartition topics, chains, joins of repartition and
external topics, enforced counts, logged and table stores (they change Kafka's hash order),
overlapping copartition groups and missing input topics. Every mismatch names its seed; rerun
one with ``TOPOLOGY_SIZING_SEED=<seed>``.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import assignor.topology.internal_topics as internal_topics
from assignor.topology.builder import TopologyBuilder
from assignor.topology.copartition import kafka_copartition_groups, source_node_group
from assignor.topology.internal_topics import (
    CopartitionFailure,
    InternalTopics,
    MissingSourceTopics,
    RepartitionSizingFailed,
    size_internal_topics,
)
from assignor.topology.model import Topology, TopologyError
from tests.support.jvm import HarnessError, JavaHarness

APP = "app"
BATCH = 500
Scenario = dict[str, Any]


def random_scenario(seed: int) -> Scenario:
    """Builder steps (Kafka's vocabulary: raw internal topic names, copartitioned source nodes)
    and the cluster's partition counts, valid for both builders."""
    rng = random.Random(seed)
    steps: list[list[Any]] = []
    cluster: dict[str, int] = {}
    counts = rng.choice([[1, 2, 3, 4, 5, 6, 8], [2, 4], [3], [1, 8]])
    repartition = [f"r{i}-{rng.randrange(100)}" for i in range(rng.randint(0, 5))]
    unread = list(repartition)
    rng.shuffle(unread)
    sources: list[str] = []
    processors: list[str] = []
    groups = rng.randint(1, 6)
    for g in range(groups):
        names = []
        for s in range(rng.randint(1, 2)):
            topics = []
            for _ in range(rng.randint(1, 2)):
                if unread and (rng.random() < 0.6 or g == groups - 1):
                    topics.append(unread.pop())
                else:
                    topic = f"in{g}{s}-{rng.randrange(10_000)}"
                    if topic in cluster:
                        continue
                    cluster[topic] = rng.choice(counts)
                    topics.append(topic)
            if not topics:
                continue
            name = f"src{g}{s}-{rng.randrange(1000)}"
            steps.append(["source", name, *topics])
            names.append(name)
            sources.append(name)
        if not names:
            continue
        processor = f"proc{g}-{rng.randrange(1000)}"
        steps.append(["processor", processor, *names])
        processors.append(processor)
        roll = rng.random()
        if roll < 0.25:
            steps.append(["store", f"store{g}", rng.choice(["logged", "unlogged"]), processor])
        elif roll < 0.35:
            first = next(s for s in steps if s[0] == "source" and s[1] == names[0])
            external = [t for t in first[2:] if t in cluster]
            if external:
                steps.append(["table", f"table{g}", external[0], processor])
    while unread:  # every repartition topic is read by exactly one source
        name = f"late{len(unread)}-{rng.randrange(1000)}"
        steps.append(["source", name, unread.pop()])
        sources.append(name)
        processor = f"lateproc{len(unread)}-{rng.randrange(1000)}"
        steps.append(["processor", processor, name])
        processors.append(processor)
    writers = {topic: rng.sample(processors, rng.randint(1, min(2, len(processors))))
               for topic in repartition}
    for topic, procs in writers.items():
        for k, processor in enumerate(procs):
            steps.append(["sink", f"to-{topic}-{k}", topic, processor])
        roll = rng.random()
        steps.append(["internal", topic, rng.choice(counts) if roll < 0.3 else None])
    for _ in range(rng.choice([0, 1, 1, 2, 3, 6])):  # six: groups overlap and bridge often
        steps.append(["copartition", *rng.sample(sources, rng.randint(1, min(3, len(sources))))])
    if cluster and rng.random() < 0.05:
        del cluster[rng.choice(sorted(cluster))]
    return {"seed": seed, "application_id": APP, "steps": steps, "cluster": cluster}


def _full(topic: str, internal: set[str]) -> str:
    """Kafka prefixes an internal topic's raw name with the application id."""
    return f"{APP}-{topic}" if topic in internal else topic


def build(scenario: Scenario) -> Topology | TopologyError:
    """Our builder on the scenario's steps (Kafka's raw internal names get the app prefix)."""
    steps = scenario["steps"]
    internal = {s[1] for s in steps if s[0] == "internal"}
    builder = TopologyBuilder(APP)
    for kind, name, *args in steps:
        if kind == "source":
            builder.add_source(name, *(_full(t, internal) for t in args))
        elif kind == "processor":
            builder.add_processor(name, *args)
        elif kind == "sink":
            builder.add_sink(name, _full(args[0], internal), *args[1:])
        elif kind == "store":
            builder.add_state_store(name, *args[1:], logged=args[0] == "logged")
        elif kind == "table":
            builder.add_state_store(name, *args[1:], changelog_topic=args[0])
        elif kind == "internal":
            builder.add_repartition_topic(_full(name, internal), args[0])
        elif kind == "copartition":
            builder.copartition_sources(name, *args)
    try:
        return builder.build()
    except TopologyError as invalid:
        return invalid


def ours(scenario: Scenario) -> dict[str, Any]:
    """Our outcome, in the op's answer format."""
    topology = build(scenario)
    if isinstance(topology, TopologyError):
        return {"build_error": str(topology)}
    result = size_internal_topics(topology, scenario["cluster"])
    if isinstance(result, InternalTopics):
        return {"counts": dict(sorted(result.repartition_partitions.items()))}
    if isinstance(result, MissingSourceTopics):
        return {"missing": list(result.topics)}
    if isinstance(result, RepartitionSizingFailed):
        return {"error": f"TaskAssignmentException: {result.message}"}
    assert isinstance(result, CopartitionFailure)
    return {"error": f"TopologyException: {result.message}"}


def kafka(jvm: JavaHarness, scenarios: list[Scenario]) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = []
    for start in range(0, len(scenarios), BATCH):
        batch = scenarios[start : start + BATCH]
        payloads = [{k: v for k, v in s.items() if k != "seed"} for s in batch]
        for scenario, answer in zip(batch, jvm.call_many("topology_sizing", payloads), strict=True):
            if isinstance(answer, HarnessError):
                raise AssertionError(f"seed {scenario['seed']}: Java failed: {answer.java_error}")
            answers.append(answer)
    return answers


def mismatches(
    scenarios: list[Scenario],
    answers: list[dict[str, Any]],
    mine: Callable[[Scenario], dict[str, Any]] = ours,
) -> list[str]:
    found = []
    for scenario, answer in zip(scenarios, answers, strict=True):
        got = mine(scenario)
        if got != answer:
            found.append(f"seed {scenario['seed']}: kafka {answer} != ours {got}")
    return found


def _seeds(count: int) -> list[int]:
    override = os.environ.get("TOPOLOGY_SIZING_SEED")
    return [int(override)] if override else list(range(count))


@pytest.fixture(scope="module")
def sizing_runs(
    java_harness: JavaHarness, conformance_scenarios: int
) -> tuple[list[Scenario], list[dict[str, Any]]]:
    scenarios = [random_scenario(seed) for seed in _seeds(conformance_scenarios)]
    return scenarios, kafka(java_harness, scenarios)


def test_sizing_and_copartitioning_equal_kafka(
    sizing_runs: tuple[list[Scenario], list[dict[str, Any]]],
) -> None:
    scenarios, answers = sizing_runs
    found = mismatches(scenarios, answers)
    assert not found, f"{len(found)} of {len(scenarios)} differ:\n" + "\n".join(found[:20])


def test_scenarios_cover_every_outcome(
    sizing_runs: tuple[list[Scenario], list[dict[str, Any]]],
) -> None:
    """The comparison is not vacuous: every kind of outcome occurs, often."""
    scenarios, answers = sizing_runs
    if len(scenarios) < 1000:
        pytest.skip("coverage is judged on 1,000 scenarios or more")
    kinds = [next(iter(a)) for a in answers]
    errors = [a["error"].split(":")[0] for a in answers if "error" in a]
    assert kinds.count("counts") > len(kinds) // 3
    for kind in ("build_error", "missing", "error"):
        assert kinds.count(kind) >= 5, kind
    assert errors.count("TaskAssignmentException") >= 5
    assert errors.count("TopologyException") >= 5
    messages = {a["error"].split(": ", 2)[-1].split(" [")[0] for a in answers if "error" in a}
    assert len(messages) >= 4, messages


def test_scenarios_cover_every_shape(
    sizing_runs: tuple[list[Scenario], list[dict[str, Any]]],
) -> None:
    """Each promised shape occurs in at least 2% of the scenarios."""
    scenarios, _ = sizing_runs
    if len(scenarios) < 1000:
        pytest.skip("coverage is judged on 1,000 scenarios or more")
    seen = Counter(f for s in scenarios for f in features(s))
    shapes = {"chain", "cycle", "enforced", "store", "table", "overlapping groups",
              "bridging groups", "repartition joined with external"}
    assert {f: seen[f] for f in shapes if seen[f] < len(scenarios) // 50} == {}


def test_the_check_detects_walking_subtopologies_by_id(
    sizing_runs: tuple[list[Scenario], list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before issue 12 we sized in subtopology-id order: the differential check must see that."""
    scenarios, answers = sizing_runs
    if len(scenarios) < 1000:
        pytest.skip("judged on 1,000 scenarios or more")

    def by_id(topology: Any) -> list[tuple[int, list[str]]]:
        return [(s.id, list(s.repartition_source_topics)) for s in topology.subtopologies]

    monkeypatch.setattr(internal_topics, "sizing_order", by_id)
    assert mismatches(scenarios, answers)


def test_the_check_detects_merged_copartition_groups(
    sizing_runs: tuple[list[Scenario], list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Merging groups into their transitive closure (our old rule) differs from Kafka."""
    scenarios, answers = sizing_runs
    if len(scenarios) < 1000:
        pytest.skip("judged on 1,000 scenarios or more")

    def closure(groups: Any) -> list[list[str]]:
        merged: list[set[str]] = []
        for group in groups:
            current = set(group)
            keep = [m for m in merged if not m & current]
            for m in merged:
                if m & current:
                    current |= m
            merged = [*keep, current]
        return [sorted(g) for g in sorted(merged, key=sorted)]

    monkeypatch.setattr(internal_topics, "kafka_copartition_groups", closure)
    assert mismatches(scenarios, answers)


R1_R2 = [
    ["source", "src-a", "a1", "a2"],
    ["processor", "pa", "src-a"],
    ["sink", "to-r2", "r2", "pa"],
    ["source", "src-r2", "r2"],
    ["source", "src-b", "b"],
    ["processor", "join", "src-r2", "src-b"],
    ["sink", "to-r1", "r1", "join"],
    ["source", "src-r1", "r1"],
    ["processor", "pc", "src-r1"],
    ["internal", "r1", None],
    ["internal", "r2", None],
]


def test_the_realistic_r1_r2_case(java_harness: JavaHarness) -> None:
    """A reads two 8-partition topics and writes r2; B joins r2 with a 3-partition topic and
    writes r1; C reads r1. Kafka visits C before B, so r1 is sized from b alone: 3, not 8."""
    scenario = {"application_id": APP, "steps": R1_R2, "cluster": {"a1": 8, "a2": 8, "b": 3}}
    expected = {"counts": {"app-r1": 3, "app-r2": 8}}
    assert java_harness.call("topology_sizing", scenario) == expected
    assert ours(scenario) == expected
    # with the join declared, r2 follows b too
    joined = {**scenario, "steps": [*R1_R2, ["copartition", "src-r2", "src-b"]]}
    assert java_harness.call("topology_sizing", joined) == {"counts": {"app-r1": 3, "app-r2": 3}}
    assert ours(joined) == {"counts": {"app-r1": 3, "app-r2": 3}}


def test_overlapping_groups_are_checked_one_by_one_at_build(java_harness: JavaHarness) -> None:
    """{r1(4), r2(5)} and {r2, b}: merged, the group has an external topic and would wait for
    the assignment; Kafka rejects the first declared group when the topology is built, naming
    the topics by their raw names."""
    steps = [
        ["source", "src-a", "a"],
        ["processor", "p", "src-a"],
        ["sink", "k1", "r1", "p"],
        ["sink", "k2", "r2", "p"],
        ["source", "s1", "r1"],
        ["source", "s2", "r2"],
        ["source", "sb", "b"],
        ["processor", "j", "s1", "s2", "sb"],
        ["internal", "r1", 4],
        ["internal", "r2", 5],
        ["copartition", "s2", "sb"],
        ["copartition", "s1", "s2"],
    ]
    scenario = {"application_id": APP, "steps": steps, "cluster": {"a": 2, "b": 4}}
    expected = {
        "build_error": "Invalid topology: Following topics do not have the same number of "
        "partitions: [{r1=4, r2=5}]"
    }
    assert java_harness.call("topology_sizing", scenario) == expected
    assert ours(scenario) == expected


def test_kafka_merge_can_leave_a_declared_group_unchecked(java_harness: JavaHarness) -> None:
    """Kafka 4.1.2's merge is not a closure: a group joins the set of its first already placed
    topic only. Declared [a, b], [p, x], [p, a], [q, z], [q, b]: 'p' and 'q' (buckets 0 and 1)
    come first in their groups, so 'a' moves to p's set and 'b' to q's, and the set {a, b} is
    left out of the enforcement. a=2 and b=3 then pass, in Kafka and here."""
    topics = ["a", "b", "p", "x", "q", "z"]
    steps: list[list[Any]] = [["source", f"s-{t}", t] for t in topics]
    steps += [["processor", "join", *(f"s-{t}" for t in topics)]]
    steps += [["sink", "k", "rep", "join"], ["source", "s-rep", "rep"], ["processor", "c", "s-rep"]]
    steps += [["internal", "rep", None]]
    for group in (["a", "b"], ["p", "x"], ["p", "a"], ["q", "z"], ["q", "b"]):
        steps.append(["copartition", *(f"s-{t}" for t in group)])
    cluster = {"a": 2, "p": 2, "x": 2, "b": 3, "q": 3, "z": 3}
    scenario = {"application_id": APP, "steps": steps, "cluster": cluster}
    assert java_harness.call("topology_sizing", scenario) == {"counts": {"app-rep": 3}}
    assert ours(scenario) == {"counts": {"app-rep": 3}}
    # a true closure would have put all six topics in one group and failed
    cluster["b"] = cluster["q"] = cluster["z"] = 2
    assert java_harness.call("topology_sizing", scenario) == {"counts": {"app-rep": 2}}


def test_merged_copartition_groups_and_their_order_equal_kafkas(
    java_harness: JavaHarness, conformance_scenarios: int
) -> None:
    """Kafka's copartitionGroups() itself (merge quirk, set order, group order) against
    kafka_copartition_groups, on the scenarios that declare groups and build."""
    scenarios = [random_scenario(seed) for seed in _seeds(conformance_scenarios)]
    scenarios = [s for s in scenarios if any(step[0] == "copartition" for step in s["steps"])]
    payloads = [{**{k: v for k, v in s.items() if k != "seed"}, "report_groups": True}
                for s in scenarios]
    checked = 0
    for scenario, answer in zip(scenarios, java_harness.call_many("topology_sizing", payloads),
                                strict=True):
        assert not isinstance(answer, HarnessError), answer
        if "groups" not in answer:
            continue
        internal = {s[1] for s in scenario["steps"] if s[0] == "internal"}
        topics_of = {s[1]: [_full(t, internal) for t in s[2:]]
                     for s in scenario["steps"] if s[0] == "source"}
        declared = [source_node_group(s[1:], topics_of)
                    for s in scenario["steps"] if s[0] == "copartition"]
        assert kafka_copartition_groups(declared) == answer["groups"], scenario["seed"]
        checked += 1
    assert checked >= min(len(scenarios) // 2, 100)


def features(scenario: Scenario) -> set[str]:
    """What a scenario exercises (judged on our build of it), to hold the generator to its
    promise: chains and cycles of repartition topics, enforced counts, joins of repartition and
    external topics, overlapping and bridging copartition groups, logged and table stores."""
    steps = scenario["steps"]
    found = {s[0] for s in steps if s[0] in ("store", "table")}
    internal = {s[1] for s in steps if s[0] == "internal"}
    if any(s[0] == "internal" and s[2] is not None for s in steps):
        found.add("enforced")
    topics_of = {s[1]: [_full(t, internal) for t in s[2:]] for s in steps if s[0] == "source"}
    declared = [set(source_node_group(s[1:], topics_of)) for s in steps if s[0] == "copartition"]
    if any(a & b for i, a in enumerate(declared) for b in declared[i + 1 :]):
        found.add("overlapping groups")
    merged = kafka_copartition_groups([sorted(g) for g in declared])
    if any(set(a) & set(b) for i, a in enumerate(merged) for b in merged[i + 1 :]):
        found.add("bridging groups")
    repartition = {_full(t, internal) for t in internal}
    if any(g & repartition and g - repartition for g in declared):
        found.add("repartition joined with external")
    topology = build(scenario)
    if isinstance(topology, TopologyError):
        return found
    edges: dict[str, set[str]] = {}
    for sub in topology.subtopologies:
        for read in sub.repartition_source_topics:
            edges.setdefault(read, set()).update(sub.repartition_sink_topics)
    if any(edges.get(t) for t in edges):
        found.add("chain")
    for start in edges:  # a cycle: start reaches itself (bounded walk over finite topics)
        seen: set[str] = set()
        frontier = set(edges[start])
        while frontier - seen:
            seen |= frontier
            frontier = {n for t in frontier for n in edges.get(t, ())}
        if start in seen:
            found.add("cycle")
            break
    return found
