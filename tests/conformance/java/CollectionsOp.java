import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ProcessId;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * The JDK's own HashSet, HashMap and PriorityQueue, driven op by op, so that the Python emulation
 * (assignor/_java) can be compared with them exactly: tests/conformance/test_java_collections.py.
 *
 * Request {"kind": "hash", "keys": "task"|"process"|"string"|"int", "map": bool,
 *          "capacity": n|null, "copy_of": [keys]|null, "ops": [[name, arg], ..]}
 *   A HashSet (or a HashMap whose keys are compared; put's value is the op's index), built with
 *   new HashSet<>(capacity) / new HashMap<>(capacity), or new HashSet<>(copy_of). Ops:
 *   ["add", k] -> set.add(k) / map.put(k, i) == null, ["remove", k] -> boolean,
 *   ["contains", k] -> boolean, ["iter_remove", [k..]] -> how many the iterator removed
 *   (it.remove(), as removeIf and retainAll do), ["iter"] -> the keys in iteration order,
 *   ["size"] -> int. Answer: {"results": [one per op], "final": [keys in iteration order]}.
 *
 * Request {"kind": "heap", "prio": [p0, p1, ..], "tiebreak": bool, "init": [e..], "heapify": bool,
 *          "ops": [[name, arg, arg2], ..]}
 *   A PriorityQueue of ints e ordered by prio[e] (then by e when tiebreak), with the priorities
 *   in a mutable array the comparisons read, as Kafka's ConstrainedPrioritySet reads client loads.
 *   Built from "init" by new PriorityQueue<>(collection) (heapify) or by offers. Ops:
 *   ["offer", e], ["poll"] -> e or null, ["remove", e] -> boolean, ["contains", e] -> boolean,
 *   ["set", e, p] -> null (prio[e] = p while e may sit in the queue), ["iter"] -> array order.
 *   Answer: {"results": [..], "final": [array order]}.
 *
 * Request {"kind": "order", ...}: the former java_order op, a HashSet of tasks or processes then a
 *   PriorityQueue<TaskId> built from it (see order()).
 */
public final class CollectionsOp implements Op {
    @Override
    public JsonNode run(final JsonNode request) {
        final String kind = request.path("kind").asText("");
        switch (kind) {
            case "hash":
                return hash(request);
            case "heap":
                return heap(request);
            case "order":
                return order(request);
            default:
                throw new IllegalArgumentException("unknown kind \"" + kind + "\"");
        }
    }

    // --- HashSet / HashMap ------------------------------------------------------------------

    private static Object key(final String keys, final JsonNode node) {
        switch (keys) {
            case "task":
                return Json.task(node);
            case "process":
                return Json.process(node);
            case "string":
                return node.asText();
            case "int":
                return node.asInt();
            default:
                throw new IllegalArgumentException("unknown key type \"" + keys + "\"");
        }
    }

    private static void put(final ArrayNode out, final Object key) {
        if (key instanceof Integer) {
            out.add((Integer) key);
        } else if (key instanceof ProcessId) {
            out.add(((ProcessId) key).id().toString());
        } else {
            out.add(key.toString());
        }
    }

    private static ArrayNode keysOf(final Collection<Object> keys) {
        final ArrayNode out = Json.MAPPER.createArrayNode();
        for (final Object key : keys) {
            put(out, key);
        }
        return out;
    }

    private static JsonNode hash(final JsonNode request) {
        final String keys = Json.require(request, "keys").asText();
        final boolean isMap = request.path("map").asBoolean(false);
        final JsonNode capacity = request.path("capacity");
        final JsonNode copyOf = request.path("copy_of");
        final Map<Object, Integer> map;
        final Set<Object> set;
        if (isMap) {
            map = capacity.isInt() ? new HashMap<>(capacity.asInt()) : new HashMap<>();
            set = map.keySet();
        } else if (copyOf.isArray()) {
            final List<Object> items = new ArrayList<>();
            for (final JsonNode node : copyOf) {
                items.add(key(keys, node));
            }
            map = null;
            set = new HashSet<>(items);
        } else {
            map = null;
            set = capacity.isInt() ? new HashSet<>(capacity.asInt()) : new HashSet<>();
        }
        final ObjectNode result = Json.MAPPER.createObjectNode();
        final ArrayNode results = result.putArray("results");
        int index = 0;
        for (final JsonNode op : Json.require(request, "ops")) {
            final String name = op.get(0).asText();
            switch (name) {
                case "add": {
                    final Object k = key(keys, op.get(1));
                    results.add(map != null ? map.put(k, index) == null : set.add(k));
                    break;
                }
                case "remove":
                    results.add(set.remove(key(keys, op.get(1))));
                    break;
                case "contains":
                    results.add(set.contains(key(keys, op.get(1))));
                    break;
                case "iter_remove": {
                    final Set<Object> doomed = new HashSet<>();
                    for (final JsonNode node : op.get(1)) {
                        doomed.add(key(keys, node));
                    }
                    int removed = 0;
                    for (final Iterator<Object> it = set.iterator(); it.hasNext(); ) {
                        if (doomed.contains(it.next())) {
                            it.remove();
                            removed++;
                        }
                    }
                    results.add(removed);
                    break;
                }
                case "iter":
                    results.add(keysOf(set));
                    break;
                case "size":
                    results.add(set.size());
                    break;
                default:
                    throw new IllegalArgumentException("unknown hash op \"" + name + "\"");
            }
            index++;
        }
        result.set("final", keysOf(set));
        return result;
    }

