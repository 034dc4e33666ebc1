"""Tree bins stay valid red-black trees whose linked list holds every node once."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from assignor._java.hash_table import JavaHashSet
from assignor._java.tree_bin import TreeBin, TreeNode


def _black_height(node: TreeNode | None) -> int:
    if node is None:
        return 1
    left, right = _black_height(node.left), _black_height(node.right)
    assert left == right, "unequal black heights"
    if node.red:
        assert not (node.left and node.left.red) and not (node.right and node.right.red)
    for child in (node.left, node.right):
        if child is not None:
            assert child.parent is node
            assert (child.hash, child.order) != (node.hash, node.order)
    if node.left is not None:
        assert (node.left.hash, node.left.order) < (node.hash, node.order)
    if node.right is not None:
        assert (node.right.hash, node.right.order) > (node.hash, node.order)
    return left + (0 if node.red else 1)


def _check(tree: TreeBin) -> None:
    root = tree.root
    assert root.parent is None and not root.red
    _black_height(root)
    listed = tree.nodes()
    assert len({id(n) for n in listed}) == len(listed)
    in_tree: list[TreeNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        in_tree.append(node)
        stack += [c for c in (node.left, node.right) if c is not None]
    assert {id(n) for n in in_tree} == {id(n) for n in listed}
    for a, b in pairwise(listed):
        assert a.next is b and b.prev is a


@given(
    st.lists(st.integers(0, 300), unique=True, min_size=9, max_size=150),
    st.data(),
)
def test_tree_bins_stay_valid_through_puts_removals_and_resizes(
    raw: list[int], data: st.DataObject
) -> None:
    # Keys 0 mod 64 share bucket 0 of a 64-slot table; a few hundred distinct ones spill over
    # 128, 256 ... so resizes split trees too. Half the removals go through "the iterator".
    keys = [64 * k for k in raw]
    table: JavaHashSet[int] = JavaHashSet(lambda k: k, [], 64)
    for key in keys:
        table.add(key)
        for bucket in table._table:
            if isinstance(bucket, TreeBin):
                _check(bucket)
    removals = data.draw(st.lists(st.sampled_from(keys), unique=True))
    for i, key in enumerate(removals):
        assert table.discard(key, movable=i % 2 == 0)
        for bucket in table._table:
            if isinstance(bucket, TreeBin):
                _check(bucket)
    assert sorted(table) == sorted(set(keys) - set(removals))
