"""Iteration order of Java's ``HashSet``/``HashMap`` and ``PriorityQueue``, for exact results.

Kafka's thread distribution iterates a ``PriorityQueue`` built from a ``HashSet`` of tasks, and
the legacy sticky assignor walks ``HashMap``s and ``HashSet``s of tasks and processes. Where such
an order decides who gets a task, the Python result equals Java's only if it walks the same
order. This module reproduces it: Java's hash codes (``Objects.hash``, ``String``, ``UUID``), the
table (power-of-two sizes, ``h ^ h >>> 16`` spreading, resizes that keep each bucket's order),
and the red-black "tree bins" a bucket turns into at nine entries once the table has 64 slots.
Keys must sort (``<``) exactly as their Java ``compareTo`` does; ``TaskId`` and ``ProcessId`` do.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import pairwise
from typing import Any, Generic, TypeVar

from protocol.ids import ProcessId, TaskId

K = TypeVar("K")

_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64
_DEFAULT_CAPACITY = 16
_MAX_CAPACITY = 1 << 30


def int32(value: int) -> int:
    """Wrap to Java's signed 32-bit ``int``."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def string_hash(text: str) -> int:
    """``String.hashCode``: over UTF-16 code units, as Java stores strings."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return int32(h)


def task_hash(task: TaskId) -> int:
    """``TaskId.hashCode`` = ``Objects.hash(subtopology, partition, topologyName)``."""
    topology = 0 if task.topology is None else string_hash(task.topology)
    return int32(((31 + task.subtopology) * 31 + task.partition) * 31 + topology)


def process_hash(process: ProcessId) -> int:
    """``ProcessId.hashCode`` = ``UUID.hashCode``: fold the 128 bits to 32 by xor."""
    bits = process.uuid.int
    folded = (bits >> 64) ^ (bits & 0xFFFFFFFFFFFFFFFF)
    return int32((folded >> 32) ^ folded)


def _spread(h: int) -> int:
    """``HashMap.hash``: mix the high half into the low half (as a signed int)."""
    u = h & 0xFFFFFFFF
    return int32(u ^ (u >> 16))


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= capacity (at least 1)."""
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), _MAX_CAPACITY)


def copy_capacity(size: int) -> int:
    """The initial capacity ``new HashSet<>(collection)`` asks for: ``max(size/.75f + 1, 16)``."""
    return max(int(_float32(_float32(float(size)) / 0.75)) + 1, _DEFAULT_CAPACITY)



def spread_hash(h: int) -> int:
    """``HashMap.hash``: the bucket-selecting hash of a key whose ``hashCode`` is ``h``."""
    return _spread(h)


def grown_table_length(size: int, capacity: int | None = None) -> int:
    """Table length after inserting ``size`` distinct keys (ignoring treeify-driven resizes)."""
    if size == 0:
        return 0
    n = table_size_for(capacity) if capacity is not None else _DEFAULT_CAPACITY
    while size > int(n * 0.75) and n < _MAX_CAPACITY:
        n <<= 1
    return n


def buckets_stay_small(
    spread_hashes: Sequence[int], capacity: int | None = None
) -> bool:
    """True if filling a set with keys of these hashes, in this order, never puts 9 keys
    in one bucket - so no treeify-driven resize and no tree bin can occur, and the set's
    order is simply: by bucket of the final table, then by insertion.

    Checks what the table holds at each size it passes through: the keys inserted before
    it grows again (a prefix), and all keys at the final size.
    """
    final = grown_table_length(len(spread_hashes), capacity)
    n = table_size_for(capacity) if capacity is not None else _DEFAULT_CAPACITY
    while True:
        held = spread_hashes if n >= final else spread_hashes[: int(n * 0.75) + 1]
        if len(held) > _TREEIFY_THRESHOLD:
            mask = n - 1
            if max(Counter([h & mask for h in held]).values()) > _TREEIFY_THRESHOLD:
                return False
        if n >= final:
            return True
        n <<= 1

class _TreeNode:
    __slots__ = ("hash", "key", "left", "next", "parent", "prev", "red", "right")

    def __init__(self, h: int, key: Any) -> None:
        self.hash = h
        self.key = key
        self.parent: _TreeNode | None = None
        self.left: _TreeNode | None = None
        self.right: _TreeNode | None = None
        self.prev: _TreeNode | None = None
        self.next: _TreeNode | None = None
        self.red = False


class _TreeBin:
    """A bucket stored as a red-black tree whose nodes are also a linked list (the order)."""

    __slots__ = ("first", "root")

    def __init__(self, first: _TreeNode) -> None:
        self.first = first
        self.root = first

    def nodes(self) -> list[_TreeNode]:
        result = []
        node: _TreeNode | None = self.first
        while node is not None:
            result.append(node)
            node = node.next
        return result