    // --- PriorityQueue ----------------------------------------------------------------------

    /** An element whose order reads a shared, mutable priority array (equal by number). */
    private static final class Item implements Comparable<Item> {
        private final int id;
        private final double[] prio;
        private final boolean tiebreak;

        Item(final int id, final double[] prio, final boolean tiebreak) {
            this.id = id;
            this.prio = prio;
            this.tiebreak = tiebreak;
        }

        @Override
        public int compareTo(final Item other) {
            final int byPrio = Double.compare(prio[id], prio[other.id]);
            return byPrio != 0 || !tiebreak ? byPrio : Integer.compare(id, other.id);
        }

        @Override
        public boolean equals(final Object other) {
            return other instanceof Item && ((Item) other).id == id;
        }

        @Override
        public int hashCode() {
            return id;
        }
    }

    private static ArrayNode itemsOf(final PriorityQueue<Item> queue) {
        final ArrayNode out = Json.MAPPER.createArrayNode();
        for (final Item item : queue) {
            out.add(item.id);
        }
        return out;
    }

    private static JsonNode heap(final JsonNode request) {
        final JsonNode prioNode = Json.require(request, "prio");
        final double[] prio = new double[prioNode.size()];
        for (int i = 0; i < prio.length; i++) {
            prio[i] = prioNode.get(i).asDouble();
        }
        final boolean tiebreak = request.path("tiebreak").asBoolean(true);
        final Item[] items = new Item[prio.length];
        for (int i = 0; i < prio.length; i++) {
            items[i] = new Item(i, prio, tiebreak);
        }
        final List<Item> init = new ArrayList<>();
        for (final JsonNode node : request.path("init")) {
            init.add(items[node.asInt()]);
        }
        final PriorityQueue<Item> queue;
        if (request.path("heapify").asBoolean(false)) {
            queue = new PriorityQueue<>(init);
        } else {
            queue = new PriorityQueue<>();
            for (final Item item : init) {
                queue.offer(item);
            }
        }
        final ObjectNode result = Json.MAPPER.createObjectNode();
        final ArrayNode results = result.putArray("results");
        for (final JsonNode op : Json.require(request, "ops")) {
            final String name = op.get(0).asText();
            switch (name) {
                case "offer":
                    queue.offer(items[op.get(1).asInt()]);
                    results.addNull();
                    break;
                case "poll": {
                    final Item head = queue.poll();
                    if (head == null) {
                        results.addNull();
                    } else {
                        results.add(head.id);
                    }
                    break;
                }
                case "remove":
                    results.add(queue.remove(items[op.get(1).asInt()]));
                    break;
                case "contains":
                    results.add(queue.contains(items[op.get(1).asInt()]));
                    break;
                case "set":
                    prio[op.get(1).asInt()] = op.get(2).asDouble();
                    results.addNull();
                    break;
                case "iter":
                    results.add(itemsOf(queue));
                    break;
                default:
                    throw new IllegalArgumentException("unknown heap op \"" + name + "\"");
            }
        }
        result.set("final", itemsOf(queue));
        return result;
    }

    // --- HashSet of tasks, then a PriorityQueue built from it (the former JavaOrderOp) ---------

    /**
     * Request: {"kind": "order", "keys": "task"|"process", "items": [..], "presized": bool,
     *           "remove": [..], "iter_remove": [.. removed through the iterator, as retainAll
     *           does], "poll": n, "pq_remove": [..]}
     * Answer:  {"set": [set order after adds and removes],
     *           "queue": [PriorityQueue built from that set, after n polls and the removes, array
     *           order]} (the queue part only for tasks).
     */
    private static JsonNode order(final JsonNode request) {
        final boolean tasks = "task".equals(request.path("keys").asText("task"));
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
        result.set("set", keysOf(set));
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
