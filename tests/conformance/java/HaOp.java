import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor;
import org.apache.kafka.streams.processor.internals.assignment.ClientState;
import org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.RackAwareTaskAssignor;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Kafka's HighAvailabilityTaskAssignor on scenarios sent by the Python conformance test and bench.
 *
 * Request {"scenarios": [scenario, ...]} (or one scenario inline); a scenario is
 *   {"clients": [{"pid": uuid, "consumers": [{"id": str, "offsets": {task: sum}}], "tags": {k: v}}],
 *    "tasks": [task...], "stateful": [task...], "end": {task: endOffsetSum},
 *    "config": {"acceptable.recovery.lag": .., "max.warmup.replicas": .., "num.standby.replicas": ..,
 *               "probing.rebalance.interval.ms": .., "rack.aware.assignment.tags": [..]}}
 * Client states are built with Kafka's own ClientState bookkeeping (addPreviousTasksAndOffsetSums,
 * initializePrevTasks, computeTaskLags), so the lag rules are Kafka's too.
 *
 * Answer per scenario: {"clients": {pid: {"active": [...], "standby": [...], "warmups": [...]}},
 * "probing": bool}. Warm-ups are the assignor's internal bookkeeping, so the scenario is run twice:
 * once through the public assign() (active, standby, probing), once step by step through the same
 * private methods assign() calls (reflection) to read the warm-up map; the two must agree.
 *
 * With "bench": {"warmup": n, "runs": m} the op instead times assign() (fresh client states each
 * run, built outside the timed region) and answers {"millis": [...]} for the m measured runs. In
 * the same runs it then times the leader's next step, spreading each client's tasks over its
 * threads: the package-private StreamsPartitionAssignor.assignTasksToThreads (reflection, as in
 * ThreadsOp), called per client for stateful actives, standbys and stateless actives with one
 * shared thread-load map, as computeNewAssignment does; those times are "threads_millis".
 */
public final class HaOp implements Op {
    private static final String PKG = "org.apache.kafka.streams.processor.internals.assignment.";
    private final Method activeStateful;
    private final Method standbyReplicas;
    private final Method caughtUp;
    private final Method byLag;
    private final Method activeMovements;
    private final Method standbyMovements;
    private final Method stateless;
    private final Method assignTasksToThreads;

    public HaOp() throws Exception {
        final Class<?> ha = HighAvailabilityTaskAssignor.class;
        activeStateful = declared(ha, "assignActiveStatefulTasks",
            SortedMap.class, SortedSet.class, RackAwareTaskAssignor.class, AssignmentConfigs.class);
        standbyReplicas = declared(ha, "assignStandbyReplicaTasks",
            TreeMap.class, Set.class, Set.class, RackAwareTaskAssignor.class, AssignmentConfigs.class);
        caughtUp = declared(ha, "tasksToCaughtUpClients", Set.class, Map.class, long.class);
        byLag = declared(ha, "tasksToClientByLag", Set.class, Map.class);
        stateless = declared(ha, "assignStatelessActiveTasks",
            TreeMap.class, Iterable.class, RackAwareTaskAssignor.class);
        final Class<?> movement = Class.forName(PKG + "TaskMovement");
        activeMovements = declared(movement, "assignActiveTaskMovements",
            Map.class, Map.class, Map.class, Map.class, AtomicInteger.class);
        standbyMovements = declared(movement, "assignStandbyTaskMovements",
            Map.class, Map.class, Map.class, AtomicInteger.class, Map.class);
        assignTasksToThreads = declared(StreamsPartitionAssignor.class, "assignTasksToThreads",
            Collection.class, boolean.class, SortedSet.class, ClientState.class, Map.class);
    }

    private static Method declared(final Class<?> owner, final String name, final Class<?>... types)
        throws NoSuchMethodException {
        final Method method = owner.getDeclaredMethod(name, types);
        method.setAccessible(true);
        return method;
    }

    @Override
    public JsonNode run(final JsonNode request) throws Exception {
        if (request.has("bench")) {
            return bench(request, request.get("bench"));
        }
        if (!request.has("scenarios")) {
            return one(request);
        }
        final ArrayNode answers = Json.MAPPER.createArrayNode();
        for (final JsonNode scenario : request.get("scenarios")) {
            try {
                answers.add(one(scenario));
            } catch (final Exception | AssertionError e) {
                final ObjectNode failed = Json.MAPPER.createObjectNode();
                failed.put("error", e.getClass().getName() + ": " + e.getMessage());
                answers.add(failed);
            }
        }
        return answers;
    }

