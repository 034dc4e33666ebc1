"""The red-black "tree bins" of ``java.util.HashMap``, step for step as in JDK 17.

A bucket that reaches nine keys in a table of 64+ slots becomes a red-black tree whose nodes
are also a doubly linked list; iteration walks that list, so its order is what matters here.
Insertion puts a new node right after its tree parent in the list, and every rebalancing moves
the new root to the front; deletion and resizes ("split") follow Java's exact steps too. Keys
are ordered by hash, then by ``order`` (each node's sort key, equal to Java's ``compareTo``).
Used by :mod:`assignor._java.hash_table`; nothing else should need it.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any, Final

UNTREEIFY_THRESHOLD: Final = 6


class TreeNode:
    """``HashMap.TreeNode``: ``hash`` is the spread hash, ``order`` the key's sort key."""

    __slots__ = ("hash", "key", "left", "next", "order", "parent", "prev", "red", "right")

    def __init__(self, h: int, key: Any, order: Any) -> None:
        self.hash = h
        self.key = key
        self.order = order
        self.parent: TreeNode | None = None
        self.left: TreeNode | None = None
        self.right: TreeNode | None = None
        self.prev: TreeNode | None = None
        self.next: TreeNode | None = None
        self.red = False


class TreeBin:
    """A bucket stored as a red-black tree whose nodes are also a linked list (the order)."""

    __slots__ = ("first", "root")

    def __init__(self, first: TreeNode) -> None:
        self.first = first
        self.root = first

    def nodes(self) -> list[TreeNode]:
        result = []
        node: TreeNode | None = self.first
        while node is not None:
            result.append(node)
            node = node.next
        return result


#: What a table slot holds: nothing, a list of (spread hash, key) in order, or a tree bin.
Bucket = list[tuple[int, Any]] | TreeBin | None


def _direction(h: int, order: Any, node: TreeNode) -> int:
    if node.hash > h:
        return -1
    if node.hash < h:
        return 1
    # Equal hashes: keys of one Comparable class compare; equal keys never get here, and
    # distinct keys must not compare equal (Java would fall back to identity hash codes).
    return -1 if order < node.order else 1


def _rotate_left(root: TreeNode, p: TreeNode) -> TreeNode:
    r = p.right
    if r is None:
        return root
    rl = p.right = r.left
    if rl is not None:
        rl.parent = p
    pp = r.parent = p.parent
    if pp is None:
        root = r
        r.red = False
    elif pp.left is p:
        pp.left = r
    else:
        pp.right = r
    r.left = p
    p.parent = r
    return root


def _rotate_right(root: TreeNode, p: TreeNode) -> TreeNode:
    left = p.left
    if left is None:
        return root
    lr = p.left = left.right
    if lr is not None:
        lr.parent = p
    pp = left.parent = p.parent
    if pp is None:
        root = left
        left.red = False
    elif pp.right is p:
        pp.right = left
    else:
        pp.left = left
    left.right = p
    p.parent = left
    return root


def _balance_insertion(root: TreeNode, x: TreeNode) -> TreeNode:
    """``HashMap.TreeNode.balanceInsertion``, step for step (the root it returns matters)."""
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        xppl = xpp.left
        if xp is xppl:
            xppr = xpp.right
            if xppr is not None and xppr.red:
                xppr.red = False
                xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.right:
                x = xp
                root = _rotate_left(root, x)
                xp = x.parent
                xpp = None if xp is None else xp.parent
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_right(root, xpp)
        else:
            if xppl is not None and xppl.red:
                xppl.red = False
                xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.left:
                x = xp
                root = _rotate_right(root, x)
                xp = x.parent
                xpp = None if xp is None else xp.parent
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_left(root, xpp)


def _move_root_to_front(tree: TreeBin, root: TreeNode) -> None:
    tree.root = root
    first = tree.first
    if root is first:
        return
    rn, rp = root.next, root.prev
    if rn is not None:
        rn.prev = rp
    if rp is not None:
        rp.next = rn
    first.prev = root
    root.next = first
    root.prev = None
    tree.first = root


def treeify(nodes: list[TreeNode]) -> TreeBin:
    """Link ``nodes`` in this order and build the tree by inserting them in this order."""
    for a, b in pairwise(nodes):
        a.next = b
        b.prev = a
    nodes[0].prev = None
    nodes[-1].next = None
    tree = TreeBin(nodes[0])
    root: TreeNode | None = None
    for x in nodes:
        x.left = x.right = None
        if root is None:
            x.parent = None
            x.red = False
            root = x
            continue
        p = root
        while True:
            direction = _direction(x.hash, x.order, p)
            child = p.left if direction <= 0 else p.right
            if child is None:
                x.parent = p
                if direction <= 0:
                    p.left = x
                else:
                    p.right = x
                root = _balance_insertion(root, x)
                break
            p = child
    assert root is not None
    _move_root_to_front(tree, root)
    return tree


