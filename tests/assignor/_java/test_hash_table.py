"""HashSet/HashMap iteration order: buckets, resizes, tree bins, removal.

Exact agreement with the JDK on random inputs is tests/conformance/test_java_collections.py;
these are the worked examples and the internal consistency of the shortcut and the replay.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assignor._java.hash_codes import spread, task_id_hash
from assignor._java.hash_table import (
    JavaHashSet,
    buckets_stay_small,
    copy_capacity,
    grown_table_length,
    hash_set_order,
    table_size_for,
)
from assignor._java.tree_bin import TreeBin
from protocol.ids import TaskId


def t(text: str) -> TaskId:
    return TaskId.parse(text)


def _int_set(keys: list[int], capacity: int | None = None) -> JavaHashSet[int]:
    """A ``HashSet<Integer>``: ``Integer.hashCode`` is the value."""
    return JavaHashSet(lambda k: k, keys, capacity)


def test_hash_iteration_order_examples() -> None:
    # Java's HashSet of Integer-like hashes 17, 1, 33 (table of 16): buckets 1, 1, 1 -> insertion
    assert hash_set_order([spread(17), spread(1), spread(33)], [17, 1, 33]) == [0, 1, 2]
    assert hash_set_order([spread(5), spread(3), spread(20)], [5, 3, 20]) == [1, 2, 0]


def test_same_bucket_keeps_insertion_order() -> None:
    twins = JavaHashSet(task_id_hash, [t("1_0"), t("0_31")])
    assert list(twins) == [t("1_0"), t("0_31")]  # same bucket: insertion order


def test_table_sizes() -> None:
    assert table_size_for(0) == table_size_for(1) == 1
    assert table_size_for(17) == 32
    assert copy_capacity(0) == 16
    assert copy_capacity(100) == 134  # (int)(100 / .75f) + 1
    assert grown_table_length(12) == 16
    assert grown_table_length(13) == 32
    assert grown_table_length(3, capacity=1) == 4
    assert _int_set(list(range(13))).table_length == 32


def test_nine_in_a_bucket_of_a_small_table_resizes_instead_of_treeifying() -> None:
    keys = [64 * k for k in range(9)]  # bucket 0 at every length up to 64
    table = _int_set(keys)
    assert table.table_length == 32  # the 9th key in one bucket doubled 16 -> 32
    assert not buckets_stay_small([spread(k) for k in keys])
    assert list(table) == keys


def test_tree_bin_orders_by_tree_not_by_insertion() -> None:
    # 40 keys, nothing else: the table grows to 64 and bucket 0 fills past 8 -> a tree bin.
    keys = [64 * k for k in range(40, 0, -1)]
    table = _int_set(keys)
    assert table.table_length == 64
    assert isinstance(table._table[0], TreeBin)
    order = list(table)
    assert sorted(order) == sorted(keys)
    assert order != keys  # the root moved to the front, new nodes follow their parents
    assert hash_set_order([spread(k) for k in keys], keys) == [keys.index(k) for k in order]


def test_removal_from_a_tree_bin_can_reorder_the_rest() -> None:
    keys = [64 * k for k in range(1, 41)]
    table = _int_set(keys)
    removed = keys[5:30]
    for k in removed:
        table.discard(k)
    positions = hash_set_order(
        [spread(k) for k in keys], keys, removed=[keys.index(k) for k in removed]
    )
    assert [keys[i] for i in positions] == list(table)
    assert set(table) == set(keys) - set(removed)


def test_contains_add_discard() -> None:
    table = _int_set([64 * k for k in range(20)])
    assert 64 in table and 65 not in table
    assert not table.add(64)
    assert table.discard(64) and 64 not in table
    assert not table.discard(64)
    assert len(table) == 19


@given(
    st.lists(st.integers(0, 40), unique=True, max_size=120),
    st.sampled_from([1, 16, 32, 64, 128]),
    st.one_of(st.none(), st.integers(0, 200)),
    st.data(),
)
def test_shortcut_equals_the_replay(
    raw: list[int], stride: int, capacity: int | None, data: st.DataObject
) -> None:
    """hash_set_order (sort by bucket when it can) equals replaying every step."""
    keys = [stride * k + (k % 3) for k in raw]  # many collisions, some tree bins
    keys = list(dict.fromkeys(keys))
    removed = data.draw(st.lists(st.sampled_from(range(len(keys))), unique=True)) if keys else []
    table = _int_set(keys, capacity)
    for i in removed:
        table.discard(keys[i])
    positions = hash_set_order([spread(k) for k in keys], keys, capacity, removed)
    assert [keys[i] for i in positions] == list(table)


@given(st.lists(st.integers(-(2**31), 2**31 - 1), unique=True, max_size=200))
def test_iterates_every_key_once(keys: list[int]) -> None:
    table = _int_set(keys)
    assert sorted(table) == sorted(keys)
    assert len(table) == len(keys)
