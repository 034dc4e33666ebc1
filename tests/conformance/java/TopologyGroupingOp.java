import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

import java.util.Arrays;
import java.util.TreeSet;

/**
 * Node grouping by Kafka's public {@link Topology} API and {@link Topology#describe()}: which
 * nodes form which subtopology, and the id each group (global store groups included) gets.
 *
 * Request: {"steps": [[...], ...]} with steps ["source", name, topic...],
 * ["processor", name, parent...], ["sink", name, topic, parent...],
 * ["store", name, "logged"|"unlogged", processor...], ["connect", processor, store...],
 * ["global", store, source, topic, processor].
 * Answer: {"subtopologies": [[id, node...], ...] (nodes sorted),
 *          "globals": [[id, source, processor], ...]}.
 */
public final class TopologyGroupingOp implements Op {
    static final class Noop<K, V, KO, VO> implements Processor<K, V, KO, VO> {
        @Override
        public void process(final Record<K, V> record) {
        }
    }

    static StoreBuilder<KeyValueStore<String, String>> store(final String name) {
        return Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(name), Serdes.String(), Serdes.String());
    }

    static String[] words(final JsonNode step, final int from) {
        final String[] all = Json.strings(step).toArray(new String[0]);
        return Arrays.copyOfRange(all, Math.min(from, all.length), all.length);
    }

    @Override
    public JsonNode run(final JsonNode request) {
        final Topology topology = new Topology();
        for (final JsonNode step : Json.require(request, "steps")) {
            final String[] f = words(step, 0);
            switch (f[0]) {
                case "source":
                    topology.addSource(f[1], words(step, 2));
                    break;
                case "processor":
                    topology.addProcessor(f[1], Noop::new, words(step, 2));
                    break;
                case "sink":
                    topology.addSink(f[1], f[2], words(step, 3));
                    break;
                case "store":
                    topology.addStateStore(
                        f[2].equals("logged") ? store(f[1]) : store(f[1]).withLoggingDisabled(), words(step, 3));
                    break;
                case "connect":
                    topology.connectProcessorAndStateStores(f[1], words(step, 2));
                    break;
                case "global":
                    topology.addGlobalStore(store(f[1]).withLoggingDisabled(), f[2],
                        Serdes.String().deserializer(), Serdes.String().deserializer(), f[3], f[4],
                        () -> new Noop<String, String, Void, Void>());
                    break;
                default:
                    throw new IllegalArgumentException("unknown step: " + step);
            }
        }
        final TopologyDescription description = topology.describe();
        final ObjectNode result = Json.MAPPER.createObjectNode();
        final ArrayNode subs = result.putArray("subtopologies");
        for (final TopologyDescription.Subtopology sub : description.subtopologies()) {
            final TreeSet<String> names = new TreeSet<>();
            sub.nodes().forEach(node -> names.add(node.name()));
            final ArrayNode entry = subs.addArray().add(sub.id());
            names.forEach(entry::add);
        }
        final ArrayNode globals = result.putArray("globals");
        for (final TopologyDescription.GlobalStore g : description.globalStores()) {
            globals.addArray().add(g.id()).add(g.source().name()).add(g.processor().name());
        }
        return result;
    }
}
