"""Iteration order of ``java.util.HashSet`` and ``HashMap`` (JDK 17), for exact results.

Kafka iterates hash sets and maps of tasks and processes in several places (legacy sticky
placement, standby placement, the clients a constrained poll passed over, thread distribution),
and where that order decides a tie the Python result equals Java's only if it walks the same
order. A ``HashSet`` is a ``HashMap``'s key set, so one table serves both (``put`` of a key
already present changes nothing, as ``add`` of a present element does not).

The table: power-of-two lengths (16 by default, ``tableSizeFor(capacity)`` if presized), a load
factor of 0.75, keys placed by their spread hash (:func:`assignor._java.hash_codes.spread`),
resizes that split each bucket keeping its order, and a bucket that reaches nine keys either
resizing the table (under 64 slots) or turning into a red-black tree bin
(:mod:`assignor._java.tree_bin`), whose order is no longer insertion order. Keys must be
distinct by ``==`` exactly when Java's ``equals`` says so, and their sort key (the key itself
unless ``sort_key`` is given) must order them as Java's ``compareTo`` does.

:class:`JavaHashSet` replays every step; :func:`hash_set_order` gives the same answer for a set
filled once, taking a shortcut (sort by bucket) whenever no bucket ever reaches nine keys.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from operator import and_, eq
from typing import Any, Final, Generic, TypeVar

from assignor._java.hash_codes import spread
from assignor._java.tree_bin import (
    Bucket,
    TreeBin,
    TreeNode,
    split_tree,
    tree_put,
    tree_remove,
    treeify,
)

K = TypeVar("K")

DEFAULT_CAPACITY: Final = 16
TREEIFY_THRESHOLD: Final = 8
MIN_TREEIFY_CAPACITY: Final = 64
MAX_CAPACITY: Final = 1 << 30


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= capacity (at least 1)."""
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), MAX_CAPACITY)


def copy_capacity(size: int) -> int:
    """The initial capacity ``new HashSet<>(collection)`` asks for: ``max(size/.75f + 1, 16)``."""
    return max(int(_float32(_float32(float(size)) / 0.75)) + 1, DEFAULT_CAPACITY)


def grown_table_length(size: int, capacity: int | None = None) -> int:
    """Table length after inserting ``size`` distinct keys (ignoring treeify-driven resizes)."""
    if size == 0:
        return 0
    n = table_size_for(capacity) if capacity is not None else DEFAULT_CAPACITY
    while size > int(n * 0.75) and n < MAX_CAPACITY:
        n <<= 1
    return n


def buckets_stay_small(spread_hashes: Sequence[int], capacity: int | None = None) -> bool:
    """True if filling a set with distinct keys of these spread hashes, in this order, never
    puts 9 keys in one bucket - so no treeify-driven resize and no tree bin can occur, and the
    set's order is simply: by bucket of the final table, then by insertion.

    Checks what the table holds at each length it passes through: the keys inserted before it
    grows again (a prefix), and all keys at the final length.
    """
    if len(spread_hashes) <= TREEIFY_THRESHOLD:
        return True
    final = grown_table_length(len(spread_hashes), capacity)
    n = table_size_for(capacity) if capacity is not None else DEFAULT_CAPACITY
    while True:
        held = spread_hashes if n >= final else spread_hashes[: int(n * 0.75) + 1]
        if len(held) > TREEIFY_THRESHOLD:
            mask = n - 1
            if max(Counter([h & mask for h in held]).values()) > TREEIFY_THRESHOLD:
                return False
        if n >= final:
            return True
        n <<= 1


def hash_set_order(
    spread_hashes: Sequence[int],
    order_keys: Sequence[Any],
    capacity: int | None = None,
    removed: Sequence[int] = (),
) -> list[int]:
    """Iteration order of a new ``HashSet`` (or ``HashMap``) filled once, in the given order.

    ``spread_hashes[i]`` and ``order_keys[i]`` are the spread hash and the sort key of the
    ``i``-th key inserted (keys distinct); returns the insertion positions in the order Java
    iterates them. ``capacity``: the constructor's initial capacity (``None``: no-arg);
    ``removed``: positions then removed with ``remove(key)``, in that order (in a tree bin a
    removal can reorder what remains).
    """
    count = len(spread_hashes)
    if count < 2 or buckets_stay_small(spread_hashes, capacity):
        mask = grown_table_length(count, capacity) - 1
        # by bucket, ties in insertion order (a stable sort); the buckets computed in C
        buckets = list(map(and_, spread_hashes, repeat(mask)))
        order = sorted(range(count), key=buckets.__getitem__)
        if removed:
            gone = set(removed)
            order = [i for i in order if i not in gone]
        return order
    # A tree bin or an early resize: replay it. ``spread`` undoes itself, so spreading the
    # spread hash again gives back a hash code whose spread hash is the given one.
    table: JavaHashSet[int] = JavaHashSet(
        lambda i: spread(spread_hashes[i]), range(count), capacity, order_keys.__getitem__
    )
    for i in removed:
        table.discard(i)
    return list(table)


