"""Tasks -> threads: Kafka's documented examples and the balance/stickiness properties.

Exact equality with Java on random inputs lives in tests/conformance/test_threads.py.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor.placement.thread_queue import NOT_A_KEY, LazyQueue, task_keys
from assignor.placement.threads import (
    TaskAssignmentError,
    assign_tasks_to_threads,
    distribute_tasks,
    java_hash_set_order,
)
from protocol.ids import ProcessId, TaskId


def t(text: str) -> TaskId:
    return TaskId.parse(text)


def test_new_tasks_are_interleaved_by_subtopology() -> None:
    # StreamsPartitionAssignorTest.shouldInterleaveTasksByGroupIdDuringNewAssignment
    tasks = [t(x) for x in ["0_0", "0_1", "0_2", "0_3", "1_0", "1_1", "1_2", "2_0", "2_1"]]
    result = distribute_tasks(["c1", "c2", "c3"], tasks, [], [], {})
    assert {c: [str(x) for x in ts] for c, ts in result.active.items()} == {
        "c1": ["0_0", "0_3", "1_2"],
        "c2": ["0_1", "1_0", "2_0"],
        "c3": ["0_2", "1_1", "2_1"],
    }


def test_previous_owner_keeps_its_tasks_up_to_the_floor() -> None:
    tasks = [t("0_0"), t("0_1"), t("0_2"), t("0_3")]
    prev = {"a": (t("0_3"), t("0_2"), t("0_1")), "b": (t("0_0"),)}
    result = distribute_tasks(["a", "b"], tasks, [], [], prev)
    assert sorted(result.active["a"]) == [t("0_2"), t("0_3")]  # floor 2: least lag first
    assert sorted(result.active["b"]) == [t("0_0"), t("0_1")]


def test_stateless_tasks_fill_the_least_loaded_threads() -> None:
    result = distribute_tasks(
        ["a", "b"], [t("0_0"), t("0_1"), t("0_2")], [t("1_0")], [t("2_0"), t("2_1")], {}
    )
    loads = {c: len(result.active[c]) + len(result.standby[c]) for c in ("a", "b")}
    assert loads == {"a": 3, "b": 3}


def test_needs_a_consumer() -> None:
    with pytest.raises(ValueError, match="at least one consumer"):
        assign_tasks_to_threads([t("0_0")], True, [], {}, {})


def test_overloaded_threads_cannot_take_more() -> None:
    # Loads far above the floor leave no thread at the floor: Java would fail with an NPE.
    with pytest.raises(TaskAssignmentError):
        assign_tasks_to_threads([t("0_0"), t("0_1")], True, ["a", "b"], {}, {"a": 0, "b": 9})


def test_hash_set_iterates_by_bucket_then_insertion() -> None:
    # With 16 buckets, 0_0 (hash 29791 -> bucket 15) comes after 0_1 (29822 -> bucket 14).
    assert java_hash_set_order([t("0_0"), t("0_1")]) == [t("0_1"), t("0_0")]
    # Same bucket (a real hash collision): insertion order; the hash set itself is tested in
    # tests/assignor/_java/test_hash_table.py.
    assert java_hash_set_order([t("1_0"), t("0_31")]) == [t("0_31"), t("1_0")]


tasks_strategy = st.lists(
    st.builds(TaskId, st.integers(0, 5), st.integers(0, 40)), unique=True, max_size=60
)


@given(
    stateful=tasks_strategy,
    n_consumers=st.integers(1, 8),
    data=st.data(),
)
def test_balanced_and_complete(
    stateful: list[TaskId], n_consumers: int, data: st.DataObject
) -> None:
    consumers = [f"c{i}" for i in range(n_consumers)]
    split = data.draw(st.integers(0, len(stateful)))
    actives, standbys = stateful[:split], stateful[split:]
    stateless = [TaskId(9, p) for p in range(data.draw(st.integers(0, 20)))]
    prev = _drawn_previous(data, stateful, consumers, 10)
    result = distribute_tasks(consumers, actives, standbys, stateless, prev)
    given_active = [x for c in consumers for x in result.active[c]]
    given_standby = [x for c in consumers for x in result.standby[c]]
    assert sorted(given_active) == sorted(actives + stateless)
    assert sorted(given_standby) == sorted(standbys)
    loads = [len(result.active[c]) + len(result.standby[c]) for c in consumers]
    assert max(loads) - min(loads) <= 1


def test_single_thread_client_shortcut_gives_what_the_full_passes_give() -> None:
    from dataclasses import dataclass as _dataclass

    from assignor.placement.threads import distribute_client_tasks

    @_dataclass
    class OneThread:
        consumers: tuple[str, ...]
        stateful_active: frozenset[TaskId]
        stateless_active: frozenset[TaskId]
        standby: frozenset[TaskId]
        previous_tasks_by_consumer: dict[str, frozenset[TaskId]]

        def prev_tasks_by_lag(self, consumer: str) -> tuple[TaskId, ...]:
            return (TaskId(0, 3), TaskId(0, 1))

    client = OneThread(
        ("only",),
        frozenset(TaskId(0, p) for p in range(6)),
        frozenset(TaskId(2, p) for p in range(3)),
        frozenset(TaskId(1, p) for p in range(4)),
        {"only": frozenset({TaskId(0, 3), TaskId(0, 1)})},
    )
    fast = distribute_client_tasks(client)
    full = distribute_tasks(
        ["only"],
        client.stateful_active,
        client.standby,
        client.stateless_active,
        {"only": client.prev_tasks_by_lag("only")},
    )
    assert sorted(fast.active["only"]) == sorted(full.active["only"])
    assert sorted(fast.standby["only"]) == sorted(full.standby["only"])
    assert len(fast.active["only"]) == 9 and len(fast.standby["only"]) == 4


def test_consumers_follow_java_string_order_not_code_points() -> None:
    # U+10000 is a surrogate pair in UTF-16 (0xD800 ...), so Java sorts it before U+FFFF,
    # while Python's code points put it after: the first consumer in Java's order takes 0_0.
    high, bmp = "\U00010000", "\uffff"
    result = distribute_tasks([bmp, high], [t("0_0"), t("0_1")], [], [], {})
    assert result.active == {high: [t("0_0")], bmp: [t("0_1")]}


def test_many_threads_client_reads_only_the_consumers_that_reported_tasks() -> None:
    # 50 threads, 2 of which held tasks: what the client path gives is the full passes' answer
    # with every consumer's (mostly empty) previous tasks, and idle threads map to no tasks.
    from dataclasses import dataclass as _dataclass

    from assignor.placement.threads import distribute_client_tasks

    consumers = tuple(f"c{i:02d}" for i in range(50))
    reported = {"c07": (t("0_3"), t("0_1")), "c31": (t("1_2"),)}

    @_dataclass
    class ManyThreads:
        consumers: tuple[str, ...]
        stateful_active: frozenset[TaskId]
        stateless_active: frozenset[TaskId]
        standby: frozenset[TaskId]
        previous_tasks_by_consumer: dict[str, frozenset[TaskId]]

        def prev_tasks_by_lag(self, consumer: str) -> tuple[TaskId, ...]:
            return reported.get(consumer, ())

    client = ManyThreads(
        consumers,
        frozenset(TaskId(0, p) for p in range(6)),
        frozenset(TaskId(2, p) for p in range(3)),
        frozenset(TaskId(1, p) for p in range(4)),
        {c: frozenset(reported.get(c, ())) for c in consumers},
    )
    fast = distribute_client_tasks(client)
    full = distribute_tasks(
        consumers,
        client.stateful_active,
        client.standby,
        client.stateless_active,
        {c: client.prev_tasks_by_lag(c) for c in consumers},
    )
    assert fast == full
    assert set(fast.active) == set(consumers)
    # Floor 0: a previous owner takes back its smallest task (then it is no longer at the floor).
    assert fast.active["c07"] == [t("0_1")]
    assert sum(1 for c in consumers if not fast.active[c] and not fast.standby[c]) == 37


def test_single_thread_split_by_the_layouts_stateful_set_gives_the_same_answer() -> None:
    # The leader passes its layout's stateful tasks (the keys of every client's lags): the
    # one-thread shortcut then splits the actives by set operations; the answer is unchanged.
    from assignor.placement.client_state import ClientState
    from assignor.placement.threads import distribute_client_tasks
    from protocol import ProcessId

    stateful = frozenset(TaskId(s, p) for s in (0, 1) for p in range(5))
    lags = dict.fromkeys(stateful, 0)
    active = frozenset({TaskId(0, 4), TaskId(0, 0), TaskId(1, 3), TaskId(2, 1), TaskId(2, 0)})
    client = ClientState(
        ProcessId.for_int(1),
        1,
        consumers=("only",),
        task_lags=lags,
        active=active,
        standby=frozenset({TaskId(1, 0), TaskId(0, 2)}),
    )
    split = distribute_client_tasks(client, stateful)
    assert split == distribute_client_tasks(client)
    assert split.active["only"] == [
        TaskId(0, 0), TaskId(0, 4), TaskId(1, 3), TaskId(2, 0), TaskId(2, 1)
    ]
    assert split.standby["only"] == [TaskId(0, 2), TaskId(1, 0)]


@pytest.mark.parametrize("threads", [1, 3])
def test_a_layout_of_stateful_tasks_only_splits_as_without_the_hint(threads: int) -> None:
    # The leader says when its layout's stateful set is every task: the actives then need no
    # split into stateful and stateless, and the answer is the one the split gives.
    from assignor.placement.client_state import ClientState
    from assignor.placement.lags import TaskLags
    from assignor.placement.threads import distribute_client_tasks
    from protocol import ProcessId

    every = frozenset(TaskId(s, p) for s in (0, 1) for p in range(6))
    consumers = tuple(f"c{i}" for i in range(threads))
    reported = {TaskId(0, 1): -2, TaskId(1, 4): 7, TaskId(0, 5): 2}
    client = ClientState(
        ProcessId.for_int(1),
        threads,
        consumers=consumers,
        task_lags=TaskLags(reported, dict.fromkeys(every, 9)),
        previous_tasks_by_consumer={consumers[-1]: frozenset(reported)},
        active=frozenset(sorted(every)[:7]),
        standby=frozenset(sorted(every)[7:10]),
    )
    hinted = distribute_client_tasks(client, every, every_task_stateful=True)
    assert hinted == distribute_client_tasks(client, every) == distribute_client_tasks(client)
    assert sorted(t for ts in hinted.active.values() for t in ts) == sorted(every)[:7]


def test_tasks_without_a_kept_rank_are_ordered_the_same() -> None:
    # An unpickled task (the Spark sweep ships them) keeps its keys again; one without its
    # rank is sorted by the kept tuple, in Kafka's order all the same.
    import pickle

    from assignor.placement.threads import _task_sorted

    fresh = [TaskId(s, p) for s in (1, 0) for p in (3, 1, 2)]
    shipped = [pickle.loads(pickle.dumps(task)) for task in fresh]
    assert [(t._rank, t.sort_key) for t in shipped] == [(t._rank, t.sort_key) for t in fresh]
    object.__delattr__(shipped[0], "_rank")
    assert _task_sorted(shipped) == _task_sorted(fresh) == sorted(fresh)


@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**31 - 1),
            st.integers(0, 2**31 - 1),
            st.sampled_from([None, None, "a", "B", "é"]),
        ),
        max_size=40,
    ),
    st.booleans(),
)
def test_the_int_rank_sorts_as_kafka_compares(
    drawn: list[tuple[int, int, str | None]], unnamed_only: bool
) -> None:
    # Unnamed tasks sort by their int rank, the rest by the kept tuple: one order either way,
    # also at the int32 limits where the rank's two halves meet.
    from assignor.placement.threads import _task_sorted

    tasks = [TaskId(s, p, topology=None if unnamed_only else name) for s, p, name in drawn]
    assert _task_sorted(tasks) == sorted(tasks, key=lambda t: t.sort_key)
    assert all(hasattr(t, "_rank") == (t.topology is None) for t in tasks)


@given(
    st.dictionaries(
        st.tuples(st.integers(0, 2), st.integers(0, 30)),
        st.sampled_from([-3, -2, 0, 5, 50, 100, 150, 10**6]),
        max_size=40,
    ),
    st.sampled_from([100, -3]),
    st.integers(0, 2**32),
    st.booleans(),
    st.booleans(),
)
def test_a_reporting_threads_previous_tasks_are_ordered_as_the_client_orders_them(
    reports: dict[tuple[int, int], int], end: int, seed: int, running: bool, unlisted: bool
) -> None:
    """``distribute_client_tasks`` orders a thread's reported tasks by (lag, task) itself when
    the leader passes its stateful set: the order ``ClientState.prev_tasks_by_lag`` gives, with
    stateless (dropped) tasks, equal lags, reports past the end, running and unknown sums."""
    import random

    from assignor.placement.client_state import ClientState
    from assignor.placement.lags import TaskLags
    from assignor.placement.previous_by_lag import prev_by_lag_order

    rng = random.Random(seed)
    stateful = frozenset(TaskId(s, p) for s in (0, 1) for p in range(31))  # 2_x is stateless
    end_sums = {task: rng.choice([end, end, 7]) for task in stateful}
    offsets = {TaskId(s, p): -2 if running else value for (s, p), value in reports.items()}
    # (``running``: every sum says "running", the client's actives taken back) and, with
    # ``unlisted``, a task the thread lists without a sum of its own
    held = frozenset(offsets) | ({TaskId(0, 30), TaskId(1, 29)} if unlisted else set())
    client = ClientState(
        ProcessId.for_int(1), 2, consumers=("a", "b"), task_lags=TaskLags(offsets, end_sums),
        previous_tasks_by_consumer={"a": held, "b": frozenset()},
    )  # fmt: skip
    assert isinstance(client.task_lags, TaskLags)
    got = prev_by_lag_order(held, client.task_lags, stateful)
    assert got == client.prev_tasks_by_lag("a")


def _drawn_previous(
    data: st.DataObject, stateful: list[TaskId], consumers: list[str], most: int
) -> dict[str, tuple[TaskId, ...]]:
    """Each consumer's previous tasks, distinct, drawn from ``stateful``."""
    if not stateful:
        return dict.fromkeys(consumers, ())
    lists = st.lists(st.sampled_from(stateful), unique=True, max_size=most)
    return {c: tuple(data.draw(lists)) for c in consumers}