def tree_put(tree: TreeBin, h: int, key: Any, order: Any) -> bool:
    """``putTreeVal``: insert unless present; the new node follows its tree parent in the list."""
    p = tree.root
    while True:
        if p.hash == h and p.key == key:
            return False
        direction = _direction(h, order, p)
        child = p.left if direction <= 0 else p.right
        if child is None:
            x = TreeNode(h, key, order)
            xpn = p.next
            x.next = xpn
            if direction <= 0:
                p.left = x
            else:
                p.right = x
            p.next = x
            x.parent = x.prev = p
            if xpn is not None:
                xpn.prev = x
            _move_root_to_front(tree, _balance_insertion(tree.root, x))
            return True
        p = child


def _balance_deletion(root: TreeNode, x: TreeNode | None) -> TreeNode:
    """``HashMap.TreeNode.balanceDeletion``, step for step."""
    while True:
        if x is None or x is root:
            return root
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if x.red:
            x.red = False
            return root
        xpl = xp.left
        if xpl is x:
            xpr = xp.right
            if xpr is not None and xpr.red:
                xpr.red = False
                xp.red = True
                root = _rotate_left(root, xp)
                xp = x.parent
                xpr = None if xp is None else xp.right
            if xpr is None:
                x = xp
                continue
            sl, sr = xpr.left, xpr.right
            if (sr is None or not sr.red) and (sl is None or not sl.red):
                xpr.red = True
                x = xp
                continue
            if sr is None or not sr.red:
                if sl is not None:
                    sl.red = False
                xpr.red = True
                root = _rotate_right(root, xpr)
                xp = x.parent
                xpr = None if xp is None else xp.right
            if xpr is not None:
                xpr.red = False if xp is None else xp.red
                sr = xpr.right
                if sr is not None:
                    sr.red = False
            if xp is not None:
                xp.red = False
                root = _rotate_left(root, xp)
            x = root
        else:
            if xpl is not None and xpl.red:
                xpl.red = False
                xp.red = True
                root = _rotate_right(root, xp)
                xp = x.parent
                xpl = None if xp is None else xp.left
            if xpl is None:
                x = xp
                continue
            sl, sr = xpl.left, xpl.right
            if (sl is None or not sl.red) and (sr is None or not sr.red):
                xpl.red = True
                x = xp
                continue
            if sl is None or not sl.red:
                if sr is not None:
                    sr.red = False
                xpl.red = True
                root = _rotate_left(root, xpl)
                xp = x.parent
                xpl = None if xp is None else xp.left
            if xpl is not None:
                xpl.red = False if xp is None else xp.red
                sl = xpl.left
                if sl is not None:
                    sl.red = False
            if xp is not None:
                xp.red = False
                root = _rotate_right(root, xp)
            x = root


def tree_remove(tree: TreeBin, p: TreeNode, movable: bool) -> Bucket:
    """``HashMap.TreeNode.removeTreeNode``; returns what the bucket holds afterwards."""
    succ, pred = p.next, p.prev
    first: TreeNode | None = tree.first
    if pred is None:
        first = succ
    else:
        pred.next = succ
    if succ is not None:
        succ.prev = pred
    if first is None:
        return None
    tree.first = first
    root = tree.root
    if movable and (root.right is None or root.left is None or root.left.left is None):
        return [(nd.hash, nd.key) for nd in tree.nodes()]  # too small: a plain list again
    pl, pr = p.left, p.right
    if pl is not None and pr is not None:
        s = pr
        while s.left is not None:
            s = s.left
        s.red, p.red = p.red, s.red
        sr = s.right
        pp = p.parent
        if s is pr:
            p.parent = s
            s.right = p
        else:
            sp = s.parent
            p.parent = sp
            if sp is not None:
                if s is sp.left:
                    sp.left = p
                else:
                    sp.right = p
            s.right = pr
            pr.parent = s
        p.left = None
        p.right = sr
        if sr is not None:
            sr.parent = p
        s.left = pl
        pl.parent = s
        s.parent = pp
        if pp is None:
            root = s
        elif p is pp.left:
            pp.left = s
        else:
            pp.right = s
        replacement = sr if sr is not None else p
    elif pl is not None:
        replacement = pl
    elif pr is not None:
        replacement = pr
    else:
        replacement = p
    if replacement is not p:
        pp = replacement.parent = p.parent
        if pp is None:
            root = replacement
            replacement.red = False
        elif p is pp.left:
            pp.left = replacement
        else:
            pp.right = replacement
        p.left = p.right = p.parent = None
    r = root if p.red else _balance_deletion(root, replacement)
    if replacement is p:
        pp = p.parent
        p.parent = None
        if pp is not None:
            if p is pp.left:
                pp.left = None
            elif p is pp.right:
                pp.right = None
    if movable:
        _move_root_to_front(tree, r)
    else:
        tree.root = r
    return tree


def split_tree(table: list[Bucket], tree: TreeBin, j: int, bit: int) -> None:
    """``TreeNode.split``: keep the linked order; small halves become lists again."""
    nodes = tree.nodes()
    lo = [nd for nd in nodes if not nd.hash & bit]
    hi = [nd for nd in nodes if nd.hash & bit]
    for part, other, index in ((lo, hi, j), (hi, lo, j + bit)):
        if not part:
            continue
        if len(part) <= UNTREEIFY_THRESHOLD:
            table[index] = [(nd.hash, nd.key) for nd in part]
        elif other:
            table[index] = treeify(part)
        else:
            table[index] = tree