class SubsetOrders:
    """Iteration orders of new ``HashSet``s, each filled once with some of one fixed family of
    keys (numbered ``0 .. n-1`` by ``spread_hashes``, compared as ints in tree bins).

    Kafka's constrained poll builds such a set on every poll (the passed-over clients, or all of
    them). As in :func:`hash_set_order`: when no bucket ever holds nine keys the order is by
    bucket of the final table, then by insertion; here each table length's buckets are computed
    once for the family, so the check and the sort run at C speed.
    """

    __slots__ = ("_buckets", "_checks", "_spread")

    def __init__(self, spread_hashes: Sequence[int]) -> None:
        self._spread = spread_hashes
        self._buckets: dict[int, list[int]] = {}
        # per final table length: what a subset growing to it must be checked for (``_checks``)
        self._checks: dict[int, list[tuple[int, frozenset[int], list[int]]]] = {}

    def _of_length(self, length: int) -> list[int]:
        buckets = self._buckets.get(length)
        if buckets is None:
            mask = length - 1
            buckets = self._buckets[length] = [h & mask for h in self._spread]
        return buckets

    def _checks_to(self, final: int) -> list[tuple[int, frozenset[int], list[int]]]:
        """The table lengths a set growing to ``final`` passes through where the whole family
        puts more than eight keys in some bucket, each with how many keys the table holds
        there (-1: all), the keys whose bucket is that crowded in the family and every key's
        bucket. A subset can crowd a bucket only with keys of a crowded one."""
        checks = self._checks.get(final)
        if checks is None:
            checks = []
            length = DEFAULT_CAPACITY
            while True:
                buckets = self._of_length(length)
                crowd = Counter(buckets)
                if max(crowd.values()) > TREEIFY_THRESHOLD:
                    crowded = frozenset(
                        k for k, b in enumerate(buckets) if crowd[b] > TREEIFY_THRESHOLD
                    )
                    held = -1 if length >= final else int(length * 0.75) + 1
                    checks.append((held, crowded, buckets))
                if length >= final:
                    break
                length <<= 1
            self._checks[final] = checks
        return checks

    def order(self, elements: list[int]) -> list[int]:
        """``elements``, added in this order, in the order the set iterates them."""
        count = len(elements)
        if count < 2:
            return list(elements)
        final = grown_table_length(count)
        if count > TREEIFY_THRESHOLD:
            for held, crowded_keys, buckets in self._checks_to(final):
                keys = elements if held < 0 else elements[:held]
                if len(keys) <= TREEIFY_THRESHOLD:
                    continue
                # the keys in crowded buckets (picked in C), then: a bucket holds more than
                # TREEIFY_THRESHOLD keys iff, sorted, some bucket number equals the one
                # TREEIFY_THRESHOLD places on (cheaper than a Counter for a few dozen keys)
                crowded = crowded_keys.intersection(keys)
                if len(crowded) <= TREEIFY_THRESHOLD:
                    continue
                crowd = sorted(map(buckets.__getitem__, crowded))
                if any(map(eq, crowd, crowd[TREEIFY_THRESHOLD:])):
                    spread_hashes = self._spread
                    positions = hash_set_order([spread_hashes[e] for e in elements], elements)
                    return [elements[i] for i in positions]
        return sorted(elements, key=self._of_length(final).__getitem__)


