import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.IntNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.assignment.AssignmentInfo;
import org.apache.kafka.streams.processor.internals.assignment.StreamsAssignmentProtocolVersions;
import org.apache.kafka.streams.processor.internals.assignment.SubscriptionInfo;
import org.apache.kafka.streams.state.HostInfo;

/**
 * The byte size of Kafka Streams' own encoding, at its latest version, of one message described
 * in the request, so the Python size formula (tests/protocol/sizes.py) is checked against the
 * real encoder rather than against itself.
 *
 * Request: {"kind": "subscription", "process_id": uuid, "endpoint": "host:port" | null,
 *           "sums": [[subtopology, partition, topology | null, sum], ..], "unique": int,
 *           "error": int, "tags": {key: value}}
 *       or {"kind": "assignment", "active": [[subtopology, partition, topology | null], ..],
 *           "standby": [[subtopology, partition, topology | null, [[topic, partition], ..]], ..],
 *           "hosts": [[host, port, [[topic, partition], ..]], ..], "standby_hosts": [..],
 *           "error": int, "next_ms": long}
 * Answer:  the size in bytes.
 */
public final class WireSizeOp implements Op {
    @Override
    public JsonNode run(final JsonNode message) {
        final int size = "subscription".equals(message.get("kind").asText())
            ? subscription(message) : assignment(message);
        return IntNode.valueOf(size);
    }

    private static TaskId task(final JsonNode ints) {
        final String topology = ints.get(2).isNull() ? null : ints.get(2).asText();
        return new TaskId(ints.get(0).asInt(), ints.get(1).asInt(), topology);
    }

    private static Set<TopicPartition> partitions(final JsonNode list) {
        final Set<TopicPartition> out = new HashSet<>();
        for (final JsonNode tp : list) {
            out.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
        }
        return out;
    }

    private static Map<HostInfo, Set<TopicPartition>> hosts(final JsonNode list) {
        final Map<HostInfo, Set<TopicPartition>> out = new HashMap<>();
        for (final JsonNode host : list) {
            out.put(new HostInfo(host.get(0).asText(), host.get(1).asInt()), partitions(host.get(2)));
        }
        return out;
    }

    private static int subscription(final JsonNode m) {
        final Map<TaskId, Long> sums = new HashMap<>();
        for (final JsonNode entry : m.get("sums")) {
            sums.put(task(entry), entry.get(3).asLong());
        }
        final Map<String, String> tags = new HashMap<>();
        m.get("tags").fields().forEachRemaining(e -> tags.put(e.getKey(), e.getValue().asText()));
        final String endpoint = m.get("endpoint").isNull() ? null : m.get("endpoint").asText();
        final SubscriptionInfo info = new SubscriptionInfo(
            StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION,
            StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION,
            new ProcessId(UUID.fromString(m.get("process_id").asText())),
            endpoint,
            sums,
            (byte) m.get("unique").asInt(),
            m.get("error").asInt(),
            tags);
        return info.encode().remaining();
    }

    private static int assignment(final JsonNode m) {
        final List<TaskId> active = new ArrayList<>();
        for (final JsonNode entry : m.get("active")) {
            active.add(task(entry));
        }
        final Map<TaskId, Set<TopicPartition>> standby = new HashMap<>();
        for (final JsonNode entry : m.get("standby")) {
            standby.put(task(entry), partitions(entry.get(3)));
        }
        final AssignmentInfo info = new AssignmentInfo(
            StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION,
            StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION,
            active,
            standby,
            hosts(m.get("hosts")),
            hosts(m.get("standby_hosts")),
            m.get("error").asInt());
        info.setNextRebalanceTime(m.get("next_ms").asLong());
        return info.encode().remaining();
    }
}