def _direction(h: int, key: Any, node: _TreeNode) -> int:
    if node.hash > h:
        return -1
    if node.hash < h:
        return 1
    # Equal hashes: comparable keys of one class compare; equal keys never get here.
    return -1 if key < node.key else 1


def _rotate_left(root: _TreeNode, p: _TreeNode) -> _TreeNode:
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


def _rotate_right(root: _TreeNode, p: _TreeNode) -> _TreeNode:
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


def _balance_insertion(root: _TreeNode, x: _TreeNode) -> _TreeNode:
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


def _move_root_to_front(tree: _TreeBin, root: _TreeNode) -> None:
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


def _treeify(nodes: list[_TreeNode]) -> _TreeBin:
    """Link ``nodes`` in this order and build the tree by inserting them in this order."""
    for a, b in pairwise(nodes):
        a.next = b
        b.prev = a
    nodes[0].prev = None
    nodes[-1].next = None
    tree = _TreeBin(nodes[0])
    root: _TreeNode | None = None
    for x in nodes:
        x.left = x.right = None
        if root is None:
            x.parent = None
            x.red = False
            root = x
            continue
        p = root
        while True:
            direction = _direction(x.hash, x.key, p)
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


def _tree_put(tree: _TreeBin, h: int, key: Any) -> bool:
    """Insert unless present; a new node follows its tree parent in the linked order."""
    p = tree.root
    while True:
        if p.hash == h and p.key == key:
            return False
        direction = _direction(h, key, p)
        child = p.left if direction <= 0 else p.right
        if child is None:
            x = _TreeNode(h, key)
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


def _balance_deletion(root: _TreeNode, x: _TreeNode | None) -> _TreeNode:
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


def _tree_remove(tree: _TreeBin, p: _TreeNode, movable: bool) -> Any:
    """``HashMap.TreeNode.removeTreeNode``; returns what the bucket holds afterwards."""
    succ, pred = p.next, p.prev
    first: _TreeNode | None = tree.first
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


class JavaHashSet(Generic[K]):
    """A set that iterates like ``java.util.HashSet`` (or a ``HashMap``'s key set).

    ``capacity`` is the constructor's initial capacity (``None``: the no-arg constructor).
    Removal keeps the order of the remaining keys; in a tree bin it also replays Java's
    red-black deletion, whose new root moves to the front of the bucket.
    """

    __slots__ = ("_hash_of", "_size", "_table", "_threshold")

    def __init__(
        self,
        hash_of: Callable[[K], int],
        items: Iterable[K] = (),
        capacity: int | None = None,
    ) -> None:
        self._hash_of = hash_of
        self._table: list[list[tuple[int, K]] | _TreeBin | None] = []
        self._size = 0
        self._threshold = 0 if capacity is None else table_size_for(capacity)
        for item in items:
            self.add(item)

    @classmethod
    def copy_of(cls, hash_of: Callable[[K], int], items: Iterable[K]) -> JavaHashSet[K]:
        """``new HashSet<>(collection)``: presized, then filled in the collection's order."""
        ordered = list(items)
        return cls(hash_of, ordered, capacity=copy_capacity(len(ordered)))

    def __len__(self) -> int:
        return self._size

    @property
    def table_length(self) -> int:
        return len(self._table)

    def __iter__(self) -> Iterator[K]:
        for bucket in self._table:
            if bucket is None:
                continue
            if isinstance(bucket, _TreeBin):
                for node in bucket.nodes():
                    yield node.key
            else:
                for _, key in bucket:
                    yield key

    def _bucket_of(self, key: K) -> tuple[int, int]:
        h = _spread(self._hash_of(key))
        return h, h & (len(self._table) - 1)

    def __contains__(self, key: object) -> bool:
        if not self._table:
            return False
        h, i = self._bucket_of(key)  # type: ignore[arg-type]
        bucket = self._table[i]
        if bucket is None:
            return False
        if isinstance(bucket, _TreeBin):
            return any(nd.key == key for nd in bucket.nodes())
        return any(kh == h and k == key for kh, k in bucket)

    def add(self, key: K) -> bool:
        if not self._table:
            self._resize()
        h, i = self._bucket_of(key)
        bucket = self._table[i]
        if bucket is None:
            self._table[i] = [(h, key)]
        elif isinstance(bucket, _TreeBin):
            if not _tree_put(bucket, h, key):
                return False
        else:
            if any(kh == h and k == key for kh, k in bucket):
                return False
            bucket.append((h, key))
            if len(bucket) > _TREEIFY_THRESHOLD:
                self._treeify_bin(i)
        self._size += 1
        if self._size > self._threshold:
            self._resize()
        return True

    def discard(self, key: K, movable: bool = True) -> bool:
        """Remove ``key``; ``movable=False`` is removal through an iterator (``it.remove()``,
        ``retainAll``), which in Java leaves a tree bin's root where it is."""
        if not self._table:
            return False
        h, i = self._bucket_of(key)
        bucket = self._table[i]
        if bucket is None:
            return False
        if isinstance(bucket, _TreeBin):
            node = next((nd for nd in bucket.nodes() if nd.hash == h and nd.key == key), None)
            if node is None:
                return False
            self._table[i] = _tree_remove(bucket, node, movable)
        else:
            for j, (kh, k) in enumerate(bucket):
                if kh == h and k == key:
                    del bucket[j]
                    break
            else:
                return False
            if not bucket:
                self._table[i] = None
        self._size -= 1
        return True

    def _treeify_bin(self, i: int) -> None:
        """Java resizes instead while the table is small; only then does a bucket grow a tree."""
        if len(self._table) < _MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        bucket = self._table[i]
        assert isinstance(bucket, list)
        self._table[i] = _treeify([_TreeNode(h, k) for h, k in bucket])

    def _resize(self) -> None:
        old = self._table
        old_cap = len(old)
        if old_cap > 0:
            new_cap = old_cap << 1
            if new_cap < _MAX_CAPACITY and old_cap >= _DEFAULT_CAPACITY:
                new_thr = self._threshold << 1
            else:
                new_thr = int(new_cap * 0.75)
        elif self._threshold > 0:
            new_cap = self._threshold
            new_thr = int(new_cap * 0.75)
        else:
            new_cap = _DEFAULT_CAPACITY
            new_thr = int(_DEFAULT_CAPACITY * 0.75)
        self._threshold = new_thr
        table: list[list[tuple[int, K]] | _TreeBin | None] = [None] * new_cap
        for j, bucket in enumerate(old):
            if bucket is None:
                continue
            if isinstance(bucket, _TreeBin):
                _split_tree(table, bucket, j, old_cap)
                continue
            lo = [e for e in bucket if not e[0] & old_cap]
            hi = [e for e in bucket if e[0] & old_cap]
            if lo:
                table[j] = lo
            if hi:
                table[j + old_cap] = hi
        self._table = table


