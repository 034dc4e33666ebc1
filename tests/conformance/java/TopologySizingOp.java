import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.TaskAssignmentException;
import org.apache.kafka.streams.errors.TopologyException;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.InternalTopicConfig;
import org.apache.kafka.streams.processor.internals.InternalTopicManager;
import org.apache.kafka.streams.processor.internals.InternalTopicProperties;
import org.apache.kafka.streams.processor.internals.InternalTopologyBuilder;
import org.apache.kafka.streams.processor.internals.RepartitionTopics;
import org.apache.kafka.streams.processor.internals.TopologyMetadata;
import org.apache.kafka.streams.processor.internals.assignment.CopartitionedTopicsEnforcer;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Kafka's own topology builder, repartition sizing and copartition enforcement on one topology.
 *
 * The steps drive {@link InternalTopologyBuilder} directly (the DSL's copartitionSources and
 * addInternalTopic are not on the public Topology API); then, as KafkaStreams and the leader do:
 * validateCopartition (what StreamsBuilder.build runs), rewriteTopology + buildTopology (which
 * records the changelog topics), and {@link RepartitionTopics#setup()} with the real
 * {@link CopartitionedTopicsEnforcer}. Only what touches a cluster is stubbed: the cluster
 * metadata is a {@link Cluster} built from the request, and the topic manager's makeReady (which
 * would create topics through an admin client) does nothing. Log prefixes are empty, so the
 * messages are the bare ones.
 *
 * Request: {"application_id": "app", "cluster": {"topic": partitions, ...}, "steps": [[...], ...]}
 * with steps ["source", name, topic...], ["processor", name, parent...],
 * ["sink", name, topic, parent...], ["store", name, "logged"|"unlogged", processor...],
 * ["table", store, topic, processor...] (an unlogged store whose changelog is source topic
 * `topic`), ["connect", processor, store...], ["internal", rawName, count|null],
 * ["copartition", sourceNode...].
 * Answer: {"build_error": msg} | {"missing": [topics]} | {"error": "Class: msg"} |
 * {"counts": {repartitionTopic: partitions}}. With "report_groups": true the answer also has
 * "groups": Kafka's merged copartition groups, in the order the enforcer visits them, each in its
 * set's iteration order (absent after a build error).
 */
public final class TopologySizingOp implements Op {
    static final class Noop<K, V> implements Processor<K, V, K, V> {
        @Override
        public void process(final Record<K, V> record) {
        }
    }

    /** The topic manager with its cluster side cut off: nothing to create, nothing to check. */
    static final class NoClusterTopicManager extends InternalTopicManager {
        NoClusterTopicManager(final StreamsConfig config) {
            super(Time.SYSTEM, null, config);
        }

        @Override
        public Set<String> makeReady(final Map<String, InternalTopicConfig> topics) {
            return Collections.emptySet();
        }
    }

    private static final Node BROKER = new Node(0, "localhost", 9092);

    static StoreBuilder<KeyValueStore<String, String>> store(final String name, final boolean logged) {
        final StoreBuilder<KeyValueStore<String, String>> builder = Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore(name), Serdes.String(), Serdes.String());
        return logged ? builder : builder.withLoggingDisabled();
    }

    static String[] tail(final JsonNode step, final int from) {
        final List<String> words = new ArrayList<>();
        for (int i = from; i < step.size(); i++) {
            words.add(step.get(i).asText());
        }
        return words.toArray(new String[0]);
    }

    static InternalTopologyBuilder build(final JsonNode steps) {
        final InternalTopologyBuilder builder = new InternalTopologyBuilder();
        final ProcessorSupplier<Object, Object, Object, Object> noop = Noop::new;
        for (final JsonNode step : steps) {
            final String kind = step.get(0).asText();
            final String name = step.get(1).asText();
            switch (kind) {
                case "source":
                    builder.addSource(null, name, null, null, null, tail(step, 2));
                    break;
                case "processor":
                    builder.addProcessor(name, noop, tail(step, 2));
                    break;
                case "sink":
                    builder.addSink(name, step.get(2).asText(), null, null, null, tail(step, 3));
                    break;
                case "store":
                    builder.addStateStore(store(name, "logged".equals(step.get(2).asText())), tail(step, 3));
                    break;
                case "table":
                    builder.addStateStore(store(name, false), tail(step, 3));
                    builder.connectSourceStoreAndTopic(name, step.get(2).asText());
                    break;
                case "connect":
                    builder.connectProcessorAndStateStores(name, tail(step, 2));
                    break;
                case "internal":
                    final JsonNode count = step.get(2);
                    builder.addInternalTopic(name, new InternalTopicProperties(
                        count == null || count.isNull() ? null : count.asInt()));
                    break;
                case "copartition":
                    builder.copartitionSources(Arrays.asList(tail(step, 1)));
                    break;
                default:
                    throw new IllegalArgumentException("unknown step " + step);
            }
        }
        return builder;
    }

    static Cluster cluster(final JsonNode counts) {
        final List<PartitionInfo> partitions = new ArrayList<>();
        counts.fields().forEachRemaining(entry -> {
            for (int p = 0; p < entry.getValue().asInt(); p++) {
                partitions.add(new PartitionInfo(entry.getKey(), p, BROKER, new Node[0], new Node[0]));
            }
        });
        return new Cluster("cluster", List.of(BROKER), partitions, Set.of(), Set.of());
    }

    @Override
    public JsonNode run(final JsonNode request) {
        final ObjectNode result = Json.MAPPER.createObjectNode();
        final InternalTopologyBuilder builder = build(Json.require(request, "steps"));
        try {
            builder.validateCopartition();
        } catch (final TopologyException invalid) {
            result.put("build_error", invalid.getMessage());
            return result;
        }
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, Json.require(request, "application_id").asText());
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
        final StreamsConfig config = new StreamsConfig(props);
        builder.rewriteTopology(config);
        builder.buildTopology();
        final TopologyMetadata metadata = new TopologyMetadata(builder, config);
        if (request.path("report_groups").asBoolean(false)) {
            final com.fasterxml.jackson.databind.node.ArrayNode groups = result.putArray("groups");
            for (final Set<String> group : metadata.copartitionGroups()) {
                final com.fasterxml.jackson.databind.node.ArrayNode entry = groups.addArray();
                group.forEach(entry::add);
            }
        }
        final RepartitionTopics repartition = new RepartitionTopics(
            metadata,
            new NoClusterTopicManager(config),
            new CopartitionedTopicsEnforcer(""),
            cluster(Json.require(request, "cluster")),
            "");
        try {
            repartition.setup();
        } catch (final TaskAssignmentException | TopologyException failed) {
            result.put("error", failed.getClass().getSimpleName() + ": " + failed.getMessage());
            return result;
        }
        if (!repartition.missingSourceTopics().isEmpty()) {
            final TreeSet<String> missing = new TreeSet<>(repartition.missingSourceTopics());
            missing.forEach(result.putArray("missing")::add);
            return result;
        }
        final TreeMap<String, Integer> counts = new TreeMap<>();
        repartition.topicPartitionsInfo().keySet().forEach(tp -> counts.merge(tp.topic(), 1, Integer::sum));
        final ObjectNode out = result.putObject("counts");
        counts.forEach(out::put);
        return result;
    }
}