class JavaHashSet(Generic[K]):
    """A set that iterates like ``java.util.HashSet`` (or a ``HashMap``'s key set).

    ``hash_of`` gives a key's Java ``hashCode()``; ``capacity`` is the constructor's initial
    capacity (``None``: the no-arg constructor); ``sort_key`` maps a key to a value that orders
    like Java's ``compareTo`` (by default the key itself). Removal keeps the order of the
    remaining keys; in a tree bin it also replays Java's red-black deletion, whose new root
    moves to the front of the bucket.
    """

    __slots__ = ("_hash_of", "_size", "_sort_key", "_table", "_threshold")

    def __init__(
        self,
        hash_of: Callable[[K], int],
        items: Iterable[K] = (),
        capacity: int | None = None,
        sort_key: Callable[[K], Any] | None = None,
    ) -> None:
        self._hash_of = hash_of
        self._sort_key: Callable[[K], Any] = sort_key or _identity
        self._table: list[Bucket] = []
        self._size = 0
        self._threshold = 0 if capacity is None else table_size_for(capacity)
        for item in items:
            self.add(item)

    @classmethod
    def copy_of(
        cls,
        hash_of: Callable[[K], int],
        items: Iterable[K],
        sort_key: Callable[[K], Any] | None = None,
    ) -> JavaHashSet[K]:
        """``new HashSet<>(collection)``: presized, then filled in the collection's order."""
        ordered = list(items)
        return cls(hash_of, ordered, copy_capacity(len(ordered)), sort_key)

    def __len__(self) -> int:
        return self._size

    @property
    def table_length(self) -> int:
        return len(self._table)

    def __iter__(self) -> Iterator[K]:
        for bucket in self._table:
            if bucket is None:
                continue
            if isinstance(bucket, TreeBin):
                for node in bucket.nodes():
                    yield node.key
            else:
                for _, key in bucket:
                    yield key

    def _bucket_of(self, key: K) -> tuple[int, int]:
        h = spread(self._hash_of(key))
        return h, h & (len(self._table) - 1)

    def __contains__(self, key: object) -> bool:
        if not self._table:
            return False
        h, i = self._bucket_of(key)  # type: ignore[arg-type]
        bucket = self._table[i]
        if bucket is None:
            return False
        if isinstance(bucket, TreeBin):
            return any(nd.hash == h and nd.key == key for nd in bucket.nodes())
        return any(kh == h and k == key for kh, k in bucket)

    def add(self, key: K) -> bool:
        """``add`` / ``put``: False (and no change of order) if the key is already there."""
        if not self._table:
            self._resize()
        h, i = self._bucket_of(key)
        bucket = self._table[i]
        if bucket is None:
            self._table[i] = [(h, key)]
        elif isinstance(bucket, TreeBin):
            if not tree_put(bucket, h, key, self._sort_key(key)):
                return False
        else:
            if any(kh == h and k == key for kh, k in bucket):
                return False
            bucket.append((h, key))
            if len(bucket) > TREEIFY_THRESHOLD:
                self._treeify_bin(i)
        self._size += 1
        if self._size > self._threshold:
            self._resize()
        return True

    def discard(self, key: K, movable: bool = True) -> bool:
        """Remove ``key``; ``movable=False`` is removal through an iterator (``it.remove()``,
        ``removeIf``, ``retainAll``), which in Java leaves a tree bin's root where it is."""
        if not self._table:
            return False
        h, i = self._bucket_of(key)
        bucket = self._table[i]
        if bucket is None:
            return False
        if isinstance(bucket, TreeBin):
            node = next((nd for nd in bucket.nodes() if nd.hash == h and nd.key == key), None)
            if node is None:
                return False
            self._table[i] = tree_remove(bucket, node, movable)
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
        if len(self._table) < MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        bucket = self._table[i]
        assert isinstance(bucket, list)
        sort_key = self._sort_key
        self._table[i] = treeify([TreeNode(h, k, sort_key(k)) for h, k in bucket])

    def _resize(self) -> None:
        old = self._table
        old_cap = len(old)
        if old_cap > 0:
            new_cap = old_cap << 1
            if new_cap < MAX_CAPACITY and old_cap >= DEFAULT_CAPACITY:
                new_thr = self._threshold << 1
            else:
                new_thr = int(new_cap * 0.75)
        elif self._threshold > 0:
            new_cap = self._threshold
            new_thr = int(new_cap * 0.75)
        else:
            new_cap = DEFAULT_CAPACITY
            new_thr = int(DEFAULT_CAPACITY * 0.75)
        self._threshold = new_thr
        table: list[Bucket] = [None] * new_cap
        for j, bucket in enumerate(old):
            if bucket is None:
                continue
            if isinstance(bucket, TreeBin):
                split_tree(table, bucket, j, old_cap)
                continue
            lo = [e for e in bucket if not e[0] & old_cap]
            hi = [e for e in bucket if e[0] & old_cap]
            if lo:
                table[j] = lo
            if hi:
                table[j + old_cap] = hi
        self._table = table


def _identity(key: Any) -> Any:
    return key
