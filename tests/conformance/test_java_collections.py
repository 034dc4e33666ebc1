"""The one Java-collections emulation (``assignor._java``) against the JDK's own classes.

Every Kafka-exact result leans on three Java orders: ``HashSet``/``HashMap`` iteration, and the
array of a ``PriorityQueue``. Here the real ``java.util`` classes run op by op in the conformance
JVM (``java/CollectionsOp.java``) on seeded random inputs, and every answer and every iteration
order must be identical:

* hash tables of ``TaskId``, ``ProcessId``, ``String`` and ``Integer`` keys, default, presized
  and copy-constructed, as sets and as maps, through adds (also of present keys), removals,
  lookups and removal through the iterator; sizes that force resizes, and families of keys that
  share a bucket (or a whole hash) so that small tables resize early and tables of 64+ slots
  grow red-black tree bins, which are then split by resizes and taken apart by removals;
* priority queues of ints ordered by a priority array that changes while elements sit in the
  queue (Kafka's ``ConstrainedPrioritySet`` situation), heapified or offered, with polls and
  ``remove(Object)``, ties broken or left equal; both the scanning and the indexed heap;
* the ``HashSet`` -> ``PriorityQueue`` pipeline of thread distribution (the former
  ``java_order`` op).

A last test proves the comparison can fail: an emulation without tree bins, and Python's own
``heapq``, are caught. Rerun one case with ``COLLECTIONS_SEED=<seed>``.
"""

from __future__ import annotations

import heapq
import os
import random
import uuid
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from assignor._java.hash_codes import (
    int32,
    process_id_hash,
    string_hash,
    task_id_hash,
)
from assignor._java.hash_table import MIN_TREEIFY_CAPACITY, JavaHashSet, SubsetOrders
from assignor._java.priority_queue import JavaPriorityQueue
from assignor.placement.kafka_poll import RankQueue, rank
from protocol.ids import ProcessId, TaskId, java_string_key
from tests.conformance.test_threads import _tasks as thread_tasks
from tests.support.jvm import HarnessError, JavaHarness

BATCH = 200
NAMES = ["Aa", "BB", "orders"]  # "Aa" and "BB" share String.hashCode


# --- keys ------------------------------------------------------------------------------------


#: key type -> (hashCode, compareTo key, JSON form, parse from JSON)
KEY_TYPES: dict[str, tuple[Callable[[Any], int], Callable[[Any], Any], Callable[[Any], Any]]] = {
    "task": (task_id_hash, attrgetter("sort_key"), str),
    "process": (process_id_hash, lambda p: p, str),
    "string": (string_hash, java_string_key, lambda s: s),
    "int": (int32, lambda i: i, lambda i: i),
}


def _process_with_hash(rng: random.Random, hash_code: int) -> ProcessId:
    """A random UUID whose ``hashCode`` is ``hash_code``: msb ^ lsb = hi:(hi ^ hash)."""
    msb = rng.getrandbits(64)
    hi = rng.getrandbits(32)
    folded = (hi << 32) | ((hi ^ hash_code) & 0xFFFFFFFF)
    return ProcessId(uuid.UUID(int=(msb << 64) | (msb ^ folded)))


def _random_string(rng: random.Random) -> str:
    alphabet = "abcXYZ09_-\u00e9\u4e2d\uff61\U0001f600\U00010400"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))