    private static AssignmentConfigs configs(final JsonNode config) {
        return new AssignmentConfigs(
            config.path("acceptable.recovery.lag").asLong(10_000L),
            config.path("max.warmup.replicas").asInt(2),
            config.path("num.standby.replicas").asInt(0),
            config.path("probing.rebalance.interval.ms").asLong(600_000L),
            Json.strings(config.path("rack.aware.assignment.tags"))
        );
    }

    private static RackAwareTaskAssignor noRackAwareness(final AssignmentConfigs configs) {
        return new RackAwareTaskAssignor(Cluster.empty(), Collections.emptyMap(), Collections.emptyMap(),
            Collections.emptyMap(), Collections.emptyMap(), null, configs, Time.SYSTEM);
    }

    /** Kafka's own client bookkeeping, from per-consumer offset sums and the end-offset sums. */
    private static TreeMap<ProcessId, ClientState> clients(final JsonNode scenario) {
        final Map<TaskId, Long> end = Json.taskLongs(Json.require(scenario, "end"));
        final TreeMap<ProcessId, ClientState> states = new TreeMap<>();
        for (final JsonNode client : Json.require(scenario, "clients")) {
            final ProcessId pid = Json.process(client.get("pid"));
            final Map<String, String> tags = new HashMap<>();
            client.path("tags").fields().forEachRemaining(e -> tags.put(e.getKey(), e.getValue().asText()));
            final ClientState state = new ClientState(pid, tags);
            for (final JsonNode consumer : Json.require(client, "consumers")) {
                state.incrementCapacity();
                state.addPreviousTasksAndOffsetSums(consumer.get("id").asText(),
                    Json.taskLongs(consumer.path("offsets")));
            }
            state.initializePrevTasks(Collections.emptyMap(), false);
            state.computeTaskLags(pid, end);
            states.put(pid, state);
        }
        return states;
    }

    private JsonNode one(final JsonNode scenario) throws Exception {
        final AssignmentConfigs configs = configs(scenario.path("config"));
        final Set<TaskId> allTasks = new TreeSet<>(Json.tasks(Json.require(scenario, "tasks")));
        final Set<TaskId> statefulTasks = new TreeSet<>(Json.tasks(Json.require(scenario, "stateful")));

        final TreeMap<ProcessId, ClientState> viaAssign = clients(scenario);
        final boolean probing = new HighAvailabilityTaskAssignor()
            .assign(viaAssign, allTasks, statefulTasks, noRackAwareness(configs), configs);

        final TreeMap<ProcessId, ClientState> stepwise = clients(scenario);
        final Map<ProcessId, Set<TaskId>> warmups = new TreeMap<>();
        final boolean stepProbing = stepwise(stepwise, allTasks, statefulTasks, configs, warmups);

        final ObjectNode answer = Json.MAPPER.createObjectNode();
        final ObjectNode byClient = answer.putObject("clients");
        for (final Map.Entry<ProcessId, ClientState> entry : viaAssign.entrySet()) {
            final ClientState state = entry.getValue();
            final ClientState other = stepwise.get(entry.getKey());
            if (!state.activeTasks().equals(other.activeTasks()) || !state.standbyTasks().equals(other.standbyTasks())) {
                throw new IllegalStateException("step-by-step replay of assign() diverged for " + entry.getKey());
            }
            final ObjectNode node = byClient.putObject(entry.getKey().id().toString());
            node.set("active", Json.taskArray(new TreeSet<>(state.activeTasks())));
            node.set("standby", Json.taskArray(new TreeSet<>(state.standbyTasks())));
            node.set("warmups", Json.taskArray(warmups.getOrDefault(entry.getKey(), Collections.emptySet())));
        }
        if (probing != stepProbing) {
            throw new IllegalStateException("step-by-step replay of assign() diverged on the probing flag");
        }
        answer.put("probing", probing);
        return answer;
    }

