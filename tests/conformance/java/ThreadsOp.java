import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor;
import org.apache.kafka.streams.processor.internals.assignment.ClientState;

import java.lang.reflect.Method;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Kafka's own tasks-to-threads distribution for one client. The client is built through
 * ClientState's public API exactly as the leader builds it (capacity per consumer, offset sums per
 * consumer, lags from end offsets, assigned actives and standbys), then the package-private static
 * StreamsPartitionAssignor.assignTasksToThreads is invoked by reflection three times, with the
 * same collections and shared load map that computeNewAssignment passes.
 *
 * Request: {"process": uuid, "consumers": [..], "offset_sums": {consumer: {task: sum}},
 *           "end_offset_sums": {task: sum}, "active": [..], "standby": [..]}
 * Answer:  {"stateful": {consumer: [..]}, "standby": {..}, "stateless": {..}}
 */
public final class ThreadsOp implements Op {
    private final Method assignTasksToThreads;

    public ThreadsOp() throws NoSuchMethodException {
        assignTasksToThreads = StreamsPartitionAssignor.class.getDeclaredMethod(
            "assignTasksToThreads", Collection.class, boolean.class, SortedSet.class, ClientState.class, Map.class);
        assignTasksToThreads.setAccessible(true);
    }

    @Override
    public JsonNode run(final JsonNode request) throws Exception {
        final ProcessId process = Json.process(Json.require(request, "process"));
        final List<String> consumerList = Json.strings(Json.require(request, "consumers"));
        final JsonNode offsetSums = Json.require(request, "offset_sums");

        final ClientState state = new ClientState(process, Collections.emptyMap());
        for (final String consumer : consumerList) {
            state.incrementCapacity();
            final JsonNode sums = offsetSums.get(consumer);
            state.addPreviousTasksAndOffsetSums(
                consumer, sums == null ? new HashMap<>() : new HashMap<>(Json.taskLongs(sums)));
        }
        state.computeTaskLags(process, Json.taskLongs(Json.require(request, "end_offset_sums")));
        state.assignActiveTasks(Json.tasks(Json.require(request, "active")));
        state.assignStandbyTasks(Json.tasks(Json.require(request, "standby")));

        final SortedSet<String> consumers = new TreeSet<>(consumerList);
        final Map<String, Integer> threadLoad = new HashMap<>();
        final ObjectNode result = Json.MAPPER.createObjectNode();
        result.set("stateful", Json.taskLists(call(state.statefulActiveTasks(), true, consumers, state, threadLoad)));
        result.set("standby", Json.taskLists(call(state.standbyTasks(), true, consumers, state, threadLoad)));
        result.set("stateless", Json.taskLists(call(state.statelessActiveTasks(), false, consumers, state, threadLoad)));
        return result;
    }

    @SuppressWarnings("unchecked")
    private Map<String, List<TaskId>> call(final Collection<TaskId> tasks,
                                           final boolean stateful,
                                           final SortedSet<String> consumers,
                                           final ClientState state,
                                           final Map<String, Integer> threadLoad) throws Exception {
        return (Map<String, List<TaskId>>) assignTasksToThreads.invoke(null, tasks, stateful, consumers, state, threadLoad);
    }
}
