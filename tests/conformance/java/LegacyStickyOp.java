import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.assignment.ClientState;
import org.apache.kafka.streams.processor.internals.assignment.FallbackPriorTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.LegacyTaskAssignor;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Kafka's LegacyStickyTaskAssignor, or FallbackPriorTaskAssignor with "fallback": true.
 *
 * The client map is a HashMap filled in request order; the sets of all and of stateful tasks
 * are HashSets filled in task order (the assumption the Python replay of Java's hash orders
 * makes). No rack-aware assignor (strategy none).
 *
 * Request: {"clients": [{"process": uuid, "capacity": n, "prev_active": [..], "prev_standby": [..]}],
 *           "all_tasks": [..], "stateful_tasks": [..], "standbys": n, "fallback": bool}
 * Answer:  {"probing": bool, "clients": {uuid: {"active": [sorted], "standby": [sorted]}}}
 */
public final class LegacyStickyOp implements Op {
    @Override
    public JsonNode run(final JsonNode request) {
        final Set<TaskId> allTasks = new HashSet<>();
        allTasks.addAll(new TreeSet<>(Json.tasks(Json.require(request, "all_tasks"))));
        final Set<TaskId> statefulTasks = new HashSet<>();
        statefulTasks.addAll(new TreeSet<>(Json.tasks(Json.require(request, "stateful_tasks"))));
        final Map<TaskId, Long> lags = new TreeMap<>();
        for (final TaskId task : statefulTasks) {
            lags.put(task, 0L);
        }

        final Map<ProcessId, ClientState> clients = new HashMap<>();
        for (final JsonNode client : Json.require(request, "clients")) {
            final ProcessId process = Json.process(Json.require(client, "process"));
            clients.put(process, new ClientState(
                new HashSet<>(Json.tasks(client.path("prev_active"))),
                new HashSet<>(Json.tasks(client.path("prev_standby"))),
                lags,
                Collections.emptyMap(),
                Json.require(client, "capacity").asInt(),
                process));
        }
        final AssignmentConfigs configs = new AssignmentConfigs(
            0L, 1, request.path("standbys").asInt(0), 60_000L, Collections.emptyList());
        final LegacyTaskAssignor assignor = request.path("fallback").asBoolean(false)
            ? new FallbackPriorTaskAssignor() : new LegacyStickyTaskAssignor();
        final boolean probing = assignor.assign(clients, allTasks, statefulTasks, null, configs);

        final ObjectNode result = Json.MAPPER.createObjectNode();
        result.put("probing", probing);
        final ObjectNode byClient = result.putObject("clients");
        for (final Map.Entry<ProcessId, ClientState> entry : clients.entrySet()) {
            final ObjectNode one = byClient.putObject(entry.getKey().id().toString());
            one.set("active", Json.taskArray(new TreeSet<>(entry.getValue().activeTasks())));
            one.set("standby", Json.taskArray(new TreeSet<>(entry.getValue().standbyTasks())));
        }
        return result;
    }
}