@given(tasks_strategy, st.integers(1, 5), st.data())
def test_a_repeated_previous_task_changes_nothing(
    stateful: list[TaskId], n_consumers: int, data: st.DataObject
) -> None:
    """Java's loop over a thread's previous tasks skips a task it already took, or skips it
    again: listing a task twice gives the answer of listing it once (the whole-list path must
    notice the repeat, or it would hand the task out twice)."""
    consumers = [f"c{i}" for i in range(n_consumers)]
    prev = _drawn_previous(data, stateful, consumers, 8)
    repeated = {c: tasks + tasks[:2] for c, tasks in prev.items()}
    once = distribute_tasks(consumers, stateful, [], [], prev)
    twice = distribute_tasks(consumers, stateful, [], [], repeated)
    assert twice == once
    handed = [x for c in consumers for x in twice.active[c]]
    assert sorted(handed) == sorted(set(stateful))


def test_one_task_left_is_the_heap_without_a_replay() -> None:
    """``LazyQueue.heap_order`` answers a queue of at most one task without building the
    heap (an array of one element is that element); on random polls and removals from random
    Java orders it equals the replayed heap."""
    checked = 0
    for seed in range(400):
        rng = random.Random(seed)
        n = rng.randint(1, 40)
        order = list(range(n))
        rng.shuffle(order)
        keys = rng.sample(range(1_000), n)  # distinct, in no order (sorted when polled)
        queue = LazyQueue(keys, lambda ordered, order=order: order.copy())
        while len(queue) > rng.choice([0, 1, 1, 2]):
            if rng.random() < 0.5:
                smallest = min(queue.present)
                assert queue.poll() == smallest, seed  # the keys sorted when first polled
            else:
                queue.remove(rng.choice(sorted(queue._present)))
        assert queue.heap_order() == queue.replayed(), seed
        checked += len(queue) == 1
    assert checked > 100


