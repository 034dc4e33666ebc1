"""Node grouping against the real thing: Kafka Streams' own ``Topology.describe()``.

Random processor-API topologies (sources, processors, sinks, shared and unlogged stores, stores
connected late, global stores) are built twice: by our ``TopologyBuilder`` and, in one JVM, by
``org.apache.kafka.streams.Topology`` of the pinned kafka-streams jar. Subtopology ids and the
nodes of each must agree, global stores included (they consume an id).

Needs java, javac and mvn (skips locally without them, fails in CI). ``CONFORMANCE_SCENARIOS``
sets the number of topologies (default 300).
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from assignor.topology.builder import TopologyBuilder
from assignor.topology.model import Topology
from tests.support.requirements import require_tools

pytestmark = pytest.mark.conformance

KAFKA_VERSION = "4.1.2"

POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>topology-grouping</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId>
      <version>{KAFKA_VERSION}</version>
    </dependency>
  </dependencies>
</project>
"""

# Reads one builder call per line, "end" closes a topology and prints its description as
# "sub <id> <node> <node> ..." and "global <id> <source> <processor>" lines, then "done".
JAVA = """
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Arrays;
import java.util.TreeSet;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

public class TopologyGrouping {
    static final class Noop<K, V, KO, VO> implements Processor<K, V, KO, VO> {
        @Override public void process(final Record<K, V> record) { }
    }

    static StoreBuilder<KeyValueStore<String, String>> store(final String name) {
        return Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore(name), Serdes.String(), Serdes.String());
    }

    public static void main(final String[] args) throws Exception {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        Topology topology = new Topology();
        final StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            final String[] f = line.trim().split(" ");
            final String[] rest3 = Arrays.copyOfRange(f, Math.min(3, f.length), f.length);
            switch (f[0]) {
                case "source":
                    topology.addSource(f[1], Arrays.copyOfRange(f, 2, f.length));
                    break;
                case "processor":
                    topology.addProcessor(f[1], Noop::new, Arrays.copyOfRange(f, 2, f.length));
                    break;
                case "sink":
                    topology.addSink(f[1], f[2], rest3);
                    break;
                case "store":
                    final StoreBuilder<KeyValueStore<String, String>> builder =
                        f[2].equals("logged") ? store(f[1]) : store(f[1]).withLoggingDisabled();
                    topology.addStateStore(builder, rest3);
                    break;
                case "connect":
                    topology.connectProcessorAndStateStores(
                        f[1], Arrays.copyOfRange(f, 2, f.length));
                    break;
                case "global":
                    topology.addGlobalStore(store(f[1]).withLoggingDisabled(), f[2],
                        Serdes.String().deserializer(), Serdes.String().deserializer(), f[3], f[4],
                        () -> new Noop<String, String, Void, Void>());
                    break;
                case "end":
                    final TopologyDescription description = topology.describe();
                    for (final TopologyDescription.Subtopology sub : description.subtopologies()) {
                        final TreeSet<String> names = new TreeSet<>();
                        for (final TopologyDescription.Node node : sub.nodes()) {
                            names.add(node.name());
                        }
                        out.append("sub ").append(sub.id()).append(' ')
                           .append(String.join(" ", names)).append('\\n');
                    }
                    for (final TopologyDescription.GlobalStore g : description.globalStores()) {
                        out.append("global ").append(g.id()).append(' ')
                           .append(g.source().name()).append(' ')
                           .append(g.processor().name()).append('\\n');
                    }
                    out.append("done\\n");
                    topology = new Topology();
                    break;
                default:
                    throw new IllegalArgumentException("unknown step: " + line);
            }
        }
        System.out.print(out);
    }
}
"""


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


@pytest.fixture(scope="module")
def java_grouping(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    require_tools("java", "javac", "mvn")
    work = tmp_path_factory.mktemp("topology-grouping")
    (work / "pom.xml").write_text(POM)
    classpath_file = work / "classpath.txt"
    subprocess.run(
        ["mvn", "-q", "-B", "dependency:build-classpath", f"-Dmdep.outputFile={classpath_file}"],
        cwd=work,
        check=True,
        timeout=600,
        capture_output=True,
    )
    classpath = classpath_file.read_text().strip()
    (work / "TopologyGrouping.java").write_text(JAVA)
    subprocess.run(
        ["javac", "-cp", classpath, "-d", str(work), str(work / "TopologyGrouping.java")],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return [str(work), classpath]


def test_subtopology_ids_and_nodes_match_kafka(java_grouping: list[str]) -> None:
    work, classpath = java_grouping
    count = int(os.environ.get("CONFORMANCE_SCENARIOS", "300"))
    rng = random.Random(20241025)
    plans = [random_plan(rng) for _ in range(min(count, 20_000))]
    script = "".join("".join(" ".join(s) + "\n" for s in p) + "end\n" for p in plans)
    result = subprocess.run(
        ["java", "-cp", f"{work}{os.pathsep}{classpath}", "TopologyGrouping"],
        input=script,
        text=True,
        capture_output=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answers = result.stdout.split("done\n")[:-1]
    assert len(answers) == len(plans)
    for steps, answer in zip(plans, answers, strict=True):
        mine = expected_lines(steps, ours(steps))
        assert sorted(answer.splitlines()) == sorted(mine), "\n".join(" ".join(s) for s in steps)


def test_the_harness_would_notice_a_difference(java_grouping: list[str]) -> None:
    """The comparison is not vacuous: a plan with two groups is two lines in Java's answer."""
    work, classpath = java_grouping
    script = "source a t1\nsource b t2\nprocessor p a\nend\n"
    result = subprocess.run(
        ["java", "-cp", f"{work}{os.pathsep}{classpath}", "TopologyGrouping"],
        input=script,
        text=True,
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert sorted(result.stdout.split("done\n")[0].splitlines()) == ["sub 0 a p", "sub 1 b"]


def test_generator_makes_varied_plans() -> None:
    rng = random.Random(1)
    plans = [random_plan(rng) for _ in range(200)]
    kinds = {step[0] for plan in plans for step in plan}
    assert kinds == {"source", "processor", "sink", "store", "connect", "global"}
    assert any(len(ours(p).subtopologies) > 2 for p in plans)
    assert Path(__file__).name.startswith("test_topology")