def _keys(rng: random.Random, kind: str, n: int) -> list[Any]:
    """``n`` distinct keys; most families crowd a bucket (or a whole hash) on purpose."""
    family = rng.choice(["random", "bucket", "bucket", "same_hash"])
    keys: list[Any] = []
    if kind == "task":
        topology = rng.choice([None, None, "named"])

        def name() -> str | None:
            return None if topology is None else rng.choice(NAMES)

        if family == "random":
            keys = [TaskId(rng.randrange(12), rng.randrange(400), topology=name())
                    for _ in range(n)]
        elif family == "bucket":
            stride = rng.choice([16, 32, 64, 128, 256])
            base = rng.randrange(stride)
            keys = [TaskId(rng.randrange(3), base + stride * rng.randrange(60), topology=name())
                    for _ in range(n)]
        else:  # 31 * s + p constant: every key has the same hash; the tree compares TaskIds
            total = rng.randrange(250, 600)
            keys = [TaskId(s, total - 31 * s, topology=name())
                    for s in range(total // 31 + 1)]
            keys += [TaskId(rng.randrange(20), rng.randrange(100), topology=name())
                     for _ in range(n)]
    elif kind == "process":
        if family == "random":
            keys = [ProcessId(uuid.UUID(int=rng.getrandbits(128))) for _ in range(n)]
        elif family == "bucket":
            base = rng.randrange(256)
            keys = [_process_with_hash(rng, base + 256 * rng.randrange(-(2**23), 2**23))
                    for _ in range(n)]
        else:
            fixed = rng.randrange(-(2**31), 2**31)
            keys = [_process_with_hash(rng, rng.choice([fixed, rng.getrandbits(32)]))
                    for _ in range(n)]
    elif kind == "string":
        if family == "random":
            keys = [_random_string(rng) for _ in range(n)]
        else:  # blocks of "Aa"/"BB" share a hash; a random tail spreads them over buckets
            tail = [_random_string(rng) for _ in range(rng.randint(1, 4))]
            for _ in range(n):
                blocks = "".join(rng.choice(["Aa", "BB"]) for _ in range(rng.randint(3, 6)))
                keys.append(blocks + rng.choice(tail))
    else:
        if family == "random":
            keys = [rng.randrange(-(2**31), 2**31) for _ in range(n)]
        else:
            stride = rng.choice([64, 128, 1 << 16, 1 << 20])
            keys = [stride * rng.randrange(-4000, 4000) + rng.choice([0, 0, 0, 1])
                    for _ in range(n)]
            keys = [int32(k) for k in keys]
    return list(dict.fromkeys(keys))


# --- hash table cases ------------------------------------------------------------------------


def hash_case(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    kind = rng.choice(list(KEY_TYPES))
    n = rng.choice([3, 9, 13, 40, 100, 250, 600])
    keys = _keys(rng, kind, n)
    rng.shuffle(keys)
    to_json = KEY_TYPES[kind][2]
    is_map = rng.random() < 0.3
    capacity = rng.choice([None, None, 0, 1, 5, 16, 17, 64, 100, 1000])
    copy_of = None
    added: list[Any] = []
    if not is_map and rng.random() < 0.2:
        cut = rng.randrange(len(keys) + 1)
        copy_of = keys[:cut]
        added = list(copy_of)
        keys = keys[cut:]
        capacity = None
    ops: list[list[Any]] = []
    for key in keys:
        ops.append(["add", key])
        added.append(key)
        roll = rng.random()
        if roll < 0.08:
            ops.append(["remove", rng.choice(added)])
        elif roll < 0.12:
            ops.append(["add", rng.choice(added)])  # already there, or back after a removal
        elif roll < 0.15:
            ops.append(["contains", rng.choice(added)])
        elif roll < 0.17:
            ops.append(["iter"])
        elif roll < 0.18:
            ops.append(["iter_remove", rng.sample(added, rng.randint(0, min(8, len(added))))])
    if added and rng.random() < 0.5:  # take most of it apart again: trees shrink, untreeify
        doomed = rng.sample(added, rng.randrange(len(added)))
        half = len(doomed) // 2
        ops += [["remove", k] for k in doomed[:half]]
        ops.append(["iter_remove", doomed[half:]])
        ops.append(["size"])
    return {
        "op": "collections",
        "kind": "hash",
        "keys": kind,
        "map": is_map,
        "capacity": capacity,
        "copy_of": None if copy_of is None else [to_json(k) for k in copy_of],
        "ops": [[op[0], *([to_json(op[1])] if op[0] in ("add", "remove", "contains") else
                          [[to_json(k) for k in op[1]]] if op[0] == "iter_remove" else [])]
                for op in ops],
        "_keys": kind,
        "_ops": ops,
        "_copy_of": copy_of,
    }


class _Watched(JavaHashSet[Any]):
    """The emulation, noting whether a tree bin was ever built (coverage, not behaviour)."""

    grew_tree = False

    def _treeify_bin(self, i: int) -> None:
        if len(self._table) >= MIN_TREEIFY_CAPACITY:
            self.grew_tree = True
        super()._treeify_bin(i)


def python_hash(
    case: dict[str, Any],
    table_class: type[JavaHashSet[Any]] = JavaHashSet,
    tables: list[JavaHashSet[Any]] | None = None,
) -> dict[str, Any]:
    """The emulation's answer to a hash case (the table is appended to ``tables``, if given)."""
    hash_of, sort_key, to_json = KEY_TYPES[case["_keys"]]
    if case["_copy_of"] is not None:
        table = table_class.copy_of(hash_of, case["_copy_of"], sort_key)
    else:
        table = table_class(hash_of, (), case["capacity"], sort_key)
    if tables is not None:
        tables.append(table)
    results: list[Any] = []
    for op in case["_ops"]:
        name = op[0]
        if name == "add":
            results.append(table.add(op[1]))
        elif name == "remove":
            results.append(table.discard(op[1]))
        elif name == "contains":
            results.append(op[1] in table)
        elif name == "iter_remove":
            doomed = set(op[1])
            removed = 0
            for key in list(table):
                if key in doomed:
                    table.discard(key, movable=False)
                    removed += 1
            results.append(removed)
        elif name == "iter":
            results.append([to_json(k) for k in table])
        else:
            results.append(len(table))
    return {"results": results, "final": [to_json(k) for k in table]}


def _grew_trees(tables: list[JavaHashSet[Any]]) -> list[bool]:
    return [isinstance(t, _Watched) and t.grew_tree for t in tables]


# --- priority queue cases --------------------------------------------------------------------


class _HeapRun:
    """The emulation on one heap case, op by op."""

    def __init__(self, case: dict[str, Any], indexed: bool) -> None:
        self.tiebreak = case["tiebreak"]
        self.keys: list[Any] = [self._key(e, p) for e, p in enumerate(case["prio"])]
        if case["heapify"]:
            self.heap = JavaPriorityQueue(self.keys, case["init"], indexed=indexed)
        else:
            self.heap = JavaPriorityQueue(self.keys, indexed=indexed)
            for e in case["init"]:
                self.heap.offer(e)

    def _key(self, e: int, p: float) -> Any:
        return (p, e) if self.tiebreak else p

    def apply(self, op: list[Any]) -> Any:
        heap = self.heap
        name = op[0]
        if name == "offer":
            heap.offer(op[1])
            return None
        if name == "poll":
            return heap.poll()
        if name == "remove":
            return heap.remove(op[1])
        if name == "contains":
            return op[1] in heap
        if name == "set":
            self.keys[op[1]] = self._key(op[1], op[2])
            return None
        return list(heap)


class _RankRun:
    """Task movement's real queue (``RankQueue``: ranks, ``heapq``, in-place rekeys) on one
    heap case with distinct keys (it serves only (load, client) keys), op by op."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.ranks = [rank((p, e)) for e, p in enumerate(case["prio"])]
        self.present: set[int] = set()
        self.heap = RankQueue(self.ranks)
        self.orders = SubsetOrders([0] * len(self.ranks))  # nothing is ever passed over
        for e in case["init"]:
            self.heap.offer(e, self.present)

    def apply(self, op: list[Any]) -> Any:
        heap = self.heap
        name = op[0]
        if name == "offer":
            heap.offer(op[1], self.present)
            return None
        if name == "poll":
            return heap.poll(self.present, lambda e: True, self.orders)
        if name == "remove":
            return heap.remove(op[1], self.present)
        if name == "contains":
            return op[1] in self.present
        if name == "set":
            heap.rekey(op[1], rank((op[2], op[1])), op[1] in self.present)
            return None
        return list(heap)


def distinct_heap_case(seed: int) -> dict[str, Any]:
    return heap_case(seed, distinct=True)


def rank_heap(case: dict[str, Any]) -> dict[str, Any]:
    run = _RankRun(case)
    results = [run.apply(op) for op in case["ops"]]
    return {"results": results, "final": list(run.heap)}


def python_heap(case: dict[str, Any], indexed: bool) -> dict[str, Any]:
    run = _HeapRun(case, indexed)
    results = [run.apply(op) for op in case["ops"]]
    return {"results": results, "final": list(run.heap)}


def heap_case(seed: int, distinct: bool = False) -> dict[str, Any]:
    """Random ops; offers only of elements not in the queue (the emulation keeps elements
    distinct, as its users do), which is tracked by running the emulation alongside: a wrong
    membership would show up as a difference from Java anyway. ``distinct``: keys (priority,
    element) and the initial elements offered one by one."""
    rng = random.Random(seed)
    n = rng.randint(1, 70)
    levels = rng.choice([2, 5, 1000])  # few levels: many ties
    case: dict[str, Any] = {
        "op": "collections",
        "kind": "heap",
        "prio": [float(rng.randrange(levels)) for _ in range(n)],
        "tiebreak": rng.random() < 0.7,
        "init": rng.sample(range(n), rng.randint(0, n)),
        "heapify": rng.random() < 0.5,
        "ops": [],
    }
    if distinct:
        case["tiebreak"] = True
        case["heapify"] = False
    run = _HeapRun(case, indexed=False)
    ops: list[list[Any]] = case["ops"]
    for _ in range(rng.randint(0, 150)):
        roll = rng.random()
        if roll < 0.3:
            outside = [e for e in range(n) if e not in run.heap]
            if not outside:
                continue
            op: list[Any] = ["offer", rng.choice(outside)]
        elif roll < 0.45:
            op = ["poll"]
        elif roll < 0.6:
            op = ["remove", rng.randrange(n)]
        elif roll < 0.9:
            op = ["set", rng.randrange(n), float(rng.randrange(levels))]
        elif roll < 0.95:
            op = ["contains", rng.randrange(n)]
        else:
            op = ["iter"]
        ops.append(op)
        run.apply(op)
    return case


# --- HashSet of tasks -> PriorityQueue (what thread distribution builds) ---------------------


def order_case(seed: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A request of the former ``java_order`` op and the emulation's answer to it."""
    rng = random.Random(seed)
    if seed >= 10_000:
        count = rng.randint(1, 200)
        processes = [ProcessId(uuid.UUID(int=rng.getrandbits(128))) for _ in range(count)]
        removed_p = [p for p in processes if rng.random() < 0.3]
        pset = JavaHashSet(process_id_hash, processes)
        for p in removed_p:
            pset.discard(p)
        request = {
            "op": "collections", "kind": "order", "keys": "process",
            "items": [str(p) for p in processes], "remove": [str(p) for p in removed_p],
        }
        return request, {"set": [str(p) for p in pset]}
    tasks = thread_tasks(rng)
    rng.shuffle(tasks)
    presized = rng.random() < 0.5
    removed = [t for t in tasks if rng.random() < 0.3]
    via_iterator = {t for t in tasks if rng.random() < 0.2}
    as_set = (
        JavaHashSet.copy_of(task_id_hash, tasks) if presized else JavaHashSet(task_id_hash, tasks)
    )
    for t in tasks:
        as_set.add(t)  # addAll after the copy constructor, as the op does
    for t in removed:
        as_set.discard(t)
    for t in list(as_set):
        if t in via_iterator:
            as_set.discard(t, movable=False)
    order = list(as_set)
    by_rank = sorted(order)
    rank = {t: i for i, t in enumerate(by_rank)}
    queue = JavaPriorityQueue(range(len(order)), (rank[t] for t in order), indexed=True)
    polls = rng.randrange(len(order) + 1)
    for _ in range(polls):
        queue.poll()
    pq_removed = [t for t in order if rng.random() < 0.3]
    for t in pq_removed:
        queue.remove(rank[t])
    request = {
        "op": "collections", "kind": "order", "keys": "task",
        "items": [str(t) for t in tasks], "presized": presized,
        "remove": [str(t) for t in removed], "poll": polls,
        "iter_remove": sorted(str(t) for t in via_iterator),
        "pq_remove": [str(t) for t in pq_removed],
    }
    return request, {"set": [str(t) for t in order], "queue": [str(by_rank[r]) for r in queue]}


# --- comparing -------------------------------------------------------------------------------


def _wire(case: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in case.items() if not k.startswith("_")}


def _difference(case: dict[str, Any], java: dict[str, Any], python: dict[str, Any]) -> str:
    """The first op whose answer differs, or the final order."""
    for i, (a, b) in enumerate(zip(java.get("results", []), python.get("results", []),
                                   strict=False)):
        if a != b:
            op = case.get("_ops", case.get("ops", []))[i]
            return f"op {i} {op!r}: java={a!r} python={b!r}"
    return f"java={java!r} python={python!r}"


def mismatches(
    cases: list[tuple[int, dict[str, Any]]],
    java_answers: list[Any],
    python_answers: list[dict[str, Any]],
) -> list[str]:
    bad = []
    for (seed, case), java, python in zip(cases, java_answers, python_answers, strict=True):
        if isinstance(java, HarnessError):
            bad.append(f"seed {seed}: Java failed: {java.java_error}")
        elif java != python:
            bad.append(f"seed {seed}: {_difference(case, java, python)}"[:600])
    return bad


def _seeds(count: int) -> list[int]:
    only = os.environ.get("COLLECTIONS_SEED")
    return [int(only)] if only else list(range(count))


def _run(
    java_harness: JavaHarness,
    seeds: list[int],
    make: Callable[[int], dict[str, Any]],
    answer: Callable[[dict[str, Any]], dict[str, Any]],
) -> list[str]:
    bad: list[str] = []
    for start in range(0, len(seeds), BATCH):
        cases = [(seed, make(seed)) for seed in seeds[start : start + BATCH]]
        java = java_harness.call_many("collections", [_wire(c) for _, c in cases])
        bad += mismatches(cases, java, [answer(c) for _, c in cases])
    return bad


# --- the tests -------------------------------------------------------------------------------


def test_hash_sets_and_maps_equal_the_jdk(
    java_harness: JavaHarness, conformance_scenarios: int
) -> None:
    seeds = _seeds(conformance_scenarios)
    tables: list[JavaHashSet[Any]] = []
    bad = _run(java_harness, seeds, hash_case, lambda c: python_hash(c, _Watched, tables))
    assert not bad, (
        f"{len(bad)} of {len(seeds)} hash tables differ from the JDK "
        f"(rerun one with COLLECTIONS_SEED=<seed>):\n" + "\n".join(bad[:10])
    )
    if len(seeds) >= 200:  # the families must really build tree bins, not just promise to
        grown = sum(_grew_trees(tables))
        assert grown >= len(seeds) // 10, f"only {grown} cases grew a tree"


def test_priority_queues_equal_the_jdk(
    java_harness: JavaHarness, conformance_scenarios: int
) -> None:
    seeds = _seeds(conformance_scenarios)
    for indexed in (False, True):
        bad = _run(java_harness, seeds, heap_case, lambda c, i=indexed: python_heap(c, i))
        assert not bad, (
            f"{len(bad)} of {len(seeds)} priority queues (indexed={indexed}) differ from the JDK "
            f"(rerun one with COLLECTIONS_SEED=<seed>):\n" + "\n".join(bad[:10])
        )


def test_rank_queue_equals_the_jdk(java_harness: JavaHarness, conformance_scenarios: int) -> None:
    """Task movement's real queue: ``heapq`` on int ranks, popping in C while the array is
    known to be in heap order and by Java's steps otherwise, keys changed in place."""
    seeds = _seeds(conformance_scenarios)
    bad = _run(java_harness, seeds, distinct_heap_case, rank_heap)
    assert not bad, (
        f"{len(bad)} of {len(seeds)} rank queues differ from the JDK "
        f"(rerun one with COLLECTIONS_SEED=<seed>):\n" + "\n".join(bad[:10])
    )


def test_hash_set_then_priority_queue_orders(java_harness: JavaHarness) -> None:
    """The HashSet -> PriorityQueue replay of thread distribution, incl. tree bins, removals."""
    seeds = list(range(300)) + [10_000 + s for s in range(100)]
    made = [order_case(seed) for seed in seeds]
    answers = java_harness.call_many("collections", [request for request, _ in made])
    bad = [
        f"case {seed}: java={a} python={e}"
        for seed, a, (_, e) in zip(seeds, answers, made, strict=True)
        if a != e
    ]
    assert not bad, f"{len(bad)} orders differ from the JDK:\n" + "\n".join(bad[:5])


class _NoTreeBins(JavaHashSet[Any]):
    """A plausible wrong emulation: resizes as Java does, but never builds a tree bin."""

    def _treeify_bin(self, i: int) -> None:
        if len(self._table) < 64:
            self._resize()


def _heapq_answer(case: dict[str, Any]) -> dict[str, Any]:
    """Another plausible wrong one: Python's heapq (other sift steps, keys frozen on entry)."""
    prio = case["prio"]
    heap = [(prio[e], e) for e in case["init"]]
    heapq.heapify(heap)
    results: list[Any] = []
    for op in case["ops"]:
        name = op[0]
        if name == "offer":
            heapq.heappush(heap, (prio[op[1]], op[1]))
            results.append(None)
        elif name == "poll":
            results.append(heapq.heappop(heap)[1] if heap else None)
        elif name == "remove":
            found = [x for x in heap if x[1] == op[1]]
            if found:
                heap.remove(found[0])
                heapq.heapify(heap)
            results.append(bool(found))
        elif name == "contains":
            results.append(any(x[1] == op[1] for x in heap))
        elif name == "set":
            results.append(None)
        else:
            results.append([e for _, e in heap])
    return {"results": results, "final": [e for _, e in heap]}


def test_the_comparison_catches_a_wrong_emulation(java_harness: JavaHarness) -> None:
    """Drop tree bins, or use heapq: the same comparison must then report differences."""
    seeds = list(range(300))
    cases = [(seed, hash_case(seed)) for seed in seeds]
    java = java_harness.call_many("collections", [_wire(c) for _, c in cases])
    tables: list[JavaHashSet[Any]] = []
    assert not mismatches(cases, java, [python_hash(c, _Watched, tables) for _, c in cases])
    trees = {seed for seed, grew in zip(seeds, _grew_trees(tables), strict=True) if grew}
    wrong = mismatches(cases, java, [python_hash(c, table_class=_NoTreeBins) for _, c in cases])
    assert len(wrong) >= 10
    assert {int(line.split(":")[0].split()[1]) for line in wrong} <= trees

    heap_cases = [(seed, heap_case(seed)) for seed in seeds]
    java = java_harness.call_many("collections", [_wire(c) for _, c in heap_cases])
    assert not mismatches(heap_cases, java, [python_heap(c, False) for _, c in heap_cases])
    assert len(mismatches(heap_cases, java, [_heapq_answer(c) for _, c in heap_cases])) >= 100