def test_a_heap_of_polls_only_is_built_as_java_builds_it() -> None:
    """A queue that was only polled (or not touched) is rebuilt by ``heapq`` in C: the same
    array as Java's heapify and polls taken one step at a time, from random Java orders
    (distinct keys in no order, sorted when polled)."""
    fast = 0
    for seed in range(600):
        rng = random.Random(seed)
        n = rng.randint(2, 120)
        order = list(range(n))
        rng.shuffle(order)
        keys = rng.sample(range(10_000), n)
        queue = LazyQueue(keys, lambda ordered, order=order: order.copy())
        for _ in range(rng.choice([0, 0, 1, 3])):
            smallest = sorted(queue.present)[: rng.randint(1, 4)]
            assert queue.poll_many(len(smallest)) == smallest, seed
        step_by_step = queue._replayed_step_by_step(queue._ordered(), order)
        assert queue.replayed() == step_by_step, seed
        fast += all(polled for polled, _ in queue.log)
    assert fast == 600  # every queue took the heapq path


@given(
    ordered=st.sets(st.tuples(st.integers(0, 3), st.integers(0, 20), st.booleans()), max_size=25),
    asked=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20), st.booleans()), max_size=25),
    named_pass=st.booleans(),
)
def test_task_keys_order_and_match_tasks_as_their_values_do(
    ordered: set[tuple[int, int, bool]], asked: list[tuple[int, int, bool]], named_pass: bool
) -> None:
    """``task_keys`` gives a pass's tasks ints in Kafka's task order (their int ranks when
    every task of the passes has one, else positions by value), and a previous task the key
    of the same task in a pass, or a key no pass's task has when no pass holds it (a named
    task asked of unnamed passes, or the other way round)."""

    def task(s: int, p: int, named: bool) -> TaskId:
        return TaskId(s, p, topology="n" if named else None)

    pass_tasks = [task(s, p, named and named_pass) for s, p, named in sorted(ordered)]
    pass_tasks = sorted(set(pass_tasks), key=lambda t: (t.topology is not None, t.sort_key))
    named = [t for t in pass_tasks if t.topology is not None]
    unnamed = [t for t in pass_tasks if t.topology is None]
    wanted = [task(s, p, named) for s, p, named in asked]
    (named_keys, unnamed_keys), (asked_keys,) = task_keys([named, unnamed], [wanted])
    for keys in (named_keys, unnamed_keys):
        assert sorted(range(len(keys)), key=keys.__getitem__) == list(range(len(keys)))
        assert min(keys, default=0) >= 0
    key_of = dict(zip(named + unnamed, named_keys + unnamed_keys, strict=True))
    assert len(set(key_of.values())) == len(key_of)
    for t, key in zip(wanted, asked_keys, strict=True):
        assert key == key_of[t] if t in key_of else key not in key_of.values()


