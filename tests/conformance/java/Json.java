import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ProcessId;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * Shared JSON conventions of every op, so the Python side has one encoding: a task is its printed
 * form ("0_3", "name__0_3"), a process is its UUID string, a lag/offset map is {"0_3": 12}.
 */
public final class Json {
    public static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {
    }

    public static TaskId task(final JsonNode node) {
        return TaskId.parse(node.asText());
    }

    /** Tasks in the order the JSON array lists them. */
    public static List<TaskId> tasks(final JsonNode array) {
        final List<TaskId> result = new ArrayList<>(array.size());
        for (final JsonNode node : array) {
            result.add(task(node));
        }
        return result;
    }

    public static ProcessId process(final JsonNode node) {
        return new ProcessId(UUID.fromString(node.asText()));
    }

    /** {"0_1": 5, ...} as a TreeMap (sorted, so Java iteration does not depend on JSON order). */
    public static TreeMap<TaskId, Long> taskLongs(final JsonNode object) {
        final TreeMap<TaskId, Long> result = new TreeMap<>();
        object.fields().forEachRemaining(e -> result.put(TaskId.parse(e.getKey()), e.getValue().asLong()));
        return result;
    }

    public static List<String> strings(final JsonNode array) {
        final List<String> result = new ArrayList<>(array.size());
        for (final JsonNode node : array) {
            result.add(node.asText());
        }
        return result;
    }

    /** Tasks as a JSON array of strings, in the collection's own iteration order. */
    public static ArrayNode taskArray(final Collection<TaskId> tasks) {
        final ArrayNode array = MAPPER.createArrayNode();
        for (final TaskId task : tasks) {
            array.add(task.toString());
        }
        return array;
    }

    /** {key: [tasks...]} keeping each list's order. */
    public static ObjectNode taskLists(final Map<String, ? extends Collection<TaskId>> byKey) {
        final ObjectNode object = MAPPER.createObjectNode();
        for (final Map.Entry<String, ? extends Collection<TaskId>> entry : byKey.entrySet()) {
            object.set(entry.getKey(), taskArray(entry.getValue()));
        }
        return object;
    }

    public static JsonNode require(final JsonNode request, final String field) {
        final JsonNode node = request.get(field);
        if (node == null || node.isNull()) {
            throw new IllegalArgumentException("request has no field \"" + field + "\"");
        }
        return node;
    }
}