    /** The body of HighAvailabilityTaskAssignor.assign(), calling its own private steps. */
    @SuppressWarnings("unchecked")
    private boolean stepwise(final TreeMap<ProcessId, ClientState> clientStates,
                             final Set<TaskId> allTasks,
                             final Set<TaskId> statefulTaskIds,
                             final AssignmentConfigs configs,
                             final Map<ProcessId, Set<TaskId>> warmups) throws Exception {
        final HighAvailabilityTaskAssignor assignor = new HighAvailabilityTaskAssignor();
        final RackAwareTaskAssignor rack = noRackAwareness(configs);
        final SortedSet<TaskId> statefulTasks = new TreeSet<>(statefulTaskIds);
        try {
            activeStateful.invoke(null, clientStates, statefulTasks, rack, configs);
            standbyReplicas.invoke(assignor, clientStates, allTasks, statefulTasks, rack, configs);
            final AtomicInteger remaining = new AtomicInteger(configs.maxWarmupReplicas());
            final Map<TaskId, SortedSet<ProcessId>> caught = (Map<TaskId, SortedSet<ProcessId>>)
                caughtUp.invoke(null, statefulTasks, clientStates, configs.acceptableRecoveryLag());
            final Map<TaskId, SortedSet<ProcessId>> lagOrder = (Map<TaskId, SortedSet<ProcessId>>)
                byLag.invoke(null, statefulTasks, clientStates);
            final int activeMoves = (Integer) activeMovements.invoke(null, caught, lagOrder, clientStates, warmups, remaining);
            final int standbyMoves = (Integer) standbyMovements.invoke(null, caught, lagOrder, clientStates, remaining, warmups);
            final TreeSet<TaskId> statelessTasks = new TreeSet<>(allTasks);
            statelessTasks.removeAll(statefulTasks);
            stateless.invoke(null, clientStates, statelessTasks, rack);
            return activeMoves + standbyMoves > 0;
        } catch (final InvocationTargetException e) {
            if (e.getCause() instanceof Exception) {
                throw (Exception) e.getCause();
            }
            throw e;
        }
    }

    private JsonNode bench(final JsonNode scenario, final JsonNode bench) throws Exception {
        final AssignmentConfigs configs = configs(scenario.path("config"));
        final Set<TaskId> allTasks = new TreeSet<>(Json.tasks(Json.require(scenario, "tasks")));
        final Set<TaskId> statefulTasks = new TreeSet<>(Json.tasks(Json.require(scenario, "stateful")));
        final int warmup = bench.path("warmup").asInt(3);
        final int runs = bench.path("runs").asInt(5);
        final ObjectNode answer = Json.MAPPER.createObjectNode();
        final ArrayNode millis = answer.putArray("millis");
        final ArrayNode threadsMillis = answer.putArray("threads_millis");
        // The leader already holds each client's consumers as a sorted set; not part of the step.
        final Map<ProcessId, SortedSet<String>> consumers = new HashMap<>();
        for (final JsonNode client : Json.require(scenario, "clients")) {
            final SortedSet<String> ids = new TreeSet<>();
            for (final JsonNode consumer : Json.require(client, "consumers")) {
                ids.add(consumer.get("id").asText());
            }
            consumers.put(Json.process(client.get("pid")), ids);
        }
        final List<Double> measured = new ArrayList<>();
        final List<Double> measuredThreads = new ArrayList<>();
        for (int i = 0; i < warmup + runs; i++) {
            final TreeMap<ProcessId, ClientState> states = clients(scenario);
            final RackAwareTaskAssignor rack = noRackAwareness(configs);
            final long start = System.nanoTime();
            new HighAvailabilityTaskAssignor().assign(states, allTasks, statefulTasks, rack, configs);
            final long elapsed = System.nanoTime() - start;
            final long threadsStart = System.nanoTime();
            int spread = 0;
            for (final Map.Entry<ProcessId, ClientState> entry : states.entrySet()) {
                spread += threads(entry.getValue(), consumers.get(entry.getKey()));
            }
            final long threadsElapsed = System.nanoTime() - threadsStart;
            if (spread != allTasks.size() + standbyCount(states)) {
                throw new IllegalStateException("thread step placed " + spread + " tasks");
            }
            if (i >= warmup) {
                measured.add(elapsed / 1e6);
                measuredThreads.add(threadsElapsed / 1e6);
            }
        }
        for (final double m : measured) {
            millis.add(m);
        }
        for (final double m : measuredThreads) {
            threadsMillis.add(m);
        }
        return answer;
    }

    /** One client's three assignTasksToThreads calls; answers how many tasks were placed. */
    @SuppressWarnings("unchecked")
    private int threads(final ClientState state, final SortedSet<String> consumers) throws Exception {
        final Map<String, Integer> threadLoad = new HashMap<>();
        final Object[][] passes = {
            {state.statefulActiveTasks(), true},
            {state.standbyTasks(), true},
            {state.statelessActiveTasks(), false},
        };
        int placed = 0;
        for (final Object[] pass : passes) {
            final Map<String, List<TaskId>> byThread;
            try {
                byThread = (Map<String, List<TaskId>>) assignTasksToThreads.invoke(
                    null, pass[0], pass[1], consumers, state, threadLoad);
            } catch (final InvocationTargetException e) {
                if (e.getCause() instanceof Exception) {
                    throw (Exception) e.getCause();
                }
                throw e;
            }
            for (final List<TaskId> tasks : byThread.values()) {
                placed += tasks.size();
            }
        }
        return placed;
    }

    private static int standbyCount(final Map<ProcessId, ClientState> states) {
        int count = 0;
        for (final ClientState state : states.values()) {
            count += state.standbyTasks().size();
        }
        return count;
    }
}
