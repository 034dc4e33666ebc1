import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ProcessId;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * The JDK's own iteration orders, to check assignor/java_order.py directly.
 *
 * Request: {"kind": "task"|"process", "items": [..], "presized": bool, "remove": [..],
 *           "iter_remove": [.. removed through the iterator, as retainAll does],
 *           "poll": n, "pq_remove": [..]}
 * Answer:  {"set": [set order after adds and removes],
 *           "queue": [PriorityQueue built from that set, after n polls and the removes, array order]}
 * (the queue part only for tasks).
 */
public final class JavaOrderOp implements Op {
    @Override
    public JsonNode run(final JsonNode request) {
        final boolean tasks = "task".equals(request.path("kind").asText("task"));
        final List<Object> items = new ArrayList<>();
        for (final JsonNode node : Json.require(request, "items")) {
            items.add(tasks ? Json.task(node) : Json.process(node));
        }
        final Set<Object> set = request.path("presized").asBoolean(false) ? new HashSet<>(items) : new HashSet<>();
        set.addAll(items);
        for (final JsonNode node : request.path("remove")) {
            set.remove(tasks ? Json.task(node) : Json.process(node));
        }
        final Set<Object> viaIterator = new HashSet<>();
        for (final JsonNode node : request.path("iter_remove")) {
            viaIterator.add(tasks ? Json.task(node) : Json.process(node));
        }
        set.removeIf(viaIterator::contains);
        final ObjectNode result = Json.MAPPER.createObjectNode();
        final ArrayNode order = result.putArray("set");
        for (final Object item : set) {
            order.add(item instanceof ProcessId ? ((ProcessId) item).id().toString() : item.toString());
        }
        if (tasks) {
            @SuppressWarnings("unchecked")
            final PriorityQueue<TaskId> queue = new PriorityQueue<>((Collection<TaskId>) (Collection<?>) set);
            for (int i = request.path("poll").asInt(0); i > 0; i--) {
                queue.poll();
            }
            for (final JsonNode node : request.path("pq_remove")) {
                queue.remove(Json.task(node));
            }
            result.set("queue", Json.taskArray(queue));
        }
        return result;
    }
}