def test_a_pass_that_mixes_named_and_unnamed_tasks_is_refused() -> None:
    with pytest.raises(ValueError, match="named and unnamed"):
        task_keys([[TaskId(0, 1), TaskId(0, 1, topology="n")]], [])


@given(
    n_tasks=st.integers(1, 30),
    n_consumers=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_previous_owners_of_one_task_each_take_as_the_general_loop(
    n_tasks: int, n_consumers: int, seed: int
) -> None:
    """The pass's shortcut for previous owners of one task each (the busy threads of a client
    of 1,000) takes, skips and hands out as the general loop: forced here by adding to each
    owner's list a task that is not among the pass's, which that loop ignores."""
    from assignor.placement.threads import _assign_pass

    rng = random.Random(seed)
    ordered = list(range(n_tasks))  # the pass's tasks as keys
    foreign = NOT_A_KEY  # a task in no pass
    owners = sorted(rng.sample(range(n_consumers), rng.randint(1, n_consumers)))
    # owners may repeat a task, or name one that is not among the pass's
    prev = [(c, [rng.choice([*ordered, foreign])]) for c in owners]
    loads = [rng.randint(0, 3) for _ in range(n_consumers)]
    answers = []
    for entries in (prev, [(c, [*tasks, foreign]) for c, tasks in prev]):
        load = list(loads)
        try:
            assigned = _assign_pass(
                ordered, lambda keys: list(range(n_tasks)), True, entries, load
            )
        except TaskAssignmentError as error:
            answers.append(("error", str(error)))
        else:
            answers.append((assigned, load))
    assert answers[0] == answers[1]


def test_consumer_positions_found_in_bulk_are_those_found_one_by_one() -> None:
    """``_IndexOf.known`` / ``positions`` (the reporting consumers' positions, found in C) give
    what a membership test and a bisection per name give, for ASCII names (their own keys)
    and for names that need Java's UTF-16 key."""
    from assignor.placement.threads import _consumer_order

    for names in (
        [f"c-{i:03d}" for i in (5, 1, 9, 3)],
        ["b\U0001f600", "b\uffff", "a", "\ue000x"],
    ):
        ordered, index_of = _consumer_order(names)
        asked = [names[2], "stranger", names[0], names[3]]
        known = index_of.known(asked)
        assert known == [n for n in asked if n in index_of]
        assert index_of.positions(known) == [index_of(n) for n in known]
        assert [ordered[i] for i in index_of.positions(known)] == known
