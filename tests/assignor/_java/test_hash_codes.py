"""Java's hash codes, int arithmetic and spreading, against values the JDK gives."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from assignor._java.hash_codes import (
    int32,
    objects_hash,
    process_id_hash,
    spread,
    string_hash,
    task_id_hash,
    uuid_hash,
)
from protocol.ids import INT32_MAX, ProcessId, TaskId

INT32_MIN = -INT32_MAX - 1


def t(text: str) -> TaskId:
    return TaskId.parse(text)


def test_java_hash_orders() -> None:
    assert process_id_hash(ProcessId.for_int(1)) == 1
    # (int)(-1 >> 32) ^ (int)-1 = -1 ^ -1
    assert process_id_hash(ProcessId.from_halves(-1, 0)) == 0
    assert process_id_hash(ProcessId.from_halves(0x0000000100000000, 5)) == 4
    assert task_id_hash(TaskId(0, 0)) == 29791
    assert task_id_hash(TaskId(1, 2)) == 29791 + 961 + 62


def test_java_hash_codes() -> None:
    assert task_id_hash(t("0_0")) == 29791  # Objects.hash(0, 0, null)
    assert task_id_hash(t("0_31")) == task_id_hash(t("1_0"))  # a real collision in Java
    assert process_id_hash(ProcessId.for_int(1)) == 1
    assert process_id_hash(ProcessId.for_int(1 << 32)) == 1


def test_string_hash_matches_the_jdk() -> None:
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("Aa") == string_hash("BB") == 2112  # the classic collision
    assert string_hash("polygenelubricants") == INT32_MIN  # "polygenelubricants".hashCode()
    # Supplementary characters count as two UTF-16 code units, as in Java.
    assert string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00


def test_named_task_hash_uses_the_topology_string() -> None:
    assert task_id_hash(TaskId(0, 0, topology="Aa")) == task_id_hash(TaskId(0, 0, topology="BB"))
    assert task_id_hash(TaskId(0, 0, topology="a")) == 29791 + ord("a")


def test_int_helpers() -> None:
    assert int32(INT32_MAX + 1) == INT32_MIN
    assert int32(-1) == -1
    assert int32(1 << 32) == 0
    assert objects_hash() == 1
    assert objects_hash(None) == 31
    assert objects_hash(1, 2) == 31 * (31 + 1) + 2


@given(st.integers(INT32_MIN, INT32_MAX))
def test_spread_is_hashmap_hash(h: int) -> None:
    unsigned = h & 0xFFFFFFFF
    assert spread(h) == int32(unsigned ^ (unsigned >> 16))
    assert INT32_MIN <= spread(h) <= INT32_MAX
    assert spread(spread(h)) == h  # it undoes itself (hash_set_order relies on it)


@given(st.integers(0, 2**128 - 1))
def test_uuid_hash_folds_the_halves(bits: int) -> None:
    value = uuid.UUID(int=bits)
    high, low = bits >> 64, bits & (2**64 - 1)
    folded = high ^ low
    assert uuid_hash(value) == int32((folded >> 32) ^ folded)
    assert process_id_hash(ProcessId(value)) == uuid_hash(value)


@given(
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.one_of(st.none(), st.text(min_size=1, max_size=6)),
)
def test_task_id_hash_is_objects_hash(subtopology: int, partition: int, name: str | None) -> None:
    task = TaskId(subtopology, partition, topology=name)
    topology = None if name is None else string_hash(name)
    assert task_id_hash(task) == objects_hash(subtopology, partition, topology)


@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**31 - 1),
            st.integers(0, 2**31 - 1),
            st.one_of(st.none(), st.text(min_size=1, max_size=3)),
        ),
        max_size=20,
    )
)
def test_spread_task_hashes_are_the_spread_java_hash_codes(
    keys: list[tuple[int, int, str | None]],
) -> None:
    """Tasks-to-threads' hash-set order reads the spread hashes from the tasks' int ranks in
    comprehensions: each must be ``spread(task_id_hash(task))``, extremes included, and a
    named task (no rank) takes the function's path."""
    from assignor.placement.thread_queue import spread_task_hashes

    tasks = [TaskId(s, p, topology=name) for s, p, name in keys]
    tasks += [TaskId(INT32_MAX, INT32_MAX), TaskId(0, 0), TaskId(1, 2**16 + 1)]
    unnamed = [task for task in tasks if task.topology is None]
    for group in (tasks, unnamed):
        assert spread_task_hashes(group) == [spread(task_id_hash(task)) for task in group]