def _split_tree(table: list[Any], tree: _TreeBin, j: int, bit: int) -> None:
    """``TreeNode.split``: keep the linked order; small halves become lists again."""
    nodes = tree.nodes()
    lo = [nd for nd in nodes if not nd.hash & bit]
    hi = [nd for nd in nodes if nd.hash & bit]
    for part, other, index in ((lo, hi, j), (hi, lo, j + bit)):
        if not part:
            continue
        if len(part) <= _UNTREEIFY_THRESHOLD:
            table[index] = [(nd.hash, nd.key) for nd in part]
        elif other:
            table[index] = _treeify(part)
        else:
            table[index] = tree


class JavaPriorityQueue:
    """``java.util.PriorityQueue`` over distinct ints: the same heap array, so the same iteration.

    Callers map tasks to their rank in sort order. ``remove`` finds the slot through a position
    index instead of Java's linear scan; with distinct elements that is the same (only) slot.
    """

    __slots__ = ("_heap", "_pos")

    def __init__(self, items: Iterable[int]) -> None:
        heap = list(items)
        self._heap = heap
        n = len(heap)
        self._pos = {x: i for i, x in enumerate(heap)}
        for i in range((n >> 1) - 1, -1, -1):
            self._sift_down(i, heap[i], n)

    def __len__(self) -> int:
        return len(self._heap)

    def __contains__(self, item: int) -> bool:
        return item in self._pos

    def __iter__(self) -> Iterator[int]:
        """The internal array order, as Java's iterator walks it."""
        return iter(list(self._heap))

    def _sift_down(self, k: int, key: int, n: int) -> None:
        heap, pos = self._heap, self._pos
        half = n >> 1
        while k < half:
            child = 2 * k + 1
            c = heap[child]
            right = child + 1
            if right < n and c > heap[right]:
                child = right
                c = heap[child]
            if key <= c:
                break
            heap[k] = c
            pos[c] = k
            k = child
        heap[k] = key
        pos[key] = k

    def _sift_up(self, k: int, key: int) -> None:
        heap, pos = self._heap, self._pos
        while k > 0:
            parent = (k - 1) >> 1
            e = heap[parent]
            if key >= e:
                break
            heap[k] = e
            pos[e] = k
            k = parent
        heap[k] = key
        pos[key] = k

    def poll(self) -> int | None:
        heap = self._heap
        if not heap:
            return None
        result = heap[0]
        del self._pos[result]
        last = heap.pop()
        if heap:
            self._sift_down(0, last, len(heap))
        return result

    def remove(self, item: int) -> bool:
        i = self._pos.pop(item, None)
        if i is None:
            return False
        heap = self._heap
        moved = heap.pop()
        s = len(heap)
        if i == s:
            return True
        self._sift_down(i, moved, s)
        if heap[i] == moved:
            self._sift_up(i, moved)
        return True
